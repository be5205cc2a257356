"""Checks of chapter 04 (the LSTM with a forget gate).

* ``ch04.lstm_step``: the student's ``lstm_step(p, x, state)`` against the
  reference cell ``lstm`` ([T] eqs 54-55): every state of a batch of 7 over
  4 steps (abs. tolerance 1e-5) and every parameter's gradient (relative
  tolerance 1e-4), on random non-zero, non-symmetric parameters, so a swapped
  gate, a missing forget gate or a step computed in NumPy (no gradients) fails.
* ``ch04.lstm_init``: the student's ``lstm_init(name, shape, forget_bias=1.0)``
  (the ``Cell.init`` contract of ``course/cell.py``) sets the forget-gate bias
  ``b_f`` to ``forget_bias`` ([T] section 6.4 after eq 55, [OD] section 6.2) and
  leaves every other parameter to the default initialiser (returns None;
  returning zeros for another bias is accepted, since zero is that default).
"""
from __future__ import annotations

import functools

import numpy as np

from autograder.reference.cells import make_cell
from autograder.reference.grading import Check, step_check

CUSTOM_FORGET_BIAS = 2.5        # the grader's second value: is the argument used?
D_IN, D_H = 5, 4


def _init_inputs() -> dict:
    shapes = make_cell("lstm").shapes(D_IN, D_H)
    return {"function": "lstm_init", "names": sorted(shapes),
            "shapes": {name: list(shape) for name, shape in shapes.items()},
            "forget_bias": CUSTOM_FORGET_BIAS}


def _judge_init(numbers: dict, inputs: dict) -> list[str]:
    problems = []
    for round_name, forget_bias in (("default", 1.0), ("custom", inputs["forget_bias"])):
        call = ("lstm_init(name, shape)" if round_name == "default"
                else "lstm_init(name, shape, forget_bias=...)")
        reference = make_cell("lstm", forget_bias=forget_bias)
        result = numbers.get(round_name, {})
        none = np.asarray(result.get("none", []), dtype=float)
        values = result.get("values", {})
        if none.shape != (len(inputs["names"]),):
            return [f"{call} did not answer for every parameter"]
        returned_none = {name for name, flag in zip(inputs["names"], none) if flag}
        extra = []
        for name in inputs["names"]:
            shape = tuple(inputs["shapes"][name])
            expected = reference.init(name, shape)
            if expected is not None:              # b_f
                if name in returned_none:
                    problems.append(f"{call} returned None for {name}: the forget-gate bias must start "
                                    "at forget_bias (tutorial section 6.4), not at the default 0")
                    continue
                got = np.asarray(values.get(name, np.full(shape, np.nan)), dtype=float)
                if got.shape != shape:
                    problems.append(f"{call} returned shape {got.shape} for {name}; it must have the "
                                    f"shape it is given, {shape}")
                elif np.allclose(got, 0.0):
                    problems.append(f"{call} leaves the forget bias {name} at 0: it must start at "
                                    "forget_bias so the forget gate starts open (tutorial section 6.4)")
                elif not np.allclose(got, expected, atol=1e-6):
                    problems.append(f"{call} returned the wrong value for {name}"
                                    + (": is the forget_bias argument used?" if round_name == "custom" else ""))
            elif name not in returned_none:
                got = np.asarray(values.get(name, np.nan), dtype=float)
                if len(shape) == 1 and got.shape == shape and np.allclose(got, 0.0):
                    continue                         # a zero bias is the default anyway
                extra.append(name)
        if extra:
            problems.append(f"{call} returned a value for {', '.join(extra)}; return None for every "
                            "parameter but b_f, so the default initialiser is used (Glorot for "
                            "matrices, zero for biases)")
        if problems:
            break
    return problems


CHECKS = [
    step_check("ch04.lstm_step", "lstm_step", functools.partial(make_cell, "lstm")),
    Check("ch04.lstm_init", ("lstm_init",), _init_inputs,
          "autograder.probes.ch04_forget_gate:init", _judge_init),
]
