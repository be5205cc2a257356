"""Probes of chapter 01: run a student's ``perplexity`` and ``bigram_probs``, return numbers.

Runs in the autograder's sandbox next to student code, so it imports no
reference solution (see :mod:`autograder.probes`).
"""
from __future__ import annotations

import warnings

import numpy as np

# What perplexity([], []) did (the sandbox sends back numbers only).
EMPTY_RETURNED, EMPTY_VALUE_ERROR, EMPTY_OTHER_ERROR = 0.0, 1.0, 2.0


def _quietly(call):
    """Run call(); NumPy warnings (0/0, log 0) must not reach the cell's stderr."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return call()


def perplexity(functions: dict, inputs: dict) -> dict:
    """``perplexity(logprobs, sentences)`` on each case (logprobs passed as a NumPy
    array in even cases and a list in odd ones: both are allowed), and what it does
    with no sentences at all."""
    fn = functions["perplexity"]
    values = []
    for k, case in enumerate(inputs["cases"]):
        logprobs = np.array(case["logprobs"]) if k % 2 == 0 else list(case["logprobs"])
        sentences = [list(s) for s in case["sentences"]]
        values.append(float(_quietly(lambda: fn(logprobs, sentences))))
    try:                        # no sentences: the contract says ValueError
        _quietly(lambda: fn([], []))
        empty = EMPTY_RETURNED
    except ValueError:
        empty = EMPTY_VALUE_ERROR
    except Exception:           # noqa: BLE001 (any other error is reported as such)
        empty = EMPTY_OTHER_ERROR
    return {"values": np.array(values), "empty": empty}


def bigram_probs(functions: dict, inputs: dict) -> dict:
    """``bigram_probs(sentences, vocab, alpha)`` for each alpha k, as ``tables[str(k)]``."""
    from course.data import Vocab
    fn = functions["bigram_probs"]
    vocab = Vocab(inputs["vocab"])
    sentences = [list(s) for s in inputs["sentences"]]
    tables = {str(k): np.asarray(_quietly(lambda: fn(sentences, vocab, alpha)), dtype=float)
              for k, alpha in enumerate(inputs["alphas"])}
    return {"tables": tables}
