"""The checks of chapter 01: the references pass, plausible mistakes fail with a
message that names the mistake."""
import math

import numpy as np
import pytest

from autograder import grader
from autograder.reference import ch01_corpus_and_perplexity as ch01
from autograder.reference.grading import run_check
from course import ngram
from course.data import Vocab
from tests.conftest import ROOT

CHECKS = {c.name: c for c in ch01.CHECKS}


# --------------------------------------------------------------------------- perplexity

def perplexity(logprobs, sentences):
    if len(sentences) == 0:
        raise ValueError("no sentences")
    return math.exp(-float(np.sum(logprobs)) / sum(len(s) + 1 for s in sentences))


def without_eos(logprobs, sentences):
    return math.exp(-float(np.sum(logprobs)) / sum(len(s) for s in sentences))


def mean_of_sentence_perplexities(logprobs, sentences):
    return float(np.mean([math.exp(-lp / (len(s) + 1)) for lp, s in zip(logprobs, sentences)]))


def base_two(logprobs, sentences):
    return 2.0 ** (-float(np.sum(logprobs)) / sum(len(s) + 1 for s in sentences))


def nan_for_no_sentences(logprobs, sentences):
    """Right on every set, but silently NaN (0 / 0) for an empty one."""
    total = np.sum(logprobs)
    return float(np.exp(-total / np.sum([len(s) + 1 for s in sentences])))


def only_first_sentence(logprobs, sentences):
    return math.exp(-float(logprobs[0]) / (len(sentences[0]) + 1))


def perplexity_problems(fn):
    return run_check(CHECKS["ch01.perplexity"], {"perplexity": fn})


def test_the_reference_perplexity_passes():
    assert perplexity_problems(perplexity) == []


@pytest.mark.parametrize("wrong, hint", [
    (without_eos, "</s>"),
    (mean_of_sentence_perplexities, "pool"),
    (base_two, "natural logs"),
    (only_first_sentence, "relative error"),
    (nan_for_no_sentences, "must raise ValueError"),
])
def test_wrong_perplexities_fail_with_a_hint(wrong, hint):
    found = perplexity_problems(wrong)
    assert found, f"{wrong.__name__} passed"
    assert hint in " ".join(found)


def test_perplexity_agrees_with_the_ngram_models(tiny_corpus):
    """The reference is the course convention that course.ngram implements."""
    model = ngram.InterpolatedBigram(tiny_corpus[:40])
    held_out = tiny_corpus[40:]
    assert perplexity(model.sentence_logprobs(held_out), held_out) == pytest.approx(
        model.perplexity(held_out), rel=1e-12)


# --------------------------------------------------------------------------- bigram_probs

def bigram_probs(sentences, vocab, alpha):
    V = len(vocab)
    previous, following = [], []
    for s in sentences:
        ids = [vocab.bos] + [vocab.index(t) for t in s] + [vocab.eos]
        previous += ids[:-1]
        following += ids[1:]
    counts = np.zeros((V, V))
    np.add.at(counts, (previous, following), 1.0)
    probs = counts + alpha
    probs[:, vocab.bos] = 0.0
    return probs / probs.sum(axis=1, keepdims=True)


def smoothing_over_all_tokens(sentences, vocab, alpha):
    V = len(vocab)
    counts = np.zeros((V, V))
    for s in sentences:
        ids = [vocab.bos] + [vocab.index(t) for t in s] + [vocab.eos]
        for v, w in zip(ids, ids[1:]):
            counts[v, w] += 1
    return (counts + alpha) / (counts + alpha).sum(axis=1, keepdims=True)


def skipping_unknown_words(sentences, vocab, alpha):
    return bigram_probs([[t for t in s if t in vocab] for s in sentences], vocab, alpha)


def without_sentence_end(sentences, vocab, alpha):
    V = len(vocab)
    counts = np.zeros((V, V))
    for s in sentences:
        ids = [vocab.bos] + [vocab.index(t) for t in s]
        for v, w in zip(ids, ids[1:]):
            counts[v, w] += 1
    probs = counts + alpha
    probs[:, vocab.bos] = 0.0
    return probs / probs.sum(axis=1, keepdims=True)


def unnormalised_counts(sentences, vocab, alpha):
    probs = bigram_probs(sentences, vocab, alpha)
    return probs * 3.0


def transposed(sentences, vocab, alpha):
    return bigram_probs(sentences, vocab, alpha).T


def bigram_problems(fn):
    return run_check(CHECKS["ch01.bigram_probs"], {"bigram_probs": fn})


def test_the_reference_bigram_passes():
    assert bigram_problems(bigram_probs) == []


@pytest.mark.parametrize("wrong, hint", [
    (smoothing_over_all_tokens, "<s> is never predicted"),
    (skipping_unknown_words, "<unk>"),
    (without_sentence_end, "</s>"),
    (unnormalised_counts, "sum to 1"),
    (transposed, "transposed"),
])
def test_wrong_bigrams_fail_with_a_hint(wrong, hint):
    found = bigram_problems(wrong)
    assert found, f"{wrong.__name__} passed"
    assert hint in " ".join(found)


def test_add_alpha_bigram_scores_like_an_ngram_baseline(tiny_corpus):
    """Large alpha pushes the table to uniform over the V - 1 predicted tokens;
    the reference and course.ngram's unigram share the same vocabulary size."""
    vocab = Vocab.build(tiny_corpus)
    table = bigram_probs(tiny_corpus, vocab, alpha=1e9)
    np.testing.assert_allclose(table[:, [i for i in range(len(vocab)) if i != vocab.bos]],
                               1.0 / (len(vocab) - 1), rtol=1e-6)
    assert ngram.Unigram(tiny_corpus).V == len(vocab) - 1


@pytest.mark.parametrize("folder, expected", [("solutions", 7.0), ("exercises", 0.0)])
def test_the_trusted_grader_scores_the_chapter(folder, expected):
    """End to end, in the sandbox: the solution earns every point, the shipped stubs none."""
    result = grader.grade(ROOT / folder / "01_corpus_and_perplexity.ipynb", limits=grader.Limits(wall_s=60))
    assert result.failure is None
    assert (result.score, result.max_score) == (expected, 7.0), result.cells
