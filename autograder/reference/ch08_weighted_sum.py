"""Graded checks of chapter 08: the weighted-sum ablations, RANs and weight extraction.

* the ablated step functions against the reference cells (outputs and gradients,
  :func:`grading.step_check`): LSTM - S-RNN ([WS] eq 9), LSTM - S-RNN - OUT
  ([WS] eq 10), LSTM - S-RNN - HIDDEN ([WS2] section 3.1), RAN (tanh) and
  RAN (identity) ([RAN] eq 1);
* ``record_gates``: every step stores its input gate, forget gate and content
  layer in ``record`` (what the weights are computed from);
* ``memory_weights(i, f)`` -> ``w[t, j] = i_j * prod_{k=j+1..t} f_k`` ([WS] eq 8,
  [RAN] eq 3), against :func:`autograder.reference.weights.memory_weights`;
* ``most_influential(w)`` ([RAN] eq 8) against
  :func:`autograder.reference.weights.most_influential`.

The probes (sandbox side) are in :mod:`autograder.probes.ch08_weighted_sum`.
"""
from __future__ import annotations

import numpy as np

from autograder import probes
from autograder.probes import ch08_weighted_sum as ch08_probes
from autograder.reference import cells, weights
from autograder.reference.grading import Check, step_check

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


def _reference(cell_name):
    return lambda: cells.CELLS[cell_name]


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
        for key, what in WHAT.items():
            got = numbers.get(f"{name}.{key}")
            if got is None:
                problems.append(f"{name} does not store record[{key!r}] ({what})")
                continue
            want = expected[f"{name}.{key}"]
            got = np.asarray(got)
            if got.shape != want.shape or not np.abs(got - want).max() <= 1e-5:
                problems.append(f"{name}: record[{key!r}] is not {what}")
    return problems


# --------------------------------------------------------------------------
# memory_weights(i, f)
# --------------------------------------------------------------------------
def weights_inputs() -> dict:
    rng = np.random.default_rng(SEED)
    saturated_i, saturated_f = rng.uniform(0.05, 0.95, (5, 2)), rng.uniform(0.05, 0.95, (5, 2))
    saturated_f[2, 0] = 0.0              # sigmoids saturate in float32: exact 0 and 1 happen
    saturated_f[3, 1] = 0.0
    saturated_f[1, 1] = 1.0
    return {"cases": [
        (rng.uniform(0.05, 0.95, (6, 3)), rng.uniform(0.05, 0.95, (6, 3))),
        (rng.uniform(0.05, 0.95, (1, 4)), rng.uniform(0.05, 0.95, (1, 4))),      # one step
        (saturated_i, saturated_f),
        (rng.uniform(0.05, 0.95, (4, 1)), rng.uniform(0.05, 0.95, (4, 1))),      # d_h = 1
    ]}


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


CHECKS = [
    *(step_check(f"ch08.{name}", name, _reference(cell)) for name, cell in STEPS.items()),
    Check("ch08.record_gates", RECORDING_STEPS, record_inputs, f"{PROBES}:record_gates", judge_record),
    Check("ch08.memory_weights", ("memory_weights",), weights_inputs, f"{PROBES}:memory_weights",
          judge_weights),
    Check("ch08.most_influential", ("most_influential",), influence_inputs, f"{PROBES}:most_influential",
          judge_influence),
]
