"""Checks of chapter 05 (the GRU).

* ``ch05.gru_step``: the student's ``gru_step(p, x, state)`` against the
  reference cell ``gru`` ([T] eqs 56-59): every state of a batch of 7 over 4
  steps (abs. tolerance 1e-5) and every parameter's gradient (relative
  tolerance 1e-4), on random non-zero, non-symmetric parameters. It fails the
  usual slips: z and 1 - z exchanged in eq 59, the reset gate applied after
  W_hh instead of before it (eq 58), gates swapped, the step computed in NumPy
  (no gradients). Writing ``1 - z`` with a plain number on the left is fine.
"""
from __future__ import annotations

import functools

from autograder.reference.cells import make_cell
from autograder.reference.grading import step_check

CHECKS = [
    step_check("ch05.gru_step", "gru_step", functools.partial(make_cell, "gru")),
]
