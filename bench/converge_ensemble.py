"""The best the course's models reach together: an ensemble of the converged runs.

An ensemble predicts each word with the average of its members' probabilities (members
may repeat, which weights them). It is chosen on the valid split alone by greedy forward
selection: start from the best single run, then add, one at a time, the run (any finished
run of bench/converge.py, again if it helps) that lowers the ensemble's valid perplexity
the most, until no addition lowers it by 0.1%. The test split is scored once, at the end.
The agreement pairs are scored by the ensemble's sentence probabilities, as a single model's.

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

from course import runtime

OUT = RECORDS / "ensemble.json"
MIN_GAIN = 0.001          # stop when the best addition lowers valid perplexity by less than 0.1%
MAX_MEMBERS = 30


def finished_runs(records=RECORDS) -> list:
    """(name, seed, record) of every finished neural run with a model."""
    runs = []
    for path in sorted(Path(records).glob("*-s*.json")):
        record = json.loads(path.read_text())
        if record.get("model") in MODELS and record["model"] not in NGRAMS \
                and math.isfinite(record.get("final", {}).get("valid_ppl", math.inf)):
            runs.append((record["model"], record["seed"], record))
    return runs


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


def mix(members: list, counts: np.ndarray) -> np.ndarray:
    """log of the count-weighted mean of the members' probabilities, word by word."""
    used = np.flatnonzero(counts)
    stacked = np.stack([members[k] for k in used]) + np.log(counts[used] / counts.sum())[:, None]
    top = stacked.max(axis=0)
    return top + np.log(np.exp(stacked - top).sum(axis=0))


def ppl(lp: np.ndarray) -> float:
    return float(np.exp(-lp.mean()))


def select(valid: list, min_gain=MIN_GAIN, max_members=MAX_MEMBERS) -> tuple:
    """Greedy forward selection with replacement on valid: (counts, valid perplexity after each step)."""
    counts = np.zeros(len(valid))
    counts[int(np.argmin([ppl(v) for v in valid]))] = 1
    steps = [ppl(mix(valid, counts))]
    while counts.sum() < max_members:
        trials = []
        for k in range(len(valid)):
            trial = counts.copy()
            trial[k] += 1
            trials.append(ppl(mix(valid, trial)))
        k = int(np.argmin(trials))
        if trials[k] > steps[-1] * (1 - min_gain):
            break
        counts[k] += 1
        steps.append(trials[k])
    return counts, steps


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
    counts, steps = select([s["valid"][0] for s in scored])
    chosen = np.flatnonzero(counts)
    ensemble = {part: mix([s[part][0] for s in scored], counts) for part in sentences}
    right = sentence_sums(ensemble["right"], scored[0]["right"][1])
    wrong = sentence_sums(ensemble["wrong"], scored[0]["wrong"][1])
    floor = {s: floor_perplexity(s) for s in ("valid", "test")}
    result = {
        "how": __doc__.split("\n\n")[0] + " Chosen on valid by greedy forward selection with replacement.",
        "candidates": [f"{name}-s{seed}" for name, seed, _ in runs],
        "members": {f"{runs[k][0]}-s{runs[k][1]}": int(counts[k]) for k in chosen},
        "valid_steps": steps,
        "valid_ppl": ppl(ensemble["valid"]), "test_ppl": ppl(ensemble["test"]),
        "valid_ratio": ppl(ensemble["valid"]) / floor["valid"], "test_ratio": ppl(ensemble["test"]) / floor["test"],
        "best_single": min(((f"{n}-s{s}", r["final"]["valid_ppl"], r["final"]["test_ppl"]) for n, s, r in runs),
                           key=lambda x: x[1]),
        "pairs": "".join("1" if r > w else "0" if r < w else "=" for r, w in zip(right, wrong)),
        "seconds": time.perf_counter() - start, "cpu_seconds": time.process_time() - cpu,
        "finished_at": time.strftime("%Y-%m-%d %H:%M:%S")}
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    print(f"ensemble of {int(counts.sum())} ({len(chosen)} runs): valid {result['valid_ppl']:.3f} "
          f"({result['valid_ratio']:.3f} x floor), test {result['test_ppl']:.3f} ({result['test_ratio']:.3f} x floor); "
          f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
