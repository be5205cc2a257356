"""Probes of chapter 09 (dropout): run the student's functions, return numbers.

Runs in the autograder's sandbox next to student code, so it never imports
reference code (``autograder.reference``). The trusted side
(:mod:`autograder.reference.ch09_dropout`) draws the inputs and judges.

Two kinds of "model" are handed to the Monte Carlo functions:

* :class:`ScriptedScorer`, a stand-in with the scorer interface whose k-th
  stochastic pass over a sentence returns fixed, known log-probabilities. The
  result of a correct Monte Carlo average is then exact, whatever order or
  batching the student's code uses, and the log-probabilities can be as low as
  -900 (where ``exp`` underflows to 0 in float64, so only a stable average
  survives);
* a small :class:`course.lm.RNNLM` with the grader's weights; DyNet is re-seeded
  before each call, so the dropout masks are those the reference draws.
"""
from __future__ import annotations

import numpy as np


class ScriptedScorer:
    """Has ``token_logprobs(sentences, batch_size=64, dropout=0.0)`` like an RNNLM.

    ``deterministic[i]``: the log-probabilities of sentence i without dropout;
    ``passes[i][k]``: those of its k-th pass with dropout. A sentence is
    recognised by its words, so any batching or order of calls works. More
    passes than scripted raise an error (the student asked for too many).
    """

    def __init__(self, sentences, deterministic, passes):
        self.keys = {tuple(s): i for i, s in enumerate(sentences)}
        self.deterministic = [np.asarray(d, dtype=float) for d in deterministic]
        self.passes = [np.asarray(p, dtype=float) for p in passes]
        self.calls = np.zeros(len(sentences), dtype=int)
        self.dropouts = set()

    def token_logprobs(self, sentences, batch_size: int = 64, dropout: float = 0.0):
        out = []
        for s in sentences:
            i = self.keys.get(tuple(s))
            if i is None:
                raise KeyError("token_logprobs was asked about a sentence the grader did not give")
            if not dropout:
                out.append(self.deterministic[i].copy())
                continue
            self.dropouts.add(float(dropout))
            k = self.calls[i]
            if k >= len(self.passes[i]):
                raise RuntimeError(f"more than {len(self.passes[i])} stochastic passes were asked "
                                   "for one sentence: make exactly `samples` passes")
            self.calls[i] += 1
            out.append(self.passes[i][k].copy())
        return out

    def sentence_logprobs(self, sentences, batch_size: int = 64):
        return np.array([lp.sum() for lp in self.token_logprobs(sentences, batch_size)])


def flat(arrays) -> dict:
    """A list of 1-d arrays as numbers only: their concatenation and their lengths."""
    arrays = [np.asarray(a, dtype=float).reshape(-1) for a in arrays]
    return {"values": np.concatenate(arrays) if arrays else np.zeros(0),
            "lengths": np.array([a.size for a in arrays], dtype=float)}


def build_model(spec: dict):
    """The grader's small RNNLM: builder, sizes, vocabulary and every weight from ``spec``."""
    from course import lm
    from course.data import Vocab
    model = lm.RNNLM(Vocab(spec["tokens"]), spec["cell"], spec["embed"], spec["hidden"], spec["layers"])
    for param, value in zip(model.pc.parameters_list(), spec["params"]):
        param.set_value(value)
    for param, value in zip(model.pc.lookup_parameters_list(), spec["lookups"]):
        param.init_from_array(value)
    return model


def run_mc(function, model_spec: dict, sentences, samples: int, p: float, seed: int):
    """``function(model, [sentence], samples, p)`` per sentence, DyNet re-seeded before each."""
    from course import runtime
    model = build_model(model_spec)
    results = []
    for i, sentence in enumerate(sentences):
        runtime.init(seed=seed + i)
        results.append(function(model, [sentence], samples, p))
    return results


def variational_dropout(functions: dict, inputs: dict) -> dict:
    """Outputs and input gradients of ``variational_dropout(xs, p)`` for each p."""
    from course import runtime
    dy = runtime.dynet()
    fn = functions["variational_dropout"]
    numbers = {}
    for n, p in enumerate(inputs["ps"]):
        dy.renew_cg()
        xs = [dy.inputTensor(x, batched=True) for x in inputs["xs"]]
        ys = fn(xs, p)
        if len(ys) != len(xs):
            raise ValueError(f"variational_dropout returned {len(ys)} steps for {len(xs)} inputs")
        loss = dy.sum_batches(dy.esum([dy.dot_product(dy.inputTensor(w, batched=True), y)
                                       for w, y in zip(inputs["projection"], ys)]))
        loss.forward()
        loss.backward(full=True)     # full: gradients reach the inputs, not only parameters
        numbers[str(n)] = {
            "out": np.array([y.npvalue().reshape(x.shape) for y, x in zip(ys, inputs["xs"])]),
            "grad": np.array([x.gradient().reshape(v.shape) for x, v in zip(xs, inputs["xs"])]),
        }
    return numbers


def _scripted_logprobs(fn, scripted: dict) -> dict:
    scorer = ScriptedScorer(scripted["sentences"], scripted["deterministic"], scripted["passes"])
    got = fn(scorer, scripted["sentences"], scripted["samples"], scripted["p"])
    return {**flat(got), "count": float(len(got)), "calls": scorer.calls.astype(float),
            "dropouts": np.array(sorted(scorer.dropouts))}


def _model_logprobs(fn, real: dict) -> dict:
    model_runs = run_mc(fn, real["spec"], real["sentences"], real["samples"], real["p"], real["seed"])
    return {**flat([lp for run in model_runs for lp in run]),
            "count": np.array([len(run) for run in model_runs], dtype=float)}


def mc_token_logprobs(functions: dict, inputs: dict) -> dict:
    """The Monte Carlo log-probabilities on the scripted scorer and/or the small model
    (whichever the inputs hold)."""
    fn = functions["mc_token_logprobs"]
    out = {}
    if "scripted" in inputs:
        out["scripted"] = _scripted_logprobs(fn, inputs["scripted"])
    if "model" in inputs:
        out["model"] = _model_logprobs(fn, inputs["model"])
    return out


def mc_dropout_perplexity(functions: dict, inputs: dict) -> dict:
    """The Monte Carlo perplexity on the scripted scorer and on the small model, and the
    student's own ``mc_token_logprobs`` on the same (so the judge can tell a wrong
    perplexity from a wrong average)."""
    fn, token_fn = functions["mc_dropout_perplexity"], functions["mc_token_logprobs"]
    scripted = inputs["scripted"]
    scorer = ScriptedScorer(scripted["sentences"], scripted["deterministic"], scripted["passes"])
    ppl = fn(scorer, scripted["sentences"], scripted["samples"], scripted["p"])
    real = inputs["model"]
    model_ppls = run_mc(fn, real["spec"], real["sentences"], real["samples"], real["p"], real["seed"])
    return {"scripted": float(ppl), "calls": scorer.calls.astype(float),
            "model": np.array(model_ppls, dtype=float),
            "own_scripted": _scripted_logprobs(token_fn, scripted),
            "own_model": _model_logprobs(token_fn, real)}
