"""Checks of chapter 05 (the GRU).

* ``ch05.gru_step``: the student's ``gru_step(p, x, state)`` against the
  reference cell ``gru`` ([T] eqs 56-59): every state of a batch of 7 over 4
  steps (abs. tolerance 1e-5) and every parameter's gradient (relative
  tolerance 1e-4), on random non-zero, non-symmetric parameters. It fails the
  usual slips: z and 1 - z exchanged in eq 59, the reset gate applied after
  W_hh instead of before it (eq 58), gates swapped, the step computed in NumPy
  (no gradients). Writing ``1 - z`` with a plain number on the left is fine.
* ``ch05.gru_update_gate``: eq 59's interpolation on its own: with the update
  gate shut (b_z = -30) in half of the units, those must keep their start
  value; with it open (b_z = +30) in the other half, those must hold the
  candidate h~ alone. Same tolerances, gradients included.
* ``ch05.gru_builder``: states and gradients against DyNet's own ``dy.GRUBuilder``
  run on the grader's parameters: a reference independent of the course's cells.

Every check of ``gru_step`` includes the gradients, so an answer computed outside
DyNet earns none of them.
"""
from __future__ import annotations

import functools

import numpy as np

from autograder import probes
from autograder.reference.cells import make_cell
from autograder.reference.ch04_forget_gate import D_H, SEED, judge_unit_groups, step_inputs
from autograder.reference.grading import Check, step_check

KEEP, TAKE = slice(0, D_H // 2), slice(D_H // 2, D_H)     # the units of the update-gate check
#: dy.GRUBuilder's parameters in the order get_parameters() lists them
GRU_BUILDER_ORDER = ("W_xz", "W_hz", "b_z", "W_xr", "W_hr", "b_r", "W_xh", "W_hh", "b_h")


def _gate_inputs() -> dict:
    inputs = step_inputs("gru", "gru_step", SEED + 1)
    inputs["params"]["b_z"][KEEP] = -30.0      # z = 0: h keeps its start value
    inputs["params"]["b_z"][TAKE] = 30.0       # z = 1: h is the candidate
    return inputs


_judge_gate = judge_unit_groups("gru", 0, [
    (KEEP, "with the update gate shut (z = 0) the state must keep its previous value "
           "(eq 59: h_t = (1 - z_t) * h_{t-1} + z_t * h~_t)"),
    (TAKE, "with the update gate open (z = 1) the state must be the candidate h~_t alone (eqs 58-59)"),
])


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
    return [f"against dy.GRUBuilder: {p}" for p in probes.compare(numbers, run_gru_builder(inputs))]


CHECKS = [
    step_check("ch05.gru_step", "gru_step", functools.partial(make_cell, "gru"), seed=SEED),
    Check("ch05.gru_update_gate", ("gru_step",), _gate_inputs, "autograder.probes:step", _judge_gate),
    Check("ch05.gru_builder", ("gru_step",), functools.partial(step_inputs, "gru", "gru_step", SEED + 2),
          "autograder.probes:step", _judge_builder),
]
