"""The memory cell as an element-wise weighted sum (reference for chapter 08).

Unrolling c_t = i_t * c~_t + f_t * c_{t-1} gives ([WS] eq 8, [RAN] eq 3)::

    c_t = sum_{j=1..t} w_j^t * c~_j  +  w_0^t * c_0,
    w_j^t = i_j * prod_{k=j+1..t} f_k,     w_0^t = prod_{k=1..t} f_k

(all products element-wise, so every w_j^t is a vector of d_h weights in
[0, 1]). The papers start the sum at j = 0 with c_0 as the first "content";
here the initial-state term is kept apart as ``w0``. The LSTM without forget
gate is the case f = 1. The GRU is the same sum with i = z and f = 1 - z
([T] eq 59, [RAN] section 4.4), so its weights, w0 included, add up to 1 in
every component: a weighted *average*.

Arrays: ``w[t, j]`` is the vector w_j^t (shape ``(T, T, d_h)``, zero for
j > t); ``w0[t]`` is the weight of the initial state after step t. Time is
0-based: ``t = 0`` is the first input.

[WS]  "LSTM as a Dynamically Computed Element-wise Weighted Sum" (workshop).
[RAN] "Recurrent Additive Networks". [T] the tutorial chapter.
"""
from __future__ import annotations

import inspect

import dynet as dy
import numpy as np


# --------------------------------------------------------------------------
# Running a cell and recording its gates
# --------------------------------------------------------------------------
def _as_expression(value):
    if isinstance(value, np.ndarray):
        return dy.inputTensor(value)
    if hasattr(value, "expr"):                   # dy.Parameters, read only (no gradient needed)
        return value.expr(False)
    raise TypeError(f"parameter must be a dy.Parameters or a numpy array, got {type(value).__name__}")


def run_and_record(cell, params, inputs, state0=None):
    """Run ``cell`` over one sequence and return every state, gate and content layer.

    cell:    an ``autograder.reference.cells`` Cell (its step accepts ``record=``).
    params:  dict name -> ``dy.Parameters`` or NumPy array, as ``cell.shapes`` names them.
    inputs:  array ``(T, d_in)``: the inputs x_1..x_T of one sentence.
    state0:  tuple of ``(d_h,)`` arrays, or None for zeros.

    Starts a new computation graph. Returns a dict of float64 arrays, each
    ``(T, d_h)``: ``"h"``, ``"c"`` (cells with a memory cell), the recorded gates
    (``"i"``, ``"f"``, ``"o"``, ``"z"``, ``"r"`` as the cell has them) and
    ``"content"``; plus ``"state0"``, the initial state as a tuple of arrays.
    """
    inputs = np.asarray(inputs, dtype=float)
    if inputs.ndim != 2:
        raise ValueError(f"inputs must be (T, d_in) for one sentence, got shape {inputs.shape}")
    missing = set(cell.shapes(inputs.shape[1], 1)) - set(params)
    if missing:
        raise KeyError(f"params for cell {cell.name!r} lack {sorted(missing)}")
    if "record" not in inspect.signature(cell.step).parameters:
        raise TypeError(f"cell {cell.name!r}: its step function must accept record= to expose its "
                        f"gates (the reference cells in autograder/reference/cells.py do)")
    d_h = _hidden_size(cell, params)
    if state0 is None:
        state0 = tuple(np.zeros(d_h) for _ in range(cell.n_state))
    state0 = tuple(np.asarray(s, dtype=float) for s in state0)
    if len(state0) != cell.n_state:
        raise ValueError(f"cell {cell.name!r} has {cell.n_state} state vectors, state0 has {len(state0)}")

    dy.renew_cg()
    p = {name: _as_expression(value) for name, value in params.items()}
    state = tuple(dy.inputTensor(s) for s in state0)
    steps = []
    for x in inputs:
        record = {}
        state = cell.step(p, dy.inputTensor(x), state, record=record)
        steps.append((state, record))

    trace = {"h": np.array([s[0].npvalue() for s, _ in steps], dtype=float), "state0": state0}
    if cell.n_state == 2:
        trace["c"] = np.array([s[1].npvalue() for s, _ in steps], dtype=float)
    for key in steps[0][1]:
        trace[key] = np.array([r[key].npvalue() for _, r in steps], dtype=float)
    return trace


def _hidden_size(cell, params):
    """d_h: every parameter of every cell has d_h rows (weights (d_h, .), biases (d_h,))."""
    value = params[next(iter(cell.shapes(1, 1)))]
    arr = value if isinstance(value, np.ndarray) else value.as_array()
    return arr.shape[0]


# --------------------------------------------------------------------------
# The weights
# --------------------------------------------------------------------------
def memory_weights(i, f=None):
    """The weights w_j^t = i_j * prod_{k=j+1..t} f_k ([WS] eq 8) and w0.

    i, f: ``(T, d_h)`` input and forget gates of one sentence (``f=None``: no
    forget gate, f = 1). Returns ``(w, w0)`` with ``w`` of shape
    ``(T, T, d_h)`` indexed ``w[t, j]`` (zero for j > t) and ``w0`` of shape
    ``(T, d_h)``. Computed by the dynamic program w_j^t = w_j^{t-1} * f_t,
    w_t^t = i_t, which never divides by a small forget gate.
    """
    i = np.asarray(i, dtype=float)
    f = np.ones_like(i) if f is None else np.asarray(f, dtype=float)
    if i.shape != f.shape or i.ndim != 2:
        raise ValueError(f"i and f must both be (T, d_h); got {i.shape} and {f.shape}")
    T, d_h = i.shape
    w = np.zeros((T, T, d_h))
    w0 = np.zeros((T, d_h))
    previous_w0 = np.ones(d_h)
    for t in range(T):
        if t > 0:
            w[t, :t] = w[t - 1, :t] * f[t]
        w[t, t] = i[t]
        w0[t] = previous_w0 * f[t]
        previous_w0 = w0[t]
    return w, w0


def gru_weights(z):
    """GRU weights: eq 59 is the sum above with i = z, f = 1 - z ([RAN] section 4.4).

    w_j^t = z_j * prod_{k=j+1..t} (1 - z_k); w0 = prod_{k=1..t} (1 - z_k).
    For every t and every component, sum_j w_j^t + w0^t = 1.
    """
    z = np.asarray(z, dtype=float)
    return memory_weights(z, 1.0 - z)


def trace_weights(trace):
    """Weights, contents and memory of a :func:`run_and_record` trace.

    Returns a dict: ``w``, ``w0`` (see :func:`memory_weights`), ``content``
    (``(T, d_h)``, the c~_j or the GRU's h~_j), ``memory`` (c_t, or h_t for the
    GRU) and ``memory0`` (c_0 or h_0). Raises ValueError for a cell without an
    additive memory (S-RNN, LSTM - GATES).
    """
    if "z" in trace:                                   # GRU: memory = h
        w, w0 = gru_weights(trace["z"])
        return {"w": w, "w0": w0, "content": trace["content"],
                "memory": trace["h"], "memory0": trace["state0"][0]}
    if "i" in trace and "c" in trace:
        w, w0 = memory_weights(trace["i"], trace.get("f"))
        return {"w": w, "w0": w0, "content": trace["content"],
                "memory": trace["c"], "memory0": trace["state0"][1]}
    raise ValueError("this cell has no additive memory (no input gate and memory cell, no GRU "
                     "update gate), so its state is not a weighted sum; use an LSTM, GRU, "
                     "ablated LSTM or RAN")


def weighted_sum(w, w0, content, memory0):
    """sum_j w[t, j] * content[j] + w0[t] * memory0 for every t: ``(T, d_h)``."""
    return np.einsum("tjd,jd->td", w, content) + w0 * memory0


def check_weighted_sum(trace, atol=1e-5):
    """Check that the weights reproduce the memory of a trace; return the max abs error.

    Raises AssertionError naming the worst step if the error exceeds ``atol``.
    """
    parts = trace_weights(trace)
    rebuilt = weighted_sum(parts["w"], parts["w0"], parts["content"], parts["memory0"])
    error = np.abs(rebuilt - parts["memory"])
    worst = float(error.max())
    if worst > atol:
        t = int(np.unravel_index(error.argmax(), error.shape)[0])
        raise AssertionError(f"weighted sum differs from the memory cell by {worst:.3g} "
                             f"(> {atol}) at step t={t}: the weights or the recorded gates are wrong")
    return worst


# --------------------------------------------------------------------------
# The most influential previous word ([RAN] eq 8)
# --------------------------------------------------------------------------
def most_influential(w, score="max"):
    """For every step t, the previous word j < t with the strongest weight.

    [RAN] eq 8: v_t = argmax_j ( max_{m=1..d_h} w_j^t(m) ), "which previous word
    had the overall strongest influence", drawn in its Figure 2 as an arrow
    from word t to its "most influential predecessor (i.e. the previous word
    with the highest weighted component)"; so j ranges over the predecessors
    j < t (the extracted equation's upper limit is garbled, the text is clear).

    w:     ``(T, T, d_h)`` weights indexed ``w[t, j]``.
    score: ``"max"`` (eq 8: the largest component) or ``"l2"`` (the L2 norm,
           the quantity the weighted-sum paper's heatmaps show).
    Returns int array ``(T,)``; ``-1`` at t = 0, which has no predecessor.
    """
    w = np.asarray(w)
    if score == "max":
        strength = w.max(axis=-1)
    elif score == "l2":
        strength = np.linalg.norm(w, axis=-1)
    else:
        raise ValueError(f"score must be 'max' (RAN eq 8) or 'l2', got {score!r}")
    T = strength.shape[0]
    result = np.full(T, -1, dtype=int)
    for t in range(1, T):
        result[t] = int(np.argmax(strength[t, :t]))
    return result
