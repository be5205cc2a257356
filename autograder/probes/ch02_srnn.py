"""Probe of chapter 02's backward pass: run a student's
``srnn_step_backward(dh, x, h_prev, h, W_xh, W_hh)`` on the grader's cases.

Runs in the autograder's sandbox, so it imports no reference code. The cases come from
:mod:`autograder.reference.ch02_srnn` (``backward_inputs``); the step's output h is computed
here from them (eq 44 in NumPy), so the student gets the h of the very numbers it is judged at.
"""
from __future__ import annotations

import sys
import threading

import numpy as np

OUTPUTS = ("dx", "dh_prev", "dW_xh", "dW_hh", "db_h")
# "By hand" is judged by what runs, not by names: while the student's function runs, a profile
# hook notes every call of DyNet's own differentiation (an Expression's or a graph's backward, an
# expression's gradient, a parameter's grad_as_array), whatever route reaches it (getattr with a
# built name, an alias, course.gradcheck's helper, which calls them); DyNet's methods are C
# functions, so the hook sees them as "c_call" events.
AUTODIFF = ("backward", "gradient", "grad_as_array")


def _is_autodiff(function) -> bool:
    owner = getattr(function, "__objclass__", None) or type(getattr(function, "__self__", None))
    return getattr(function, "__name__", "") in AUTODIFF and "dynet" in getattr(owner, "__module__", "")


def run_without_autodiff(call):
    """``(call()'s result, whether it reached DyNet's differentiation)``. A call that removes the
    hook is counted as having reached it."""
    reached = []

    def hook(frame, event, arg):
        if event == "c_call" and _is_autodiff(arg):
            reached.append(arg.__name__)

    saved_profile, saved_thread_profile = sys.getprofile(), threading.getprofile()
    sys.setprofile(hook)
    threading.setprofile(hook)
    try:
        result = call()
        intact = sys.getprofile() is hook
    finally:
        sys.setprofile(saved_profile)
        threading.setprofile(saved_thread_profile)
    return result, bool(reached) or not intact


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
    ``autodiff`` = 1.0 when the function reached DyNet's differentiation in any case."""
    fn, out, autodiff = functions["srnn_step_backward"], {}, False
    for k, case in enumerate(inputs["cases"]):
        args = {name: np.array(value, dtype=float) for name, value in arguments(case).items()}   # copies
        result, reached = run_without_autodiff(lambda: fn(**args))
        out[f"case{k}"], autodiff = as_gradients(result), autodiff or reached
    return {**out, "autodiff": float(autodiff)}
