"""The best the course's models reach together: an ensemble of the converged runs.

An ensemble predicts each word with a weighted average of its members' probabilities (a
linear interpolation of language models). The weights are fitted on the valid split alone,
by expectation-maximisation (each step sets a member's weight to its average share of the
probability the mixture gives the right words; the valid perplexity never rises), over every
finished run of bench/converge.py. The test split is scored once, at the end. The agreement
pairs are scored by the ensemble's sentence probabilities, as a single model's.

Each run's log-probability of every word of valid, test and the pairs is kept beside its
checkpoint (runs/converge/NAME-sSEED/logprobs.npz, not committed) and computed again when
the run's record changes. Writes bench/results/converge/ensemble.json, which
bench/converge_tables.py reports with the 3% goal.

    .venv/bin/python bench/converge_ensemble.py
"""
from __future__ import annotations

import json
import math
import time
from pathlib import Path

import numpy as np

from common import ROOT
from converge import DEPTH, MODELS, NGRAMS, RECORDS, WORK, load_splits
from converge_inside import load_best
from converge_tables import load_records

from course import runtime

OUT = RECORDS / "ensemble.json"
EM_STEPS, EM_TOLERANCE = 1000, 1e-9      # stop when the valid log-likelihood per word gains less
SHOWN = 0.01                             # members with a smaller weight are counted, not named

def finished_runs(records=RECORDS) -> list:
    """(name, seed, record) of every finished neural run with a model."""
    return [(name, seed, record) for name, runs in load_records(records).items() if name in MODELS and name not in NGRAMS
            for seed, record in sorted(runs.items())
            if math.isfinite(record.get("final", {}).get("valid_ppl", math.inf))]


def texts(splits) -> dict:
    from course.agreement import load_pairs
    pairs = load_pairs()
    return {"valid": splits["valid"], "test": splits["test"],
            "right": [p.right_sentence for p in pairs], "wrong": [p.wrong_sentence for p in pairs]}


def logprobs(name: str, seed: int, record: dict, splits: dict, sentences: dict, work=WORK) -> dict:
    """{part: (per-word log-probabilities, concatenated; sentence lengths)} of one run's best
    epoch, from its cache when the cache belongs to the record's final evaluation."""
    cache = Path(work) / f"{name}-s{seed}" / "logprobs.npz"
    stamp = record["final"]["finished_at"]
    if cache.exists():
        saved = np.load(cache)
        if str(saved["stamp"]) == stamp:
            return {part: (saved[part], saved[part + "_lengths"]) for part in sentences}
    model = load_best(name, seed, splits, work)
    arrays = {}
    for part, items in sentences.items():
        lps = model.token_logprobs(items)
        arrays[part] = np.concatenate(lps).astype(np.float64)
        arrays[part + "_lengths"] = np.array([len(lp) for lp in lps])
    np.savez(cache, stamp=stamp, **arrays)
    return {part: (arrays[part], arrays[part + "_lengths"]) for part in sentences}


def mix(members: list, weights: np.ndarray) -> np.ndarray:
    """log of the weighted mean of the members' probabilities, word by word (weights need not
    sum to 1; a zero weight leaves a member out)."""
    used = np.flatnonzero(weights)
    stacked = np.stack([members[k] for k in used]) + np.log(weights[used] / weights.sum())[:, None]
    return np.logaddexp.reduce(stacked, axis=0)


def ppl(lp: np.ndarray) -> float:
    return float(np.exp(-lp.mean()))


def fit_weights(valid: list, steps=EM_STEPS, tolerance=EM_TOLERANCE) -> tuple:
    """Mixture weights maximising the valid likelihood, by EM from equal weights:
    (weights, valid perplexity after each step)."""
    logs = np.stack(valid)
    weights = np.full(len(valid), 1.0 / len(valid))
    history = []
    for _ in range(steps):
        joint = logs + np.log(np.maximum(weights, 1e-300))[:, None]
        mixture = np.logaddexp.reduce(joint, axis=0)
        history.append(float(np.exp(-mixture.mean())))
        weights = np.exp(joint - mixture).mean(axis=1)          # each member's share of the right words
        if len(history) > 1 and math.log(history[-2] / history[-1]) < tolerance:
            break
    return weights / weights.sum(), history


def sentence_sums(lp: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    return np.add.reduceat(lp, np.concatenate([[0], np.cumsum(lengths)[:-1]]))


def main():
    from course.grammar import floor_perplexity
    start, cpu = time.perf_counter(), time.process_time()
    runtime.init(seed=1, mem=1536)
    splits = load_splits()
    sentences = texts(splits)
    runs = [r for r in finished_runs() if r[0] not in DEPTH]
    if not runs:
        raise SystemExit("no finished run: train some first (python bench/converge.py)")
    scored = []
    for k, (name, seed, record) in enumerate(runs, 1):
        scored.append(logprobs(name, seed, record, splits, sentences))
        print(f"[{k}/{len(runs)}] {name}-s{seed}: valid {ppl(scored[-1]['valid'][0]):.3f}", flush=True)
    weights, history = fit_weights([s["valid"][0] for s in scored])
    ensemble = {part: mix([s[part][0] for s in scored], weights) for part in sentences}
    right = sentence_sums(ensemble["right"], scored[0]["right"][1])
    wrong = sentence_sums(ensemble["wrong"], scored[0]["wrong"][1])
    floor = {s: floor_perplexity(s) for s in ("valid", "test")}
    order = np.argsort(-weights)
    result = {
        "how": "A weighted average of the predicted probabilities of every finished run; the weights "
               "fitted on valid by EM (bench/converge_ensemble.py).",
        "weights": {f"{runs[k][0]}-s{runs[k][1]}": float(weights[k]) for k in order},
        "em_steps": len(history), "valid_ppl_first_step": history[0],
        "valid_ppl": ppl(ensemble["valid"]), "test_ppl": ppl(ensemble["test"]),
        "valid_ratio": ppl(ensemble["valid"]) / floor["valid"], "test_ratio": ppl(ensemble["test"]) / floor["test"],
        "best_single": min(((f"{n}-s{s}", r["final"]["valid_ppl"], r["final"]["test_ppl"]) for n, s, r in runs),
                           key=lambda x: x[1]),
        "pairs": "".join("1" if r > w else "0" if r < w else "=" for r, w in zip(right, wrong)),
        "seconds": time.perf_counter() - start, "cpu_seconds": time.process_time() - cpu,
        "finished_at": time.strftime("%Y-%m-%d %H:%M:%S")}
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    print(f"ensemble of {len(runs)} runs (largest weights: "
          + ", ".join(f"{key} {w:.2f}" for key, w in list(result["weights"].items())[:3])
          + f"): valid {result['valid_ppl']:.3f} ({result['valid_ratio']:.3f} x floor), test {result['test_ppl']:.3f} "
          f"({result['test_ratio']:.3f} x floor); wrote {OUT.relative_to(ROOT)}")

if __name__ == "__main__":
    main()
