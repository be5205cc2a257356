"""Generated sentences judged by the grammar that made the course corpus.

The course corpus comes from a known grammar with an exact parser, so a sentence a
model writes can be judged exactly (:func:`judge`):

* is it a sentence of the language at all (the grammar derives it)?
* how probable is it under the true distribution (``Grammar.logprob``), against
  sentences the grammar draws itself?
* does it keep number (and reflexive) agreement, most tellingly when subject and
  verb are far apart? A derivable sentence keeps every agreement by definition; a
  sentence that becomes derivable when one verb (or reflexive) takes its other form
  ("the keys near the cabinet *is* old") is a sentence that lost exactly that one.
  Agreement is counted over both: kept / (kept + lost), by distance and by task
  (``number``: subject and verb; ``gender``: subject and himself/herself), and by
  task at the long distances;
* how far is the model from the grammar? KL(model || grammar) = E_model[log p_model -
  log p_grammar] is infinite as soon as the model gives any probability to a sentence
  outside the language, so the estimate reported is that of the model restricted to
  the language (renormalised) against the grammar: mean(log p_model - log p_grammar)
  over the derivable samples - log(share derivable), with a bootstrap interval.

``p_model`` is the distribution the samples were drawn from (temperature and top-k
applied): :class:`course.sampling.Sample` records its log-probability.
"""
from __future__ import annotations

import math
import random

import numpy as np

Z95 = 1.959964


def wilson(k: int, n: int) -> tuple[float, float]:
    """95% Wilson interval of a share k / n."""
    if n == 0:
        return (math.nan, math.nan)
    p = k / n
    centre = (p + Z95**2 / (2 * n)) / (1 + Z95**2 / n)
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95**2 / (4 * n * n)) / (1 + Z95**2 / n)
    return (centre - half, centre + half)


def mean_interval(values) -> tuple[float, float, float]:
    """Mean and its 95% normal interval."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return (math.nan, math.nan, math.nan)
    mean = float(values.mean())
    half = Z95 * float(values.std(ddof=1)) / math.sqrt(values.size) if values.size > 1 else math.nan
    return (mean, mean - half, mean + half)


def near_miss(grammar, words):
    """(derivation, position) when giving one verb or reflexive of ``words`` its other
    form (is/are, eats/eat, himself/herself) makes the sentence derivable; else None."""
    for i, w in enumerate(words):
        other = grammar.other_form.get(w)
        if other is None:
            continue
        fixed = list(words)
        fixed[i] = other
        derivation = grammar.parse(fixed)
        if derivation is not None:
            return derivation, i
    return None


def judge(grammar, samples, long_distance: int = 6, reference: int = 1000, seed: int = 1,
          bootstrap: int = 1000, examples_per_kind: int = 5) -> dict:
    """The grammar's verdict on ``samples`` (objects with ``tokens``, ``logprob`` and
    ``finished``, as :func:`course.sampling.sample` returns them); see the module's doc.

    reference: how many sentences the grammar draws itself (with ``seed``) for the
    comparison of log-probabilities. Agreements at ``long_distance`` tokens or more
    between subject and verb are the long ones. Up to ``examples_per_kind`` long ones
    of each kind are returned (kept: in derivable sentences; lost), with the positions
    of subject (cue) and verb (target) and the form the grammar wants there (right)."""
    n = len(samples)
    derivable, gaps = [], []
    agreement = {"all": [0, 0], "long": [0, 0], "number": [0, 0], "gender": [0, 0],   # [kept, lost]
                 "long number": [0, 0], "long gender": [0, 0]}
    examples = ([], [])                                                  # long agreements kept, lost
    for s in samples:
        derivation = grammar.parse(s.tokens) if s.finished else None
        lost = None
        if derivation is None and s.finished:
            miss = near_miss(grammar, s.tokens)
            if miss is not None:
                derivation, lost = miss
        if derivation is None:
            continue
        if lost is None:
            derivable.append(derivation.logprob)
            gaps.append(s.logprob - derivation.logprob)
        for a in grammar.agreements(derivation):
            column = 1 if a.target_index == lost else 0
            agreement["all"][column] += 1
            agreement[a.task][column] += 1
            if a.distance >= long_distance:
                agreement["long"][column] += 1
                agreement[f"long {a.task}"][column] += 1
                if len(examples[column]) < examples_per_kind and (column or lost is None):
                    examples[column].append({"words": list(s.tokens), "cue": a.cue_index,
                                             "target": a.target_index, "right": a.right})
    rng = random.Random(f"judge/{seed}")
    own = [grammar.sample(rng).logprob for _ in range(reference)]
    share = len(derivable) / n if n else math.nan
    result = {
        "n": n, "finished": sum(s.finished for s in samples),
        "derivable": len(derivable), "derivable_share": share, "derivable_interval": wilson(len(derivable), n),
        "logprob": mean_interval(derivable), "grammar_logprob": mean_interval(own),
        "long_distance": long_distance,
        "agreement": {k: {"kept": kept, "lost": lost, "share": kept / (kept + lost) if kept + lost else math.nan,
                          "interval": wilson(kept, kept + lost)} for k, (kept, lost) in agreement.items()},
        "kl": (math.nan, math.nan, math.nan),
        "examples": {"kept": examples[0], "lost": examples[1]},
    }
    if gaps:
        gaps = np.array(gaps)
        boot = np.random.default_rng(seed)
        stats = []
        for _ in range(bootstrap):
            draw = boot.integers(0, n, n)          # resample all samples; the derivable ones carry a gap
            inside = draw[draw < len(gaps)]
            if inside.size:
                stats.append(gaps[inside].mean() - math.log(inside.size / n))
        result["kl"] = (float(gaps.mean() - math.log(share)), *map(float, np.percentile(stats, [2.5, 97.5])))
    return result


def interval(triple, fmt: str = ".2f") -> str:
    """(value, low, high) as "value [low, high]"."""
    return f"{triple[0]:{fmt}} [{triple[1]:{fmt}}, {triple[2]:{fmt}}]"


def report(verdict: dict) -> list[str]:
    """The verdict as lines of text."""
    v, a = verdict, verdict["agreement"]
    lines = [
        f"derivable by the grammar: {v['derivable']} of {v['n']} "
        f"({interval((v['derivable_share'], *v['derivable_interval']), '.1%')}); "
        f"{v['n'] - v['finished']} cut at the length limit",
        f"log-probability under the grammar (nats per sentence), derivable samples: {interval(v['logprob'])}; "
        f"the grammar's own samples: {interval(v['grammar_logprob'])}",
    ]
    for key, label in (("all", "all distances"), ("long", f"distance >= {v['long_distance']}"),
                       ("number", "number, subject and verb"), ("gender", "gender, reflexives"),
                       ("long number", f"number, distance >= {v['long_distance']}"),
                       ("long gender", f"gender, distance >= {v['long_distance']}")):
        if key not in a:          # a verdict saved before agreement was split by task
            continue
        kept, lost = a[key]["kept"], a[key]["lost"]
        if kept + lost:
            lines.append(f"agreement kept ({label}): {kept} of {kept + lost} "
                         f"({interval((a[key]['share'], *a[key]['interval']), '.1%')})")
        else:
            lines.append(f"agreement kept ({label}): no agreement in the derivable samples")
    if math.isnan(v["kl"][0]):
        lines.append("KL(model || grammar): infinite, and no sample is derivable to estimate more")
    else:
        lines.append(f"KL(model || grammar) is infinite where samples fall outside the language; restricted "
                     f"to the language: {interval(v['kl'])} nats per sentence")
    return lines


def mark(grammar, sample) -> str:
    """A one-word verdict on one sample: "derivable", "agreement lost" (one verb or
    reflexive in its other form makes it derivable), "not derivable", or "cut" (it
    reached the length limit)."""
    if not sample.finished:
        return "cut"
    if grammar.parse(sample.tokens) is not None:
        return "derivable"
    return "agreement lost" if near_miss(grammar, sample.tokens) else "not derivable"


def show(example: dict) -> str:
    """An example of :func:`judge` as text: the subject's head word in *stars*, the verb
    in [brackets], with the form the grammar wants after "->" where it was lost."""
    words = list(example["words"])
    words[example["cue"]] = f"*{words[example['cue']]}*"
    target = words[example["target"]]
    words[example["target"]] = f"[{target}]" if target == example["right"] else f"[{target} -> {example['right']}]"
    return " ".join(words)
