"""Chapter 00 (DyNet primer): the check of the warm-up ``mlp_nll``.

``mlp_nll(p, x, y)`` is the summed negative log-likelihood of a one-hidden-layer
tanh network over a batch (the tanh layer of tutorial eq 44 without its
recurrent term, the softmax of tutorial eq 45)::

    h_b = tanh(W1 x_b + b1),   s_b = W2 h_b + b2,
    loss = - sum_b log softmax(s_b)[y_b]

The reference here is NumPy (float64): the loss and its gradients, derived by
hand, so the check does not trust DyNet to check DyNet code.
"""
from __future__ import annotations

import numpy as np

from autograder.reference.grading import Check

RTOL = 1e-5          # the loss, relative (DyNet computes in float32)
GRAD_RTOL = 1e-4     # gradients, relative to the largest reference gradient


def mlp_inputs(d_in: int = 4, d_h: int = 5, n_classes: int = 3, batch: int = 7,
               seed: int = 20261100) -> dict:
    """Random non-zero, non-symmetric weights, a batch of inputs and labels."""
    rng = np.random.default_rng(seed)
    params = {"W1": rng.uniform(-1.0, 1.0, (d_h, d_in)), "b1": rng.uniform(-0.5, 0.5, d_h),
              "W2": rng.uniform(-1.0, 1.0, (n_classes, d_h)), "b2": rng.uniform(-0.5, 0.5, n_classes)}
    labels = rng.integers(0, n_classes, batch)
    labels[:n_classes] = np.arange(n_classes)       # every class occurs
    return {"params": params, "x": rng.normal(size=(d_in, batch)), "y": labels.tolist()}


def mlp_nll_numpy(params: dict, x: np.ndarray, y, hidden=np.tanh):
    """(loss, gradients) of the network in NumPy; ``x`` is ``(d_in, B)``."""
    W1, b1, W2, b2 = (np.asarray(params[k], dtype=float) for k in ("W1", "b1", "W2", "b2"))
    y = np.asarray(y)
    batch = np.arange(x.shape[1])
    h = hidden(W1 @ x + b1[:, None])
    scores = W2 @ h + b2[:, None]
    shifted = scores - scores.max(axis=0)
    log_softmax = shifted - np.log(np.exp(shifted).sum(axis=0))
    loss = -log_softmax[y, batch].sum()
    d_scores = np.exp(log_softmax)                  # softmax - one-hot, per column
    d_scores[y, batch] -= 1.0
    d_hidden = (W2.T @ d_scores) * (1.0 - h ** 2)   # tanh' = 1 - tanh^2
    grads = {"W1": d_hidden @ x.T, "b1": d_hidden.sum(axis=1),
             "W2": d_scores @ h.T, "b2": d_scores.sum(axis=1)}
    return float(loss), grads


def _close(a: float, b: float, rtol: float = RTOL) -> bool:
    return abs(a - b) <= rtol * max(abs(b), 1.0)


def judge_mlp_nll(numbers: dict, inputs: dict) -> list[str]:
    """Numbers may come straight from the probe or as float arrays from the sandbox."""
    if not float(numbers.get("is_expression", 0.0)):
        return ["mlp_nll must return a DyNet expression (the loss), not a number or an array"]
    batch = len(inputs["y"])
    dims = [int(d) for d in np.asarray(numbers["dims"]).reshape(-1)]
    if int(numbers["batch"]) != 1:
        return [f"the loss has one value per example (a batch of {int(numbers['batch'])}): add them "
                "up with dy.sum_batches so that the result is one number"]
    if dims != [1]:
        return [f"the loss must be a scalar, got dimension {tuple(dims)}: pick the "
                "label's negative log-probability (dy.pickneglogsoftmax_batch)"]
    want, want_grads = mlp_nll_numpy(inputs["params"], np.asarray(inputs["x"]), inputs["y"])
    got = float(np.asarray(numbers["value"]).reshape(-1)[0])
    if not _close(got, want):
        if _close(got * batch, want):
            return ["the loss is the mean over the batch; the contract asks for the sum"]
        if _close(got, mlp_nll_numpy(inputs["params"], np.asarray(inputs["x"]), inputs["y"],
                                     hidden=lambda z: 1 / (1 + np.exp(-z)))[0]):
            return ["the hidden layer must use tanh (dy.tanh), not the logistic sigmoid"]
        if _close(-got, want):
            return ["the loss has the wrong sign: a negative log-likelihood is >= 0"]
        return [f"the loss differs from the reference (relative error "
                f"{abs(got - want) / max(abs(want), 1.0):.2g} > {RTOL})"]
    grads = numbers.get("grads", {})
    if all(not np.any(np.asarray(grads.get(k, 0.0))) for k in want_grads):
        return ["no gradient reached the parameters: compute the loss with DyNet operations on "
                "the expressions in p (not with NumPy or .npvalue())"]
    wrong = []
    for name, want_grad in want_grads.items():
        have = np.asarray(grads.get(name, np.zeros_like(want_grad)), dtype=float)
        err = np.abs(have - want_grad).max() / max(np.abs(want_grad).max(), 1e-8)
        if have.shape != want_grad.shape or not err <= GRAD_RTOL:
            wrong.append(name)
    if wrong:
        return [f"the gradients of {', '.join(wrong)} differ from the reference (relative error > "
                f"{GRAD_RTOL}): is each parameter used where the equations put it?"]
    return []


CHECKS = [
    Check("ch00.mlp_nll", ("mlp_nll",), mlp_inputs, "autograder.probes.ch00_dynet_primer:mlp_nll",
          judge_mlp_nll, about="4 inputs, 5 hidden units, 3 classes, a batch of 7 (every class present), "
                               "random non-zero weights; the loss and every parameter's gradient",
          lecture=("00_dynet_primer", "4 · Forward, backward, update"), visible="mlp_nll_tests"),
]
