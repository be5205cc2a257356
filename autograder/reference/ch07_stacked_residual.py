"""Checks of chapter 07 (stacked and residual RNNs): ``stacked_step``.

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

``ch07.stacked_step`` runs a 3-layer stack of mixed layers (two-vector and
one-vector states) from a non-zero state over several steps in each mode, and
compares the top outputs, every layer's state and every gradient with
:func:`reference_stacked_step`. The probe is
:mod:`autograder.probes.ch07_stacked_residual`.
"""
from __future__ import annotations

import numpy as np

from autograder.probes import ch07_stacked_residual as probes
from autograder.reference.grading import Check

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


def compare_mode(got: dict, want: dict) -> list[str]:
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
    wrong = []
    for k, (key, layer) in enumerate(want["grads"].items()):
        for name, expected in layer.items():
            have = np.asarray(got["grads"].get(key, {}).get(name, np.zeros_like(expected)))
            if have.shape != expected.shape or \
                    not np.abs(have - expected).max() / max(np.abs(expected).max(), 1e-8) <= GRAD_RTOL:
                wrong.append(f"layer {k + 1} {name}")
    if wrong:
        shown = ", ".join(wrong[:4]) + (f" and {len(wrong) - 4} more" if len(wrong) > 4 else "")
        problems.append(f"the gradients differ (relative error > {GRAD_RTOL}) for {shown}")
    return problems


def judge(numbers: dict, inputs: dict) -> list[str]:
    problems = []
    for mode in probes.MODES:
        name = probes.mode_name(mode)
        expected = probes.run_stack(reference_stacked_step, inputs, mode)
        problems += [f"residual={mode!r}: {p}" for p in compare_mode(numbers[name], expected)]
    return problems


CHECKS = [Check("ch07.stacked_step", ("stacked_step",), make_inputs,
                "autograder.probes.ch07_stacked_residual:stacked_step", judge)]
