"""Long-distance agreement tests: minimal pairs from the course grammar.

Each pair is one sentence of the grammar and a copy that differs in exactly
one token, the agreement target, put in the wrong form:

* task "number": the verb agrees with its subject's head noun
  ("the keys near the cabinet *are* / *is* old");
* task "gender": the reflexive agrees with its subject
  ("the queen who the kings admire bought a cake for *herself* / *himself*").

A language model passes a pair when it gives the right sentence the higher
log-probability. Pairs are bucketed by the distance between the cue (the
subject's head word) and the target, in tokens, and by the number of
attractors between them: nouns or pronouns of the other number (number
task), words of the other gender (gender task: people, names, he/she,
his/her, himself/herself).

The shipped set is ``data/course/agreement.tsv`` (made with the corpus by
``python -m course data make-corpus``); ``load_pairs()`` reads it.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np

TASKS = ("number", "gender")
#: (name, smallest distance, largest distance or None)
DISTANCE_BUCKETS = (("1-5", 1, 5), ("6-10", 6, 10), ("11-15", 11, 15), ("16-20", 16, 20), ("21+", 21, None))
ATTRACTOR_BUCKETS = ("0", "1", "2", "3+")
COLUMNS = ("id", "task", "distance", "bucket", "attractors", "cue_index", "target_index",
           "cue", "right", "wrong", "sentence")


def distance_bucket(distance: int) -> str:
    for name, low, high in DISTANCE_BUCKETS:
        if distance >= low and (high is None or distance <= high):
            return name
    raise ValueError(f"distance {distance} is in no bucket (distances start at 1)")


def attractor_bucket(attractors: int) -> str:
    return str(attractors) if attractors < 3 else "3+"


@dataclass(frozen=True)
class Pair:
    """A minimal pair: `words` is the right sentence; the wrong one has
    `wrong` instead of `right` at `target_index`."""

    task: str
    distance: int
    attractors: int
    cue_index: int
    target_index: int
    right: str
    wrong: str
    words: tuple

    @property
    def bucket(self) -> str:
        return distance_bucket(self.distance)

    @property
    def right_sentence(self) -> list[str]:
        return list(self.words)

    @property
    def wrong_sentence(self) -> list[str]:
        words = list(self.words)
        words[self.target_index] = self.wrong
        return words


def sample_pairs(grammar, seed: int, per_bucket: int, max_sentences: int = 2_000_000) -> list[Pair]:
    """`per_bucket` pairs for every (task, distance bucket), from fresh sentences.

    Sentences are drawn from the grammar with their own random stream. A
    sentence gives at most one pair per (task, bucket), chosen at random among
    its agreements in that bucket, so a bucket holds the grammar's sentences
    conditioned on having an agreement that far apart. The choice does not
    depend on how full the buckets are, so the first k pairs of each bucket
    are the same for every per_bucket >= k (a test regenerates a prefix).
    """
    stream = random.Random(f"course-corpus/{seed}/agreement")
    found = {(task, name): [] for task in TASKS for name, _, _ in DISTANCE_BUCKETS}
    low = {name: lo for name, lo, _ in DISTANCE_BUCKETS}
    for number in range(max_sentences):
        open_buckets = [key for key, pairs in found.items() if len(pairs) < per_bucket]
        if not open_buckets:
            break
        derivation = grammar.sample(stream)
        if all(low[name] > len(derivation.words) - 1 for _, name in open_buckets):
            continue  # too short for any bucket still open
        by_bucket = {}
        for a in grammar.agreements(derivation):
            by_bucket.setdefault((a.task, distance_bucket(a.distance)), []).append(a)
        choose = random.Random(f"course-corpus/{seed}/agreement/{number}")
        for key in found:  # fixed order: tasks, then buckets
            if key in by_bucket:
                a = by_bucket[key][choose.randrange(len(by_bucket[key]))]
                if len(found[key]) < per_bucket:
                    found[key].append(Pair(a.task, a.distance, a.attractors, a.cue_index,
                                           a.target_index, a.right, a.wrong, derivation.words))
    else:
        short = {f"{t} {b}": len(p) for (t, b), p in found.items() if len(p) < per_bucket}
        raise RuntimeError(f"after {max_sentences} sentences some buckets are short of {per_bucket} "
                           f"pairs: {short}; lower per_bucket or raise max_sentences")
    return [pair for key in found for pair in found[key]]


def write_pairs(pairs, path):
    """Write pairs as a tab-separated file with a header row (see `COLUMNS`)."""
    lines = ["\t".join(COLUMNS)]
    for i, p in enumerate(pairs):
        lines.append("\t".join(str(x) for x in (
            i, p.task, p.distance, p.bucket, p.attractors, p.cue_index, p.target_index,
            p.words[p.cue_index], p.right, p.wrong, " ".join(p.words))))
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


def load_pairs(path=None) -> list[Pair]:
    """Read minimal pairs (default: the shipped data/course/agreement.tsv)."""
    if path is None:
        from course import paths
        path = paths.COURSE_DATA / "agreement.tsv"
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist; regenerate it with "
                                "`python -m course data make-corpus`.")
    lines = path.read_text(encoding="utf-8").splitlines()
    if tuple(lines[0].split("\t")) != COLUMNS:
        raise ValueError(f"{path}: the header should be {' '.join(COLUMNS)} (tab-separated)")
    pairs = []
    for number, line in enumerate(lines[1:], start=2):
        row = dict(zip(COLUMNS, line.split("\t")))
        words = tuple(row["sentence"].split())
        pair = Pair(row["task"], int(row["distance"]), int(row["attractors"]), int(row["cue_index"]),
                    int(row["target_index"]), row["right"], row["wrong"], words)
        if len(row) != len(COLUMNS) or words[pair.target_index] != pair.right \
                or pair.distance != pair.target_index - pair.cue_index:
            raise ValueError(f"{path} line {number} is inconsistent: {line!r}")
        pairs.append(pair)
    return pairs


def bucket_counts(pairs) -> dict:
    """{task: {"distance": {bucket: n}, "attractors": {bucket: n}}}."""
    out = {}
    for task in TASKS:
        mine = [p for p in pairs if p.task == task]
        out[task] = {
            "distance": {name: sum(p.bucket == name for p in mine) for name, _, _ in DISTANCE_BUCKETS},
            "attractors": {name: sum(attractor_bucket(p.attractors) == name for p in mine)
                           for name in ATTRACTOR_BUCKETS},
        }
    return out


def agreement_accuracy(model, pairs) -> dict:
    """Accuracy of a scorer on minimal pairs, per task and bucket.

    model: anything with ``sentence_logprobs(sentences) -> np.ndarray``.
    A pair is correct when the right sentence scores higher; a tie (equal
    scores, e.g. a model that ignores the target) counts as half correct, so
    chance level is 0.5. Returns, per task present in `pairs`:
    ``{"all": s, "distance": {"1-5": s, ...}, "attractors": {"0": s, ...}}`` where each
    ``s = {"accuracy": float, "correct": int, "ties": int, "count": int}``;
    empty buckets are left out.
    """
    pairs = list(pairs)
    if not pairs:
        raise ValueError("no pairs to score")
    right = np.asarray(model.sentence_logprobs([p.right_sentence for p in pairs]), dtype=float)
    wrong = np.asarray(model.sentence_logprobs([p.wrong_sentence for p in pairs]), dtype=float)
    if right.shape != (len(pairs),) or wrong.shape != (len(pairs),):
        raise ValueError(f"sentence_logprobs returned shape {right.shape} for {len(pairs)} sentences; "
                         "it must return one log-probability per sentence")
    if np.isnan(right).any() or np.isnan(wrong).any():
        raise ValueError("sentence_logprobs returned NaN: the model's scores are broken")
    better, ties = right > wrong, right == wrong

    def summary(mask):
        n, correct, tied = int(mask.sum()), int((better & mask).sum()), int((ties & mask).sum())
        return {"accuracy": (correct + 0.5 * tied) / n, "correct": correct, "ties": tied, "count": n}

    tasks = np.array([p.task for p in pairs])
    dist = np.array([p.bucket for p in pairs])
    attr = np.array([attractor_bucket(p.attractors) for p in pairs])
    results = {}
    for task in TASKS:
        mine = tasks == task
        if mine.any():
            results[task] = {
                "all": summary(mine),
                "distance": {b: summary(mine & (dist == b)) for b, _, _ in DISTANCE_BUCKETS
                             if (mine & (dist == b)).any()},
                "attractors": {b: summary(mine & (attr == b)) for b in ATTRACTOR_BUCKETS
                               if (mine & (attr == b)).any()},
            }
    return results


def plot_agreement(results, ax=None, label=None, tasks=TASKS):
    """Accuracy (y, in [0, 1]) against cue-target distance bucket (x).

    One call draws one model: a solid line for number agreement and a dashed
    one for gender, in the same colour; call again on the same `ax` with
    another `label` to compare models. The dotted line is chance (0.5).
    """
    import matplotlib.pyplot as plt
    from course import plots

    if ax is None:
        plots.use_style()
        _, ax = plt.subplots(figsize=(6, 3.5))
    names = [name for name, _, _ in DISTANCE_BUCKETS]
    colour = None
    for task, style in zip(tasks, ("-o", "--s")):
        if task not in results:
            continue
        buckets = results[task]["distance"]
        xs = [i for i, name in enumerate(names) if name in buckets]
        ys = [buckets[names[i]]["accuracy"] for i in xs]
        line, = ax.plot(xs, ys, style, color=colour, label=f"{label}: {task}" if label else task)
        colour = line.get_color()
    ax.axhline(0.5, color="grey", linestyle=":", linewidth=1)
    ax.set_xticks(range(len(names)), names)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("distance from cue to target (tokens)")
    ax.set_ylabel("accuracy")
    ax.set_title("Agreement accuracy by distance")
    ax.legend(loc="lower left", fontsize=8)
    return ax
