"""Probe of chapter 00's warm-up: run a student's ``mlp_nll`` and return numbers.

Runs in the autograder's sandbox next to student code, so it imports no
reference solution (see :mod:`autograder.probes`).
"""
from __future__ import annotations

import numpy as np

from autograder.probes import parameters


def mlp_nll(functions: dict, inputs: dict) -> dict:
    """The loss ``mlp_nll(p, x, y)`` returns on the grader's inputs, its dimension
    and, when it is a scalar, the gradient of every parameter: numbers only (the
    sandbox sends back arrays of floats).

    inputs: ``params`` (name -> array), ``x`` of shape ``(d_in, B)``, ``y`` (B ints).
    """
    from course import runtime
    dy = runtime.dynet()
    pc, P, p = parameters(inputs["params"])
    x = dy.inputTensor(np.asarray(inputs["x"]), batched=True)
    loss = functions["mlp_nll"](p, x, [int(label) for label in inputs["y"]])
    if not isinstance(loss, dy.Expression):
        return {"is_expression": 0.0}
    dims, batch = loss.dim()
    out = {"is_expression": 1.0, "dims": np.array(dims, dtype=float), "batch": float(batch),
           "value": np.asarray(loss.npvalue(), dtype=float).reshape(-1)}
    if int(np.prod(dims)) == 1 and batch == 1:     # DyNet back-propagates from scalars only
        loss.backward()
        out["grads"] = {name: param.grad_as_array() for name, param in P.items()}
    return out
