"""Independent NumPy (float64) implementations of every cell, written from the equations.

Deliberately a different shape convention from the DyNet code: rows are batch
elements, ``x`` is ``(B, d_in)``, a state vector is ``(B, d_h)`` and ``W v`` is
written ``v @ W.T``. Parameter names are the ones of
``autograder/reference/cells.py`` (the shared vocabulary, not shared code).

Each function is ``step(params, x, state) -> (new_state, parts)`` where
``parts`` holds the gates and the content layer of that step, used by the
weighted-sum tests.
"""
from __future__ import annotations

import numpy as np


def sigmoid(a):
    """The logistic function 1 / (1 + exp(-a)) (tutorial eq 52, sign corrected)."""
    return 1.0 / (1.0 + np.exp(-a))


def linear(params, x, h, w_x, w_h, b):
    """x W_x^T + h W_h^T + b for the named parameters (batch-first)."""
    return x @ params[w_x].T + h @ params[w_h].T + params[b]


def srnn(params, x, state):
    """Tutorial eq 44."""
    (h,) = state
    h_new = np.tanh(linear(params, x, h, "W_xh", "W_hh", "b_h"))
    return (h_new,), {"content": h_new}


def lstm_noforget(params, x, state):
    """Tutorial eqs 47-51: the memory cell adds i*u to c without forgetting."""
    h, c = state
    u = np.tanh(linear(params, x, h, "W_xu", "W_hu", "b_u"))
    i = sigmoid(linear(params, x, h, "W_xi", "W_hi", "b_i"))
    o = sigmoid(linear(params, x, h, "W_xo", "W_ho", "b_o"))
    c_new = c + i * u
    return (o * np.tanh(c_new), c_new), {"i": i, "o": o, "content": u}


def lstm(params, x, state):
    """Tutorial eqs 54-55."""
    h, c = state
    u = np.tanh(linear(params, x, h, "W_xu", "W_hu", "b_u"))
    i = sigmoid(linear(params, x, h, "W_xi", "W_hi", "b_i"))
    f = sigmoid(linear(params, x, h, "W_xf", "W_hf", "b_f"))
    o = sigmoid(linear(params, x, h, "W_xo", "W_ho", "b_o"))
    c_new = f * c + i * u
    return (o * np.tanh(c_new), c_new), {"i": i, "f": f, "o": o, "content": u}


def gru(params, x, state):
    """Tutorial eqs 56-59."""
    (h,) = state
    r = sigmoid(linear(params, x, h, "W_xr", "W_hr", "b_r"))
    z = sigmoid(linear(params, x, h, "W_xz", "W_hz", "b_z"))
    candidate = np.tanh(x @ params["W_xh"].T + (r * h) @ params["W_hh"].T + params["b_h"])
    h_new = h + z * (candidate - h)          # = (1 - z) h + z h~
    return (h_new,), {"r": r, "z": z, "content": candidate}


def lstm_minus_srnn(params, x, state):
    """Weighted-sum paper (workshop) eq 9: content = W_xu x, no bias."""
    h, c = state
    content = x @ params["W_xu"].T
    i = sigmoid(linear(params, x, h, "W_xi", "W_hi", "b_i"))
    f = sigmoid(linear(params, x, h, "W_xf", "W_hf", "b_f"))
    o = sigmoid(linear(params, x, h, "W_xo", "W_ho", "b_o"))
    c_new = f * c + i * content
    return (o * np.tanh(c_new), c_new), {"i": i, "f": f, "o": o, "content": content}


def lstm_minus_srnn_out(params, x, state):
    """Eq 10: eq 9 with h = tanh(c) (no output gate)."""
    h, c = state
    content = x @ params["W_xu"].T
    i = sigmoid(linear(params, x, h, "W_xi", "W_hi", "b_i"))
    f = sigmoid(linear(params, x, h, "W_xf", "W_hf", "b_f"))
    c_new = f * c + i * content
    return (np.tanh(c_new), c_new), {"i": i, "f": f, "content": content}


def lstm_minus_srnn_hidden(params, x, state):
    """Later version, section 3.1: gates sigma(W x + b) from the input only."""
    _, c = state
    content = x @ params["W_xu"].T
    i, f, o = (sigmoid(x @ params["W_x" + g].T + params["b_" + g]) for g in "ifo")
    c_new = f * c + i * content
    return (o * np.tanh(c_new), c_new), {"i": i, "f": f, "o": o, "content": content}


def _ran(params, x, state, g):
    """RAN paper eq 1: gates read c_{t-1}; h = g(c)."""
    _, c = state
    content = x @ params["W_xu"].T + params["b_u"]
    i = sigmoid(c @ params["W_ci"].T + x @ params["W_xi"].T + params["b_i"])
    f = sigmoid(c @ params["W_cf"].T + x @ params["W_xf"].T + params["b_f"])
    c_new = f * c + i * content
    return (g(c_new), c_new), {"i": i, "f": f, "content": content}


def ran_identity(params, x, state):
    return _ran(params, x, state, lambda c: c.copy())


def ran_tanh(params, x, state):
    return _ran(params, x, state, np.tanh)


#: registry name -> NumPy step (the same names as autograder.reference.cells.CELLS)
NUMPY_STEPS = {
    "srnn": srnn,
    "lstm-noforget": lstm_noforget,
    "lstm": lstm,
    "gru": gru,
    "lstm-srnn": lstm_minus_srnn,
    "lstm-srnn-out": lstm_minus_srnn_out,
    "lstm-srnn-hidden": lstm_minus_srnn_hidden,
    "lstm-gates": srnn,
    "ran-identity": ran_identity,
    "ran-tanh": ran_tanh,
}


def run(name, params, xs, state0):
    """Run cell ``name`` over ``xs`` (T, B, d_in) from ``state0``; list of (state, parts) per step."""
    step = NUMPY_STEPS[name]
    state, out = tuple(state0), []
    for x in xs:
        state, parts = step(params, x, state)
        out.append((state, parts))
    return out
