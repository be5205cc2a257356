"""Checks of chapter 09 (dropout and Monte Carlo dropout averaging).

``variational_dropout(xs, p)`` multiplies every step by ONE inverted-dropout mask,
on 5 steps of 240 units for a batch of 50. The mask is random, so the judges check
its properties rather than its values:

* ``ch09.dropout_mask`` (p = 0.3 and 0.6): every entry is 0 or 1/(1-p); the mask is
  the same at every step; no sentence keeps all or none of its 240 units (a mask
  drawn per sentence rather than per unit does); sentences of the batch have
  different masks; the kept fraction is 1-p within 0.03 (12,000 mask entries: the
  standard deviation of the fraction is at most 0.0046, so a correct answer fails
  with probability below 1e-9); each sentence keeps between 1-p-0.25 and 1-p+0.25
  of its units (8 standard deviations);
* ``ch09.dropout_off`` (p = 0, test time): the inputs come back unchanged;
* ``ch09.dropout_gradients`` (p = 0.3): the gradient reaching each input is the
  loss's weight times the student's own mask (x_t times the mask, built in DyNet).

Monte Carlo dropout (Odyssey section 3), compared exactly:

* ``ch09.mc_average``, ``ch09.mc_stable``: a scripted scorer
  (:class:`autograder.probes.ch09_dropout.ScriptedScorer`) whose k-th stochastic
  pass over a sentence returns known log-probabilities: ordinary ones for the
  average (probabilities, not log-probabilities, are averaged; exactly ``samples``
  passes with ``dropout=p``), and ones near -900 and -1000 for the stability (exp
  underflows there: only a log-sum-exp average is finite). The answer does not
  depend on how the student batches or orders the calls; tolerance 1e-6 (float64);
* ``ch09.mc_model``: a small 2-layer LSTM RNNLM with the grader's weights, one
  sentence at a time with DyNet re-seeded before each (``course.runtime.init(seed=...)``),
  so a student who makes ``samples`` calls of ``model.token_logprobs([sentence],
  dropout=p)`` draws the very masks the reference draws; tolerance 1e-5 (the same
  float32 forward passes, averaged in float64);
* ``ch09.mc_dropout_perplexity``: the perplexity on a scripted scorer and on the
  small RNNLM, against the reference or against the perplexity of the student's
  own ``mc_token_logprobs`` (so a wrong average costs the checks of
  ``mc_token_logprobs`` only); relative tolerance 1e-6 and 1e-5.
"""
from __future__ import annotations

import numpy as np

from autograder.probes import ch09_dropout as probes
from autograder.reference.grading import Check
from autograder.reference.steps import DYNET_GRADIENTS

SEED = 20261109
KEPT_FRACTION_ATOL = 0.03
COLUMN_FRACTION_ATOL = 0.25
LOGPROB_ATOL = 1e-6        # scripted scorer: float64 throughout
MODEL_ATOL = 1e-5          # the small RNNLM: same masks, same float32 passes


# ----------------------------------------------------------------- references
def mc_average(passes) -> np.ndarray:
    """log of the mean of exp over axis 0 of a (K, n) array of log-probabilities (eq D5)."""
    passes = np.asarray(passes, dtype=float)
    top = passes.max(axis=0)
    return top + np.log(np.exp(passes - top).sum(axis=0)) - np.log(len(passes))


def reference_mc_token_logprobs(model, sentences, samples, p):
    passes = [model.token_logprobs(sentences, dropout=p) for _ in range(samples)]
    return [mc_average([run[i] for run in passes]) for i in range(len(sentences))]


def reference_mc_dropout_perplexity(model, sentences, samples, p):
    lps = reference_mc_token_logprobs(model, sentences, samples, p)
    return float(np.exp(-sum(lp.sum() for lp in lps) / sum(len(s) + 1 for s in sentences)))


# ----------------------------------------------------------------- inputs
WORDS = ("the cat dog bird sees chases likes a red small big old near under "
         "and runs sleeps sings").split()


def _sentences(rng, n, lengths):
    out, seen = [], set()
    while len(out) < n:
        s = [str(w) for w in rng.choice(WORDS, size=lengths[len(out)])]
        if tuple(s) not in seen:
            seen.add(tuple(s))
            out.append(s)
    return out


def _scripted(rng, extreme: tuple, samples: int = 7, p: float = 0.4) -> dict:
    """Six sentences; those numbered in ``extreme`` get log-probabilities near -900."""
    sentences = _sentences(rng, 6, [1, 4, 9, 3, 6, 2])
    passes, deterministic = [], []
    for i, s in enumerate(sentences):
        n = len(s) + 1
        if i in extreme:
            passes.append(-900.0 + rng.normal(0.0, 3.0, size=(samples, n)))
        else:   # probabilities that vary a lot between passes: the average matters
            passes.append(np.log(rng.uniform(0.002, 0.9, size=(samples, n))))
        deterministic.append(np.log(rng.uniform(0.05, 0.9, size=n)))
    return {"sentences": sentences, "deterministic": deterministic, "passes": passes,
            "samples": samples, "p": p}


def _model_spec(rng) -> dict:
    from course import lm
    from course.data import Vocab
    vocab = Vocab.build([WORDS])
    spec = {"tokens": vocab.tokens, "cell": "lstm", "embed": 8, "hidden": 12, "layers": 2}
    shapes = lm.RNNLM(vocab, "lstm", 8, 12, 2)
    spec["params"] = [rng.uniform(-0.6, 0.6, size=p.shape()) for p in shapes.pc.parameters_list()]
    spec["lookups"] = [rng.uniform(-0.8, 0.8, size=p.shape()) for p in shapes.pc.lookup_parameters_list()]
    return spec


def _model_inputs(rng, samples: int, p: float) -> dict:
    return {"spec": _model_spec(rng), "sentences": _sentences(rng, 3, [5, 8, 2]),
            "samples": samples, "p": p, "seed": SEED}


def dropout_inputs(ps):
    def make_inputs() -> dict:
        rng = np.random.default_rng(SEED)
        steps, d, batch = 5, 240, 50
        xs = rng.uniform(0.5, 1.5, size=(steps, d, batch)) * rng.choice([-1.0, 1.0], size=(steps, d, batch))
        return {"xs": xs, "projection": rng.normal(size=(steps, d, batch)), "ps": list(ps)}
    return make_inputs


def mc_average_inputs() -> dict:
    return {"scripted": _scripted(np.random.default_rng(SEED + 1), extreme=())}


def mc_stable_inputs() -> dict:
    return {"scripted": _scripted(np.random.default_rng(SEED + 3), extreme=(2, 5))}


def mc_model_inputs() -> dict:
    return {"model": _model_inputs(np.random.default_rng(SEED + 4), 6, 0.5)}


def mc_perplexity_inputs() -> dict:
    rng = np.random.default_rng(SEED + 2)
    return {"scripted": _scripted(rng, extreme=(), samples=5, p=0.3), "model": _model_inputs(rng, 4, 0.4)}


# ----------------------------------------------------------------- judges
def _outputs(numbers, inputs):
    """(p, mask = out / x, gradient) for each p, or a problem with the shapes."""
    xs = np.asarray(inputs["xs"], dtype=np.float32).astype(float)
    found = []
    for n, p in enumerate(inputs["ps"]):
        out, grad = np.asarray(numbers[str(n)]["out"]), np.asarray(numbers[str(n)]["grad"])
        if out.shape != xs.shape:
            return [f"p={p}: the outputs have shape {out.shape[1:]} per step (d, batch) over "
                    f"{out.shape[0]} steps; expected {xs.shape[1:]} over {xs.shape[0]}"]
        found.append((p, out / xs, grad))
    return found


def judge_dropout_mask(numbers: dict, inputs: dict) -> list:
    found = _outputs(numbers, inputs)
    if found and isinstance(found[0], str):
        return found
    scales = {float(np.round(mask.max(), 4)) for _, mask, _ in found}
    kept_fractions = [float((mask > mask.max() / 2).mean()) for _, mask, _ in found]
    ignores_p = len(scales) == 1 and max(kept_fractions) - min(kept_fractions) < 2 * KEPT_FRACTION_ATOL
    for p, mask, _ in found:
        scale = 1.0 / (1.0 - p)
        on_grid = np.isclose(mask, 0.0, atol=1e-5) | np.isclose(mask, scale, rtol=1e-5)
        if not on_grid.all():
            top = mask.max()
            if ignores_p and (np.isclose(mask, 0.0, atol=1e-5) | np.isclose(mask, top, rtol=1e-5)).all():
                return [f"the mask is the same for p = {', '.join(str(q) for q, _, _ in found)} (0 or {top:.4g}): "
                        "it must follow p, dropping each unit with probability p and scaling the kept ones "
                        "by 1/(1-p)"]
            return [f"p={p}: every unit must be multiplied by 0 or 1/(1-p) = {scale:.4g} "
                    "(inverted dropout scales the kept units so the expected value is unchanged)"]
        kept = mask > scale / 2
        if not (kept == kept[0]).all():
            return [f"p={p}: the mask changes from one time step to the next; variational "
                    "dropout draws ONE mask per sequence and applies it at every step"]
        kept = kept[0]                                  # (d, batch)
        if (kept.all(axis=0) | ~kept.any(axis=0)).any():
            return [f"p={p}: whole sentences are kept or dropped together; each unit needs "
                    "its own random draw (the mask has d entries per sentence)"]
        if len({column.tobytes() for column in kept.T}) < kept.shape[1]:
            return [f"p={p}: sentences of the batch share a mask; draw one per sentence "
                    "(e.g. batch_size=B in dy.random_bernoulli)"]
        if abs(kept.mean() - (1.0 - p)) > KEPT_FRACTION_ATOL:
            return [f"p={p}: {kept.mean():.3f} of the units are kept, expected about "
                    f"1-p = {1 - p:.2f} (p is the probability of DROPPING a unit)"]
        if np.abs(kept.mean(axis=0) - (1.0 - p)).max() > COLUMN_FRACTION_ATOL:
            return [f"p={p}: some sentences keep far more or far fewer than 1-p of their "
                    "units; draw every unit of every sentence independently"]
    return []


def judge_dropout_off(numbers: dict, inputs: dict) -> list:
    found = _outputs(numbers, inputs)
    if found and isinstance(found[0], str):
        return found
    if not all(np.allclose(mask, 1.0, rtol=1e-6, atol=1e-6) for _, mask, _ in found):
        return ["p = 0 (no dropout, as at test time) must return the inputs unchanged: no unit "
                "dropped, none scaled"]
    return []


def judge_dropout_gradients(numbers: dict, inputs: dict) -> list:
    found = _outputs(numbers, inputs)
    if found and isinstance(found[0], str):
        return found
    for p, mask, grad in found:
        if not np.allclose(grad, np.asarray(inputs["projection"]) * mask, rtol=1e-4, atol=1e-5):
            return [f"p={p}: the gradient with respect to the inputs is not your own mask times the "
                    "loss's weights: build the output with DyNet operations on the input expressions "
                    "(e.g. dy.cmult(x, mask)), not with NumPy values"]
    return []


def _unflat(block) -> list:
    values, lengths = np.asarray(block["values"]), np.asarray(block["lengths"]).astype(int)
    return np.split(values, np.cumsum(lengths)[:-1]) if lengths.size else []


def _diagnose(got, passes, samples) -> str:
    """Why Monte Carlo log-probabilities differ, without revealing the expected values."""
    if not all(np.isfinite(g).all() for g in got):
        return ("some log-probabilities are not finite: for log-probabilities around -900, exp() "
                "underflows to 0; subtract the maximum before exponentiating (log-sum-exp)")
    if all(np.allclose(g, np.mean(ps, axis=0), atol=1e-4) for g, ps in zip(got, passes)):
        return ("these are averages of log-probabilities (a geometric mean); average the "
                "probabilities: log((1/K) sum_k exp(lp_k))")
    lse = [np.logaddexp.reduce(ps, axis=0) for ps in passes]
    if all(np.allclose(g, x, atol=1e-4) for g, x in zip(got, lse)):
        return "the sum over the K passes must be divided by K (subtract log K)"
    return "the Monte Carlo log-probabilities differ from the reference"


def judge_scripted(numbers: dict, inputs: dict) -> list:
    """mc_token_logprobs on the scripted scorer: shapes, calls, dropout, values."""
    scripted, block = inputs["scripted"], numbers["scripted"]
    sentences, samples, p = scripted["sentences"], scripted["samples"], scripted["p"]
    got = _unflat(block)
    if len(got) != len(sentences):
        return [f"returned {len(got)} arrays for {len(sentences)} sentences (one array per sentence)"]
    for g, s in zip(got, sentences):
        if g.size != len(s) + 1:
            return [f"a sentence of {len(s)} words needs {len(s) + 1} log-probabilities "
                    f"(its words and </s>), got {g.size}"]
    calls = np.asarray(block["calls"]).astype(int)
    if (calls != samples).any():
        return [f"with samples={samples}, each sentence must be scored by exactly {samples} stochastic "
                f"passes (token_logprobs(..., dropout=p)); counted {sorted(set(calls.tolist()))}"]
    dropouts = np.asarray(block["dropouts"]).reshape(-1)
    if dropouts.size != 1 or not np.isclose(dropouts[0], p):
        return [f"every stochastic pass must use dropout=p={p}; saw {dropouts.tolist()}"]
    passes = [np.asarray(ps) for ps in scripted["passes"]]
    want = [mc_average(ps) for ps in passes]
    if not all(g.shape == w.shape and np.allclose(g, w, rtol=1e-9, atol=LOGPROB_ATOL) for g, w in zip(got, want)):
        return [_diagnose(got, passes, samples) + " (scripted scorer)"]
    return []


def judge_mc_model(numbers: dict, inputs: dict) -> list:
    model = inputs["model"]
    want_model = probes.run_mc(reference_mc_token_logprobs, model["spec"], model["sentences"],
                               model["samples"], model["p"], model["seed"])
    if np.asarray(numbers["model"]["count"]).astype(int).tolist() != [1] * len(model["sentences"]):
        return ["on a real RNNLM with one sentence, return a list holding one array"]
    got_model = _unflat(numbers["model"])
    want_flat = [lp for run in want_model for lp in run]
    if len(got_model) != len(want_flat) or not all(
            g.shape == w.shape and np.allclose(g, w, atol=MODEL_ATOL) for g, w in zip(got_model, want_flat)):
        return ["on a small RNNLM, the values differ from `samples` calls of "
                "model.token_logprobs(sentences, dropout=p) averaged in probability "
                "(make exactly those calls, nothing else that draws dropout masks)"]
    return []


def _perplexity(lps, sentences) -> float:
    return float(np.exp(-sum(np.sum(lp) for lp in lps) / sum(len(s) + 1 for s in sentences)))


def judge_mc_perplexity(numbers: dict, inputs: dict) -> list:
    scripted = inputs["scripted"]
    sentences = scripted["sentences"]
    lps = [mc_average(np.asarray(ps)) for ps in scripted["passes"]]
    calls = np.asarray(numbers["calls"]).astype(int)
    if (calls != scripted["samples"]).any():
        return [f"each sentence must be scored by exactly samples={scripted['samples']} stochastic passes"]
    got = float(numbers["scripted"])
    own = _unflat(numbers["own_scripted"])       # what the student's mc_token_logprobs gave
    accepted = [_perplexity(lps, sentences)] + ([_perplexity(own, sentences)] if len(own) == len(sentences) else [])
    if not (np.isfinite(got) and any(np.isclose(got, a, rtol=1e-6) for a in accepted)):
        tokens = sum(len(s) + 1 for s in sentences)
        words_only = [a ** (tokens / (tokens - len(sentences))) for a in accepted]
        if np.isfinite(got) and any(np.isclose(got, w, rtol=1e-6) for w in words_only):
            return ["the perplexity must count len(s) + 1 predictions per sentence (its words and </s>)"]
        return ["the perplexity differs from exp(-(sum of the Monte Carlo log-probabilities) / "
                "(number of predicted tokens)) (scripted scorer)"]
    model = inputs["model"]
    want = probes.run_mc(reference_mc_dropout_perplexity, model["spec"], model["sentences"],
                         model["samples"], model["p"], model["seed"])
    own_model = _unflat(numbers["own_model"])
    mine = [_perplexity([lp], [s]) for lp, s in zip(own_model, model["sentences"])]
    got_model = np.asarray(numbers["model"], dtype=float)
    accepted = [want] + ([mine] if len(mine) == len(want) else [])
    if got_model.shape != (len(want),) or not any(np.allclose(got_model, a, rtol=1e-5) for a in accepted):
        return ["on a small RNNLM, the perplexity differs from the Monte Carlo average of `samples` "
                "calls of model.token_logprobs(sentences, dropout=p)"]
    return []


DROPOUT = ("09_dropout", "eq D2")
MC = ("09_dropout", "eq D3")
DROPOUT_ABOUT = "5 steps of 240 units, a batch of 50, inputs of magnitude 0.5 to 1.5 with random signs"
CHECKS = [
    Check("ch09.dropout_mask", ("variational_dropout",), dropout_inputs([0.3, 0.6]),
          "autograder.probes.ch09_dropout:variational_dropout", judge_dropout_mask,
          DROPOUT_ABOUT + "; p = 0.3 and 0.6", DROPOUT, "variational_dropout_tests"),
    Check("ch09.dropout_off", ("variational_dropout",), dropout_inputs([0.0]),
          "autograder.probes.ch09_dropout:variational_dropout", judge_dropout_off,
          DROPOUT_ABOUT + "; p = 0", ("09_dropout", "eq D1"), "variational_dropout_tests"),
    Check("ch09.dropout_gradients", ("variational_dropout",), dropout_inputs([0.3]),
          "autograder.probes.ch09_dropout:variational_dropout", judge_dropout_gradients,
          DROPOUT_ABOUT + "; p = 0.3; the loss is a random weighting of the outputs", DYNET_GRADIENTS,
          "variational_dropout_tests"),
    Check("ch09.mc_average", ("mc_token_logprobs",), mc_average_inputs,
          "autograder.probes.ch09_dropout:mc_token_logprobs", judge_scripted,
          "a scripted model: 6 sentences of 1 to 9 words, 7 passes with p = 0.4 whose token probabilities "
          "vary between 0.002 and 0.9", MC, "mc_token_logprobs_tests"),
    Check("ch09.mc_stable", ("mc_token_logprobs",), mc_stable_inputs,
          "autograder.probes.ch09_dropout:mc_token_logprobs", judge_scripted,
          "a scripted model: 6 sentences, 7 passes with p = 0.4; two sentences' log-probabilities near -900",
          ("09_dropout", "Computing (D3) from log-probabilities without underflow"), "mc_token_logprobs_tests"),
    Check("ch09.mc_model", ("mc_token_logprobs",), mc_model_inputs,
          "autograder.probes.ch09_dropout:mc_token_logprobs", judge_mc_model,
          "a 2-layer LSTM language model (embeddings 8, hidden 12) with random weights, 3 sentences of 2 to "
          "8 words one at a time, 6 passes with p = 0.5, DyNet re-seeded before each sentence",
          ("09_dropout", "3. Where the course's language model applies dropout"), "mc_token_logprobs_tests"),
    Check("ch09.mc_dropout_perplexity", ("mc_dropout_perplexity", "mc_token_logprobs"), mc_perplexity_inputs,
          "autograder.probes.ch09_dropout:mc_dropout_perplexity", judge_mc_perplexity,
          "a scripted model (6 sentences, 5 passes with p = 0.3) and a 2-layer LSTM language model (3 "
          "sentences, 4 passes with p = 0.4, DyNet re-seeded before each)", MC, "mc_dropout_perplexity_tests"),
]
