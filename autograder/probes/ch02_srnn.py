"""Probe of chapter 02's backward pass: run a student's
``srnn_step_backward(dh, x, h_prev, h, W_xh, W_hh)`` on the grader's cases.

Runs in the autograder's sandbox, so it imports no reference code. The cases come from
:mod:`autograder.reference.ch02_srnn` (``backward_inputs``); the step's output h is computed
here from them (eq 44 in NumPy), so the student gets the h of the very numbers it is judged at.
"""
from __future__ import annotations

import numpy as np

from autograder import probes

OUTPUTS = ("dx", "dh_prev", "dW_xh", "dW_hh", "db_h")
#: DyNet's own differentiation (and the course's helper around it): a backward "by hand" that
#: calls these did not write it
AUTODIFF = {"backward", "gradient", "grad_as_array", "dynet_srnn_gradients"}


def arguments(case: dict) -> dict:
    """The arguments of ``srnn_step_backward`` for one case: h = tanh(W_xh x + W_hh h_prev + b_h)."""
    h = np.tanh(case["W_xh"] @ case["x"] + case["W_hh"] @ case["h_prev"] + case["b_h"][:, None])
    return {"dh": case["dh"], "x": case["x"], "h_prev": case["h_prev"], "h": h,
            "W_xh": case["W_xh"], "W_hh": case["W_hh"]}


def as_gradients(result) -> dict:
    """What a backward returned, as ``{name: float array}``, or a TypeError that says what is expected."""
    if not isinstance(result, (tuple, list)) or len(result) != len(OUTPUTS):
        raise TypeError(f"srnn_step_backward must return a tuple of {len(OUTPUTS)} arrays "
                        f"({', '.join(OUTPUTS)}), got {type(result).__name__}")
    try:
        return {name: np.asarray(value, dtype=float) for name, value in zip(OUTPUTS, result)}
    except (TypeError, ValueError):
        raise TypeError(f"srnn_step_backward must return NumPy arrays ({', '.join(OUTPUTS)})") from None


def srnn_step_backward(functions: dict, inputs: dict) -> dict:
    """The student's gradients on every case, ``{"case0": {"dx": ..., ...}, ...}``, and
    ``autodiff`` = 1.0 when the function hands the work to DyNet's backward pass."""
    fn = functions["srnn_step_backward"]
    out = {"autodiff": float(bool(AUTODIFF & probes.names_used(fn)))}
    for k, case in enumerate(inputs["cases"]):
        args = {name: np.array(value, dtype=float) for name, value in arguments(case).items()}   # copies
        out[f"case{k}"] = as_gradients(fn(**args))
    return out
