"""The one contract every recurrent cell of the course follows.

A *step function* computes one time step of a recurrent layer on a minibatch:

    new_state = step(p, x, state)

* ``p``     dict ``name -> dy.Expression``: the cell's parameters, already loaded
            into the current computation graph (``dy.parameter(...)``).
* ``x``     ``dy.Expression`` of dimension ``((d_in,), B)``: the input at time t
            for B sentences at once.
* ``state`` tuple of ``dy.Expression``, each ``((d_h,), B)``: the previous state,
            e.g. ``(h,)`` for the S-RNN and GRU, ``(h, c)`` for the LSTM.
* returns   a tuple of the same structure. ``new_state[0]`` is the output
            ``h_t`` that the next layer and the softmax read.

A :class:`Cell` bundles a step function with the shapes of its parameters, so
that :mod:`course.lm` can create the parameters, start from a zero state and run
the step over a sequence. Graded step functions (``rnn_step``, ``lstm_step``,
``gru_step``, the chapter-08 ablations) are *not* in this package: students write
them in the exercises, and the instructors' versions live in
``autograder/reference/``. The rule is enforced by
``tests/test_cells.py::test_course_package_holds_no_graded_cell``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

Shapes = Callable[[int, int], dict]          # (d_in, d_h) -> {name: shape}
Init = Callable[[str, tuple], "np.ndarray | None"]


@dataclass
class Cell:
    """A recurrent cell: a step function plus what is needed to run it.

    name:    short name used in logs and checkpoints ("lstm", "gru", ...).
    step:    the step function, see the module docstring.
    shapes:  ``shapes(d_in, d_h)`` returns ``{param_name: shape}``; weights are
             ``(rows, cols)`` matrices, biases ``(rows,)`` vectors.
    n_state: how many vectors the state holds (1 for ``(h,)``, 2 for ``(h, c)``).
    init:    optional ``init(name, shape)`` returning a NumPy array for
             parameters that need a special initial value (e.g. a forget-gate
             bias of 1), or None to use the default Glorot/zero initialiser.
    """

    name: str
    step: Callable
    shapes: Shapes
    n_state: int = 1
    init: Init | None = field(default=None, repr=False)

    def param_count(self, d_in: int, d_h: int, biases: bool = True) -> int:
        """Number of scalar parameters of one layer (biases optional)."""
        return sum(int(np.prod(s)) for name, s in self.shapes(d_in, d_h).items()
                   if biases or len(s) > 1)
