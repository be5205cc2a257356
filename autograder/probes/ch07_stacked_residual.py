"""Probe of chapter 07 (stacked and residual RNNs): run a student's
``stacked_step(steps, params, x, states, residual)`` over a few time steps.

Runs in the autograder's sandbox, so it imports no reference code: the layers
of the grader's stack are built from DyNet's fused LSTM operations and a small
leaky cell that is no exercise of the course. The grader's inputs come from
:mod:`autograder.reference.ch07_stacked_residual`; the judge runs the reference
stack through :func:`run_stack` too.
"""
from __future__ import annotations

import numpy as np

from autograder import probes

MODES = (None, "vertical", "lateral")


def fused_lstm_step(p, x, state):
    """DyNet's fused LSTM operations (gate blocks i, f, o, g; DyNet adds 1 inside f)."""
    dy = dy_module()
    h_prev, c_prev = state
    gates = dy.vanilla_lstm_gates(x, h_prev, p["W_x"], p["W_h"], p["b"])
    c = dy.vanilla_lstm_c(c_prev, gates)
    return (dy.vanilla_lstm_h(c, gates), c)


def leaky_step(p, x, state):
    """h_t = sigmoid(a) * h_{t-1} + tanh(W x_t + b): a one-vector state."""
    dy = dy_module()
    (h_prev,) = state
    return (dy.cmult(dy.logistic(p["a"]), h_prev) + dy.tanh(dy.affine_transform([p["b"], p["W"], x])),)


STEP_FUNCTIONS = {"fused_lstm": fused_lstm_step, "leaky": leaky_step}


def layer_shapes(kind: str, d: int) -> dict:
    if kind == "fused_lstm":
        return {"W_x": (4 * d, d), "W_h": (4 * d, d), "b": (4 * d,)}
    return {"W": (d, d), "b": (d,), "a": (d,)}


def dy_module():
    from course import runtime
    return runtime.dynet()


def run_stack(stacked_step, inputs: dict, residual) -> dict:
    """Run ``stacked_step`` over the inputs' time steps; return the top output at
    every step (``(T, d, B)``), every layer's state at every step and the
    gradient of every parameter, as a nested dict of arrays."""
    dy = dy_module()
    dy.renew_cg()
    pc = dy.ParameterCollection()
    steps, P, states = [], [], []
    for layer in inputs["layers"]:
        steps.append(STEP_FUNCTIONS[layer["kind"]])
        P.append({k: pc.add_parameters(v.shape, init=dy.NumpyInitializer(v)) for k, v in layer["params"].items()})
        states.append(tuple(dy.inputTensor(s, batched=True) for s in layer["state0"]))
    params = [{k: p.expr(True) for k, p in layer.items()} for layer in P]   # True: gradients flow
    d, batch = inputs["xs"].shape[1:]
    outputs, all_states, terms = [], [], []
    for t, x in enumerate(inputs["xs"]):
        result = stacked_step(steps, params, dy.inputTensor(x, batched=True), states, residual)
        if not isinstance(result, tuple) or len(result) != 2:
            raise TypeError("stacked_step must return a tuple (top_output, new_states)")
        h, states = result
        states = list(states)
        if len(states) != len(steps) or not all(isinstance(s, tuple) and len(s) == len(layer["state0"])
                                                for s, layer in zip(states, inputs["layers"])):
            raise TypeError(f"new_states must hold one state tuple per layer ({len(steps)} layers), "
                            "each with as many vectors as that layer's state")
        outputs.append(h)
        all_states.append(states)
        terms.append(dy.dot_product(dy.inputTensor(inputs["projection"][t]), h))
    # the final states enter the loss too, so that a wrong state shows in the gradients
    terms += [dy.sum_elems(part) for state in states for part in state]
    loss = dy.sum_batches(dy.esum(terms))
    loss.forward()
    loss.backward()
    return {
        "outputs": np.array([h.npvalue().reshape(d, batch) for h in outputs]),
        "states": {f"t{t}": {f"layer{k}": np.array([part.npvalue().reshape(d, batch) for part in state])
                             for k, state in enumerate(step)} for t, step in enumerate(all_states)},
        "grads": {f"layer{k}": {name: p.grad_as_array() for name, p in layer.items()}
                  for k, layer in enumerate(P)},
    }


def mode_name(residual) -> str:
    return "none" if residual is None else residual


def stacked_step(functions: dict, inputs: dict) -> dict:
    """The student's stack in the residual modes ``inputs["modes"]`` (default: all):
    ``{"none": ..., "vertical": ..., "lateral": ...}``."""
    return {mode_name(m): run_stack(functions["stacked_step"], inputs, m) for m in inputs.get("modes", MODES)}


def horizontal_step(functions: dict, inputs: dict) -> dict:
    """The student's ``horizontal_step(step, p, x, state)`` wrapped around the fused LSTM
    layer, run over the inputs' steps: every state at every step and every gradient."""
    fn = functions["horizontal_step"]
    return probes.run_step(lambda p, x, state: fn(fused_lstm_step, p, x, state), inputs)
