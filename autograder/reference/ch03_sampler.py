"""Chapter 03 (what the models write): the checks of the student's own sampler.

``next_token_distribution(scores, temperature=1.0, top_k=None, top_p=None)`` returns the
exact probabilities the next token is drawn from, a NumPy vector over the vocabulary:

1. temperature: softmax(scores / temperature) (scores of ``-inf`` get probability 0);
2. top-k: only the ``top_k`` most probable tokens keep their probability (all of them when
   ``top_k`` is None or not smaller than the vocabulary), renormalised;
3. top-p (nucleus): of what is left, only the fewest most probable tokens whose probability
   reaches ``top_p`` (the token that crosses it included; all of them when ``top_p`` is None
   or 1), renormalised.

Ties are ordered by the lower token index first (a stable sort of the probabilities in
decreasing order), so the kept set is always exactly defined. Two checks:

* ``ch03.next_token_distribution``: exact distributions at fresh points: vocabularies of 5
  to 300 tokens, scores that hold ``-inf``, temperatures from 0.001 (the exponentials of a
  naive softmax overflow) to 2, top_k = 1 and larger than the vocabulary, top_p = 1 and one
  that the most probable token alone crosses, ties at the cut;
* ``ch03.sampler_draws``: sentences drawn by ``sampling.sample`` from a fixed small model with
  the student's distribution and a seed must be those the reference's distribution gives.

The judge names the usual slips (:data:`HINTS`) by computing them too. A function that reaches
the course's own sampler (``course.sampling._tempered`` or ``sampling.sample``, by any route: see
:mod:`autograder.probes.ch03_sampler`) fails both checks with :data:`COURSE_SAMPLER`.
"""
from __future__ import annotations

import numpy as np

from autograder.probes.ch03_sampler import fixed_model
from autograder.reference.grading import Check

SEED = 20261127
ATOL = 1e-6            # probabilities: max abs difference (any order of sums; float32 arithmetic passes too)
LECTURE = ("03_lstm", "8 · Your own sampler: temperature, top-k and nucleus")
VISIBLE = "next_token_distribution_tests"
COURSE_SAMPLER = ("next_token_distribution reaches the course's own sampler (course.sampling's _tempered or "
                  "sample, by whatever name): write the distribution yourself; the course's sampler cannot be used")


def distribution(scores, temperature=1.0, top_k=None, top_p=None, *, after_softmax=False, k_shift=0,
                 crossing=True, renormalise=True, nucleus_of_all=False, ties_kept=False, naive_softmax=False):
    """The reference (all flags at their defaults) or one of the usual slips."""
    scores = np.asarray(scores, dtype=float)
    with np.errstate(all="ignore"):
        z = scores if after_softmax else scores / temperature
        e = np.exp(z) if naive_softmax else np.exp(z - z.max())
        full = e / e.sum()           # the tempered softmax (after_softmax: temperature not applied,
        #                              since p / T renormalised is p)
    V = len(full)
    order = np.argsort(-full, kind="stable")
    kept = np.ones(V, dtype=bool)
    if top_k is not None and top_k < V:
        k = max(top_k + k_shift, 0)
        kept[:] = False
        if ties_kept and k:
            kept = full >= full[order[k - 1]]
        else:
            kept[order[:k]] = True
    after_k = np.where(kept, full, 0.0)
    if renormalise:
        with np.errstate(all="ignore"):
            after_k = after_k / after_k.sum()
    if top_p is not None and top_p < 1:
        mass = full if nucleus_of_all else after_k
        cumulative = np.cumsum(mass[order])
        before = np.concatenate([[0.0], cumulative[:-1]])
        inside = (before < top_p) if crossing else (cumulative < top_p)
        nucleus = np.zeros(V, dtype=bool)
        nucleus[order[inside]] = True
        kept &= nucleus
    out = np.where(kept, after_k, 0.0)
    if renormalise:
        with np.errstate(all="ignore"):
            out = out / out.sum()
    return out


def next_token_distribution(scores, temperature=1.0, top_k=None, top_p=None):
    return distribution(scores, temperature, top_k, top_p)


#: the usual slips: (flags of :func:`distribution`, what to tell the student)
HINTS = {
    "after_softmax": ({"after_softmax": True},
                      "the temperature has no effect: divide the scores by it before the softmax "
                      "(dividing the probabilities after it changes nothing once they are renormalised)"),
    "ties_kept": ({"ties_kept": True},
                  "tokens tied with the k-th are all kept: ties go to the lower token index (sort the "
                  "probabilities in decreasing order with a stable sort), and exactly top_k tokens stay"),
    "k_plus_one": ({"k_shift": 1}, "top-k keeps one token too many (off by one): exactly top_k tokens stay"),
    "k_minus_one": ({"k_shift": -1}, "top-k keeps one token too few (off by one): exactly top_k tokens stay"),
    "no_crossing": ({"crossing": False},
                    "top-p leaves out the token that crosses p: keep the fewest most probable tokens whose "
                    "probability *reaches* top_p, the one that crosses it included"),
    "no_renormalise": ({"renormalise": False},
                       "the kept probabilities are not renormalised: divide them by their sum, so that "
                       "they sum to 1"),
    "no_renormalise_anywhere": ({"renormalise": False, "nucleus_of_all": True},
                                "the kept probabilities are not renormalised: divide them by their sum, so "
                                "that they sum to 1 (after top-k, and again after top-p)"),
    "nucleus_of_all": ({"nucleus_of_all": True},
                       "top-p reads the probabilities from before top-k: renormalise over the top k first, "
                       "then take the nucleus of that distribution"),
    "naive_softmax": ({"naive_softmax": True},
                      "the exponentials overflow at a small temperature: subtract the largest score "
                      "before exp (softmax does not change)"),
}


# --------------------------------------------------------------------------- distributions

def _nucleus_p(probs, crossing_rank, rng):
    """A top_p that the ``crossing_rank``-th most probable token (0-based) crosses, well
    away from every cumulative sum (so no rounding decides what is kept)."""
    cumulative = np.cumsum(np.sort(probs)[::-1])
    low = cumulative[crossing_rank - 1] if crossing_rank else 0.0
    return float(low + rng.uniform(0.3, 0.7) * (cumulative[crossing_rank] - low))


def distribution_inputs(seed: int = SEED) -> dict:
    """Fresh scores and settings: several vocabulary sizes, -inf scores, the edge cases."""
    rng = np.random.default_rng(seed)

    def scores(V, scale=2.0, minus_inf=0):
        s = rng.normal(0.0, scale, V)
        s[rng.choice(V, minus_inf, replace=False)] = -np.inf
        return s

    cases = []

    def add(s, temperature=1.0, top_k=None, top_p=None, crossing_rank=None):
        if crossing_rank is not None:
            after_k = distribution(s, temperature, top_k)
            top_p = _nucleus_p(after_k, crossing_rank, rng)
        cases.append({"scores": s, "temperature": temperature, "top_k": top_k, "top_p": top_p})

    add(scores(12), 1.0)                                   # the softmax alone
    add(scores(12), 0.5)
    add(scores(23, minus_inf=2), 2.0)                      # hot, and tokens that can never be drawn
    add(scores(50), 1.0, top_k=5)
    add(scores(50), 0.8, top_k=1)                          # top_k = 1: the most probable token only
    add(scores(5), 1.3, top_k=9)                           # top_k larger than the vocabulary
    add(scores(50), 1.0, top_p=None, crossing_rank=6)
    add(scores(50, minus_inf=3), 0.7, top_p=1.0)           # top_p = 1: every token
    add(scores(300), 1.2, top_k=40, crossing_rank=9)       # both, on a larger vocabulary
    add(scores(17, scale=4.0), 0.001)                      # temperature -> 0: a naive softmax overflows
    add(scores(30, minus_inf=1), 1.0, crossing_rank=0)     # the most probable token alone crosses p
    tied = scores(12)
    tied[[3, 8]] = tied.max() - 0.5                        # tied second place: ties at the k-th token
    add(tied.copy(), 1.0, top_k=2)
    tied = scores(14)
    tied[[2, 5, 11]] = tied.max() + 0.3                     # three tied first: p crossed inside the tie
    add(tied, 0.9, top_p=None, crossing_rank=1)
    add(scores(40), 0.6, top_k=6, top_p=1.0)
    add(scores(60, minus_inf=1), 1.5, top_k=60, crossing_rank=14)  # top_k = V: nothing cut by it
    return {"cases": cases}


def _case_text(case) -> str:
    V = len(case["scores"])
    parts = [f"a vocabulary of {V}", f"temperature {case['temperature']:g}"]
    if case["top_k"] is not None:
        parts.append(f"top_k = {case['top_k']}" + (" (more than the vocabulary)" if case["top_k"] > V else ""))
    if case["top_p"] is not None:
        parts.append("top_p = 1" if case["top_p"] >= 1 else "a top_p below 1")
    if np.isinf(case["scores"]).any():
        parts.append("scores of -inf")
    return ", ".join(parts)


def judge_distributions(numbers: dict, inputs: dict) -> list[str]:
    """The first wrong case, and the slip that explains every wrong case when one does."""
    if float(numbers["calls_course_sampler"]):
        return [COURSE_SAMPLER]
    wrong, variants = [], {name: [] for name in HINTS}
    for k, case in enumerate(inputs["cases"]):
        got = np.asarray(numbers["values"][str(k)], dtype=float)
        V = len(case["scores"])
        if got.shape != (V,):
            return [f"case {k + 1} ({_case_text(case)}): the result has shape {got.shape}, expected ({V},): "
                    "one probability per token, in the vocabulary's order"]
        args = (case["scores"], case["temperature"], case["top_k"], case["top_p"])
        if np.allclose(got, distribution(*args), rtol=0.0, atol=ATOL):
            continue
        wrong.append(k)
        for name, (flags, _) in HINTS.items():
            variants[name].append(np.allclose(got, distribution(*args, **flags), rtol=0.0, atol=ATOL,
                                              equal_nan=True))
    if not wrong:
        return []
    k = wrong[0]
    case, got = inputs["cases"][k], np.asarray(numbers["values"][str(k)], dtype=float)
    where = f"wrong in {len(wrong)} of {len(inputs['cases'])} cases, the first: case {k + 1} ({_case_text(case)})"
    explained = [name for name, matches in variants.items() if all(matches)]
    if explained:                      # the first (HINTS is in order of precedence)
        return [f"{where}: {HINTS[explained[0]][1]}"]
    per_case = [HINTS[name][1] for name, matches in variants.items() if matches[0]]
    if per_case:
        return [f"{where}: {per_case[0]}"]
    want = distribution(case["scores"], case["temperature"], case["top_k"], case["top_p"])
    if not np.all(np.isfinite(got)):
        detail = "it holds NaN or infinite values"
    elif abs(got.sum() - 1) > 1e-6:
        detail = f"it sums to {got.sum():.4g}, not 1: renormalise over the kept tokens"
    elif not np.array_equal(got > 0, want > 0):
        detail = "it keeps other tokens than it should (the top k, then the nucleus of what is left)"
    else:
        detail = f"the probabilities differ (largest difference {np.abs(got - want).max():.2g})"
    return [f"{where}: {detail}"]


# --------------------------------------------------------------------------- seeded draws

DRAW_SETTINGS = [(1.0, None, None), (0.6, 4, None), (1.4, None, 0.8), (0.9, 6, 0.7), (0.05, None, None)]


def draws_inputs(seed: int = SEED + 1) -> dict:
    words = "the a dog dogs cat cats sees see near old who barks bark herself himself".split()
    return {"vocab": ["<unk>", "<s>", "</s>"] + words, "size": 6, "model_seed": seed, "seed": seed % 1000,
            "n": 12, "max_length": 9, "settings": DRAW_SETTINGS}


def reference_draws(inputs: dict) -> dict:
    from course import sampling
    model = fixed_model(inputs)
    out = {}
    for k, (temperature, top_k, top_p) in enumerate(inputs["settings"]):
        drawn = sampling.sample(model, n=inputs["n"], seed=inputs["seed"] + k, max_length=inputs["max_length"],
                          distribution=lambda s, t=temperature, kk=top_k, p=top_p: distribution(s, t, kk, p))
        out[str(k)] = ([[model.vocab.index(t) for t in s.tokens] for s in drawn], [s.logprob for s in drawn])
    return out


def judge_draws(numbers: dict, inputs: dict) -> list[str]:
    if float(numbers["calls_course_sampler"]):
        return [COURSE_SAMPLER]
    want = reference_draws(inputs)
    for k, (temperature, top_k, top_p) in enumerate(inputs["settings"]):
        got = numbers["draws"][str(k)]
        setting = f"temperature {temperature:g}, top_k {top_k}, top_p {top_p}"
        if float(got["refused"]):
            return [f"sampling.sample refused what your function returned ({setting}): not the probabilities of "
                    "every token (one per token, finite, not negative, summing to 1)"]
        ids, logprobs = np.asarray(got["ids"]), np.asarray(got["logprobs"], dtype=float)
        right_ids, right_logprobs = want[str(k)]
        same = ids.shape[0] == len(right_ids) and all(
            [int(i) for i in row if i >= 0] == r for row, r in zip(ids, right_ids))
        if not same:
            return [f"sampling.sample with your distribution ({setting}, a fixed small model, a fixed seed) draws "
                    "other sentences than the reference: the probabilities of some step are wrong (the "
                    "check of next_token_distribution says which)"]
        if not np.allclose(logprobs, right_logprobs, rtol=0.0, atol=1e-6):
            return [f"sampling.sample with your distribution ({setting}) draws the right sentences but with other "
                    "probabilities: return the exact, renormalised probabilities"]
    return []


CHECKS = [
    Check("ch03.next_token_distribution", ("next_token_distribution",), distribution_inputs,
          "autograder.probes.ch03_sampler:distributions", judge_distributions,
          about="15 score vectors over vocabularies of 5 to 300 tokens (some scores -inf, some tied), "
                "temperatures from 0.001 to 2, top_k from 1 to more than the vocabulary, top_p of 1 and "
                "below, alone and together",
          lecture=LECTURE, visible=VISIBLE),
    Check("ch03.sampler_draws", ("next_token_distribution",), draws_inputs,
          "autograder.probes.ch03_sampler:draws", judge_draws,
          about="12 sentences of at most 9 tokens drawn by sampling.sample from a fixed small S-RNN (a vocabulary "
                "of 18) at 5 settings of temperature, top_k and top_p, each with its own seed",
          lecture=LECTURE, visible=VISIBLE),
]
