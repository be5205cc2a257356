"""Checks of chapter 11 (causal self-attention, from the weighted sum to attention).

``causal_attention(p, X, heads) -> H`` over a whole sentence: X and H are ((d, T), B),
``p`` holds ``W_q, W_k, W_v, W_o`` (d, d) and the position table ``P`` (d, T_max).
The reference is NumPy in float64 (:func:`attention`), independent of DyNet; the
gradients are its central finite differences. The student's function is traced in the
sandbox and its program replayed at a fresh point (autograder/grader.py), as the
recurrent steps are. d = 8, T_max = 12, random non-zero weights in (-0.9, 0.9),
X ~ N(0, 1). Tolerances: 1e-4 on outputs (float32, values of a few units), 1e-4 on
gradients relative to the largest reference gradient.

* ``ch11.attention_one_head``: one head, T = 5, batch 4;
* ``ch11.attention_heads``: two heads (d_k = 4), T = 5, batch 4;
* ``ch11.attention_gradients``: every parameter's gradient (two heads);
* ``ch11.attention_causal``: the two halves of the batch read the same first three words
  and different later ones: the outputs at positions 1-3 must not differ (judged on
  their own, whatever the values);
* ``ch11.attention_lengths``: a one-word sentence (T = 1) and, in ``attention_long``, a
  sentence of 11 words with four heads (d_k = 2), batch 3.

A known slip is named when the student's outputs are exactly that slip's (:data:`SLIPS`).
"""
from __future__ import annotations

import numpy as np

from autograder import probes
from autograder.reference.grading import Check

SEED = 20261128
D, T_MAX = 8, 12
ATOL = 1e-4
GRAD_RTOL = 1e-4
SHARED = 3                    # the causal check: the words both halves of the batch share
NAMES = ("W_q", "W_k", "W_v", "W_o")
LECTURE = "11_attention"


def attention(params: dict, X, heads: int, mask: str = "causal", scale: str = "head",
              axis: str = "keys", positions: bool = True, project: bool = True):
    """The reference in NumPy, float64: X (d, T, B) -> H (d, T, B). The keywords make the
    slips: ``mask`` "causal" (j <= t), "ahead" (j <= t + 1), "diagonal" (j < t; position 1 sees
    nothing and is NaN) or "none"; ``scale`` "head" (sqrt(d_k)), "model" (sqrt(d)) or "none";
    ``axis`` "keys" (each position's weights sum to 1) or "queries"."""
    X = np.asarray(X, dtype=float)
    d, T, B = X.shape
    d_k = d // heads
    if positions:
        X = X + np.asarray(params["P"], dtype=float)[:, :T, None]
    Q, K, V = (np.einsum("ed,dtb->etb", np.asarray(params[n], dtype=float), X) for n in ("W_q", "W_k", "W_v"))
    t, j = np.arange(T)[:, None], np.arange(T)[None, :]
    allowed = {"causal": j <= t, "ahead": j <= t + 1, "diagonal": j < t, "none": np.ones((T, T), bool)}[mask]
    by = {"head": np.sqrt(d_k), "model": np.sqrt(d), "none": 1.0}[scale]
    heads_out = []
    for i in range(heads):
        rows = slice(i * d_k, (i + 1) * d_k)
        S = np.einsum("ktb,kjb->tjb", Q[rows], K[rows]) / by              # [t, j, b]
        S = np.where(allowed[:, :, None], S, -np.inf)
        over = 1 if axis == "keys" else 0
        with np.errstate(invalid="ignore"):
            E = np.exp(S - S.max(axis=over, keepdims=True))
            A = E / E.sum(axis=over, keepdims=True)
        heads_out.append(np.einsum("tjb,kjb->ktb", A, V[rows]))
    H = np.concatenate(heads_out, axis=0)
    return np.einsum("ed,dtb->etb", np.asarray(params["W_o"], dtype=float), H) if project else H


def reference(inputs: dict, **slip):
    return attention(inputs["params"], inputs["xs"][0], int(inputs["heads"]), **slip)


def loss(params: dict, inputs: dict) -> float:
    return float(np.sum(np.asarray(inputs["projection"])[:, :, None]
                        * attention(params, inputs["xs"][0], int(inputs["heads"]))))


def gradients(inputs: dict, eps: float = 1e-6) -> dict:
    """Every parameter's gradient of the probe's loss, by central differences of the reference."""
    params = {k: np.array(v, dtype=float) for k, v in inputs["params"].items()}
    grads = {}
    for name, value in params.items():
        g = np.zeros_like(value)
        for index in np.ndindex(value.shape):
            keep = value[index]
            value[index] = keep + eps
            up = loss(params, inputs)
            value[index] = keep - eps
            down = loss(params, inputs)
            value[index] = keep
            g[index] = (up - down) / (2 * eps)
        grads[name] = g
    return grads


# name -> (hint, the reference's keywords, the positions (0-based, from) where the slip is defined)
SLIPS = {
    "future visible": ("position t sees the later positions j > t: the causal mask must hide every key after "
                       "the query (a language model may not read the word it predicts)", {"mask": "none"}, 0),
    "mask ahead": ("the mask is off by one: position t sees position t + 1; hide every j > t and keep j = t",
                   {"mask": "ahead"}, 0),
    "mask diagonal": ("the mask is off by one: position t does not see itself; attend to every j <= t, "
                      "t included", {"mask": "diagonal"}, 1),
    "no scaling": ("the scores are not scaled: divide q_t . k_j by sqrt(d_k), the width of one head",
                   {"scale": "none"}, 0),
    "scaled by sqrt(d)": ("the scores are divided by sqrt(d), the whole width; each head's are divided by "
                          "sqrt(d_k) = sqrt(d / heads), its own width", {"scale": "model"}, 0),
    "softmax over queries": ("the softmax runs over the wrong axis: each key's weights sum to 1 over the "
                             "queries; each position t's weights a_tj must sum to 1 over the keys j <= t",
                             {"axis": "queries"}, 0),
    "no positions": ("the positions are not added: x_j + P[:, j] (the first T columns of P) before the "
                     "projections; without them attention does not know the order of the words",
                     {"positions": False}, 0),
    "no output projection": ("the heads' outputs are not multiplied by W_o: h_t = W_o [head_1; ...; head_n]",
                             {"project": False}, 0),
}


def attention_inputs(seed: int, heads: int, T: int, B: int, paired: bool = False) -> dict:
    """The grader's inputs, shaped as a step check's (autograder/probes: sequence functions)."""
    rng = np.random.default_rng(seed)
    params = {name: rng.uniform(-0.9, 0.9, size=(D, D)) for name in NAMES}
    params["P"] = rng.uniform(-0.9, 0.9, size=(D, T_MAX))
    xs = rng.normal(size=(1, D, T, B))
    if paired:                        # the second half of the batch: the first half's first words
        xs[0, :, :SHARED, B // 2:] = xs[0, :, :SHARED, :B // 2]
    return {"params": params, "xs": xs, "state0": np.zeros((0, D, B)), "projection": rng.normal(size=(D, T)),
            "heads": heads, "function": "causal_attention", "sequence": True}


def close(got, want, columns=slice(None)) -> bool:
    got, want = np.asarray(got), np.asarray(want)
    return got.shape == want.shape and bool(np.all(np.abs(got[:, columns] - want[:, columns]) <= ATOL))


def named_slip(got, inputs) -> list:
    for hint, slip, start in SLIPS.values():
        if start < np.shape(got)[1] and close(got, reference(inputs, **slip), slice(start, None)):
            return [hint]
    return []


def shape_problem(got, inputs) -> list:
    want = inputs["xs"].shape[1:]
    if np.shape(got) != want:
        return [f"H has shape {np.shape(got)}, expected (d, T, batch) = {want}"]
    return []


def judge_values(numbers, inputs) -> list:
    got = np.asarray(numbers["outputs"])
    if shape_problem(got, inputs):
        return shape_problem(got, inputs)
    want = reference(inputs)
    if close(got, want):
        return []
    hint = named_slip(got, inputs)
    if hint:
        return hint
    wrong = ~(np.abs(got - want) <= ATOL)
    t = int(np.flatnonzero(wrong.any(axis=(0, 2)))[0])
    return [f"h_t differs from position {t + 1} on (max abs diff {np.abs(got - want)[:, t].max():.2g} > "
            f"{ATOL}): check the positions, the scaled scores q_t . k_j / sqrt(d_k), the mask (j <= t), the "
            "softmax over j, and W_o"]


def judge_gradients(numbers, inputs) -> list:
    grads = {k: np.asarray(numbers["grads"].get(k, np.zeros(1))) for k in inputs["params"]}
    if not close(numbers["outputs"], reference(inputs)):
        if not any(np.any(g != 0) for g in grads.values()):      # NaN: it reached them
            return ["no gradient reaches any parameter: build H from DyNet operations on the expressions "
                    "in p and X (not NumPy, .npvalue() or .value())"]
        return []
    wrong = []
    for name, want in gradients(inputs).items():
        err = np.abs(grads[name] - want).max() / max(np.abs(want).max(), 1e-8) if grads[name].shape == want.shape \
            else np.inf
        if not err <= GRAD_RTOL:
            wrong.append(name)
    if wrong:
        return [f"the values are right but the gradients differ for {', '.join(wrong)} (relative error > "
                f"{GRAD_RTOL}): part of H was computed outside DyNet (NumPy, .npvalue() or .value()), so no "
                "gradient flows through it"]
    return []


def judge_causal(numbers, inputs) -> list:
    got = np.asarray(numbers["outputs"])
    if shape_problem(got, inputs):
        return shape_problem(got, inputs)
    half = got.shape[2] // 2
    apart = np.abs(got[:, :SHARED, :half] - got[:, :SHARED, half:2 * half]).max(axis=(0, 2))
    late = np.flatnonzero(~(apart <= ATOL))
    if not late.size:
        return []
    return named_slip(got, inputs) or [
        f"the output at position {late[0] + 1} changes when only later words change: position t may read "
        "the words j <= t only (the causal mask)"]


ABOUT = "d = 8, random non-zero weights, X ~ N(0, 1), positions P (8 x 12)"
CHECKS = [
    Check("ch11.attention_one_head", ("causal_attention",),
          lambda: attention_inputs(SEED, heads=1, T=5, B=4), "autograder.probes:sequence", judge_values,
          about=ABOUT + "; one head, 5 words, batch 4", lecture=(LECTURE, "eq 1"), visible="attention_values"),
    Check("ch11.attention_heads", ("causal_attention",),
          lambda: attention_inputs(SEED + 1, heads=2, T=5, B=4), "autograder.probes:sequence", judge_values,
          about=ABOUT + "; two heads (d_k = 4), 5 words, batch 4", lecture=(LECTURE, "eq 2"),
          visible="attention_values"),
    Check("ch11.attention_gradients", ("causal_attention",),
          lambda: attention_inputs(SEED + 2, heads=2, T=5, B=4), "autograder.probes:sequence", judge_gradients,
          about=ABOUT + "; two heads, 5 words, batch 4; the loss is a random projection of every h_t",
          lecture=("00_dynet_primer", "4 · Forward, backward, update"), visible="attention_values"),
    Check("ch11.attention_causal", ("causal_attention",),
          lambda: attention_inputs(SEED + 3, heads=2, T=6, B=6, paired=True), "autograder.probes:sequence",
          judge_causal, about=ABOUT + "; two heads, 6 words, batch 6 whose halves share their first 3 words",
          lecture=(LECTURE, "eq 1"), visible="attention_causal"),
    Check("ch11.attention_lengths", ("causal_attention",),
          lambda: attention_inputs(SEED + 4, heads=2, T=1, B=3), "autograder.probes:sequence", judge_values,
          about=ABOUT + "; two heads, a one-word sentence, batch 3", lecture=(LECTURE, "eq 2"),
          visible="attention_causal"),
    Check("ch11.attention_long", ("causal_attention",),
          lambda: attention_inputs(SEED + 5, heads=4, T=11, B=3), "autograder.probes:sequence", judge_values,
          about=ABOUT + "; four heads (d_k = 2), 11 words, batch 3", lecture=(LECTURE, "eq 2"),
          visible="attention_values"),
]
