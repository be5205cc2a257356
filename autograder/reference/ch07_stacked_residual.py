"""Checks of chapter 07 (stacked and residual RNNs): ``stacked_step`` and ``horizontal_step``.

``stacked_step(steps, params, x, states, residual=None)`` runs one time step of
a stack of recurrent layers, each a step function of :mod:`course.cell`, and
returns ``(top_output, new_states)``:

* ``residual=None``: the stacked RNN of tutorial eq 60; layer l reads the
  output of layer l-1 (layer 1 reads x_t);
* ``"vertical"``: ResV, tutorial eq 61 and Odyssey section 5: each layer's
  input is added to its output, and the sum is passed up;
* ``"lateral"``: ResV + ResL (the Odyssey paper's Res-V2): the same sum also
  replaces the layer's h in the state passed to the next time step (Odyssey:
  its eq 6 becomes h_t = o_t * tanh(c_t) + x_t).

Four checks run a 3-layer stack of mixed layers (two-vector and one-vector states;
d = 4, a batch of 3) from a non-zero state over 4 steps and compare with
:func:`reference_stacked_step`:

* ``ch07.stacked``, ``ch07.residual_vertical``, ``ch07.residual_lateral``: the
  top outputs and every layer's state at every step in one mode (None,
  "vertical", "lateral"), so a slip in one kind of residual costs that mode only;
  a known slip is named;
* ``ch07.stacked_gradients``: every parameter's gradient in every mode where the
  values are right (relative 1e-4); where they are not, only that gradients flow.

``horizontal_step(step, p, x, state)`` runs one layer's step with a horizontal
residual (Odyssey section 5, the variant the paper reports failed): the fast state
of the previous time step is added to the layer's new h, which goes forward as h;
the slow state is left as the step returned it. One check, ``ch07.residual_horizontal``,
wraps it around the fused LSTM layer (d = 4, a batch of 3, 4 steps, a non-zero (h, c))
and compares every state (1e-5) and every gradient (relative 1e-4) with
:func:`reference_horizontal_step`; a known slip is named.

The probes are :mod:`autograder.probes.ch07_stacked_residual`.
"""
from __future__ import annotations

import numpy as np

from autograder import probes as step_probes
from autograder.probes import ch07_stacked_residual as probes
from autograder.reference.grading import Check
from autograder.reference.steps import DYNET_GRADIENTS

ATOL = 1e-5          # outputs and states: max abs difference (float32 arithmetic in DyNet)
GRAD_RTOL = 1e-4     # gradients: relative to the largest reference gradient
LAYERS = ("fused_lstm", "leaky", "fused_lstm")   # mixed: a stack must not assume one state shape
D, BATCH, STEPS = 4, 3, 4                        # residuals need d_in == d_h
SEED = 20260707


def reference_stacked_step(steps, params, x, states, residual=None):
    """One time step of a stack of recurrent layers (tutorial eqs 60-61, Odyssey section 5)."""
    if residual not in probes.MODES:
        raise ValueError(f"residual must be one of {probes.MODES}, got {residual!r}")
    new_states = []
    for step, p, state in zip(steps, params, states):
        state = step(p, x, state)
        h = state[0]
        if residual is not None:
            h = h + x                                   # ResV (eq 61)
            if residual == "lateral":
                state = (h,) + tuple(state[1:])         # ResL: the sum is the next step's h
        new_states.append(state)
        x = h
    return x, new_states


def make_inputs() -> dict:
    rng = np.random.default_rng(SEED)
    layers = []
    for kind in LAYERS:
        n_state = 2 if kind == "fused_lstm" else 1
        layers.append({
            "kind": kind,
            "params": {k: rng.uniform(-0.9, 0.9, size=s) for k, s in probes.layer_shapes(kind, D).items()},
            "state0": rng.uniform(-0.5, 0.5, size=(n_state, D, BATCH)),
        })
    return {"layers": layers, "xs": rng.normal(size=(STEPS, D, BATCH)),
            "projection": rng.normal(size=(STEPS, D))}


def _differs(got, want, atol=ATOL) -> bool:
    got = np.asarray(got)
    return got.shape != want.shape or not np.abs(got - want).max() <= atol


def compare_values(got: dict, want: dict) -> list[str]:
    """Top outputs and states of one mode (gradients aside)."""
    if np.shape(got["outputs"]) != want["outputs"].shape:
        return [f"the top output has shape {np.shape(got['outputs'])[1:]} per step (d, batch), "
                f"expected {want['outputs'].shape[1:]}"]
    problems = []
    for t in range(len(want["outputs"])):
        if _differs(got["outputs"][t], want["outputs"][t]):
            problems.append(f"the top output differs from step {t + 1} on")
            break
    for t, step in enumerate(want["states"].values()):
        got_step = got["states"].get(f"t{t}", {})
        bad = [f"layer {k + 1}" for k, (key, w) in enumerate(step.items())
               if _differs(got_step.get(key, np.zeros(0)), w)]
        if bad:
            problems.append(f"the new state of {', '.join(bad)} differs from step {t + 1} on")
            break
    return problems


def variant(pass_up_sum=True, lateral_writes_state=True, first_layer_residual=True,
            vertical_writes_state=False, every_layer_reads_x=False, residual_into_state=False):
    """stacked_step with one of the usual slips switched on."""
    def stacked_step(steps, params, x, states, residual=None):
        x_in, new_states = x, []
        for k, (step, p, state) in enumerate(zip(steps, params, states)):
            layer_input = x_in if every_layer_reads_x else x
            if residual and residual_into_state:        # added to h_{t-1}, before the layer's nonlinearity
                state = step(p, layer_input, (state[0] + layer_input,) + tuple(state[1:]))
                new_states.append(state)
                x = state[0]
                continue
            state = step(p, layer_input, state)
            h = state[0]
            if residual and (k > 0 or first_layer_residual):
                h_sum = h + layer_input
                if (residual == "lateral" and lateral_writes_state) or vertical_writes_state:
                    state = (h_sum,) + tuple(state[1:])
                h = h_sum if pass_up_sum else h
            new_states.append(state)
            x = h
        return x, new_states
    return stacked_step


SLIPS = [
    ("the residual is added to h_{t-1} before the layer runs (inside its nonlinearity); eq 61 adds the "
     "layer's input to its output: h = step(p, x, state)[0] + x", variant(residual_into_state=True)),
    ("the next layer reads h without the residual: with residuals the sum h + x is what goes up (eq 61)",
     variant(pass_up_sum=False)),
    ("the sum h + x must also replace h (new_state[0]) in the state passed to the "
     "next time step (ResL)", variant(lateral_writes_state=False)),
    ("the layer's own new state must stay as its step returned it; only 'lateral' "
     "writes the sum into it", variant(vertical_writes_state=True)),
    ("the first layer needs its residual too: x_t is added to its output", variant(first_layer_residual=False)),
    ("layer n reads the output of layer n-1, not x_t (eq 60)", variant(every_layer_reads_x=True)),
]


def mode_judge(mode):
    def judge(numbers: dict, inputs: dict) -> list[str]:
        name = probes.mode_name(mode)
        want = probes.run_stack(reference_stacked_step, inputs, mode)
        problems = compare_values(numbers[name], want)
        if problems and not problems[0].startswith("the top output has shape"):
            for hint, slip in SLIPS:
                if not compare_values(probes.run_stack(slip, inputs, mode), want):
                    continue                     # this slip does not show in this mode
                if not compare_values(numbers[name], probes.run_stack(slip, inputs, mode)):
                    return [f"residual={mode!r}: {hint}"]
        return [f"residual={mode!r}: {p}" for p in problems]
    return judge


def judge_gradients(numbers: dict, inputs: dict) -> list[str]:
    wanted = {mode: probes.run_stack(reference_stacked_step, inputs, mode) for mode in probes.MODES}
    got = {mode: numbers[probes.mode_name(mode)] for mode in probes.MODES}
    if any(compare_values(got[mode], want) for mode, want in wanted.items()):
        flows = any(np.any(np.asarray(g) != 0) for mode in probes.MODES
                    for layer in got[mode]["grads"].values() for g in layer.values())
        return [] if flows else ["no gradient reaches any parameter: keep the outputs DyNet expressions "
                                 "(no NumPy, .npvalue() or dy.inputTensor of values)"]
    problems = []
    for mode, want in wanted.items():
        wrong = []
        for k, (key, layer) in enumerate(want["grads"].items()):
            for name, expected in layer.items():
                have = np.asarray(got[mode]["grads"].get(key, {}).get(name, np.zeros_like(expected)))
                if have.shape != expected.shape or \
                        not np.abs(have - expected).max() / max(np.abs(expected).max(), 1e-8) <= GRAD_RTOL:
                    wrong.append(f"layer {k + 1} {name}")
        if wrong:
            shown = ", ".join(wrong[:4]) + (f" and {len(wrong) - 4} more" if len(wrong) > 4 else "")
            problems.append(f"residual={mode!r}: the values are right but the gradients differ (relative "
                            f"error > {GRAD_RTOL}) for {shown}: was something computed outside DyNet?")
    return problems


def mode_inputs(*modes):
    return lambda: {**make_inputs(), "modes": list(modes)}


def reference_horizontal_step(step, p, x, state):
    """One step of a layer with a horizontal residual (Odyssey section 5): h_t = RNN(x_t, s_{t-1})[0] + h_{t-1}."""
    new = step(p, x, state)
    return (new[0] + state[0],) + tuple(new[1:])


def horizontal_adds_input(step, p, x, state):
    new = step(p, x, state)
    return (new[0] + x,) + tuple(new[1:])


def horizontal_into_c(step, p, x, state):
    h, c = step(p, x, state)
    return (h, c + state[0])


HORIZONTAL_SLIPS = [
    ("a horizontal residual adds the fast state of the previous time step, h_{t-1} = state[0], not the "
     "layer's input x_t (that is the lateral residual)", horizontal_adds_input),
    ("h_{t-1} is added to the slow state c; it belongs to the fast state h (new_state[0]), and c stays "
     "as the step returned it", horizontal_into_c),
]


def horizontal_inputs() -> dict:
    return step_probes.make_inputs(probes.layer_shapes("fused_lstm", D), 2, D, D, batch=BATCH, steps=STEPS,
                                   seed=SEED + 1)


def judge_horizontal(numbers: dict, inputs: dict) -> list[str]:
    def run(fn):
        return step_probes.run_step(lambda p, x, state: fn(probes.fused_lstm_step, p, x, state), inputs)
    want = run(reference_horizontal_step)
    problems = step_probes.compare(numbers, want)
    if problems and np.shape(numbers["states"]) == want["states"].shape:
        for hint, slip in HORIZONTAL_SLIPS:
            if not _differs(numbers["states"], run(slip)["states"]):
                return [hint]
    return problems


ABOUT = ("a stack of 3 layers (an LSTM, a one-vector leaky cell, an LSTM), d = 4, batch 3, 4 steps, random "
         "non-zero weights, every layer's start state non-zero")
PROBE = "autograder.probes.ch07_stacked_residual:stacked_step"
VISIBLE = "stacked_step_tests"
CHECKS = [
    Check("ch07.stacked", ("stacked_step",), mode_inputs(None), PROBE, mode_judge(None),
          ABOUT + "; residual=None", ("07_stacked_residual", "eq 60"), VISIBLE),
    Check("ch07.residual_vertical", ("stacked_step",), mode_inputs("vertical"), PROBE, mode_judge("vertical"),
          ABOUT + "; residual='vertical'", ("07_stacked_residual", "eq 61"), VISIBLE),
    Check("ch07.residual_lateral", ("stacked_step",), mode_inputs("lateral"), PROBE, mode_judge("lateral"),
          ABOUT + "; residual='lateral'", ("07_stacked_residual", "3. Vertical and lateral residuals"), VISIBLE),
    Check("ch07.stacked_gradients", ("stacked_step",), mode_inputs(*probes.MODES), PROBE, judge_gradients,
          ABOUT + "; every mode; the loss reads the top output at every step and the final states",
          DYNET_GRADIENTS, VISIBLE),
    Check("ch07.residual_horizontal", ("horizontal_step",), horizontal_inputs,
          "autograder.probes.ch07_stacked_residual:horizontal_step", judge_horizontal,
          "one LSTM layer (DyNet's fused LSTM operations), d = 4, batch 3, 4 steps, random non-zero weights, "
          "a non-zero start state (h, c); the loss is a random projection of h at every step",
          ("07_stacked_residual", "Horizontal residuals"), "horizontal_step_tests"),
]

