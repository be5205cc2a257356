"""Probes of chapter 08 (the weighted-sum view): run a student's functions, return numbers.

Runs in the autograder's sandbox, so it imports no reference code. The grader's
inputs come from :mod:`autograder.reference.ch08_weighted_sum` (``make_inputs``);
every result is a flat dict of arrays (no nesting, keys without "/").
"""
from __future__ import annotations

import inspect

import numpy as np

RECORDED = ("i", "f", "content")     # what the weights need from every step


def _one_array(value, function: str, shape: str):
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{function} must return one array of shape {shape}, "
                        f"got {type(value).__name__}") from None


def memory_weights(functions: dict, inputs: dict) -> dict:
    """The student's ``memory_weights(i, f)`` on every case: ``{"w0": (T, T, d_h), ...}``."""
    fn = functions["memory_weights"]
    return {f"w{k}": _one_array(fn(np.array(i), np.array(f)), "memory_weights", "(T, T, d_h)")
            for k, (i, f) in enumerate(inputs["cases"])}


def most_influential(functions: dict, inputs: dict) -> dict:
    """The student's ``most_influential(w)`` on every case: ``{"v0": (T,), ...}``."""
    fn = functions["most_influential"]
    return {f"v{k}": _one_array(fn(np.array(w)), "most_influential", "(T,)")
            for k, w in enumerate(inputs["cases"])}


def record_gates(functions: dict, inputs: dict) -> dict:
    """What each step function stores in ``record``: ``{"NAME.KEY": (steps, d_h, batch)}``,
    and its own memory cell, ``"NAME.c"`` at every step and ``"NAME.c0"`` at the start
    (so the judge can check that the record rebuilds the step's own c_t).

    ``"NAME.accepts_record"`` is 1.0 when the function has a ``record`` parameter
    (else nothing else is reported for it); a key it did not store is left out.
    """
    from course import runtime
    dy = runtime.dynet()
    out = {}
    for name, case in inputs["cases"].items():
        step = functions[name]
        accepts = "record" in inspect.signature(step).parameters
        out[f"{name}.accepts_record"] = np.array(float(accepts))
        if not accepts:
            continue
        dy.renew_cg()
        p = {k: dy.inputTensor(v) for k, v in case["params"].items()}
        state = tuple(dy.inputTensor(s, batched=True) for s in case["state0"])
        steps, cells = [], []
        for x in case["xs"]:
            record = {}
            state = step(p, dy.inputTensor(x, batched=True), state, record=record)
            steps.append(record)
            cells.append(state[1].npvalue().reshape(state[1].dim()[0][0], -1))
        out[f"{name}.c"] = np.array(cells)
        out[f"{name}.c0"] = np.asarray(case["state0"][1], dtype=float)
        for key in RECORDED:
            if all(key in r for r in steps):
                out[f"{name}.{key}"] = np.array(
                    [r[key].npvalue().reshape(r[key].dim()[0][0], -1) for r in steps])
    return out
