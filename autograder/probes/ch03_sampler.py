"""Probes of chapter 03's sampler: run a student's ``next_token_distribution``, return numbers.

Runs in the autograder's sandbox next to student code, so it imports no reference
solution (see :mod:`autograder.probes`). The fixed model of the draws is built here and,
from the same inputs, by the judge: a small S-RNN language model whose every parameter is
set from the inputs' seed, so both sides hold the same model without sharing a file.
"""
from __future__ import annotations

import warnings

import numpy as np

from autograder.probes import run_refusing
from course import lm, sampling

# "Write the distribution yourself", judged by what runs (autograder.probes.run_refusing): while the
# student's function runs, the course's sampler refuses to work, by any route. Everything in
# `course` that computes a tempered, top-k or top-p distribution goes through sampling._tempered:
# sampling.sample calls it, and the command line's `sample` and `judge-samples` (course/__main__.py) call
# sampling.sample; course.judge only reads what sampling.sample drew. sampling.sample is refused too, so
# that the plain call meets the refusal at once. Their code objects are taken here, when the sandbox loads the probes.
HELPERS = (sampling._tempered, sampling.sample)
HELPER_CODE = tuple(f.__code__ for f in HELPERS)


def _refused(*args, **kwargs):
    raise RuntimeError("the course's sampler (course.sampling) cannot be used in next_token_distribution: "
                       "write the distribution yourself")


class _Reached(Exception):
    """Stops sampling.sample in :func:`draws` once the student's function reached the course's sampler."""


def _own_distribution(fn, scores, temperature, top_k, top_p):
    """``(fn(scores, ...) as a new float array, whether it reached the course's sampler)``; the
    array is made while the sampler still refuses (an ``__array__`` of the student's runs then)."""
    return run_refusing(lambda: _quietly(lambda: np.array(fn(scores, temperature=temperature, top_k=top_k,
                                                                top_p=top_p), dtype=float)),
                        HELPERS, HELPER_CODE, _refused)


def _quietly(call):
    """Run call(); NumPy warnings (exp overflow, 0/0) must not reach the cell's stderr."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return call()


def distributions(functions: dict, inputs: dict) -> dict:
    """``next_token_distribution(scores, temperature=, top_k=, top_p=)`` on each case, as
    ``values[str(k)]`` (a vector, or whatever shape it returned); or, when it reached the course's
    sampler by any route, only ``calls_course_sampler``."""
    fn = functions["next_token_distribution"]
    values = {}
    for k, case in enumerate(inputs["cases"]):
        scores = np.array(case["scores"], dtype=float)
        values[str(k)], reached = _own_distribution(fn, scores, case["temperature"], case["top_k"], case["top_p"])
        if reached:
            return {"calls_course_sampler": 1.0}
    return {"values": values, "calls_course_sampler": 0.0}


def fixed_model(inputs: dict):
    """The small S-RNN language model of the draws, every parameter from the inputs' seed."""
    from course.data import Vocab
    model = lm.RNNLM(Vocab(inputs["vocab"]), "srnn", inputs["size"], inputs["size"])
    rng = np.random.default_rng(inputs["model_seed"])
    for p in model.pc.parameters_list():
        p.set_value(rng.uniform(-1.5, 1.5, p.shape()))
    for p in model.pc.lookup_parameters_list():
        p.init_from_array(rng.uniform(-1.5, 1.5, p.shape()))
    return model


def draws(functions: dict, inputs: dict) -> dict:
    """Sentences that ``sampling.sample`` draws from the fixed model with the student's distribution,
    for each setting: token ids (-1 after the end) and log-probabilities; or, when the student's
    function reached the course's sampler by any route, only ``calls_course_sampler``."""
    fn = functions["next_token_distribution"]
    model = fixed_model(inputs)
    out = {}
    for k, (temperature, top_k, top_p) in enumerate(inputs["settings"]):
        def distribution(scores, temperature=temperature, top_k=top_k, top_p=top_p):
            probs, reached = _own_distribution(fn, scores, temperature, top_k, top_p)
            if reached:
                raise _Reached
            return probs
        try:
            drawn = _quietly(lambda: sampling.sample(model, n=inputs["n"], seed=inputs["seed"] + k,
                                               max_length=inputs["max_length"], distribution=distribution))
        except _Reached:
            return {"calls_course_sampler": 1.0}
        except ValueError as e:
            if "distribution must return" not in str(e):     # sampling.sample's refusal; the rest is the student's
                raise
            out[str(k)] = {"refused": 1.0}
            continue
        ids = np.full((len(drawn), inputs["max_length"]), -1.0)
        for j, s in enumerate(drawn):
            ids[j, :len(s.tokens)] = [model.vocab.index(t) for t in s.tokens]
        out[str(k)] = {"refused": 0.0, "ids": ids, "logprobs": np.array([s.logprob for s in drawn]),
                       "finished": np.array([float(s.finished) for s in drawn])}
    return {"draws": out, "calls_course_sampler": 0.0}
