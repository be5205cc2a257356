"""Checking a gradient written by hand against DyNet's, as cs231n's assignments do.

Chapter 02 derives the backward pass of one S-RNN step (tutorial eq 44) and its exercise writes
it in NumPy; both compare it with what DyNet's own backward pass computes for the same step:

    want = dynet_srnn_gradients(dh, x, h_prev, W_xh, W_hh, b_h)
    rel_error(mine["dW_hh"], want["dW_hh"])          # about 1e-7: DyNet computes in float32
"""
from __future__ import annotations

import numpy as np

GRADIENTS = ("dx", "dh_prev", "dW_xh", "dW_hh", "db_h")


def rel_error(a, b, eps: float = 1e-8) -> float:
    """max |a - b| / max (|a| + |b|), over the whole array: cs231n's relative error, with the
    denominator taken over the array so that one entry near 0 does not blow it up."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"rel_error: shapes {a.shape} and {b.shape} differ")
    return float(np.abs(a - b).max() / max(float((np.abs(a) + np.abs(b)).max()), eps))


def dynet_srnn_gradients(dh, x, h_prev, W_xh, W_hh, b_h) -> dict:
    """DyNet's gradients of loss = sum(dh * h) for one S-RNN step h = tanh(W_xh x + W_hh h_prev + b_h)
    on a batch (columns): ``{"dx", "dh_prev", "dW_xh", "dW_hh", "db_h"}`` as NumPy arrays, the
    shapes of x, h_prev, W_xh, W_hh and b_h. The loss makes d loss / d h = dh, so these are the
    gradients a backward pass of the step must return for the upstream gradient dh. The step is
    DyNet's own SimpleRNNBuilder (its parameters set to these values), not a formula written here:
    the step is what exercise 02 grades."""
    from course import runtime
    dy = runtime.dynet()
    x, h_prev, dh = (np.asarray(v, dtype=float) for v in (x, h_prev, dh))
    dy.renew_cg()
    pc = dy.ParameterCollection()
    builder = dy.SimpleRNNBuilder(1, x.shape[0], h_prev.shape[0], pc)
    [params] = builder.get_parameters()                    # W_xh, W_hh, b_h, in that order
    P = dict(zip(("W_xh", "W_hh", "b_h"), params))
    for name, value in (("W_xh", W_xh), ("W_hh", W_hh), ("b_h", b_h)):
        P[name].set_value(np.asarray(value, dtype=float))
    X, H = dy.inputTensor(x, batched=True), dy.inputTensor(h_prev, batched=True)
    h = builder.initial_state([H]).add_input(X).output()
    loss = dy.sum_batches(dy.dot_product(dy.inputTensor(dh, batched=True), h))
    loss.forward()
    loss.backward(full=True)        # full: the gradients of the inputs X and H too, not only parameters'
    return {"dx": X.gradient().reshape(x.shape), "dh_prev": H.gradient().reshape(h_prev.shape),
            **{"d" + name: param.grad_as_array() for name, param in P.items()}}
