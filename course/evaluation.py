"""Perplexity of held-out text, from a model's public scoring calls: sentence by sentence
(:func:`evaluate`), or as one stream read in segments with the state carried from one to
the next (:func:`stream_perplexity`); :func:`held_out` reads text as the model was trained.

Nothing here trains or builds a model: :mod:`course.lm` and the command line import this
module, which imports only :mod:`course.sources` (how text is cut), which imports neither.
"""
from __future__ import annotations

import math

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
