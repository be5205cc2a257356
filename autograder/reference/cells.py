"""Reference implementations of every recurrent cell of the course (instructors only).

THE RULE: graded step functions live only here; ``course/`` holds the machinery.
``rnn_step``, ``lstm_no_forget_step``, ``lstm_step``, ``gru_step`` and the
chapter-08 ablations (``lstm_minus_srnn_step``, ``lstm_minus_srnn_out_step``,
``lstm_minus_srnn_hidden_step``, ``ran_step`` and its two variants) are answers
to exercises. The student release gets ``course/`` (data, models, training,
plots, DyNet builder wrappers) and never this directory; later chapters that
need a working LSTM use the builder wrapper of ``course.lm``.
``tests/test_cells.py::test_course_package_holds_no_graded_cell`` enforces it.

Sources cited below (the course's seed texts):

* [T]   tutorial chapter "Language Models 4: Recurrent Neural Network Language
        Models" (eqs 44-61). Its eq 52 prints the logistic as 1/(1 - exp(-x));
        the correct form, used here, is 1/(1 + exp(-x)) (``dy.logistic``).
* [WS]  "Long Short-Term Memory as a Dynamically Computed Element-wise Weighted
        Sum", workshop version (eqs 2-11); [WS2] its later version (section 3.1).
* [RAN] "Recurrent Additive Networks" (eqs 1-8).
* [OD]  "A Way out of the Odyssey" (section 6.2: forget bias of 1.0).

Every step follows the contract of :mod:`course.cell`::

    new_state = step(p, x, state, record=None)

``x`` is ``((d_in,), B)``, every state vector ``((d_h,), B)``. The extra
keyword ``record`` is optional and not part of the contract students
implement: when a dict is given, the step stores its gates and its content
layer in it (``"i"``, ``"f"``, ``"o"``, ``"z"``, ``"r"``, ``"content"``), which
is how :mod:`autograder.reference.weights` reads the weighted-sum weights.

Parameter layout
----------------
One matrix per gate and per input, named after the tutorial's subscripts:
``W_xg`` (shape ``(d_h, d_in)``) reads the input x for gate/layer g,
``W_hg`` (``(d_h, d_h)``) reads the previous output h, ``W_cg`` (``(d_h, d_h)``,
RAN only) reads the previous memory cell c, ``b_g`` (``(d_h,)``) is its bias.
Letters: ``u`` update/content layer (the papers' c~), ``i`` input gate,
``f`` forget gate, ``o`` output gate, ``r`` reset gate, ``z`` update gate,
``h`` the S-RNN layer / GRU candidate. Per-gate matrices read like the
equations; in a measurement at batch 32 they ran as fast as
``dy.VanillaLSTMBuilder`` (one stacked matrix was not faster), so the course
keeps the readable layout. States: ``(h,)`` for S-RNN/GRU, ``(h, c)`` for every
cell with a memory cell (``new_state[0]`` is always the output h).

Initialisation: matrices Glorot, biases zero (done by ``course.lm``), except
the forget-gate bias ``b_f`` of every cell that has one, initialised to
``forget_bias`` (default 1.0, [T] section 6.4 after eq 55, [OD] section 6.2)
through ``Cell.init``.

DyNet's own builders (dyNET38 2.1, verified by ``tests/test_cells.py``)
-----------------------------------------------------------------------
``dy.VanillaLSTMBuilder(1, d_in, d_h, pc, forget_bias=1.0)``:
``get_parameters()[0] == [W_x (4 d_h, d_in), W_h (4 d_h, d_h), b (4 d_h,)]``,
gate blocks stacked in the order **i, f, o, g** (g = the tanh content layer,
our ``u``): rows ``[0:d_h]`` = i, ``[d_h:2d_h]`` = f, ``[2d_h:3d_h]`` = o,
``[3d_h:4d_h]`` = u. The bias *parameter* starts at 0 everywhere; the
``forget_bias`` argument (default 1.0) is a constant the builder adds inside
the forget gate's sigmoid at every step, f = sigmoid(W_xf x + W_hf h + b_f + 1).
So a copy into this course's LSTM sets ``b_f = b[d_h:2d_h] + forget_bias``
(:func:`params_from_vanilla_lstm_builder`). ``state.s()`` is ``[c, h]`` and
``initial_state([c0, h0])`` takes them in that order (ours is ``(h, c)``).

``dy.GRUBuilder(1, d_in, d_h, pc)``: ``get_parameters()[0]`` holds nine
separate parameters ``[W_xz, W_hz, b_z, W_xr, W_hr, b_r, W_xh, W_hh, b_h]`` and
computes exactly [T] eqs 56-59: the reset gate multiplies h_{t-1} *before*
``W_hh`` (eq 58) and h_t = (1 - z) * h_{t-1} + z * h~ (eq 59, z close to 1
takes the new candidate). No difference from the tutorial; the copy is 1:1
(:func:`params_from_gru_builder`).
"""
from __future__ import annotations

import dynet as dy
import numpy as np

from course.cell import Cell


# --------------------------------------------------------------------------
# S-RNN
# --------------------------------------------------------------------------
def rnn_step(p, x, state, record=None):
    """Elman S-RNN, [T] eq 44: h_t = tanh(W_xh x_t + W_hh h_{t-1} + b_h).

    ``p``: ``W_xh (d_h, d_in)``, ``W_hh (d_h, d_h)``, ``b_h (d_h,)``.
    ``state``: ``(h_prev,)``; returns ``(h,)``. Also [WS] eq 1 and the
    "LSTM - GATES" ablation of [WS2] section 3.1.
    """
    (h_prev,) = state
    h = dy.tanh(dy.affine_transform([p["b_h"], p["W_xh"], x, p["W_hh"], h_prev]))
    if record is not None:
        record["content"] = h
    return (h,)


def _gate_shapes(letters, d_in, d_h, recurrent=True):
    """W_x<g> (d_h, d_in), W_h<g> (d_h, d_h) when the gate reads h, and b_<g> (d_h,) per letter."""
    shapes = {}
    for g in letters:
        shapes.update({"W_x" + g: (d_h, d_in), **({"W_h" + g: (d_h, d_h)} if recurrent else {}),
                       "b_" + g: (d_h,)})
    return shapes


def _rnn_shapes(d_in, d_h):
    return {"W_xh": (d_h, d_in), "W_hh": (d_h, d_h), "b_h": (d_h,)}


# "LSTM - GATES" ([WS2] section 3.1) removes the memory cell and the output
# layer, leaving the S-RNN alone: the very same step and parameters.
lstm_minus_gates_step = rnn_step


# --------------------------------------------------------------------------
# LSTM without forget gate, LSTM with forget gate
# --------------------------------------------------------------------------
def _gate(p, g, x, h_prev):
    """sigma(W_xg x + W_hg h_prev + b_g), the gate pattern of [T] eqs 48, 49, 54."""
    return dy.logistic(dy.affine_transform([p["b_" + g], p["W_x" + g], x, p["W_h" + g], h_prev]))


def lstm_no_forget_step(p, x, state, record=None):
    """LSTM without forget gate, [T] eqs 47-51.

    u_t = tanh(W_xu x_t + W_hu h_{t-1} + b_u)        (47)
    i_t = sigma(W_xi x_t + W_hi h_{t-1} + b_i)       (48)
    o_t = sigma(W_xo x_t + W_ho h_{t-1} + b_o)       (49)
    c_t = i_t * u_t + c_{t-1}                        (50)
    h_t = o_t * tanh(c_t)                            (51)

    ``state``: ``(h_prev, c_prev)``; returns ``(h, c)``.
    """
    h_prev, c_prev = state
    u = dy.tanh(dy.affine_transform([p["b_u"], p["W_xu"], x, p["W_hu"], h_prev]))
    i = _gate(p, "i", x, h_prev)
    o = _gate(p, "o", x, h_prev)
    c = dy.cmult(i, u) + c_prev
    h = dy.cmult(o, dy.tanh(c))
    if record is not None:
        record.update(i=i, o=o, content=u)
    return (h, c)


def _lstm_no_forget_shapes(d_in, d_h):
    return _gate_shapes("uio", d_in, d_h)


def lstm_step(p, x, state, record=None):
    """LSTM with forget gate, [T] eqs 47-49 with 54-55 (also [WS] eqs 2-7).

    u_t = tanh(W_xu x_t + W_hu h_{t-1} + b_u)        (54)
    i_t = sigma(W_xi x_t + W_hi h_{t-1} + b_i)
    f_t = sigma(W_xf x_t + W_hf h_{t-1} + b_f)
    o_t = sigma(W_xo x_t + W_ho h_{t-1} + b_o)
    c_t = i_t * u_t + f_t * c_{t-1}                  (55)
    h_t = o_t * tanh(c_t)

    ``state``: ``(h_prev, c_prev)``; returns ``(h, c)``. ``b_f`` starts at the
    cell's ``forget_bias`` (see :func:`lstm_cell`).
    """
    h_prev, c_prev = state
    u = dy.tanh(dy.affine_transform([p["b_u"], p["W_xu"], x, p["W_hu"], h_prev]))
    i = _gate(p, "i", x, h_prev)
    f = _gate(p, "f", x, h_prev)
    o = _gate(p, "o", x, h_prev)
    c = dy.cmult(i, u) + dy.cmult(f, c_prev)
    h = dy.cmult(o, dy.tanh(c))
    if record is not None:
        record.update(i=i, f=f, o=o, content=u)
    return (h, c)


def _lstm_shapes(d_in, d_h):
    return _gate_shapes("uifo", d_in, d_h)


# --------------------------------------------------------------------------
# GRU
# --------------------------------------------------------------------------
def gru_step(p, x, state, record=None):
    """Gated recurrent unit, [T] eqs 56-59.

    r_t = sigma(W_xr x_t + W_hr h_{t-1} + b_r)                 (56)
    z_t = sigma(W_xz x_t + W_hz h_{t-1} + b_z)                 (57)
    h~_t = tanh(W_xh x_t + W_hh (r_t * h_{t-1}) + b_h)         (58)
    h_t = (1 - z_t) * h_{t-1} + z_t * h~_t                     (59)

    ``state``: ``(h_prev,)``; returns ``(h,)``.
    """
    (h_prev,) = state
    r = _gate(p, "r", x, h_prev)
    z = _gate(p, "z", x, h_prev)
    h_tilde = dy.tanh(dy.affine_transform([p["b_h"], p["W_xh"], x, p["W_hh"], dy.cmult(r, h_prev)]))
    h = dy.cmult(-z + 1, h_prev) + dy.cmult(z, h_tilde)   # 1 - z, as DyNet 2.2 computes it too
    if record is not None:
        record.update(r=r, z=z, content=h_tilde)
    return (h,)


def _gru_shapes(d_in, d_h):
    return _gate_shapes("rzh", d_in, d_h)


# --------------------------------------------------------------------------
# The weighted-sum ablations ([WS] eqs 9-10, [WS2] section 3.1)
# --------------------------------------------------------------------------
def lstm_minus_srnn_step(p, x, state, record=None):
    """LSTM - S-RNN, [WS] eq 9: the content layer is a linear map of x alone.

    c~_t = W_xu x_t                       (no bias, as printed in eq 9)
    i_t, f_t, o_t as in the LSTM (read x_t and h_{t-1})
    c_t = i_t * c~_t + f_t * c_{t-1}
    h_t = o_t * tanh(c_t)
    """
    h_prev, c_prev = state
    content = p["W_xu"] * x
    i = _gate(p, "i", x, h_prev)
    f = _gate(p, "f", x, h_prev)
    o = _gate(p, "o", x, h_prev)
    c = dy.cmult(i, content) + dy.cmult(f, c_prev)
    h = dy.cmult(o, dy.tanh(c))
    if record is not None:
        record.update(i=i, f=f, o=o, content=content)
    return (h, c)


def _lstm_minus_srnn_shapes(d_in, d_h):
    return {"W_xu": (d_h, d_in), **_gate_shapes("ifo", d_in, d_h)}


def lstm_minus_srnn_out_step(p, x, state, record=None):
    """LSTM - S-RNN - OUT, [WS] eq 10: eq 9 without the output gate.

    c~_t = W_xu x_t;  i_t, f_t read x_t and h_{t-1};
    c_t = i_t * c~_t + f_t * c_{t-1};  h_t = tanh(c_t)
    """
    h_prev, c_prev = state
    content = p["W_xu"] * x
    i = _gate(p, "i", x, h_prev)
    f = _gate(p, "f", x, h_prev)
    c = dy.cmult(i, content) + dy.cmult(f, c_prev)
    h = dy.tanh(c)
    if record is not None:
        record.update(i=i, f=f, content=content)
    return (h, c)


def _lstm_minus_srnn_out_shapes(d_in, d_h):
    return {"W_xu": (d_h, d_in), **_gate_shapes("if", d_in, d_h)}


def _input_gate(p, g, x):
    """sigma(W_xg x + b_g): a gate that reads the input only ([WS2] section 3.1)."""
    return dy.logistic(dy.affine_transform([p["b_" + g], p["W_x" + g], x]))


def lstm_minus_srnn_hidden_step(p, x, state, record=None):
    """LSTM - S-RNN - HIDDEN, [WS2] section 3.1: every gate reads x_t only.

    c~_t = W_xu x_t;  g_t = sigma(W_xg x_t + b_g) for g in i, f, o;
    c_t = i_t * c~_t + f_t * c_{t-1};  h_t = o_t * tanh(c_t)

    The paper computes "each gate" from the input alone, so the output gate
    stays (as in a QRNN/SRU, which it names) but no longer reads h_{t-1}; the
    only recurrence left is the additive one in the memory cell. h_{t-1} is
    still part of the state (contract) but unused.
    """
    _, c_prev = state
    content = p["W_xu"] * x
    i = _input_gate(p, "i", x)
    f = _input_gate(p, "f", x)
    o = _input_gate(p, "o", x)
    c = dy.cmult(i, content) + dy.cmult(f, c_prev)
    h = dy.cmult(o, dy.tanh(c))
    if record is not None:
        record.update(i=i, f=f, o=o, content=content)
    return (h, c)


def _lstm_minus_srnn_hidden_shapes(d_in, d_h):
    return {"W_xu": (d_h, d_in), **_gate_shapes("ifo", d_in, d_h, recurrent=False)}


# --------------------------------------------------------------------------
# Recurrent additive networks ([RAN] eq 1)
# --------------------------------------------------------------------------
def ran_step(p, x, state, output="tanh", record=None):
    """Recurrent additive network, [RAN] eq 1 (its footnote 2: biases present).

    c~_t = W_xu x_t + b_u
    i_t = sigma(W_ci c_{t-1} + W_xi x_t + b_i)
    f_t = sigma(W_cf c_{t-1} + W_xf x_t + b_f)
    c_t = i_t * c~_t + f_t * c_{t-1}
    h_t = g(c_t),  g = identity ("RAN (identity)") or tanh ("RAN (tanh)")

    The gates read the previous *memory cell* c_{t-1}, not h_{t-1} ([RAN]
    section 4.3). ``state``: ``(h_prev, c_prev)``; returns ``(h, c)``. The
    reduced form [RAN] eq 2 (no content layer) is eq 1 with W_xu = I, b_u = 0.
    """
    _, c_prev = state
    content = dy.affine_transform([p["b_u"], p["W_xu"], x])
    i = dy.logistic(dy.affine_transform([p["b_i"], p["W_ci"], c_prev, p["W_xi"], x]))
    f = dy.logistic(dy.affine_transform([p["b_f"], p["W_cf"], c_prev, p["W_xf"], x]))
    c = dy.cmult(i, content) + dy.cmult(f, c_prev)
    if output == "identity":
        h = c
    elif output == "tanh":
        h = dy.tanh(c)
    else:
        raise ValueError(f"ran_step: output must be 'identity' or 'tanh', got {output!r}")
    if record is not None:
        record.update(i=i, f=f, content=content)
    return (h, c)


def ran_identity_step(p, x, state, record=None):
    """RAN with identity output, h_t = c_t ([RAN] eq 1, g = identity)."""
    return ran_step(p, x, state, output="identity", record=record)


def ran_tanh_step(p, x, state, record=None):
    """RAN with tanh output, h_t = tanh(c_t) ([RAN] eq 1, g = tanh)."""
    return ran_step(p, x, state, output="tanh", record=record)


def _ran_shapes(d_in, d_h):
    return {"W_xu": (d_h, d_in), "b_u": (d_h,),
            "W_ci": (d_h, d_h), "W_xi": (d_h, d_in), "b_i": (d_h,),
            "W_cf": (d_h, d_h), "W_xf": (d_h, d_in), "b_f": (d_h,)}


# --------------------------------------------------------------------------
# Cells and the registry
# --------------------------------------------------------------------------
def forget_bias_init(forget_bias=1.0):
    """``Cell.init`` that sets ``b_f`` to ``forget_bias`` and leaves the rest default."""
    forget_bias = float(forget_bias)

    def init(name, shape):
        if name == "b_f":
            return np.full(shape, forget_bias, dtype=np.float32)
        return None

    init.forget_bias = forget_bias
    return init


def lstm_cell(forget_bias=1.0):
    """LSTM with forget gate ([T] eqs 54-55), ``b_f`` initialised to ``forget_bias``."""
    return Cell("lstm", lstm_step, _lstm_shapes, n_state=2, init=forget_bias_init(forget_bias))


def lstm_minus_srnn_cell(forget_bias=1.0):
    return Cell("lstm-srnn", lstm_minus_srnn_step, _lstm_minus_srnn_shapes, n_state=2,
                init=forget_bias_init(forget_bias))


def lstm_minus_srnn_out_cell(forget_bias=1.0):
    return Cell("lstm-srnn-out", lstm_minus_srnn_out_step, _lstm_minus_srnn_out_shapes, n_state=2,
                init=forget_bias_init(forget_bias))


def lstm_minus_srnn_hidden_cell(forget_bias=1.0):
    return Cell("lstm-srnn-hidden", lstm_minus_srnn_hidden_step, _lstm_minus_srnn_hidden_shapes,
                n_state=2, init=forget_bias_init(forget_bias))


def ran_cell(output="tanh", forget_bias=1.0):
    """RAN ([RAN] eq 1) with output ``"identity"`` or ``"tanh"``; ``b_f`` starts at ``forget_bias``."""
    steps = {"identity": ran_identity_step, "tanh": ran_tanh_step}
    if output not in steps:
        raise ValueError(f"ran_cell: output must be 'identity' or 'tanh', got {output!r}")
    return Cell("ran-" + output, steps[output], _ran_shapes, n_state=2,
                init=forget_bias_init(forget_bias))


SRNN = Cell("srnn", rnn_step, _rnn_shapes, n_state=1)
LSTM_NO_FORGET = Cell("lstm-noforget", lstm_no_forget_step, _lstm_no_forget_shapes, n_state=2)
GRU = Cell("gru", gru_step, _gru_shapes, n_state=1)
LSTM_MINUS_GATES = Cell("lstm-gates", lstm_minus_gates_step, _rnn_shapes, n_state=1)

_FORGET_GATE_FACTORIES = {
    "lstm": lstm_cell,
    "lstm-srnn": lstm_minus_srnn_cell,
    "lstm-srnn-out": lstm_minus_srnn_out_cell,
    "lstm-srnn-hidden": lstm_minus_srnn_hidden_cell,
    "ran-identity": lambda forget_bias=1.0: ran_cell("identity", forget_bias),
    "ran-tanh": lambda forget_bias=1.0: ran_cell("tanh", forget_bias),
}

#: name -> Cell (forget-gate cells with the default forget bias of 1.0).
CELLS = {
    "srnn": SRNN,
    "lstm-noforget": LSTM_NO_FORGET,
    **{name: factory() for name, factory in _FORGET_GATE_FACTORIES.items()},
    "gru": GRU,
    "lstm-gates": LSTM_MINUS_GATES,
}

def make_cell(name, forget_bias=None):
    """The cell called ``name`` (a key of :data:`CELLS`), optionally with another forget bias."""
    if name not in CELLS:
        raise KeyError(f"unknown cell {name!r}; choose one of {sorted(CELLS)}")
    if forget_bias is None:
        return CELLS[name]
    if name not in _FORGET_GATE_FACTORIES:
        raise ValueError(f"cell {name!r} has no forget gate; forget_bias applies only to "
                         f"{sorted(_FORGET_GATE_FACTORIES)}")
    return _FORGET_GATE_FACTORIES[name](forget_bias)


# --------------------------------------------------------------------------
# Causal self-attention (chapter 11): a sequence function, not a step
# --------------------------------------------------------------------------
def causal_attention(p, X, heads):
    """Multi-head causal self-attention over a whole sentence ([WS2] section 4 names it
    beside eq 9; the formulas are the scaled dot product's). With d = X's rows and
    d_k = d / heads, for position t and head i (rows i d_k .. (i+1) d_k of W_q, W_k, W_v)::

        x'_j   = x_j + P[:, j]                                   positions, added
        q_t    = W_q x'_t,  k_j = W_k x'_j,  v_j = W_v x'_j
        a_tj   = softmax_j(q_t^i . k_j^i / sqrt(d_k))            over j <= t only
        head_t = sum_{j <= t} a_tj v_j^i
        h_t    = W_o [head_t^1; ...; head_t^heads]

    ``p``: ``W_q, W_k, W_v, W_o (d, d)``, ``P (d, T_max)``; ``X``: ((d, T), B); returns
    H ((d, T), B)."""
    d = X.dim()[0][0]
    T = X.dim()[0][1] if len(X.dim()[0]) > 1 else 1
    d_k = d // heads
    X = X + dy.select_cols(p["P"], list(range(T)))
    Q, K, V = p["W_q"] * X, p["W_k"] * X, p["W_v"] * X
    later = np.triu(np.full((T, T), -1e9), k=1).T            # [j, t]: key j after query t is hidden
    outputs = []
    for i in range(heads):
        q, k, v = (dy.pick_range(M, i * d_k, (i + 1) * d_k) for M in (Q, K, V))
        scores = dy.transpose(k) * q / np.sqrt(d_k) + dy.inputTensor(later)   # [j, t]
        outputs.append(v * dy.softmax(scores, d=0))           # column t: sum_j a_tj v_j
    return p["W_o"] * dy.concatenate(outputs, d=0)


# --------------------------------------------------------------------------
# Copying DyNet builders' weights into the course's layout (see module docstring)
# --------------------------------------------------------------------------
def params_from_vanilla_lstm_builder(builder, forget_bias=1.0):
    """NumPy parameters for :func:`lstm_step` equal to a 1-layer ``dy.VanillaLSTMBuilder``.

    ``forget_bias`` must be the value the builder was created with (DyNet's
    default 1.0); it is folded into ``b_f`` because the builder adds it at run time.
    """
    layers = builder.get_parameters()
    if len(layers) != 1:
        raise ValueError(f"expected a 1-layer VanillaLSTMBuilder, got {len(layers)} layers")
    W_x, W_h, b = (p.as_array() for p in layers[0])
    d_h = W_h.shape[1]
    params = {}
    for k, g in enumerate("ifou"):          # DyNet's block order: i, f, o, g(=u)
        rows = slice(k * d_h, (k + 1) * d_h)
        params["W_x" + g] = W_x[rows].copy()
        params["W_h" + g] = W_h[rows].copy()
        params["b_" + g] = b[rows].copy()
    params["b_f"] = params["b_f"] + forget_bias
    return params


def params_from_gru_builder(builder):
    """NumPy parameters for :func:`gru_step` equal to a 1-layer ``dy.GRUBuilder``."""
    layers = builder.get_parameters()
    if len(layers) != 1:
        raise ValueError(f"expected a 1-layer GRUBuilder, got {len(layers)} layers")
    names = ["W_xz", "W_hz", "b_z", "W_xr", "W_hr", "b_r", "W_xh", "W_hh", "b_h"]
    return {name: p.as_array().copy() for name, p in zip(names, layers[0])}
