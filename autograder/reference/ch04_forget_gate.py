"""Checks of chapter 04 (the LSTM with a forget gate).

``lstm_step(p, x, state) -> (h, c)`` against the reference cell ``lstm``
([T] eqs 54-55), on a batch of 7 over 4 steps from a non-zero (h, c), random
non-zero, non-symmetric parameters (:mod:`.steps`), unless a check says otherwise:

* ``ch04.lstm_step``: every state (abs. tolerance 1e-5);
* ``ch04.lstm_output``: h_t = o_t * tanh(c_t) from the student's own c_t, with the
  gates reading x_t alone (every W_h* = 0) and the output gate open (b_o = +30) in
  half of the units;
* ``ch04.lstm_gradients``: every parameter's gradient (relative tolerance 1e-4);
* ``ch04.lstm_forget_gate``: eq 55's forget gate on its own, judged on the student's
  own numbers: with every W_h* = 0, the forget gate open (b_f = +30) and the input
  gate shut (b_i = -30) in half of the units, those units' memory cells must keep
  their start value; with the forget gate shut (b_f = -30) in the other half, those
  must not depend on c_{t-1} (pairs of sentences read the same inputs from
  different start states and must agree there);
* ``ch04.lstm_builder``: the states against DyNet's own ``dy.VanillaLSTMBuilder``
  run on the grader's parameters (copied into its stacked layout, its forget_bias
  constant of 1.0 taken out of b_f): a reference independent of the course's cells;
* ``ch04.lstm_init``: the student's ``lstm_init(name, shape, forget_bias=1.0)``
  (the ``Cell.init`` contract of ``course/cell.py``) sets the forget-gate bias
  ``b_f`` to ``forget_bias`` ([T] section 6.4 after eq 55, [OD] section 6.2) and
  leaves every other parameter to the default initialiser (returns None;
  returning zeros for another bias is accepted, since zero is that default).

A step built on DyNet's fused LSTM operations fails every check of ``lstm_step``.
"""
from __future__ import annotations

import functools

import dynet as dy
import numpy as np

from autograder import probes
from autograder.reference import steps
from autograder.reference.cells import make_cell
from autograder.reference.grading import Check

CUSTOM_FORGET_BIAS = 2.5        # the grader's second value: is the argument used?
D_IN, D_H = steps.D_IN, steps.D_H
SEED = 20261122


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


def _pre(p, g, x, h):
    return dy.affine_transform([p["b_" + g], p["W_x" + g], x, p["W_h" + g], h])


def variant(order="ifo", output_gate=dy.logistic, forget_reads=lambda h, c: c, forget=True):
    """The LSTM of eqs 54-55 with one part replaced: a slip. ``order``: the parameters
    the gates i, f, o read; ``forget_reads``: what f_t multiplies."""
    def step(p, x, state):
        h_prev, c_prev = state
        u = dy.tanh(_pre(p, "u", x, h_prev))
        i, f = (dy.logistic(_pre(p, g, x, h_prev)) for g in order[:2])
        o = output_gate(_pre(p, order[2], x, h_prev))
        c = dy.cmult(i, u) + (dy.cmult(f, forget_reads(h_prev, c_prev)) if forget else c_prev)
        return (dy.cmult(o, dy.tanh(c)), c)
    return step


SLIPS = {
    "i and f swapped": ("the input gate reads the forget gate's parameters and the forget gate the "
                        "input gate's: i_t uses W_xi, W_hi, b_i, f_t uses W_xf, W_hf, b_f (eq 54)",
                        variant(order="fio")),
    "i and o swapped": ("the input gate reads the output gate's parameters and the output gate the "
                        "input gate's: i_t uses W_xi, W_hi, b_i, o_t uses W_xo, W_ho, b_o (eq 54)",
                        variant(order="ofi")),
    "f reads h": ("f_t multiplies h_{t-1}; eq 55 multiplies the previous memory cell: "
                  "c_t = i_t * u_t + f_t * c_{t-1}", variant(forget_reads=lambda h, c: h)),
    "no forget gate": ("c_{t-1} is added unchanged (chapter 03's eq 50): eq 55 multiplies it by the "
                       "forget gate, c_t = i_t * u_t + f_t * c_{t-1}", variant(forget=False)),
    "tanh output gate": ("the output gate uses tanh; eq 54 makes every gate a logistic "
                         "1/(1 + exp(-x))", variant(output_gate=dy.tanh)),
}


KEEP, ERASE = steps.FIRST, steps.SECOND       # the units of the forget-gate check


def _gate_inputs() -> dict:
    return steps.step_inputs("lstm", "lstm_step", SEED + 1, steps.both(
        steps.set_params(**{"W_h*": 0.0, "b_f": [(KEEP, steps.OPEN), (ERASE, steps.SHUT)],
                            "b_i": [(KEEP, steps.SHUT)]}),
        steps.paired_columns), batch=8, steps=5)


def _judge_gate(numbers, inputs) -> list[str]:
    """Judged on the student's own numbers: kept units hold c_0, erased ones forget it."""
    problems = steps.fused_problem(numbers, "lstm_step")
    got = np.asarray(numbers["states"])
    if problems or got.ndim != 4 or got.shape[1] != 2:
        return problems or ["lstm_step must return (h, c)"]
    h, c = got[:, 0], got[:, 1]
    h0, c0 = inputs["state0"]
    problems = []
    if not np.all(np.abs(c[:, KEEP] - c0[KEEP]) <= probes.ATOL):
        h_prev = np.concatenate([h0[None], h[:-1]])
        if np.all(np.abs(c[:, KEEP] - h_prev[:, KEEP]) <= probes.ATOL):
            problems.append(SLIPS["f reads h"][0])
        else:
            problems.append("with the forget gate open (b_f = +30, f_t = 1) and the input gate shut "
                            "(b_i = -30, i_t = 0) the memory cell must keep c_{t-1} (eq 55: c_t = i_t * u_t "
                            "+ f_t * c_{t-1}): do i_t and f_t read their own parameters, and does f_t "
                            "multiply c_{t-1}?")
    t = steps.pair_mismatch(c[:, ERASE])
    if t is not None:
        problems.append(f"with the forget gate shut (b_f = -30, f_t = 0) c_t must not depend on c_{{t-1}} "
                        f"(eq 55); yours does at step {t + 1}: is c_{{t-1}} multiplied by f_t?")
    return problems


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
    problems = steps.fused_problem(numbers, "lstm_step")
    if problems:
        return problems
    want = run_vanilla_lstm_builder(inputs)["states"]
    got = np.asarray(numbers["states"])
    if steps.shape_problem(got, want) or steps.states_agree(got, want):
        return steps.shape_problem(got, want)
    hint = steps.diagnose(numbers, inputs, list(SLIPS.values()))
    t, k, diff = steps.first_difference(got, want, [0, 1])
    return hint or [f"{'hc'[k]}_t differs from dy.VanillaLSTMBuilder's from step {t + 1} on (max abs diff "
                    f"{diff:.2g}); the builder computes eqs 54-55 with the same weights"]


LECTURE = ("04_forget_gate", "eq 55")
VISIBLE = "lstm_step_visible"
CHECKS = [
    steps.values_check(
        "ch04.lstm_step", "lstm_step", "lstm", seed=SEED, slips=list(SLIPS.values()),
        explain={0: "c_t is right up to there; check o_t (eq 54) and h_t = o_t * tanh(c_t)",
                 1: "check eqs 54 and 55 (and, from step 2 on, h_{t-1})"},
        lecture=LECTURE, visible=VISIBLE),
    steps.lstm_output_check("ch04.lstm_output", "lstm", seed=SEED + 3, gate_eq="eq 54",
                            lecture=("04_forget_gate", "eq 54"), visible=VISIBLE),
    steps.gradients_check("ch04.lstm_gradients", "lstm_step", "lstm", seed=SEED + 4, visible=VISIBLE),
    Check("ch04.lstm_forget_gate", ("lstm_step",), _gate_inputs, "autograder.probes:step", _judge_gate,
          about="batch 8 (4 pairs of sentences with the same inputs, different start states), 5 steps, "
                "every W_h* = 0; in 2 of the 4 units the forget gate open (b_f = +30) and the input gate "
                "shut (b_i = -30), in the other 2 the forget gate shut (b_f = -30); your own c_t",
          lecture=("04_forget_gate", "1. What the forget gate does to the memory"),
          visible="lstm_step_forget_gate"),
    Check("ch04.lstm_builder", ("lstm_step",), functools.partial(steps.step_inputs, "lstm", "lstm_step", SEED + 2),
          "autograder.probes:step", _judge_builder, about=steps.ABOUT + "; dy.VanillaLSTMBuilder with "
          "the same weights is the reference",
          lecture=("04_forget_gate", "2. The forget bias in DyNet's `VanillaLSTMBuilder`"),
          visible="lstm_step_matches_builder"),
    Check("ch04.lstm_init", ("lstm_init",), _init_inputs,
          "autograder.probes.ch04_forget_gate:init", _judge_init,
          about="every parameter name and shape of a 5-input, 4-unit layer, asked with the default "
                "forget_bias and with another value",
          lecture=("04_forget_gate", "2. The forget bias in DyNet's `VanillaLSTMBuilder`"),
          visible="lstm_init_visible"),
]
