"""Checks of chapter 05 (the GRU).

``gru_step(p, x, state) -> (h,)`` against the reference cell ``gru`` ([T] eqs
56-59), on a batch of 7 over 4 steps from a non-zero start state, random non-zero,
non-symmetric parameters (:mod:`.steps`), abs. tolerance 1e-5 on states:

* ``ch05.gru_step``: every state, all parts at once;
* ``ch05.gru_gradients``: every parameter's gradient (relative tolerance 1e-4);
  an answer with wrong gradients but right values fails this one only (one computed
  outside DyNet fails them all: its values are constants of the traced point, wrong
  at the fresh point the grader replays it at, see autograder/grader.py);
* ``ch05.gru_update_gate``: eq 59 on its own: W_hh = 0 (so the candidate does not
  involve the reset gate), the update gate shut (b_z = -30) in half of the units:
  those must keep h_{t-1}; open (b_z = +30) in the other half: those must hold the
  candidate tanh(W_xh x_t + b_h) alone;
* ``ch05.gru_reset_gate``: eq 58 on its own: the update gate saturated (open in
  half of the units, shut in the other half) so that the candidate shows in the
  state, and the reset gate shut (b_r = -30) in some units, open (b_r = +30) in the
  others, where W_hh (r * h) and r * (W_hh h) differ. Eq 59 with z and 1 - z
  exchanged passes this one (the update-gate check fails it), so that each part
  is judged once;
* ``ch05.gru_builder``: the states against DyNet's own ``dy.GRUBuilder`` run on
  the grader's parameters: a reference independent of the course's cells.

A known slip is named when the student's states are exactly that slip's. Writing
``1 - z`` with a plain number on the left is fine (dyNET38 2.1).
"""
from __future__ import annotations

import functools

import dynet as dy
import numpy as np

from autograder.reference import steps
from autograder.reference.grading import Check

SEED = 20261122
#: dy.GRUBuilder's parameters in the order get_parameters() lists them
GRU_BUILDER_ORDER = ("W_xz", "W_hz", "b_z", "W_xr", "W_hr", "b_r", "W_xh", "W_hh", "b_h")
RESET_SHUT, RESET_OPEN = slice(0, steps.D_H, 2), slice(1, steps.D_H, 2)   # the reset check's units


def _gate(p, g, x, h):
    return dy.logistic(dy.affine_transform([p["b_" + g], p["W_x" + g], x, p["W_h" + g], h]))


def variant(exchanged=False, reset="inside", r_name="r", z_name="z"):
    """The GRU of eqs 56-59 with one part replaced: a slip. ``reset``: "inside"
    (eq 58, W_hh (r * h)), "after" (r * (W_hh h)) or "none"."""
    def step(p, x, state):
        (h_prev,) = state
        r, z = _gate(p, r_name, x, h_prev), _gate(p, z_name, x, h_prev)
        if reset == "after":
            candidate = dy.tanh(dy.affine_transform([p["b_h"], p["W_xh"], x]) + dy.cmult(r, p["W_hh"] * h_prev))
        else:
            read = dy.cmult(r, h_prev) if reset == "inside" else h_prev
            candidate = dy.tanh(dy.affine_transform([p["b_h"], p["W_xh"], x, p["W_hh"], read]))
        if exchanged:
            return (dy.cmult(z, h_prev) + dy.cmult(-z + 1, candidate),)
        return (dy.cmult(-z + 1, h_prev) + dy.cmult(z, candidate),)
    return step


SLIPS = {
    "z exchanged": ("z_t and 1 - z_t are exchanged: eq 59 is h_t = (1 - z_t) * h_{t-1} + z_t * h~_t, "
                    "so z_t = 1 takes the new candidate", variant(exchanged=True)),
    "gates swapped": ("the reset gate reads the update gate's parameters and the update gate the reset "
                      "gate's: r_t uses W_xr, W_hr, b_r (eq 56), z_t uses W_xz, W_hz, b_z (eq 57)",
                      variant(r_name="z", z_name="r")),
    "reset after W_hh": ("the reset gate multiplies W_hh h_{t-1}; eq 58 applies it to h_{t-1} before "
                         "W_hh: W_hh (r_t * h_{t-1})", variant(reset="after")),
    "reset ignored": ("the reset gate is not used: eq 58 reads W_hh (r_t * h_{t-1})", variant(reset="none")),
}


def slips(*names):
    return [SLIPS[n] for n in names]


def run_gru_builder(inputs) -> dict:
    """States and gradients of dy.GRUBuilder run on the grader's inputs (the probe's loss)."""
    from course import runtime
    dy = runtime.dynet()
    p = inputs["params"]
    d_h, d_in = p["W_xz"].shape
    pc = dy.ParameterCollection()
    builder = dy.GRUBuilder(1, d_in, d_h, pc)
    params = dict(zip(GRU_BUILDER_ORDER, builder.get_parameters()[0]))
    for name, param in params.items():
        param.set_value(p[name])
    dy.renew_cg()
    (h0,) = inputs["state0"]
    state = builder.initial_state([dy.inputTensor(h0, batched=True)])
    states, terms = [], []
    for t, x in enumerate(inputs["xs"]):
        state = state.add_input(dy.inputTensor(x, batched=True))
        states.append([state.output().npvalue().reshape(d_h, -1)])
        terms.append(dy.dot_product(dy.inputTensor(inputs["projection"][t]), state.output()))
    loss = dy.sum_batches(dy.esum(terms))
    loss.forward()
    loss.backward()
    return {"states": np.array(states), "grads": {name: param.grad_as_array() for name, param in params.items()}}


def _judge_builder(numbers, inputs) -> list[str]:
    want = run_gru_builder(inputs)["states"]
    got = np.asarray(numbers["states"])
    if steps.shape_problem(got, want) or steps.states_agree(got, want):
        return steps.shape_problem(got, want)
    hint = steps.diagnose(numbers, inputs, list(SLIPS.values()))
    t, _, diff = steps.first_difference(got, want, [0])
    return hint or [f"h_t differs from dy.GRUBuilder's from step {t + 1} on (max abs diff {diff:.2g}); "
                    "the builder computes eqs 56-59 with the same weights"]


VISIBLE = "gru_step_visible"
CHECKS = [
    steps.values_check("ch05.gru_step", "gru_step", "gru", seed=SEED, slips=list(SLIPS.values()),
                       explain={0: "check eqs 56-59 one by one"}, lecture=("05_gru", "eq 56"),
                       visible=VISIBLE),
    steps.gradients_check("ch05.gru_gradients", "gru_step", "gru", seed=SEED + 3, visible=VISIBLE),
    steps.values_check(
        "ch05.gru_update_gate", "gru_step", "gru", seed=SEED + 1,
        tweak=steps.set_params(W_hh=0.0, b_z=[(steps.FIRST, steps.SHUT), (steps.SECOND, steps.OPEN)]),
        slips=slips("z exchanged", "gates swapped"),
        groups=[(0, steps.FIRST, "with the update gate shut (b_z = -30, z_t = 0) the state must keep h_{t-1} "
                                 "(eq 59: h_t = (1 - z_t) * h_{t-1} + z_t * h~_t)"),
                (0, steps.SECOND, "with the update gate open (b_z = +30, z_t = 1) and W_hh = 0 the state must "
                                  "be the candidate tanh(W_xh x_t + b_h) alone (eqs 58-59)")],
        explain={0: "check eq 59"},
        about="batch 7, 4 steps, W_hh = 0, the update gate shut (b_z = -30) in 2 of the 4 units and open "
              "(b_z = +30) in the other 2, random non-zero other weights, start state non-zero",
        lecture=("05_gru", "1. Eq 59 is a weighted average"), visible="gru_step_update_gate"),
    steps.values_check(
        "ch05.gru_reset_gate", "gru_step", "gru", seed=SEED + 4,
        tweak=steps.set_params(b_z=[(steps.FIRST, steps.OPEN), (steps.SECOND, steps.SHUT)],
                               b_r=[(RESET_SHUT, steps.SHUT), (RESET_OPEN, steps.OPEN)]),
        accept=[SLIPS["z exchanged"][1]],
        slips=slips("gates swapped", "reset after W_hh", "reset ignored"),
        explain={0: "with the update gate saturated the state shows the candidate "
                    "h~_t = tanh(W_xh x_t + W_hh (r_t * h_{t-1}) + b_h) (eq 58), and it differs"},
        about="batch 7, 4 steps, the update gate open (b_z = +30) in 2 of the 4 units and shut (b_z = -30) "
              "in the other 2, the reset gate shut (b_r = -30) in 2 units and open (b_r = +30) in 2, "
              "random non-zero other weights, start state non-zero",
        lecture=("05_gru", "eq 58"), visible="gru_step_update_gate"),
    Check("ch05.gru_builder", ("gru_step",), functools.partial(steps.step_inputs, "gru", "gru_step", SEED + 2),
          "autograder.probes:step", _judge_builder,
          about=steps.ABOUT + "; dy.GRUBuilder with the same weights is the reference",
          lecture=("05_gru", "eq 59"), visible="gru_step_matches_builder"),
]
