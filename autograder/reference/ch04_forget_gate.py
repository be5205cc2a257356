"""Checks of chapter 04 (the LSTM with a forget gate).

* ``ch04.lstm_step``: the student's ``lstm_step(p, x, state)`` against the
  reference cell ``lstm`` ([T] eqs 54-55): every state of a batch of 7 over
  4 steps (abs. tolerance 1e-5) and every parameter's gradient (relative
  tolerance 1e-4), on random non-zero, non-symmetric parameters, so a swapped
  gate, a missing forget gate or a step computed in NumPy (no gradients) fails.
* ``ch04.lstm_init``: the student's ``lstm_init(name, shape, forget_bias=1.0)``
  (the ``Cell.init`` contract of ``course/cell.py``) sets the forget-gate bias
  ``b_f`` to ``forget_bias`` ([T] section 6.4 after eq 55, [OD] section 6.2) and
  leaves every other parameter to the default initialiser (returns None;
  returning zeros for another bias is accepted, since zero is that default).
* ``ch04.lstm_forget_gate``: eq 55's forget gate on its own: with the grader's
  parameters but the forget gate forced open (b_f = +30) and the input gate shut
  (b_i = -30) in half of the units, those units' memory cells must keep their
  start value; with the forget gate shut (b_f = -30) in the other half, those
  must hold i * u alone. Same tolerances, gradients included.
* ``ch04.lstm_builder``: states and gradients against DyNet's own
  ``dy.VanillaLSTMBuilder`` run on the grader's parameters (copied into its
  stacked layout, its forget_bias constant of 1.0 taken out of b_f): a reference
  independent of the course's cells. Same tolerances.

Every check of ``lstm_step`` includes the gradients, so an answer computed
outside DyNet earns none of them.
"""
from __future__ import annotations

import functools

import numpy as np

from autograder import probes
from autograder.reference.cells import make_cell
from autograder.reference.grading import Check, step_check

CUSTOM_FORGET_BIAS = 2.5        # the grader's second value: is the argument used?
D_IN, D_H = 5, 4
SEED = 20261122
KEEP, ERASE = slice(0, D_H // 2), slice(D_H // 2, D_H)   # the units of the forget-gate check


def _init_inputs() -> dict:
    shapes = make_cell("lstm").shapes(D_IN, D_H)
    return {"function": "lstm_init", "names": sorted(shapes),
            "shapes": {name: list(shape) for name, shape in shapes.items()},
            "forget_bias": CUSTOM_FORGET_BIAS}


def _judge_init(numbers: dict, inputs: dict) -> list[str]:
    problems = []
    for round_name, forget_bias in (("default", 1.0), ("custom", inputs["forget_bias"])):
        call = ("lstm_init(name, shape)" if round_name == "default"
                else "lstm_init(name, shape, forget_bias=...)")
        reference = make_cell("lstm", forget_bias=forget_bias)
        result = numbers.get(round_name, {})
        none = np.asarray(result.get("none", []), dtype=float)
        values = result.get("values", {})
        if none.shape != (len(inputs["names"]),):
            return [f"{call} did not answer for every parameter"]
        returned_none = {name for name, flag in zip(inputs["names"], none) if flag}
        extra = []
        for name in inputs["names"]:
            shape = tuple(inputs["shapes"][name])
            expected = reference.init(name, shape)
            if expected is not None:              # b_f
                if name in returned_none:
                    problems.append(f"{call} returned None for {name}: the forget-gate bias must start "
                                    "at forget_bias (tutorial section 6.4), not at the default 0")
                    continue
                got = np.asarray(values.get(name, np.full(shape, np.nan)), dtype=float)
                if got.shape != shape:
                    problems.append(f"{call} returned shape {got.shape} for {name}; it must have the "
                                    f"shape it is given, {shape}")
                elif np.allclose(got, 0.0):
                    problems.append(f"{call} leaves the forget bias {name} at 0: it must start at "
                                    "forget_bias so the forget gate starts open (tutorial section 6.4)")
                elif not np.allclose(got, expected, atol=1e-6):
                    problems.append(f"{call} returned the wrong value for {name}"
                                    + (": is the forget_bias argument used?" if round_name == "custom" else ""))
            elif name not in returned_none:
                got = np.asarray(values.get(name, np.nan), dtype=float)
                if len(shape) == 1 and got.shape == shape and np.allclose(got, 0.0):
                    continue                         # a zero bias is the default anyway
                extra.append(name)
        if extra:
            problems.append(f"{call} returned a value for {', '.join(extra)}; return None for every "
                            "parameter but b_f, so the default initialiser is used (Glorot for "
                            "matrices, zero for biases)")
        if problems:
            break
    return problems


def step_inputs(cell_name: str, function: str, seed: int) -> dict:
    """The grader's inputs for the step function ``function`` shaped like the reference cell."""
    cell = make_cell(cell_name)
    inputs = probes.make_inputs(cell.shapes(D_IN, D_H), cell.n_state, D_IN, D_H, seed=seed)
    return {**inputs, "function": function}


def _gate_inputs() -> dict:
    inputs = step_inputs("lstm", "lstm_step", SEED + 1)
    p = inputs["params"]
    p["b_f"][KEEP], p["b_i"][KEEP] = 30.0, -30.0      # f = 1, i = 0: c keeps its start value
    p["b_f"][ERASE] = -30.0                            # f = 0: c holds i * u alone
    return inputs


def judge_unit_groups(reference: str, state: int, groups: list):
    """A judge against the reference cell that, when the values differ, names the
    group of units that went wrong. groups: [(slice of units, message)]; state: which
    state vector the groups are read from (0: h, 1: c)."""
    def judge(numbers, inputs) -> list[str]:
        expected = probes.run_step(make_cell(reference).step, inputs)
        problems = probes.compare(numbers, expected)
        if not problems or problems[0].startswith("state shapes"):
            return problems
        got, want = np.asarray(numbers["states"])[:, state], expected["states"][:, state]
        named = [message for units, message in groups
                 if not np.allclose(got[:, units], want[:, units], atol=probes.ATOL)]
        return named + [p for p in problems if p.startswith("gradients")] if named else problems
    return judge


_judge_gate = judge_unit_groups("lstm", 1, [
    (KEEP, "with the forget gate open (f = 1) and the input gate shut (i = 0) the memory cell "
           "must keep its previous value (eq 55: c_t = i_t * u_t + f_t * c_{t-1})"),
    (ERASE, "with the forget gate shut (f = 0) the memory cell must hold i_t * u_t alone, "
            "nothing of c_{t-1} (eq 55)"),
])


def run_vanilla_lstm_builder(inputs, forget_bias=1.0) -> dict:
    """States and gradients of dy.VanillaLSTMBuilder run on the grader's inputs.

    The parameters are copied into the builder's stacked layout (blocks i, f, o, u;
    the builder adds ``forget_bias`` inside the forget gate itself), the loss is the
    probe's (:func:`autograder.probes.run_step`), and the stacked gradients are cut
    back into the course's per-gate names.
    """
    from course import runtime
    dy = runtime.dynet()
    p = inputs["params"]
    d_h, d_in = p["W_xi"].shape
    order = "ifou"                                      # DyNet's block order (u is its g)
    shifted = dict(p, b_f=p["b_f"] - forget_bias)
    pc = dy.ParameterCollection()
    builder = dy.VanillaLSTMBuilder(1, d_in, d_h, pc, forget_bias=forget_bias)
    stacked = builder.get_parameters()[0]
    for param, prefix, join in zip(stacked, ("W_x", "W_h", "b_"), (np.vstack, np.vstack, np.concatenate)):
        param.set_value(join([shifted[prefix + g] for g in order]))
    dy.renew_cg()
    h0, c0 = inputs["state0"]
    state = builder.initial_state([dy.inputTensor(c0, batched=True), dy.inputTensor(h0, batched=True)])
    states, terms = [], []
    for t, x in enumerate(inputs["xs"]):
        state = state.add_input(dy.inputTensor(x, batched=True))
        c, h = state.s()
        states.append([h.npvalue().reshape(d_h, -1), c.npvalue().reshape(d_h, -1)])
        terms.append(dy.dot_product(dy.inputTensor(inputs["projection"][t]), h))
    loss = dy.sum_batches(dy.esum(terms))
    loss.forward()
    loss.backward()
    grads = {}
    for param, prefix in zip(stacked, ("W_x", "W_h", "b_")):
        for k, g in enumerate(order):
            grads[prefix + g] = param.grad_as_array()[k * d_h:(k + 1) * d_h]
    return {"states": np.array(states), "grads": grads}


def _judge_builder(numbers, inputs) -> list[str]:
    return [f"against dy.VanillaLSTMBuilder: {p}"
            for p in probes.compare(numbers, run_vanilla_lstm_builder(inputs))]


CHECKS = [
    step_check("ch04.lstm_step", "lstm_step", functools.partial(make_cell, "lstm"), seed=SEED),
    Check("ch04.lstm_forget_gate", ("lstm_step",), _gate_inputs, "autograder.probes:step", _judge_gate),
    Check("ch04.lstm_builder", ("lstm_step",), functools.partial(step_inputs, "lstm", "lstm_step", SEED + 2),
          "autograder.probes:step", _judge_builder),
    Check("ch04.lstm_init", ("lstm_init",), _init_inputs,
          "autograder.probes.ch04_forget_gate:init", _judge_init),
]
