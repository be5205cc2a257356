"""Checks of graded step functions, ``step(p, x, state) -> new_state`` (chapters 02-05, 08).

Every check runs the student's step with :func:`autograder.probes.step` (the same
probe for all of them) and differs only in its inputs and its judge, so that one
check judges one thing and its message names the part that is wrong:

* :func:`values_check`: the states against the reference cell, on inputs that may
  isolate one part (``tweak``: a matrix set to 0, a gate saturated shut or open by a
  bias of -30 or +30). When the values differ, the judge names a known slip if the
  student's states are exactly that slip's (``slips``: a variant step and its hint),
  else the group of units that went wrong (``groups``), else the state and the step
  where the difference starts, with what to check (``explain``);
* :func:`gradients_check`: the gradient of every parameter. Where the states agree
  with the reference, the gradients must agree too (relative 1e-4): right values with
  wrong gradients were computed outside DyNet. Where the states differ, the values
  checks say so, and this check asks only that gradients reach the parameters at all;
* :func:`lstm_output_check`: an LSTM's output h_t from the student's own memory cell
  c_t, with the gates made to read x_t alone (``W_h* = 0``), so a wrong memory cell does
  not fail it.

All inputs are seeded: random non-zero, non-symmetric parameters in (-0.9, 0.9),
x_t ~ N(0, 1), a non-zero start state, d_in = 5, d_h = 4, a batch of 7 over 4 steps
unless a check says otherwise. Tolerances: 1e-5 on states (float32), 1e-4 on
gradients relative to the largest reference gradient.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from autograder import probes
from autograder.reference.cells import make_cell
from autograder.reference.grading import Check

D_IN, D_H = 5, 4
SHUT, OPEN = -30.0, 30.0        # a gate bias that saturates the logistic at 0 or 1 (float32)
FIRST, SECOND = slice(0, D_H // 2), slice(D_H // 2, D_H)   # two groups of units
STATE_NAMES = {1: ("h",), 2: ("h", "c")}
ABOUT = "batch 7, 4 steps, random non-zero weights, start state non-zero"
DYNET_GRADIENTS = ("00_dynet_primer", "4 · Forward, backward, update")   # where gradients come from


def step_inputs(cell_name: str, function: str, seed: int, tweak: Callable | None = None,
                batch: int = 7, steps: int = 4) -> dict:
    """The grader's inputs for ``function``, shaped like the reference cell's, then ``tweak``ed."""
    cell = make_cell(cell_name)
    inputs = probes.make_inputs(cell.shapes(D_IN, D_H), cell.n_state, D_IN, D_H, batch=batch,
                                steps=steps, seed=seed)
    if tweak is not None:
        tweak(inputs)
    return {**inputs, "function": function}


def set_params(**values):
    """A tweak: parameters set to a value, ``{name: value}``, or for some units only,
    ``{name: [(units, value), ...]}``; a name ending in ``*`` sets every parameter
    that starts with it (``W_h*``)."""
    def tweak(inputs):
        params = inputs["params"]
        for pattern, value in values.items():
            names = [n for n in params if n.startswith(pattern[:-1])] if pattern.endswith("*") else [pattern]
            for name in names:
                if isinstance(value, list):
                    for units, v in value:
                        params[name][units] = v
                else:
                    params[name][...] = value
    return tweak


def paired_columns(inputs: dict):
    """A tweak: the second half of the batch reads the same inputs as the first half
    (from other start states), so a judge can see what depends on the start state."""
    xs = inputs["xs"]
    half = xs.shape[2] // 2
    xs[:, :, half:2 * half] = xs[:, :, :half]


def pair_mismatch(values, atol: float = probes.ATOL) -> int | None:
    """The first step (0-based) at which the two halves of the batch differ by more than
    ``atol``, for ``values`` of shape (steps, d_h, batch) computed on :func:`paired_columns` inputs."""
    values = np.asarray(values)
    half = values.shape[-1] // 2
    apart = np.abs(values[..., :half] - values[..., half:2 * half]).reshape(len(values), -1).max(axis=1)
    late = np.flatnonzero(~(apart <= atol))
    return int(late[0]) if late.size else None


def both(*tweaks):
    def tweak(inputs):
        for t in tweaks:
            t(inputs)
    return tweak


def fused_problem(numbers: dict, function: str) -> list:
    if float(numbers.get("fused", 0)):
        return [f"{function} calls DyNet's fused LSTM operations ({', '.join(probes.FUSED)}): "
                "the exercise is to write the equations yourself"]
    return []


def states_agree(got, want, indices=None) -> bool:
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return False
    indices = list(range(want.shape[1])) if indices is None else list(indices)
    return bool(np.all(np.abs(got[:, indices] - want[:, indices]) <= probes.ATOL))


def shape_problem(got, want) -> list:
    got, want = np.asarray(got), np.asarray(want)
    if got.shape == want.shape:
        return []
    return [f"the state has shape {got.shape[1:]} per step, expected {want.shape[1:]} "
            "(number of state vectors, d_h, batch)"]


def diagnose(numbers: dict, inputs: dict, slips: list, indices=None) -> list:
    """The hint of the first known slip whose states the student's equal, or []."""
    for hint, variant in slips:
        try:
            expected = probes.run_step(variant, inputs)
        except Exception:          # a variant that does not fit these inputs names nothing
            continue
        if states_agree(numbers["states"], expected["states"], indices):
            return [hint]
    return []


def first_difference(got, want, indices) -> tuple:
    """(step, state index, max abs diff) where the states first differ."""
    got, want = np.asarray(got), np.asarray(want)
    for t in range(want.shape[0]):
        for k in sorted(indices, reverse=True):      # c before h: h is computed from c
            diff = float(np.abs(got[t, k] - want[t, k]).max())
            if not diff <= probes.ATOL:
                return t, k, diff
    return None


def values_check(name: str, function: str, cell_name: str, *, seed: int, explain: dict,
                 tweak: Callable | None = None, indices=None, slips: list = (), groups: list = (),
                 accept: list = (), batch: int = 7, steps: int = 4, about: str = ABOUT,
                 lecture: tuple = (), visible: str = "") -> Check:
    """The states (all, or ``indices``) against the reference cell ``cell_name``.

    ``explain``: state index -> what to check when that state is the first to differ;
    ``groups``: ``[(state index, units, message)]`` named when those units differ;
    ``slips``: ``[(hint, variant step)]`` tried first; ``accept``: variant steps whose
    states pass too (a slip in a part another check judges)."""
    def make_inputs():
        return step_inputs(cell_name, function, seed, tweak, batch, steps)

    def judge(numbers, inputs):
        problems = fused_problem(numbers, function)
        if problems:
            return problems
        want = probes.run_step(make_cell(cell_name).step, inputs)["states"]
        got = np.asarray(numbers["states"])
        checked = list(range(want.shape[1])) if indices is None else list(indices)
        if shape_problem(got, want):
            return shape_problem(got, want)
        if states_agree(got, want, checked) or diagnose(numbers, inputs, [("", v) for v in accept], checked):
            return []
        hint = diagnose(numbers, inputs, list(slips), checked)
        if hint:
            return hint
        if want.shape[1] == 2 and np.all(np.abs(got[0, ::-1] - want[0]) <= probes.ATOL):
            return ["the state is returned as (c, h): return (h, c), h first (the next step and the "
                    "model read state[0] as h)"]
        named = [message for k, units, message in groups
                 if not np.all(np.abs(got[:, k, units] - want[:, k, units]) <= probes.ATOL)]
        if named:
            return named
        t, k, diff = first_difference(got, want, checked)
        state = STATE_NAMES[want.shape[1]][k]
        return [f"{state}_t differs from step {t + 1} on (max abs diff {diff:.2g} > {probes.ATOL}): "
                f"{explain[k]}"]

    return Check(name, (function,), make_inputs, "autograder.probes:step", judge, about, lecture, visible)


def gradients_check(name: str, function: str, cell_name: str, *, seed: int, visible: str = "",
                    lecture: tuple = DYNET_GRADIENTS) -> Check:
    """Every parameter's gradient: equal to the reference's where the states are right,
    present at all where they are not (the values checks judge the values)."""
    def make_inputs():
        return step_inputs(cell_name, function, seed)

    def judge(numbers, inputs):
        problems = fused_problem(numbers, function)
        if problems:
            return problems
        expected = probes.run_step(make_cell(cell_name).step, inputs)
        grads = {k: np.asarray(numbers["grads"].get(k, np.zeros_like(v))) for k, v in expected["grads"].items()}
        if not states_agree(numbers["states"], expected["states"]):
            if not any(np.any(g != 0) for g in grads.values()):      # NaN: it reached them
                return ["no gradient reaches any parameter: build the step from DyNet operations on "
                        "the expressions in p (not NumPy, .npvalue() or .value())"]
            return []
        wrong = []
        for k, want in expected["grads"].items():
            err = np.abs(grads[k] - want).max() / max(np.abs(want).max(), 1e-8)
            if grads[k].shape != want.shape or not err <= probes.GRAD_RTOL:
                wrong.append(k)
        if wrong:
            return [f"the values are right but the gradients differ for {', '.join(wrong)} (relative "
                    f"error > {probes.GRAD_RTOL}): part of the step was computed outside DyNet "
                    "(NumPy, .npvalue() or .value()), so no gradient flows through it"]
        return []

    about = ABOUT + "; the loss is a random projection of h at every step"
    return Check(name, (function,), make_inputs, "autograder.probes:step", judge, about, lecture, visible)


def sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


def lstm_output_check(name: str, cell_name: str, *, seed: int, gate_eq: str, lecture: tuple,
                      visible: str) -> Check:
    """An LSTM's output on its own: h_t = o_t * tanh(c_t) from the student's own c_t (NumPy,
    float64), with every W_h* = 0 so that o_t = sigma(W_xo x_t + b_o), and the output gate open
    (b_o = +30) in the units :data:`FIRST`: a wrong memory cell does not fail it."""
    def make_inputs():
        return step_inputs(cell_name, "lstm_step", seed, set_params(**{"W_h*": 0.0, "b_o": [(FIRST, OPEN)]}))

    def judge(numbers, inputs):
        problems = fused_problem(numbers, "lstm_step")
        got = np.asarray(numbers["states"])
        if problems or got.ndim != 4 or got.shape[1] != 2 or got.shape[0] != len(inputs["xs"]):
            return problems or ["lstm_step must return (h, c), each ((d_h,), B), at every step"]
        p = inputs["params"]
        want = np.array([sigmoid(p["W_xo"] @ x + p["b_o"][:, None]) * np.tanh(got[t, 1])
                         for t, x in enumerate(inputs["xs"])])
        wrong = ~(np.abs(got[:, 0] - want) <= probes.ATOL)        # NaN is wrong too
        c_prev = np.concatenate([np.asarray(inputs["state0"][1])[None], got[:-1, 1]])
        from_old = np.array([sigmoid(p["W_xo"] @ x + p["b_o"][:, None]) * np.tanh(c_prev[t])
                             for t, x in enumerate(inputs["xs"])])
        if wrong.any() and np.all(np.abs(got[:, 0] - from_old) <= probes.ATOL):
            return ["h_t is o_t * tanh(c_{t-1}), from the old memory: eq 51 squashes the new one, "
                    "h_t = o_t * tanh(c_t)"]
        if wrong[:, FIRST].any():
            return ["with b_o = +30 the output gate is open (o_t = 1), so h_t must be tanh(c_t): is o_t "
                    "computed from W_xo, W_ho, b_o, and c_t squashed with tanh?"]
        if wrong.any():
            return ["h_t = o_t * tanh(c_t) differs where the output gate is not saturated: check o_t "
                    f"({gate_eq}: the logistic of W_xo x_t + W_ho h_{{t-1}} + b_o)"]
        return []

    about = ("batch 7, 4 steps, every W_h* = 0 (the gates read x_t only), the output gate open (b_o = +30) "
             "in 2 of the 4 units; h_t is compared with o_t * tanh(c_t) of your own c_t")
    return Check(name, ("lstm_step",), make_inputs, "autograder.probes:step", judge, about, lecture, visible)
