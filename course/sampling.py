"""Sentences drawn from a language model, token by token: temperature, top-k, top-p (nucleus), or a
distribution of your own (exercise 03). :func:`sample` draws ``n`` sentences in one batch;
:class:`Sample` records each with the log-probability of what was drawn.

Everything in ``course`` that computes a tempered, top-k or top-p distribution goes through
:func:`_tempered` (the command line's ``sample`` and ``judge-samples`` call :func:`sample`), which
chapter 03's grader relies on: it refuses both while a student's own sampler runs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from course import runtime

if TYPE_CHECKING:
    from course.lm import RNNLM

dy = runtime.dynet()


@dataclass
class Sample:
    """A generated sentence: its tokens (the prompt's first, no ``<s>``/``</s>``), the
    natural-log probability of what was drawn under the distribution it was drawn from
    (temperature and top-k applied; the prompt not counted, ``</s>`` counted), and
    whether it ended with ``</s>`` (False: cut at ``max_length``)."""
    tokens: list
    logprob: float
    finished: bool


SAMPLE_GRAPH_STEPS = 10     # sample() starts a new graph after this many steps


def _tempered(scores: np.ndarray, bos: int, top_k, top_p) -> np.ndarray:
    """The log-probabilities ``sample`` draws from, one column per sentence: softmax of the
    (tempered) scores without ``<s>``, cut to the top k and then to the nucleus of mass
    ``top_p``, renormalised; tokens of equal score or probability in the order of their ids."""
    scores = scores.copy()        # float32 as DyNet gives it: the draws of earlier runs stay the same
    scores[bos] = -np.inf
    if top_k is not None and top_k < len(scores) - 1:
        order = np.argsort(-scores, axis=0, kind="stable")      # ties: the lower index first
        cut = np.ones(scores.shape, dtype=bool)
        np.put_along_axis(cut, order[:top_k], False, axis=0)
        scores[cut] = -np.inf
    logp = scores - scores.max(axis=0)
    logp -= np.log(np.exp(logp).sum(axis=0))
    if top_p is None or top_p >= 1:
        return logp
    probs = np.exp(logp)
    order = np.argsort(-probs, axis=0, kind="stable")
    before = np.cumsum(np.take_along_axis(probs, order, axis=0), axis=0)
    before = np.concatenate([np.zeros((1, probs.shape[1])), before[:-1]])   # mass of the more probable
    kept = np.zeros_like(probs, dtype=bool)
    np.put_along_axis(kept, order, before < top_p, axis=0)   # below p before it: it is still needed
    probs = np.where(kept, probs, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(probs / probs.sum(axis=0))


def _distributions(distribution, scores: np.ndarray, bos: int) -> np.ndarray:
    """``distribution`` (one sentence's scores -> probabilities) applied to each column,
    with a clear error when what it returns cannot be drawn from."""
    scores = scores.astype(float)
    scores[bos] = -np.inf
    columns = []
    for j in range(scores.shape[1]):
        p = np.asarray(distribution(scores[:, j].copy()), dtype=float)
        if p.shape != scores[:, j].shape or not np.all(np.isfinite(p)) or p.min() < 0 \
                or abs(p.sum() - 1) > 1e-6:
            raise ValueError(f"distribution must return the probabilities of the {scores.shape[0]:,} tokens "
                             f"(shape {scores[:, j].shape}, finite, not negative, summing to 1); it returned "
                             f"shape {p.shape}" + (f", summing to {p.sum():.6g}" if p.shape == scores[:, j].shape else ""))
        columns.append(p)
    return np.stack(columns, axis=1)


def sample(model: RNNLM, n: int = 10, temperature: float = 1.0, top_k: int | None = None,
           prompt=None, seed: int = 1, max_length: int = 100, *, top_p: float | None = None,
           distribution=None) -> list[Sample]:
    """Draw ``n`` sentences from the model, token by token, all ``n`` in one batch.

    At each step the next token is drawn from softmax(scores / temperature) over the
    vocabulary (``<s>`` excluded), restricted to the ``top_k`` most probable tokens when
    given, then to the nucleus when ``top_p`` is given: the fewest most probable of those
    tokens whose probability reaches ``top_p``, the one that crosses it included,
    renormalised (ties: the lower token id first, so exactly ``top_k`` tokens stay). ``distribution``: instead of those three, a
    function of one sentence's scores (a NumPy vector over the vocabulary, ``-inf`` at
    ``<s>``) that returns the probabilities to draw from (your own sampler, exercise 03).
    ``prompt``: tokens every sentence starts with (``["the", "king"]``; for a
    character model, characters). A sentence ends at ``</s>`` or after ``max_length``
    tokens. The draws come from NumPy's generator seeded with ``seed``, and the model
    has no dropout here, so the same seed gives the same sentences.
    """
    if n < 1 or max_length < 1:
        raise ValueError(f"n ({n}) and max_length ({max_length}) must be positive")
    if not (temperature > 0 and math.isfinite(temperature)):
        raise ValueError(f"temperature must be a positive number, got {temperature}: 1 samples the "
                         "model as it is, lower is more conservative, higher more adventurous")
    if top_k is not None and top_k < 1:
        raise ValueError(f"top_k must be at least 1, got {top_k}")
    if top_p is not None and not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}: the probability the kept tokens reach")
    if distribution is not None and (temperature != 1.0 or top_k is not None or top_p is not None):
        raise ValueError("give either distribution (a function that applies its own temperature, top-k "
                         "and top-p) or temperature, top_k and top_p, not both")
    prompt = list(prompt or [])
    unknown = [t for t in prompt if t not in model.vocab or t in (model.vocab.token(model.vocab.bos),
                                                                   model.vocab.token(model.vocab.eos))]
    if unknown:
        raise ValueError(f"the prompt holds {unknown[:5]}, which the model's vocabulary of "
                         f"{len(model.vocab):,} tokens does not have: use words of its training corpus")
    if len(prompt) >= max_length:
        raise ValueError(f"the prompt is {len(prompt)} tokens long, not shorter than max_length {max_length}")
    rng = np.random.default_rng(seed)
    dy.renew_cg()
    rows = np.arange(n)       # the sentence each column of the batch draws for
    states = [layer.start(n) for layer in model.layers]
    W, b = model.W_hs.expr(), model.b_s.expr()
    tokens = [list(prompt) for _ in range(n)]
    logprob, finished = np.zeros(n), [False] * n
    words, read = [model.vocab.bos] * n, []
    for t in range(max_length + 1):
        if model.stepwise():
            h = model.advance(states, words)
        else:                 # a sequence layer has no step: read the whole prefix again
            read.append(words)
            dy.renew_cg()
            h = model.hidden_states(read)[-1]
            W, b = model.W_hs.expr(), model.b_s.expr()
        if t < len(prompt):
            words = [model.vocab.index(prompt[t])] * len(rows)
            continue
        scores = np.reshape(dy.affine_transform([b, W, h]).npvalue(), (len(model.vocab), len(rows)))
        if distribution is not None:
            probs = _distributions(distribution, scores, model.vocab.bos)
            with np.errstate(divide="ignore"):
                logp = np.log(probs)
        else:
            logp = _tempered(scores / temperature, model.vocab.bos, top_k, top_p)
            probs = np.exp(logp)
        cumulative = np.cumsum(probs, axis=0)
        draws = rng.random(n)[rows] * cumulative[-1]       # n draws a step, whoever has finished
        words = [min(int(np.searchsorted(cumulative[:, k], draws[k], side="right")), len(model.vocab) - 1)
                 for k in range(len(rows))]
        for k, (j, w) in enumerate(zip(rows, words)):
            if finished[j] is not False:
                continue
            if w != model.vocab.eos and len(tokens[j]) == max_length:
                finished[j] = None    # full: the sentence stays unfinished
                continue
            logprob[j] += logp[w, k]
            if w == model.vocab.eos:
                finished[j] = True
            else:
                tokens[j].append(model.vocab.token(w))
        if all(f is not False for f in finished):
            break
        if t % SAMPLE_GRAPH_STEPS == SAMPLE_GRAPH_STEPS - 1:
            # a fresh graph, for the sentences still going only: from the state's numbers (the same
            # values), memory that does not grow with the sentence (2,000 sentences of 60 steps held
            # 4.5 GB in one graph), and no softmax over the vocabulary for a sentence that has ended
            going = [k for k, j in enumerate(rows) if finished[j] is False]
            rows, words = rows[going], [words[k] for k in going]
            if model.stepwise():
                values = [[v[:, going] for v in layer] for layer in model.state_values(states)]
                dy.renew_cg()
                states = [layer.start(len(rows), v) for layer, v in zip(model.layers, values)]
                W, b = model.W_hs.expr(), model.b_s.expr()
            else:
                read = [[step[k] for k in going] for step in read]
    return [Sample(tokens[j], float(logprob[j]), finished[j] is True) for j in range(n)]
