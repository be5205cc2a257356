"""Measuring a language model: perplexity of held-out text, from the model's public scoring
calls, sentence by sentence (:func:`evaluate`), or as one stream read in segments with the state
carried from one to the next (:func:`stream_perplexity`; :func:`held_out` reads text as the model
was trained); and how its gradients vanish with distance (:func:`gradient_profile`).

Nothing here trains or builds a model, nor imports :mod:`course.lm`: :mod:`course.training` and
the command line import this module, which imports how text is cut (:mod:`course.sources`,
:mod:`course.data`), neither of which imports it back; importing it does not start DyNet.
"""
from __future__ import annotations

import math

import numpy as np

from course import runtime
from course.data import encode, make_batch
from course.sources import columns, segment, stream_ids

EVAL_STEPS = 100     # steps of a segment in stream evaluation (the carried state makes it irrelevant)


def perplexity(total_nll: float, n_predictions: int) -> float:
    """exp(total negative log-likelihood / number of predicted tokens); inf where that
    overflows (a diverged model)."""
    if n_predictions <= 0:
        raise ValueError("perplexity of no predictions is undefined: the evaluation set is empty")
    mean = total_nll / n_predictions
    return math.exp(mean) if mean < 700 else math.inf


def evaluate(model, sentences, batch_size: int = 64, progress: str | None = None) -> float:
    """Perplexity of token-list sentences: every word and one ``</s>`` per sentence
    are predicted; padding is never counted. ``progress``: a label for a bar on stderr."""
    logprobs = model.sentence_logprobs(sentences, batch_size, progress)
    return perplexity(-float(logprobs.sum()), sum(len(s) + 1 for s in sentences))


def stream_perplexity(model, ids, steps: int = EVAL_STEPS, after_segment=None) -> float:
    """Perplexity of an id stream read as one row, the state carried from start to end:
    every token after the first is predicted once. ``after_segment(tokens_read, state)``
    is called after every segment (the state as numbers, one list per layer)."""
    data = columns(ids, 1)
    n = data.shape[1] - 1
    carried, total, count = None, 0.0, 0
    for start in range(0, n, steps):
        part = segment(data, start, min(start + steps, n), carried)
        total += model.segment_nll(part)
        carried = part.end
        count += part.n_predictions
        if after_segment:
            after_segment(count, carried)
    return perplexity(total, count)


def held_out(model, sentences, stream: bool, progress: str | None = None) -> float:
    """The perplexity of held-out sentences as the model reads text: one stream carried across
    segments (a model trained on a stream), else sentence by sentence from a fresh state."""
    if stream:
        return stream_perplexity(model, stream_ids(sentences, model.vocab))
    return evaluate(model, sentences, progress=progress)


def gradient_profile(model, sentences, K: int = 25, n: int = 64) -> np.ndarray:
    """Typical ||d loss / d h|| at each of the K steps before a prediction
    (vanishing and exploding gradients, tutorial section 6.3).

    The loss is the model's prediction of word K of the first n sentences longer
    than K words; entry k of the result belongs to the state k steps before it.
    "Typical" is the geometric mean over the sentences (the norms span decades).
    """
    ids, _ = encode([s[:K] for s in sentences if len(s) > K][:n], model.vocab)
    if not ids:
        raise ValueError(f"no sentence is longer than K={K} words: lower K")
    batch = make_batch(ids, model.vocab)
    dy = runtime.dynet()          # here, not at import: scoring text needs no DyNet of its own
    dy.renew_cg()
    hs = model.hidden_states(batch.inputs[:K])     # the states after <s>, w_1, ..., w_{K-1}
    scores = dy.affine_transform([model.b_s.expr(True), model.W_hs.expr(True), hs[-1]])
    loss = dy.sum_batches(dy.pickneglogsoftmax_batch(scores, batch.targets[K - 1]))
    loss.backward(full=True)                       # full=True: gradients of every node, h included
    norms = np.array([np.linalg.norm(h.gradient(), axis=0) for h in reversed(hs)])
    return np.exp(np.log(np.maximum(norms, 1e-30)).mean(axis=1))
