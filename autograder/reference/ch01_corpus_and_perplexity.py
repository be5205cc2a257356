"""Chapter 01 (corpus and perplexity): checks of ``perplexity`` and ``bigram_probs``.

The course's conventions (see :mod:`course.data`): a sentence ``w_1 ... w_n`` is
read as ``<s> w_1 ... w_n </s>``; its n words and the one ``</s>`` are predicted,
``<s>`` is only ever context. So

* the perplexity of a set of sentences with natural-log probabilities
  ``log P(s)`` is ``exp(-sum_s log P(s) / sum_s (len(s) + 1))``;
* an add-alpha bigram model predicts each of the V - 1 tokens other than ``<s>``:
  ``P(w | v) = (c(v w) + alpha) / (c(v .) + alpha (V - 1))``, and ``P(<s> | v) = 0``.

The references below are written independently of the student contract
(counters, not matrices) and also produce the usual mistakes, so that the
judge can say which one a wrong answer looks like.
"""
from __future__ import annotations

import math
from collections import Counter

import numpy as np

from autograder.probes.ch01_corpus_and_perplexity import (EMPTY_RETURNED,
                                                          EMPTY_VALUE_ERROR)
from autograder.reference.grading import Check
from course.data import BOS, EOS, UNK

PPL_RTOL = 1e-9
PROB_ATOL = 1e-9


# --------------------------------------------------------------------------- perplexity

def perplexity_inputs(seed: int = 20261101) -> dict:
    """Sentences of mixed lengths (an empty one included) with log-probabilities."""
    rng = np.random.default_rng(seed)
    words = "the a dog dogs bark barks near old garden who sees".split()
    cases = []
    for n_sentences, lengths in ((6, (1, 14)), (4, (0, 4)), (1, (7, 7)), (12, (1, 30))):
        sentences = [[str(w) for w in rng.choice(words, rng.integers(lengths[0], lengths[1] + 1))]
                     for _ in range(n_sentences)]
        logprobs = [float(-rng.uniform(1.5, 4.0) * (len(s) + 1)) for s in sentences]
        cases.append({"sentences": sentences, "logprobs": logprobs})
    return {"cases": cases}


def perplexity_variants(logprobs, sentences) -> dict:
    """The course's perplexity and the usual mistakes, by name."""
    logprobs = np.asarray(logprobs, dtype=float)
    words = np.array([len(s) for s in sentences], dtype=float)
    total = math.fsum(logprobs)
    return {
        "right": math.exp(-total / (words + 1).sum()),
        "no_eos": math.exp(-total / words.sum()) if words.sum() else math.inf,
        "per_sentence": math.exp(-total / len(sentences)),
        "sign": math.exp(total / (words + 1).sum()),
        "mean_of_sentence_ppl": float(np.mean(np.exp(-logprobs / (words + 1)))),
        "base_2": 2.0 ** (-total / (words + 1).sum()),
    }


HINTS = {
    "no_eos": "the token count leaves out </s>: a sentence of n words makes n + 1 predictions",
    "per_sentence": "the log-probability is averaged over sentences; perplexity averages over "
                    "predicted tokens (words + one </s> per sentence)",
    "sign": "the sign is flipped: log-probabilities are negative, perplexity is >= 1",
    "mean_of_sentence_ppl": "this averages the perplexities of the sentences; pool the "
                            "log-probabilities and tokens of all sentences first",
    "base_2": "the log-probabilities are natural logs: use exp, not 2 **",
}


def judge_perplexity(numbers: dict, inputs: dict) -> list[str]:
    values = np.asarray(numbers["values"], dtype=float)
    problems = []
    for k, case in enumerate(inputs["cases"]):
        variants = perplexity_variants(case["logprobs"], case["sentences"])
        got, want = float(values[k]), variants["right"]
        if abs(got - want) <= PPL_RTOL * want:
            continue
        known = [HINTS[name] for name, value in variants.items()
                 if name != "right" and abs(got - value) <= 1e-6 * abs(value)]
        detail = known[0] if known else f"relative error {abs(got - want) / want:.2g}"
        problems.append(f"case {k + 1} ({len(case['sentences'])} sentences): wrong perplexity: {detail}")
    empty = float(numbers["empty"])
    if empty != EMPTY_VALUE_ERROR:
        happened = "it returned a value" if empty == EMPTY_RETURNED else "it raised another exception"
        problems.append(f"perplexity([], []) must raise ValueError (undefined), but {happened}")
    return problems


# --------------------------------------------------------------------------- bigram_probs

def bigram_inputs(seed: int = 20261102) -> dict:
    """A small corpus whose rarer words fall outside the vocabulary, an empty sentence,
    and three values of alpha."""
    from course.data import Vocab
    rng = np.random.default_rng(seed)
    words = "the a dog dogs cat cats bark barks sleeps sleep near old young garden park".split()
    weights = 1.0 / np.arange(1, len(words) + 1)
    sentences = [[str(w) for w in rng.choice(words, rng.integers(1, 9), p=weights / weights.sum())]
                 for _ in range(25)]
    sentences.insert(7, [])
    vocab = Vocab.build(sentences, max_size=12)        # 9 words; the rest becomes <unk>
    return {"vocab": list(vocab.tokens), "sentences": sentences, "alphas": [1.0, 0.1, 0.5]}


def bigram_variant(sentences, tokens, alpha, bos=True, eos=True, unk=True, smooth_bos=False):
    """(V, V) table P[v, w] of the add-alpha bigram, or one of the usual mistakes."""
    index = {t: i for i, t in enumerate(tokens)}
    V = len(tokens)
    pairs = Counter()
    for s in sentences:
        ids = [index.get(t, index[UNK]) if unk else index.get(t) for t in s]
        ids = ([index[BOS]] if bos else []) + [i for i in ids if i is not None] + ([index[EOS]] if eos else [])
        pairs.update(zip(ids[:-1], ids[1:]))
    counts = np.zeros((V, V))
    for (v, w), c in pairs.items():
        counts[v, w] = c
    predicted = np.ones(V, dtype=bool)
    if not smooth_bos:
        predicted[index[BOS]] = False
    numerator = np.where(predicted, counts + alpha, 0.0)
    return numerator / numerator.sum(axis=1, keepdims=True)


BIGRAM_MISTAKES = {
    "bos": ({"bos": False}, "the first word of each sentence must be counted after <s>"),
    "eos": ({"eos": False}, "each sentence's last word must be counted before </s>"),
    "unk": ({"unk": False}, "words outside the vocabulary must be counted as <unk> "
                            "(vocab.index does that), not skipped"),
    "smooth_bos": ({"smooth_bos": True}, "<s> is never predicted: its column must be 0 and it "
                                         "gets no share of alpha (normalise over V - 1 words)"),
}


def judge_bigram_probs(numbers: dict, inputs: dict) -> list[str]:
    tokens, sentences = inputs["vocab"], inputs["sentences"]
    V, bos = len(tokens), tokens.index(BOS)
    for k, alpha in enumerate(inputs["alphas"]):
        got = np.asarray(numbers["tables"][str(k)], dtype=float)
        if got.shape != (V, V):
            return [f"alpha={alpha}: the table has shape {got.shape}, expected (V, V) = ({V}, {V}): "
                    "one row per context, one column per next word, in vocabulary order"]
        want = bigram_variant(sentences, tokens, alpha)
        if np.allclose(got, want, rtol=0.0, atol=PROB_ATOL):
            continue
        problems = []
        if not np.all(np.isfinite(got)):
            problems.append("the table holds NaN or infinite values")
        elif not np.allclose(got.sum(axis=1), 1.0, atol=1e-6):
            problems.append("rows do not sum to 1: every row is P(. | context), a distribution "
                            "(contexts never seen included)")
        if np.all(np.isfinite(got)) and np.abs(got[:, bos]).max() > 0:
            problems.append("the <s> column is not 0: <s> is never predicted")
        for name, (flags, hint) in BIGRAM_MISTAKES.items():
            if np.allclose(got, bigram_variant(sentences, tokens, alpha, **flags), rtol=0.0, atol=PROB_ATOL):
                problems.append(hint)
        if np.allclose(got.T, want, rtol=0.0, atol=PROB_ATOL):
            problems.append("the table is transposed: rows are contexts v, columns next words w")
        if not problems:
            problems.append(f"alpha={alpha}: the probabilities differ from the add-alpha bigram "
                            f"(largest difference {np.abs(got - want).max():.2g})")
        return problems
    return []


CHECKS = [
    Check("ch01.perplexity", ("perplexity",), perplexity_inputs,
          "autograder.probes.ch01_corpus_and_perplexity:perplexity", judge_perplexity,
          about="four sets of 1 to 12 sentences of 0 to 30 words (an empty sentence among them) with "
                "random log-probabilities", lecture=("01_corpus_and_perplexity", "4 · Perplexity"),
          visible="perplexity_tests"),
    Check("ch01.bigram_probs", ("bigram_probs",), bigram_inputs,
          "autograder.probes.ch01_corpus_and_perplexity:bigram_probs", judge_bigram_probs,
          about="26 sentences (an empty one among them) over a 12-token vocabulary, so rarer words are "
                "<unk>; alpha = 1, 0.1 and 0.5", lecture=("01_corpus_and_perplexity", "5 · N-gram baselines"),
          visible="bigram_probs_tests"),
]
