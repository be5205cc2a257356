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

Every pair also has a class, the value its cue carries (`pair_class`):
singular or plural subject (number), masculine or feminine cue (gender). The
grammar makes 60% of noun phrases singular, so pairs drawn as they come would
favour singular subjects, and a model that merely prefers the more frequent
verb form would score above 0.5 without any memory. So every (task, distance
bucket) of the shipped set holds as many pairs of one class as of the other,
and `agreement_accuracy` also reports the class-balanced accuracy (the mean of
the per-class accuracies), which is exactly 0.5 for a model that picks the
same class whatever the context, on any set of pairs with both classes.

The shipped set is ``data/course/agreement.tsv`` (made with the corpus by
``python -m course data make-corpus``); ``load_pairs()`` reads it.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from course.grammar import Agreement
from course.grammar_lexicon import third_singular

TASKS = ("number", "gender")
#: the two classes of each task (the cue's number or gender); a bucket alternates them in this order
CLASSES = {"number": ("sg", "pl"), "gender": ("m", "f")}
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


def pair_class(task: str, right: str, wrong: str) -> str:
    """The class of a pair, read off its target: "sg" or "pl" (the number
    of the subject) for task "number", "m" or "f" for task "gender".

    The right form carries the cue's value: is/was and third-person
    singular verbs (eats) go with a singular subject, are/were and base
    forms (eat) with a plural one; himself goes with a masculine cue,
    herself with a feminine one.
    """
    if task == "gender":
        classes = {"himself": "m", "herself": "f"}
        if right in classes and wrong == ("herself" if right == "himself" else "himself"):
            return classes[right]
    elif task == "number":
        copulas = {("is", "are"): "sg", ("was", "were"): "sg", ("are", "is"): "pl", ("were", "was"): "pl"}
        if (right, wrong) in copulas:
            return copulas[(right, wrong)]
        if right == third_singular(wrong):
            return "sg"
        if wrong == third_singular(right):
            return "pl"
    raise ValueError(f"cannot tell the class of a {task!r} pair with right form {right!r} and wrong "
                     f"form {wrong!r}: expected is/are, was/were, a verb's 3rd-person singular and "
                     "base forms (eats/eat), or himself/herself")


@dataclass(frozen=True)
class Pair(Agreement):
    """A minimal pair: one agreement of a sentence (:class:`course.grammar.Agreement`: its
    task, cue and target, right and wrong forms, attractors) with the sentence: `words` is
    the right sentence; the wrong one has `wrong` instead of `right` at `target_index`."""

    words: tuple

    @property
    def bucket(self) -> str:
        return distance_bucket(self.distance)

    @property
    def cue_class(self) -> str:
        """ "sg" / "pl" (number) or "m" / "f" (gender): see `pair_class`."""
        return pair_class(self.task, self.right, self.wrong)

    @property
    def right_sentence(self) -> list[str]:
        return list(self.words)

    @property
    def wrong_sentence(self) -> list[str]:
        words = list(self.words)
        words[self.target_index] = self.wrong
        return words


def sample_pairs(grammar, seed: int, per_bucket: int, max_sentences: int = 2_000_000) -> list[Pair]:
    """`per_bucket` pairs for every (task, distance bucket), from fresh sentences,
    half of them of each class (`CLASSES`).

    Sentences are drawn from the grammar with their own random stream. A
    sentence gives at most one pair per (task, bucket), chosen at random among
    its agreements in that bucket, so a bucket holds the grammar's sentences
    conditioned on having an agreement that far apart (the chosen one of the
    pair's class).
    A pair whose class already has its half is dropped. Each bucket lists its
    pairs alternating between the two classes (sg, pl, sg, pl, ...; m, f,
    ...), so every prefix of a bucket is balanced too (within one pair; an odd
    per_bucket gives the first class one more). The choices do not depend on
    how full the buckets are, so the first k pairs of each bucket are the same
    for every per_bucket >= k (a test regenerates a prefix).
    """
    stream = random.Random(f"course-corpus/{seed}/agreement")
    found = {(task, name): {c: [] for c in CLASSES[task]} for task in TASKS for name, _, _ in DISTANCE_BUCKETS}
    quota = {0: (per_bucket + 1) // 2, 1: per_bucket // 2}  # by the class's position in CLASSES
    wanted = {(task, c): quota[i] for task in TASKS for i, c in enumerate(CLASSES[task])}
    low = {name: lo for name, lo, _ in DISTANCE_BUCKETS}
    for number in range(max_sentences):
        open_buckets = [key for key, by_class in found.items()
                        if any(len(pairs) < wanted[key[0], c] for c, pairs in by_class.items())]
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
                pair = Pair(**vars(a), words=tuple(derivation.words))
                pairs = found[key][pair.cue_class]
                if len(pairs) < wanted[a.task, pair.cue_class]:
                    pairs.append(pair)
    else:
        short = {f"{t} {b} {c}": len(p) for (t, b), by_class in found.items()
                 for c, p in by_class.items() if len(p) < wanted[t, c]}
        raise RuntimeError(f"after {max_sentences} sentences some buckets are short of their "
                           f"{per_bucket // 2} pairs per class: {short}; lower per_bucket or raise max_sentences")
    out = []
    for (task, _), by_class in found.items():
        first, second = (by_class[c] for c in CLASSES[task])
        for i in range(len(first)):  # first[0], second[0], first[1], ...
            out.extend([first[i], second[i]] if i < len(second) else [first[i]])
    return out


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
        from course import paths
        raise FileNotFoundError(f"{path} does not exist; " + (paths.NOT_FOUND or
                                "regenerate it with `python -m course data make-corpus`."))
    lines = path.read_text(encoding="utf-8").splitlines()
    if tuple(lines[0].split("\t")) != COLUMNS:
        raise ValueError(f"{path}: the header should be {' '.join(COLUMNS)} (tab-separated)")
    pairs = []
    for number, line in enumerate(lines[1:], start=2):
        row = dict(zip(COLUMNS, line.split("\t")))
        words = tuple(row["sentence"].split())
        pair = Pair(task=row["task"], cue_index=int(row["cue_index"]), target_index=int(row["target_index"]),
                    right=row["right"], wrong=row["wrong"], attractors=int(row["attractors"]), words=words)
        if len(row) != len(COLUMNS) or words[pair.target_index] != pair.right \
                or pair.distance != int(row["distance"]):
            raise ValueError(f"{path} line {number} is inconsistent: {line!r}")
        pairs.append(pair)
    return pairs


def bucket_counts(pairs) -> dict:
    """{task: {"distance": {bucket: n}, "attractors": {bucket: n},
    "distance_classes": {bucket: {class: n}}, "attractor_classes": {bucket: {class: n}}}}."""
    out = {}
    for task in TASKS:
        mine = [(p, p.cue_class) for p in pairs if p.task == task]
        by_distance = {name: [c for p, c in mine if p.bucket == name] for name, _, _ in DISTANCE_BUCKETS}
        by_attractors = {name: [c for p, c in mine if attractor_bucket(p.attractors) == name]
                         for name in ATTRACTOR_BUCKETS}
        out[task] = {
            "distance": {name: len(found) for name, found in by_distance.items()},
            "attractors": {name: len(found) for name, found in by_attractors.items()},
            "distance_classes": {name: {c: found.count(c) for c in CLASSES[task]}
                                 for name, found in by_distance.items()},
            "attractor_classes": {name: {c: found.count(c) for c in CLASSES[task]}
                                  for name, found in by_attractors.items()},
        }
    return out


def agreement_accuracy(model, pairs) -> dict:
    """Accuracy of a scorer on minimal pairs, per task and bucket.

    model: anything with ``sentence_logprobs(sentences) -> np.ndarray``.
    A pair is correct when the right sentence scores higher; a tie (equal
    scores, e.g. a model that ignores the target) counts as half correct, so
    chance level is 0.5. Returns, per task present in `pairs`:
    ``{"all": s, "distance": {"1-5": s, ...}, "attractors": {"0": s, ...}}`` where each
    ``s = {"accuracy": float, "correct": int, "ties": int, "count": int,
    "balanced_accuracy": float, "classes": {class: {"accuracy": float, "count": int}}}``;
    empty buckets and classes are left out.

    ``balanced_accuracy`` is the mean of the per-class accuracies (`pair_class`;
    over the classes present, so with one class it equals ``accuracy``). A
    model that picks the same class whatever the context (always the singular
    verb form, always "himself") scores exactly 0.5 on it when both classes
    are present, however many pairs each has; a unigram model, whose choice
    depends on the verb only, scores about 0.5. On the shipped pairs every
    distance bucket holds as many pairs of each class, so there, and for
    "all", the two numbers are equal; the attractor buckets are not balanced
    (3+ attractors are mostly plural subjects), and there only
    ``balanced_accuracy`` has chance at 0.5.
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
    classes = np.array([p.cue_class for p in pairs])

    def accuracy(mask):
        return (int((better & mask).sum()) + 0.5 * int((ties & mask).sum())) / int(mask.sum())

    def summary(task, mask):
        per_class = {c: {"accuracy": accuracy(mask & (classes == c)), "count": int((mask & (classes == c)).sum())}
                     for c in CLASSES[task] if (mask & (classes == c)).any()}
        return {"accuracy": accuracy(mask), "correct": int((better & mask).sum()),
                "ties": int((ties & mask).sum()), "count": int(mask.sum()),
                "balanced_accuracy": sum(s["accuracy"] for s in per_class.values()) / len(per_class),
                "classes": per_class}

    tasks = np.array([p.task for p in pairs])
    dist = np.array([p.bucket for p in pairs])
    attr = np.array([attractor_bucket(p.attractors) for p in pairs])
    results = {}
    for task in TASKS:
        mine = tasks == task
        if mine.any():
            results[task] = {
                "all": summary(task, mine),
                "distance": {b: summary(task, mine & (dist == b)) for b, _, _ in DISTANCE_BUCKETS
                             if (mine & (dist == b)).any()},
                "attractors": {b: summary(task, mine & (attr == b)) for b in ATTRACTOR_BUCKETS
                               if (mine & (attr == b)).any()},
            }
    return results


def plot_agreement(results, ax=None, label=None, tasks=TASKS):
    """Class-balanced accuracy (y, in [0, 1]) against cue-target distance bucket (x).

    The y value is ``balanced_accuracy`` (see `agreement_accuracy`), so the
    dotted chance line at 0.5 is also where a model that only knows which
    form is more frequent lands; on the shipped pairs, and on any prefix of
    their buckets of even length, it equals ``accuracy``. One call draws one
    model: a solid line for number agreement and a dashed one for gender, in
    the same colour; call again on the same `ax` with another `label` to
    compare models.
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
        ys = [buckets[names[i]]["balanced_accuracy"] for i in xs]
        line, = ax.plot(xs, ys, style, color=colour, label=f"{label}: {task}" if label else task)
        colour = line.get_color()
    ax.axhline(0.5, color="grey", linestyle=":", linewidth=1)
    ax.set_xticks(range(len(names)), names)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("distance from cue to target (tokens)")
    ax.set_ylabel("accuracy (class-balanced)")
    ax.set_title("Agreement accuracy by distance")
    ax.legend(loc="lower left", fontsize=10, frameon=False)   # reading size, as the other panels
    return ax
