"""Chapter 03 (LSTM without a forget gate): the checks of the graded step function.

``lstm_step(p, x, state) -> (h, c)`` is tutorial eqs 47-51 (with the logistic
function of eq 52 in its correct form, 1/(1 + exp(-x))), with the parameter names
of the reference cell ``lstm-noforget`` (:mod:`autograder.reference.cells`):
``W_xu, W_hu, b_u`` (update, eq 47), ``W_xi, W_hi, b_i`` (input gate, eq 48),
``W_xo, W_ho, b_o`` (output gate, eq 49). Five checks (:mod:`.steps`), each on a
batch of 7 over 4 steps from a non-zero (h, c) unless it says otherwise:

* ``ch03.lstm_memory``: eqs 47, 48 and 50, c_t only, with the gates reading x_t
  alone (every W_h* = 0) and the input gate shut (b_i = -30) in half of the units:
  those must keep c_{t-1}; the other half must hold c_{t-1} + i_t * u_t;
* ``ch03.lstm_output``: eqs 49 and 51, h_t = o_t * tanh(c_t) computed from the
  student's own c_t, with the output gate open (b_o = +30) in half of the units;
* ``ch03.lstm_step``: everything at once, on random non-zero weights;
* ``ch03.lstm_gradients``: every parameter's gradient;
* ``ch03.lstm_carousel``: the constant error carousel (eq 50 adds c_{t-1}
  unchanged): with every W_h* = 0, pairs of sentences read the same inputs from
  different start states; c_t - c_{t-1} must be the same within each pair. It
  judges the student's own numbers only, so a cell whose gates are wrong but
  whose memory is additive passes it.
"""
from __future__ import annotations

import dynet as dy
import numpy as np

from autograder.reference import steps
from autograder.reference.grading import Check

SEED = 20261103
CELL = "lstm-noforget"
LECTURE = ("03_lstm", "1 · The equations (tutorial eqs 47–51)")
VISIBLE = "lstm_step_values"


def _pre(p, g, x, h):
    return dy.affine_transform([p["b_" + g], p["W_x" + g], x, p["W_h" + g], h])


def misprinted_logistic(a):
    return dy.cdiv(dy.ones(a.dim()[0], batch_size=a.dim()[1]), -dy.exp(-a) + 1)


def variant(gate=dy.logistic, content=dy.tanh, output_gate=None, input_gate=None, swap_io=False,
            memory=lambda i, u, c: dy.cmult(i, u) + c, squash=dy.tanh, old_memory=False):
    """The LSTM of eqs 47-51 with one part replaced: a slip."""
    def step(p, x, state):
        h_prev, c_prev = state
        u = content(_pre(p, "u", x, h_prev))
        i = (input_gate or gate)(_pre(p, "o" if swap_io else "i", x, h_prev))
        o = (output_gate or gate)(_pre(p, "i" if swap_io else "o", x, h_prev))
        c = memory(i, u, c_prev)
        return (dy.cmult(o, squash(c_prev if old_memory else c)), c)
    return step


SLIPS = {
    "i and o swapped": ("the input gate reads the output gate's parameters and the output gate the "
                        "input gate's: i_t uses W_xi, W_hi, b_i (eq 48), o_t uses W_xo, W_ho, b_o (eq 49)",
                        variant(swap_io=True)),
    "misprinted logistic": ("the gates use 1/(1 - exp(-x)), eq 52 as the tutorial misprints it; the "
                            "logistic is 1/(1 + exp(-x)) (dy.logistic)", variant(gate=misprinted_logistic)),
    "content logistic": ("u_t uses the logistic; eq 47 squashes the update with tanh",
                         variant(content=dy.logistic)),
    "coupled": ("c_{t-1} is multiplied by (1 - i_t): eq 50 adds c_{t-1} unchanged (this LSTM has no "
                "forget gate)", variant(memory=lambda i, u, c: dy.cmult(i, u) + dy.cmult(-i + 1, c))),
    "u and i exchanged": ("u_t and i_t have each other's function: the input gate is the logistic "
                          "(eq 48, which a bias of -30 shuts) and the update u_t the tanh (eq 47)",
                          variant(content=dy.logistic, input_gate=dy.tanh)),
    "h from c_prev": ("h_t is o_t * tanh(c_{t-1}): eq 51 squashes the new memory, h_t = o_t * tanh(c_t)",
                      variant(old_memory=True)),
    "memory dropped": ("c_{t-1} is missing from c_t: eq 50 is c_t = i_t * u_t + c_{t-1}",
                       variant(memory=lambda i, u, c: dy.cmult(i, u))),
    "tanh output gate": ("the output gate uses tanh; eq 49 uses the logistic 1/(1 + exp(-x))",
                         variant(output_gate=dy.tanh)),
    "no squash": ("h_t = o_t * c_t: eq 51 squashes the memory cell, h_t = o_t * tanh(c_t)",
                  variant(squash=lambda c: c)),
}


def slips(*names):
    return [SLIPS[n] for n in names]


# How far apart a pair's increments may be. A difference of float32 numbers carries the rounding of
# both, and each is only held to probes.ATOL by the value checks (a CI machine once put a correct
# rewritten step past 1.3e-5 at |c| = 3.6, where this one stays at 2e-7); a step that breaks the
# carousel moves the increment by a gate times c_{t-1}: 0.01 to 0.6 on these inputs for the slips.
CAROUSEL_ATOL = 1e-3


def _carousel_inputs() -> dict:
    return steps.step_inputs(CELL, "lstm_step", SEED + 4, steps.both(steps.set_params(**{"W_h*": 0.0}),
                                                                      steps.paired_columns),
                             batch=8, steps=6)


def _judge_carousel(numbers, inputs) -> list:
    problems = steps.fused_problem(numbers, "lstm_step")
    got = np.asarray(numbers["states"])
    if problems or got.ndim != 4 or got.shape[1] != 2:
        return problems or ["lstm_step must return (h, c)"]
    c = got[:, 1]
    previous = np.concatenate([inputs["state0"][1][None], c[:-1]])
    increments = c - previous
    t = steps.pair_mismatch(increments, CAROUSEL_ATOL)
    if t is None:
        return []
    return [f"with every W_h* = 0 the gates read x_t only, so c_t - c_{{t-1}} = i_t * u_t must not depend "
            f"on c_{{t-1}}; yours does at step {t + 1}: eq 50 adds c_{{t-1}} unchanged, with no factor "
            "on it and no squashing of c (the constant error carousel)"]


CHECKS = [
    steps.values_check(
        "ch03.lstm_memory", "lstm_step", CELL, seed=SEED, indices=[1],
        tweak=steps.set_params(**{"W_h*": 0.0, "b_i": [(steps.FIRST, steps.SHUT)]}),
        slips=slips("i and o swapped", "misprinted logistic", "content logistic", "u and i exchanged", "coupled",
                    "memory dropped"),
        groups=[(1, steps.FIRST, "with the input gate shut (b_i = -30, so i_t = 0) the memory cell must keep "
                                 "c_{t-1} (eq 50: c_t = i_t * u_t + c_{t-1}): does i_t read W_xi, W_hi, b_i?"),
                (1, steps.SECOND, "c_t = i_t * u_t + c_{t-1} differs where the input gate is open: check u_t "
                                  "(eq 47, tanh) and i_t (eq 48, the logistic of W_xi x_t + W_hi h_{t-1} + b_i)")],
        explain={1: "check eqs 47, 48 and 50"},
        about="batch 7, 4 steps, every W_h* = 0 (the gates read x_t only), the input gate shut (b_i = -30) "
              "in 2 of the 4 units, random non-zero other weights, start state non-zero; c_t only",
        lecture=("03_lstm", "eq 50"), visible=VISIBLE),
    steps.lstm_output_check("ch03.lstm_output", CELL, seed=SEED + 1, gate_eq="eq 49",
                            lecture=("03_lstm", "eq 51"), visible=VISIBLE),
    steps.values_check(
        "ch03.lstm_step", "lstm_step", CELL, seed=SEED + 2, slips=list(SLIPS.values()),
        explain={0: "c_t is right up to there; check eq 49 (o_t) and eq 51 (h_t = o_t * tanh(c_t))",
                 1: "check eqs 47, 48 and 50 (and, from step 2 on, h_{t-1} of eq 51)"},
        lecture=LECTURE, visible=VISIBLE),
    steps.gradients_check("ch03.lstm_gradients", "lstm_step", CELL, seed=SEED + 3, visible="lstm_step_carousel"),
    Check("ch03.lstm_carousel", ("lstm_step",), _carousel_inputs, "autograder.probes:step", _judge_carousel,
          about="batch 8 (4 pairs of sentences with the same inputs, different start states), 6 steps, "
                "every W_h* = 0, random non-zero other weights; your own c_t - c_{t-1} within each pair",
          lecture=("03_lstm", "2 · Why an additive memory keeps its gradient"), visible="lstm_step_carousel"),
]
