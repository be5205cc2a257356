"""Graded checks of chapter 08: the weighted-sum ablations, RANs and weight extraction.

* the ablated step functions against the reference cells ([WS] eq 9: LSTM - S-RNN;
  eq 10: LSTM - S-RNN - OUT; [WS2] section 3.1: LSTM - S-RNN - HIDDEN; [RAN] eq 1:
  RAN (tanh) and RAN (identity)), a batch of 7 over 4 steps from a non-zero (h, c)
  (:mod:`.steps`): ``ch08.<function>`` judges the states and says whether the
  memory c_t or only the output h_t is wrong; ``ch08.<function>_gradients`` judges
  the gradients (RAN (identity) shares ``ran_step`` with RAN (tanh): one gradient
  check for both);
* ``ch08.record_gates``: every recording step stores its input gate, forget gate
  and content layer in ``record`` (what the weights are computed from), judged on
  the student's own numbers: the gates lie in [0, 1] and i_t * content_t + f_t *
  c_{t-1} rebuilds the student's own c_t at every step, so a step whose equations
  are wrong but whose record is faithful passes (its own check fails). Where the
  step is right, each record must also be the reference's, which names a wrong key;
* ``memory_weights(i, f)`` -> ``w[t, j] = i_j * prod_{k=j+1..t} f_k`` ([WS] eq 8,
  [RAN] eq 3), against :func:`autograder.reference.weights.memory_weights`:
  ``ch08.memory_weights`` on gates strictly inside (0, 1), ``ch08.memory_weights_saturated``
  with forget gates of exactly 0 and 1 (as float32 sigmoids give);
* ``most_influential(w)`` ([RAN] eq 8) against
  :func:`autograder.reference.weights.most_influential`.

The probes (sandbox side) are in :mod:`autograder.probes.ch08_weighted_sum`.
"""
from __future__ import annotations

import numpy as np

import dynet as dy

from autograder import probes
from autograder.probes import ch08_weighted_sum as ch08_probes
from autograder.reference import cells, steps, weights
from autograder.reference.grading import Check

PROBES = "autograder.probes.ch08_weighted_sum"
SEED = 20260808
ATOL = 1e-9          # weights: float64 products of the given gates

#: graded step function -> reference cell name
STEPS = {
    "lstm_minus_srnn_step": "lstm-srnn",
    "lstm_minus_srnn_out_step": "lstm-srnn-out",
    "lstm_minus_srnn_hidden_step": "lstm-srnn-hidden",
    "ran_tanh_step": "ran-tanh",
    "ran_identity_step": "ran-identity",
}
RECORDING_STEPS = ("lstm_minus_srnn_step", "lstm_minus_srnn_out_step",
                   "lstm_minus_srnn_hidden_step", "ran_tanh_step")


# --------------------------------------------------------------------------
# record: the gates and the content layer
# --------------------------------------------------------------------------
def record_inputs() -> dict:
    cases = {}
    for k, name in enumerate(RECORDING_STEPS):
        cell = cells.CELLS[STEPS[name]]
        cases[name] = probes.make_inputs(cell.shapes(5, 4), cell.n_state, d_in=5, d_h=4,
                                         batch=3, steps=3, seed=SEED + k)
    return {"cases": cases}


WHAT = {"i": "the input gate i_t (after the sigmoid)", "f": "the forget gate f_t (after the sigmoid)",
        "content": "the content layer c~_t (before the input gate multiplies it)"}


def judge_record(numbers: dict, inputs: dict) -> list[str]:
    expected = ch08_probes.record_gates({name: cells.CELLS[STEPS[name]].step for name in RECORDING_STEPS},
                                        inputs)
    problems = []
    for name in RECORDING_STEPS:
        if not float(np.asarray(numbers.get(f"{name}.accepts_record", 0.0))):
            problems.append(f"{name} has no record=None parameter: add it and, when a dict is "
                            "given, store the gates in it (record['i'] = i ...)")
            continue
        missing = [key for key in WHAT if numbers.get(f"{name}.{key}") is None]
        if missing:
            problems += [f"{name} does not store record[{key!r}] ({WHAT[key]})" for key in missing]
            continue
        got = {key: np.asarray(numbers[f"{name}.{key}"]) for key in (*WHAT, "c")}
        c, c0 = got["c"], np.asarray(numbers[f"{name}.c0"])
        if any(got[key].shape != c.shape for key in WHAT):
            problems.append(f"{name}: record['i'], record['f'] and record['content'] must each be "
                            "((d_h,), B), like the state")
            continue
        if c.shape == expected[f"{name}.c"].shape and np.abs(c - expected[f"{name}.c"]).max() <= 1e-5:
            wrong = [key for key in WHAT if np.abs(got[key] - expected[f"{name}.{key}"]).max() > 1e-5]
            problems += [f"{name}: record[{key!r}] is not {WHAT[key]}" for key in wrong]
            continue
        # the step's equations differ from the reference (its own check says how): the
        # record must still be what this step used
        outside = [key for key in ("i", "f") if not np.all((got[key] >= -1e-6) & (got[key] <= 1 + 1e-6))]
        if outside:
            problems += [f"{name}: record[{key!r}] holds values outside [0, 1]: store {WHAT[key]}"
                         for key in outside]
            continue
        c_prev = np.concatenate([c0[None], c[:-1]])
        if np.abs(got["i"] * got["content"] + got["f"] * c_prev - c).max() > 1e-5:
            problems.append(f"{name}: record['i'] * record['content'] + record['f'] * c_{{t-1}} does not "
                            "rebuild your c_t: store the gates after the sigmoid and the content layer "
                            "before the input gate multiplies it")
    return problems


# --------------------------------------------------------------------------
# memory_weights(i, f)
# --------------------------------------------------------------------------
def weights_inputs() -> dict:
    rng = np.random.default_rng(SEED)
    return {"cases": [
        (rng.uniform(0.05, 0.95, (6, 3)), rng.uniform(0.05, 0.95, (6, 3))),
        (rng.uniform(0.05, 0.95, (1, 4)), rng.uniform(0.05, 0.95, (1, 4))),      # one step
        (rng.uniform(0.05, 0.95, (4, 1)), rng.uniform(0.05, 0.95, (4, 1))),      # d_h = 1
    ]}


def saturated_weights_inputs() -> dict:
    rng = np.random.default_rng(SEED + 2)
    i, f = rng.uniform(0.05, 0.95, (5, 2)), rng.uniform(0.05, 0.95, (5, 2))
    f[2, 0] = f[3, 1] = 0.0              # sigmoids saturate in float32: exact 0 and 1 happen
    f[1, 1] = 1.0
    return {"cases": [(i, f)]}


def _first_difference(got, want):
    t, j = np.unravel_index(np.abs(got - want).max(axis=-1).argmax(), want.shape[:2])
    return int(t), int(j)


def judge_weights(numbers: dict, inputs: dict) -> list[str]:
    problems = []
    for k, (i, f) in enumerate(inputs["cases"]):
        want = weights.memory_weights(i, f)[0]
        got = np.asarray(numbers[f"w{k}"], dtype=float)
        T, d_h = i.shape
        where = f"case {k} (T={T}, d_h={d_h})"
        if got.shape != want.shape:
            problems.append(f"{where}: w has shape {got.shape}, expected (T, T, d_h) = {want.shape}")
            continue
        if not np.isfinite(got).all():
            problems.append(f"{where}: w holds NaN or inf. A forget gate can be exactly 0 (a saturated "
                            "sigmoid): build the products by multiplying, never by dividing")
            continue
        if np.abs(got - want).max() <= ATOL:
            continue
        above = np.triu(np.ones((T, T), dtype=bool), k=1)
        diagonal = np.eye(T, dtype=bool)
        if T > 1 and np.abs(got.transpose(1, 0, 2) - want).max() <= ATOL:
            problems.append(f"{where}: w is indexed [j, t]; index it w[t, j] (current step first)")
        elif np.abs(got[above]).max(initial=0.0) > ATOL:
            problems.append(f"{where}: w[t, j] must be 0 for j > t (no weight on later words)")
        elif np.abs(got[diagonal] - i).max() > ATOL:
            problems.append(f"{where}: w[t, t] must be i_t (the newest content, weighed by its input "
                            "gate alone: the product over k = t+1..t is empty)")
        else:
            t, j = _first_difference(got, want)
            problems.append(f"{where}: w[t={t}, j={j}] is wrong; w_j^t = i_j * prod_{{k=j+1..t}} f_k "
                            "(does the product start at k = j + 1 and end at k = t?)")
    return problems


# --------------------------------------------------------------------------
# most_influential(w), RAN eq 8
# --------------------------------------------------------------------------
def influence_inputs() -> dict:
    rng = np.random.default_rng(SEED + 1)
    random_w = weights.memory_weights(rng.uniform(0.05, 0.95, (7, 5)), rng.uniform(0.3, 0.99, (7, 5)))[0]
    # The largest component and the L2 norm disagree at t = 2 and t = 3, and the
    # word itself (j = t) always has the largest weight.
    crafted = np.zeros((4, 4, 2))
    crafted[1, :2] = [[0.3, 0.3], [0.9, 0.9]]
    crafted[2, :3] = [[0.9, 0.0], [0.7, 0.7], [1.0, 1.0]]
    crafted[3, :4] = [[0.1, 0.1], [0.2, 0.05], [0.15, 0.15], [0.95, 0.95]]
    one_word = rng.uniform(0.05, 0.95, (1, 1, 3))
    return {"cases": [random_w, crafted, one_word]}


def _argmax_including_self(w):
    strength = np.asarray(w).max(axis=-1)
    return np.array([-1] + [int(np.argmax(strength[t, :t + 1])) for t in range(1, len(w))])


def judge_influence(numbers: dict, inputs: dict) -> list[str]:
    problems = []
    for k, w in enumerate(inputs["cases"]):
        want = weights.most_influential(w, "max")
        got = np.asarray(numbers[f"v{k}"], dtype=float)
        where = f"case {k} (T={len(w)})"
        if got.shape != want.shape:
            problems.append(f"{where}: the result has shape {got.shape}, expected (T,) = {want.shape}")
        elif np.array_equal(got, want):
            continue
        elif got[0] != -1:
            problems.append(f"{where}: the first word (t = 0) has no predecessor: return -1 there")
        elif np.array_equal(got, weights.most_influential(w, "l2")):
            problems.append(f"{where}: RAN eq 8 scores a predecessor by its largest component, "
                            "max_m w_j^t(m), not by the L2 norm")
        elif np.array_equal(got, _argmax_including_self(w)):
            problems.append(f"{where}: only predecessors count (j < t); the word itself (j = t) "
                            "always has a large weight")
        else:
            t = int(np.flatnonzero(got != want)[0])
            problems.append(f"{where}: wrong predecessor at t={t}")
    return problems


def _content(p, x, bias=False, squash=None):
    c = dy.affine_transform([p["b_u"], p["W_xu"], x]) if bias else p["W_xu"] * x
    return squash(c) if squash else c


def _gates(p, x, h_prev, c_prev, letters, reads):
    """sigma of each gate; ``reads``: "h" (W_h*, h_{t-1}), "c" (W_c*, c_{t-1}) or "x" (x_t only)."""
    if reads == "x":
        return [dy.logistic(dy.affine_transform([p["b_" + g], p["W_x" + g], x])) for g in letters]
    key, prev = ("W_h", h_prev) if reads == "h" else ("W_c", c_prev)
    return [dy.logistic(dy.affine_transform([p["b_" + g], p["W_x" + g], x, p[key + g], prev])) for g in letters]


def variant(reads="h", output_gate=True, squash=dy.tanh, content_bias=False, content_squash=None,
            swap_if=False, gate_reads=None):
    """An ablated cell with one part changed: a slip. ``gate_reads`` overrides
    what the gates read (a RAN's gates reading h_{t-1} through W_ci, W_cf)."""
    def step(p, x, state, record=None):
        h_prev, c_prev = state
        content = _content(p, x, content_bias, content_squash)
        letters = "fi" if swap_if else "if"
        if gate_reads == "h for c":
            i, f = (dy.logistic(dy.affine_transform([p["b_" + g], p["W_c" + g], h_prev, p["W_x" + g], x]))
                    for g in letters)
        else:
            i, f = _gates(p, x, h_prev, c_prev, letters, reads)
        c = dy.cmult(i, content) + dy.cmult(f, c_prev)
        h = squash(c)
        if output_gate:
            h = dy.cmult(_gates(p, x, h_prev, c_prev, "o", reads)[0], h)
        return (h, c)
    return step


def _ran_slips(output):
    squash = dy.tanh if output == "tanh" else (lambda c: c)
    kw = {"reads": "c", "output_gate": False, "squash": squash, "content_bias": True}
    return [("the gates read h_{t-1}; in a RAN they read the previous memory cell c_{t-1} through W_ci "
             "and W_cf ([RAN] eq 1)", variant(**{**kw, "gate_reads": "h for c"})),
            ("b_u is missing from the content layer: [RAN] eq 1 has c~_t = W_xu x_t + b_u",
             variant(**{**kw, "content_bias": False})),
            ("the content layer is squashed with tanh: [RAN] eq 1 has c~_t = W_xu x_t + b_u, linear",
             variant(**{**kw, "content_squash": dy.tanh})),
            *([("h_t = tanh(c_t): RAN (identity) outputs the memory cell itself, h_t = c_t",
                variant(**{**kw, "squash": dy.tanh}))] if output == "identity" else []),
            *([("h_t = c_t: RAN (tanh) outputs tanh(c_t)", variant(**{**kw, "squash": lambda c: c}))]
              if output == "tanh" else [])]


CONTENT_TANH = ("the content layer is squashed with tanh: in [WS] eqs 9 and 10 it is W_xu x_t alone (no tanh, "
                "no bias, no h_{t-1})")
SWAP_IF = ("the input gate reads the forget gate's parameters and the forget gate the input gate's: "
           "i_t uses W_xi, W_hi, b_i, f_t uses W_xf, W_hf, b_f")
STEP_SLIPS = {
    "lstm_minus_srnn_step": [(CONTENT_TANH, variant(content_squash=dy.tanh)), (SWAP_IF, variant(swap_if=True)),
                             ("h_t = tanh(c_t) without the output gate: eq 9 keeps o_t", variant(output_gate=False))],
    "lstm_minus_srnn_out_step": [(CONTENT_TANH, variant(output_gate=False, content_squash=dy.tanh)),
                                 (SWAP_IF, variant(output_gate=False, swap_if=True)),
                                 ("h_t = c_t: eq 10 outputs tanh(c_t)",
                                  variant(output_gate=False, squash=lambda c: c))],
    "lstm_minus_srnn_hidden_step": [(CONTENT_TANH.replace("[WS] eqs 9 and 10", "this ablation"),
                                     variant(reads="x", content_squash=dy.tanh)),
                                    ("h_t = tanh(c_t) has no output gate: this ablation keeps o_t = "
                                     "sigma(W_xo x_t + b_o)", variant(reads="x", output_gate=False))],
    "ran_tanh_step": _ran_slips("tanh"),
    "ran_identity_step": _ran_slips("identity"),
}
LECTURES = {
    "lstm_minus_srnn_step": ("08_weighted_sum", "3. Four ablations"),
    "lstm_minus_srnn_out_step": ("08_weighted_sum", "3. Four ablations"),
    "lstm_minus_srnn_hidden_step": ("08_weighted_sum", "3. Four ablations"),
    "ran_tanh_step": ("08_weighted_sum", "4. Recurrent additive networks"),
    "ran_identity_step": ("08_weighted_sum", "4. Recurrent additive networks"),
}
EXPLAIN = {1: "the memory c_t is wrong: check the content layer, the gates and c_t = i_t * c~_t + f_t * c_{t-1}",
           0: "c_t is right up to there, h_t is not: check the output layer"}


def _step_checks(k, function, cell):
    yield steps.values_check(f"ch08.{function}", function, cell, seed=SEED + 10 + k,
                             slips=STEP_SLIPS[function], explain=EXPLAIN, lecture=LECTURES[function],
                             visible=f"{function}_visible")
    if function != "ran_identity_step":
        yield steps.gradients_check(f"ch08.{function}_gradients", function, cell, seed=SEED + 20 + k,
                                    visible=f"{function}_visible")


CHECKS = [
    *(check for k, (name, cell) in enumerate(STEPS.items()) for check in _step_checks(k, name, cell)),
    Check("ch08.record_gates", RECORDING_STEPS, record_inputs, f"{PROBES}:record_gates", judge_record,
          about="each of the four recording steps over 3 steps, batch 3, random non-zero weights, start state "
                "non-zero; your own records against your own c_t",
          lecture=("08_weighted_sum", "2. The memory cell is an element-wise weighted sum"),
          visible="record_gates"),
    Check("ch08.memory_weights", ("memory_weights",), weights_inputs, f"{PROBES}:memory_weights",
          judge_weights, about="random gates in (0.05, 0.95): 6 steps of 3 units, 1 step of 4 units, 4 steps "
                               "of 1 unit", lecture=("08_weighted_sum", "[WS] 8"), visible="memory_weights_visible"),
    Check("ch08.memory_weights_saturated", ("memory_weights",), saturated_weights_inputs,
          f"{PROBES}:memory_weights", judge_weights,
          about="5 steps of 2 units, some forget gates exactly 0 or 1 (as saturated float32 sigmoids give)",
          lecture=("08_weighted_sum", "[WS] 8"), visible="memory_weights_visible"),
    Check("ch08.most_influential", ("most_influential",), influence_inputs, f"{PROBES}:most_influential",
          judge_influence, about="weights of a random 7-step sentence of 5 units, a crafted 4-step case where "
                                 "the largest component and the L2 norm disagree, and a one-word sentence",
          lecture=("08_weighted_sum", "[RAN] 8"), visible="most_influential_visible"),
]
