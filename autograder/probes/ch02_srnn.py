"""Probe of chapter 02's backward pass: run a student's
``srnn_step_backward(dh, x, h_prev, h, W_xh, W_hh)`` on the grader's cases.

Runs in the autograder's sandbox, so it imports no reference code. The cases come from
:mod:`autograder.reference.ch02_srnn` (``backward_inputs``); the step's output h is computed
here from them (eq 44 in NumPy), so the student gets the h of the very numbers it is judged at.
"""
from __future__ import annotations

import dis

import numpy as np

from autograder.probes import run_refusing
from course import gradcheck

OUTPUTS = ("dx", "dh_prev", "dW_xh", "dW_hh", "db_h")
# "By hand": a backward that reaches DyNet's own differentiation (an Expression's or a graph's
# backward, an expression's gradient, a parameter's grad_as_array) did not write the chain rule.
# Judged three ways, as chapter 06's probe judges "write the padding yourself":
# * by what runs, for the course's helper (course.gradcheck.dynet_srnn_gradients, the exercise's
#   own check): while the student's function runs it refuses to work and a profile hook notes any
#   run of its code, whatever route reaches it (getattr, an alias, a copy of its code object):
#   autograder.probes.run_refusing;
# * by what runs, for DyNet's methods where they are C functions (dyNET38 2.1): the same hook sees
#   their calls as "c_call" events, whatever route reaches them. On 2.2 they are Cython functions,
#   which a profile hook does not see;
# * by the attributes the function, the functions nested in it and the functions it calls from its
#   module read (`loss.backward()`, `x.gradient()`, `gradcheck.dynet_srnn_gradients`), on every DyNet.
# A function that removes the hook or restores the helper counts as having reached them.
AUTODIFF = ("backward", "gradient", "grad_as_array")
HELPER = gradcheck.dynet_srnn_gradients
HELPER_CODE = HELPER.__code__                  # taken when the sandbox loads the probes


def _refused(*args, **kwargs):
    raise RuntimeError("course.gradcheck cannot be used in srnn_step_backward: write the gradients by hand")


def _is_dynet_autodiff(function) -> bool:
    owner = getattr(function, "__objclass__", None) or type(getattr(function, "__self__", None))
    return getattr(function, "__name__", "") in AUTODIFF and "dynet" in getattr(owner, "__module__", "")


def attributes_read(fn, depth: int = 3) -> set:
    """The attribute names the code of ``fn`` reads (``obj.name``), following the functions nested
    in it and the functions of its module it calls, a few levels deep (as probes.names_used)."""
    seen, found, todo = set(), set(), [(fn, depth)]
    while todo:
        f, level = todo.pop()
        codes = [getattr(f, "__code__", None)]
        while codes:
            code = codes.pop()
            if code is None or code in seen:
                continue
            seen.add(code)
            found.update(i.argval for i in dis.get_instructions(code) if i.opname in ("LOAD_ATTR", "LOAD_METHOD"))
            codes.extend(k for k in code.co_consts if hasattr(k, "co_code"))
            if level:
                todo.extend((f.__globals__[n], level - 1) for n in code.co_names
                            if callable(f.__globals__.get(n)) and hasattr(f.__globals__[n], "__code__"))
    return found


def run_without_autodiff(fn, args: dict, convert=lambda result: result):
    """``(convert(fn(**args)), whether it reached DyNet's differentiation)``; a refusal it met (and
    did not catch) is counted as reaching it, and any other error of the student's is raised.
    ``convert`` runs while the helper still refuses (what it reads of the result may be the student's code)."""
    if set(AUTODIFF + ("dynet_srnn_gradients",)) & attributes_read(fn):
        return None, True
    return run_refusing(lambda: convert(fn(**args)), (HELPER,), (HELPER_CODE,), _refused, c_call=_is_dynet_autodiff)


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
        return {name: np.array(value, dtype=float) for name, value in zip(OUTPUTS, result)}   # copies
    except (TypeError, ValueError):
        raise TypeError(f"srnn_step_backward must return NumPy arrays ({', '.join(OUTPUTS)})") from None


def srnn_step_backward(functions: dict, inputs: dict) -> dict:
    """The student's gradients on every case, ``{"case0": {"dx": ..., ...}, ...}``, and
    ``autodiff`` = 1.0 when the function reached DyNet's differentiation in any case (its
    gradients are then not read)."""
    fn, out = functions["srnn_step_backward"], {}
    for k, case in enumerate(inputs["cases"]):
        args = {name: np.array(value, dtype=float) for name, value in arguments(case).items()}   # copies
        gradients, reached = run_without_autodiff(fn, args, as_gradients)
        if reached:
            return {"autodiff": 1.0}
        out[f"case{k}"] = gradients
    return {**out, "autodiff": 0.0}
