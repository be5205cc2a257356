"""The tables and figures of bench/converge.py, from its records as they are now.

Writes bench/results/converge.md (the tables), converge.json (the numbers the
lectures draw from), converge_ppl.png and converge_agreement.png.

Intervals (95%):
* perplexity: over seeds, mean ± t(0.975, n-1) · sd / sqrt(n) (none for one seed);
* agreement: a two-level percentile bootstrap (2,000 resamples): draw the seeds
  with replacement, then the pairs of the bucket with replacement (within each
  class of the pair, so a class-balanced accuracy stays balanced), and take the
  mean over the drawn seeds and pairs. It reflects both the finite set of pairs
  and the spread between seeds; with one seed, the pairs only.

    .venv/bin/python bench/converge_tables.py
"""
from __future__ import annotations

import json
import math
import re
import statistics
import time
from pathlib import Path

import numpy as np

from common import RESULTS, table
from converge import DEPTH, DEPTHS, MODELS, ORDER, PLAN, RECORDS, RESIDUAL_LABELS, SCHEDULE, SEEDS

SUMMARY = RESULTS / "converge.json"
BOOTSTRAP = 2000
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571}    # t(0.975, df)
FAR = "21+"
#: the claims' comparisons: the LSTM against these
MEMORY_CELLS = ["lstm", "lstm-noforget", "gru", "lstm-srnn", "lstm-srnn-out", "lstm-srnn-hidden",
                "ran-identity", "ran-tanh"]
GOAL_FLOOR, GOAL_AGREEMENT = 1.03, 0.95
ORDINAL = {2: "second", 3: "third", 4: "fourth"}
CORE = [n for n in ORDER if n not in DEPTH]


def load_records(records=RECORDS) -> dict:
    """{model: {seed: record}} of every run record present: NAME-sSEED.json, not the other
    files converge_inside.py keeps beside them (arrows.json, weights, gates)."""
    out = {}
    for path in sorted(Path(records).glob("*.json")):
        if not re.fullmatch(r".+-s\d+", path.stem):
            continue
        record = json.loads(path.read_text())
        out.setdefault(record["model"], {})[record["seed"]] = record
    return out


def pair_table(pairs):
    """Per pair: task, distance bucket, attractor bucket, class (arrays)."""
    from course.agreement import attractor_bucket
    return {"task": np.array([p.task for p in pairs]), "distance": np.array([p.bucket for p in pairs]),
            "attractors": np.array([attractor_bucket(p.attractors) for p in pairs]),
            "class": np.array([p.cue_class for p in pairs])}


def outcomes(records) -> np.ndarray:
    """(seeds, pairs): 1 right, 0 wrong, 0.5 tie."""
    value = {"1": 1.0, "0": 0.0, "=": 0.5}
    return np.array([[value[c] for c in r["final"]["pairs"]] for r in records], dtype=np.float32)


def replicates(matrix: np.ndarray, classes: np.ndarray, rng, resamples=BOOTSTRAP, chunk=250) -> np.ndarray:
    """Bootstrap replicates of the class-balanced accuracy of (seeds, items) outcomes:
    seeds drawn with replacement, then items within each class (module docstring)."""
    labels = np.unique(classes)
    out = []
    for start in range(0, resamples, chunk):
        size = min(chunk, resamples - start)
        seeds = rng.integers(0, matrix.shape[0], size=(size, matrix.shape[0]))
        total = np.zeros(size)
        for c in labels:
            index = np.flatnonzero(classes == c)
            items = index[rng.integers(0, len(index), size=(size, len(index)))]
            total += matrix[seeds[:, :, None], items[:, None, :]].mean(axis=(1, 2))
        out.append(total / len(labels))
    return np.concatenate(out)


def balanced(matrix: np.ndarray, classes: np.ndarray) -> float:
    """The mean over classes of the accuracy over seeds and items."""
    return float(np.mean([matrix[:, classes == c].mean() for c in np.unique(classes)]))


def bootstrap(matrix: np.ndarray, classes: np.ndarray, rng):
    """(accuracy, low, high): the class-balanced accuracy and its 95% interval."""
    low, high = np.percentile(replicates(matrix, classes, rng), [2.5, 97.5])
    return balanced(matrix, classes), float(low), float(high)


def mean_interval(values):
    """(mean, low, high) over seeds; low = high = None for one value."""
    values = [v for v in values if v is not None]
    if not values:
        return None, None, None
    mean = statistics.fmean(values)
    if len(values) < 2 or not all(math.isfinite(v) for v in values):
        return mean, None, None
    half = T975[len(values) - 1] * statistics.stdev(values) / math.sqrt(len(values))
    return mean, mean - half, mean + half


def summarise(records: dict, pairs) -> dict:
    """Everything the tables, figures and lectures need, per model."""
    from course.agreement import ATTRACTOR_BUCKETS, DISTANCE_BUCKETS, TASKS
    from course.grammar import floor_perplexity
    floor = {s: floor_perplexity(s) for s in ("valid", "test")}
    info = pair_table(pairs)
    rng = np.random.default_rng(0)
    models = {}
    for name in ORDER:
        runs = records.get(name, {})
        done = [runs[s] for s in sorted(runs) if "final" in runs[s]]
        scored = [r for r in done if len(r["final"]["pairs"]) == len(pairs)]
        entry = {"label": MODELS[name][0], "settings": {**SCHEDULE, **MODELS[name][2]},
                 "params": next((r["params"] for r in runs.values() if "params" in r), None),
                 "seeds_planned": [s for n, s in PLAN if n == name],
                 "seeds_complete": [r["seed"] for r in done],
                 "seeds_running": sorted(s for s, r in runs.items() if "final" not in r),
                 "curves": {str(s): [row["valid_ppl"] for row in r["epochs"]] for s, r in sorted(runs.items())},
                 "train_curves": {str(s): [row["train_ppl"] for row in r["epochs"]] for s, r in sorted(runs.items())},
                 "best_epochs": [r["final"]["best_epoch"] for r in done],
                 "epochs_trained": [len(r["epochs"]) for r in done],
                 "stopped": [r["final"]["stopped"] for r in done],
                 "cpu_hours": [run_cpu(r) / 3600 for r in done], "wall_hours": [run_wall(r) / 3600 for r in done]}
        for split in ("valid", "test"):
            values = [r["final"][f"{split}_ppl"] for r in done]
            entry[f"{split}_ppl"] = dict(zip(("mean", "low", "high"), mean_interval(values)), seeds=values)
            entry[f"{split}_ratio"] = {k: (v / floor[split] if isinstance(v, float) else v)
                                       for k, v in entry[f"{split}_ppl"].items() if k != "seeds"}
        if scored:
            matrix = outcomes(scored)
            entry["agreement"] = {}
            for task in TASKS:
                mine = info["task"] == task
                entry["agreement"][task] = {
                    kind: {b: dict(zip(("balanced_accuracy", "low", "high", "count"),
                                       (*bootstrap(matrix[:, mine & (info[kind] == b)],
                                                   info["class"][mine & (info[kind] == b)], rng),
                                        int((mine & (info[kind] == b)).sum()))))
                           for b in buckets if (mine & (info[kind] == b)).any()}
                    for kind, buckets in (("distance", [b for b, _, _ in DISTANCE_BUCKETS]),
                                          ("attractors", ATTRACTOR_BUCKETS))}
        models[name] = entry
    return {"floor": floor, "settings": SCHEDULE, "seeds": list(SEEDS), "models": models,
            "intervals": __doc__.split("Intervals (95%):")[1].split("\n\n")[0].strip()}


def run_cpu(record) -> float:
    return sum(r["cpu_seconds"] for r in record["epochs"]) + record.get("final", {}).get("cpu_seconds", 0.0)


def run_wall(record) -> float:
    return sum(r["seconds"] for r in record["epochs"]) + record.get("final", {}).get("seconds", 0.0)


def difference(records, a: str, b: str, task: str, bucket: str, pairs, rng) -> tuple | None:
    """Accuracy of model a minus that of model b in one distance bucket, with a 95%
    interval from independent bootstraps of the two; None while either has no run."""
    info = pair_table(pairs)
    mask = (info["task"] == task) & (info["distance"] == bucket)
    classes, mats = info["class"][mask], []
    for name in (a, b):
        done = [r for r in records.get(name, {}).values()
                if "final" in r and len(r["final"]["pairs"]) == len(pairs)]
        if not done:
            return None
        mats.append(outcomes(done)[:, mask])
    low, high = np.percentile(replicates(mats[0], classes, rng) - replicates(mats[1], classes, rng), [2.5, 97.5])
    return balanced(mats[0], classes) - balanced(mats[1], classes), float(low), float(high)


# --------------------------------------------------------------------------- formatting
def _ci(entry, digits=3):
    if entry is None or entry.get("mean", entry.get("balanced_accuracy")) is None:
        return ""
    value = entry.get("mean", entry.get("balanced_accuracy"))
    if not math.isfinite(value):
        return "diverged"
    if entry.get("low") is None:
        return f"{value:.{digits}f}"
    return f"{value:.{digits}f} [{entry['low']:.{digits}f}, {entry['high']:.{digits}f}]"


def _seeds(entry) -> str:
    done = len(entry["seeds_complete"])
    running = f", seed {', '.join(map(str, entry['seeds_running']))} training" if entry["seeds_running"] else ""
    return f"{done} of {len(entry['seeds_planned'])}{running}"


def main_table(summary) -> str:
    rows = []
    for name in CORE:
        e = summary["models"][name]
        far = {t: e.get("agreement", {}).get(t, {}).get("distance", {}).get(FAR) for t in ("number", "gender")}
        rows.append([e["label"], f"{e['params']:,}" if e["params"] else "", _seeds(e),
                     ", ".join(f"{b} of {n}" for b, n in zip(e["best_epochs"], e["epochs_trained"]) if b),
                     _ci(e["valid_ratio"]), _ci(e["test_ppl"], 2), f"**{_ci(e['test_ratio'])}**" if e["test_ratio"]["mean"] else "",
                     _ci(far["number"]), _ci(far["gender"]),
                     f"{statistics.fmean(e['cpu_hours']):.2f}" if e["cpu_hours"] else ""])
    return table(["model", "params", "seeds done", "best epoch, of (per seed)", "valid ppl ÷ floor",
                  "test ppl", "test ppl ÷ floor", f"number agreement, {FAR}", f"reflexives, {FAR}",
                  "CPU hours per run"], rows)


def agreement_table(summary, task: str, kind: str) -> str:
    from course.agreement import ATTRACTOR_BUCKETS, DISTANCE_BUCKETS
    buckets = [b for b, _, _ in DISTANCE_BUCKETS] if kind == "distance" else list(ATTRACTOR_BUCKETS)
    rows, counts = [], None
    for e in (summary["models"][n] for n in CORE):
        found = e.get("agreement", {}).get(task, {}).get(kind)
        if not found:
            continue
        counts = counts or [found.get(b, {}).get("count", 0) for b in buckets]
        rows.append([e["label"], len(e["seeds_complete"])] + [_ci(found.get(b)) for b in buckets])
    if not rows:
        return "(no finished run yet)"
    head = [f"{b} ({n} pairs)" for b, n in zip(buckets, counts)]
    return table(["model", "seeds"] + head, rows)


def depth_table(summary) -> str:
    """Chapter 07: valid (and test) perplexity ÷ floor of each stack, one seed each."""
    rows = []
    for key, label in RESIDUAL_LABELS.items():
        cells = []
        for layers in DEPTHS:
            e = summary["models"][f"depth{layers}-{key}"]
            if e["seeds_complete"]:
                cells.append(f"{e['valid_ratio']['mean']:.3f} / {e['test_ratio']['mean']:.3f} "
                             f"(epoch {e['best_epochs'][0]} of {e['epochs_trained'][0]})")
            else:
                cells.append(f"training, {len(next(iter(e['curves'].values()), []))} epoch(s) done"
                             if e["seeds_running"] else "not run yet")
        rows.append([label] + cells)
    return table(["residual connections"] + [f"{n} layer(s)" for n in DEPTHS], rows)


def goals(summary, records, pairs) -> str:
    models = summary["models"]
    lines = []
    finished = {n: e for n, e in models.items() if e["test_ratio"]["mean"] is not None}
    if finished:
        best = min(finished, key=lambda n: finished[n]["valid_ratio"]["mean"])   # chosen on valid
        ratio = finished[best]["test_ratio"]["mean"]
        lines.append(f"- **Best single course model within {GOAL_FLOOR - 1:.0%} of the floor** (chosen on valid): "
                     f"{models[best]['label']}, test perplexity {ratio:.3f} × the floor "
                     f"({len(finished[best]['seeds_complete'])} seed(s)): "
                     + ("**met**." if ratio <= GOAL_FLOOR else
                        f"**not met** by a single model: {ratio - GOAL_FLOOR:+.3f} above the goal."))
        lines += train_fit(summary, records, best)
        if "lstm" in finished and "lstm-4x" in finished:
            tokens = MODELS["lstm-4x"][2]["train_tokens"]
            lines.append(f"  What more sentences buy: the same LSTM trained on {tokens // 1_000_000} times as many "
                         f"sentences of the grammar ({tokens / 1e6:.1f}M tokens, of which the shipped training split "
                         f"is the first quarter) has "
                         f"test perplexity {finished['lstm-4x']['test_ratio']['mean']:.3f} × the floor against "
                         f"{finished['lstm']['test_ratio']['mean']:.3f} on the shipped split.")
    lines += ensemble_goal(summary, pairs)
    lstm = models["lstm"].get("agreement")
    if lstm:
        number, reflexives = (lstm[t]["distance"][FAR] for t in ("number", "gender"))
        lines.append(f"- **LSTM ≥ {GOAL_AGREEMENT} on number agreement at {FAR} words**: {_ci(number)}: "
                     + ("**met**" if number["balanced_accuracy"] >= GOAL_AGREEMENT else "**not met**")
                     + (" (the interval's lower end too)." if number["low"] >= GOAL_AGREEMENT
                        else " (the point estimate; not the interval's lower end)." if
                        number["balanced_accuracy"] >= GOAL_AGREEMENT else ".")
                     + f" Reflexives at {FAR}, the same measure: {_ci(reflexives)}"
                     + ("." if reflexives["balanced_accuracy"] >= GOAL_AGREEMENT else
                        f", {GOAL_AGREEMENT - reflexives['balanced_accuracy']:.3f} short of it."))
    rng = np.random.default_rng(2)
    number, reflexives = (difference(records, "lstm", "srnn", t, FAR, pairs, rng) for t in ("number", "gender"))
    if number and reflexives:
        lines.append(f"- **The S-RNN's long-distance deficit** (LSTM minus S-RNN at {FAR} words, 95% interval): "
                     f"number agreement {number[0]:+.3f} [{number[1]:+.3f}, {number[2]:+.3f}]: "
                     + ("**shown** (the interval stays above 0)." if number[1] > 0 else "**not shown** (the interval reaches 0).")
                     + f" Reflexives {reflexives[0]:+.3f} [{reflexives[1]:+.3f}, {reflexives[2]:+.3f}]"
                     + (": no deficit there, because neither model is above chance on them (the table by distance)."
                        if reflexives[1] <= 0 else "."))
    return "\n".join(lines) or "(no finished run yet)"


def ensemble_goal(summary, pairs) -> list:
    """The ensemble of bench/converge_ensemble.py against the 3% goal, with its agreement."""
    found = summary.get("ensemble")
    if not found:
        return []
    named = [f"{key} {w:.2f}" for key, w in found["weights"].items() if w >= 0.01]
    rest = len(found["weights"]) - len(named)
    line = (f"- **An ensemble of {len(found['weights'])} finished runs** (bench/converge_ensemble.py, "
            f"{found['finished_at'][:10]}: each word's probability a weighted average over those runs, the "
            f"weights fitted on valid: "
            + ", ".join(named) + (f", {rest} more below 0.01" if rest else "") + f"): test perplexity "
            f"{found['test_ppl']:.2f}, {found['test_ratio']:.3f} × the floor: "
            + ("**within 3%**: the goal is met, by an ensemble." if found["test_ratio"] <= GOAL_FLOOR else
               f"**not within 3%** ({found['test_ratio'] - GOAL_FLOOR:+.3f}); the best single run by valid, "
               f"{found['best_single'][0]}, has test {found['best_single'][2]:.2f}."))
    if len(found["pairs"]) == len(pairs):
        info = pair_table(pairs)
        mask = (info["task"] == "number") & (info["distance"] == FAR)
        accuracy, low, high = bootstrap(outcomes([{"final": found}])[:, mask], info["class"][mask],
                                        np.random.default_rng(3))
        line += f" Its number agreement at {FAR} words: {accuracy:.3f} [{low:.3f}, {high:.3f}]."
    return [line]


def train_fit(summary, records, best) -> list:
    """What limits the best model, from RECORDS/train_fit.json (bench/converge_inside.py):
    its best epoch's perplexity on the sentences it was trained on against valid."""
    fits = {n: fit for n, fit in summary["train_fit"].items()
            if "final" in records.get(n, {}).get(fit["seed"], {})}
    if best not in fits:
        return []
    fit, valid = fits[best], records[best][fits[best]["seed"]]["final"]["valid_ppl"]
    floor = fit["train_floor"]
    seen = ("the shipped training split (the first quarter of its training sentences)"
            if MODELS[best][2].get("train_tokens") else "its training sentences")
    lines = [f"  What limits it: the same model (seed {fit['seed']}, its best epoch, no dropout when scored) "
             f"has perplexity {fit['train_ppl']:.2f} on {seen}, {fit['train_ppl'] / floor:.3f} × "
             f"their floor ({floor:.2f}), against {valid:.2f} on valid, {valid / summary['floor']['valid']:.3f} × "
             "its floor: " + ("below the grammar's own perplexity on the sentences it was trained on and above "
                              "it on new ones. It has fitted the training split, not only the grammar; the size of "
                              "the training split, not the model's capacity, sets the gap (the dropout rows measure "
                              "how much regularisation narrows it)." if fit["train_ppl"] < floor else
                              "it does not fit even its training sentences down to the floor: capacity or "
                              "training, not only the data, limit it.")]
    others = [n for n in ORDER if n in fits and n != best]
    if others:
        lines.append("  Training split / valid perplexity of the other finished models (seed 1, best epoch): "
                     + "; ".join(f"{MODELS[n][0]} {fits[n]['train_ppl']:.2f} / "
                                 f"{records[n][fits[n]['seed']]['final']['valid_ppl']:.2f}" for n in others) + ".")
    return lines


def claims(summary, records, pairs) -> str:
    """The papers' claims, each with its criterion stated, judged on the finished runs."""
    models = summary["models"]
    lstm = models["lstm"]["test_ppl"]["mean"]
    if lstm is None:
        return "(the LSTM has no finished run yet)"
    rng = np.random.default_rng(3)

    def rel(name):
        value = models[name]["test_ppl"]["mean"]
        return None if value is None else value / lstm - 1

    def far_gap(name):
        out = []
        for task, word in (("number", "number"), ("gender", "reflexives")):
            d = difference(records, name, "lstm", task, FAR, pairs, rng)
            if d:
                out.append(f"{word} at {FAR} {d[0]:+.3f} [{d[1]:+.3f}, {d[2]:+.3f}]")
        return "; ".join(out)

    def line(name, criterion, holds):
        r = rel(name)
        if r is None:
            return f"- {models[name]['label']}: not finished yet."
        verdict = "**holds**" if holds(r) else "**does not hold**"
        return (f"- {models[name]['label']}: test perplexity {r:+.1%} against the LSTM's; agreement against "
                f"the LSTM's: {far_gap(name)}. {criterion}: {verdict}.")

    out = ["Every comparison is with the LSTM of the same size and schedule (test perplexity "
           f"{lstm:.2f}, the mean of its finished seeds); agreement differences are accuracy minus the "
           "LSTM's, with 95% bootstrap intervals.", "",
           "**[WS], [WS2]: every model with a memory cell is far ahead of the S-RNN** (their PTB tables: "
           "the S-RNN +60% to +68%).",
           line("srnn", "Criterion: the S-RNN more than 5% above the LSTM, or behind it on agreement at "
                f"{FAR} with an interval below 0", lambda r: r > 0.05 or _behind(records, "srnn", pairs, rng)),
           "", "**[WS], [WS2]: taking the S-RNN out of the LSTM changes little** (their PTB tables: "
           "-4% to +5%; – HIDDEN costs a little).",
           *[line(n, "Criterion: within ±2% of the LSTM's perplexity", lambda r: abs(r) <= 0.02)
             for n in ("lstm-srnn", "lstm-srnn-out", "lstm-srnn-hidden")],
           "", "**[RAN]: the RANs as good as the LSTM or better** (its PTB table: -17% identity, -23% tanh).",
           *[line(n, "Criterion: at most 1% above the LSTM's perplexity", lambda r: r <= 0.01)
             for n in ("ran-identity", "ran-tanh")],
           "", "**[RAN] Table 1 and [T] section 6.4: the GRU as good as the LSTM** (PTB: -7%).",
           line("gru", "Criterion: at most 1% above the LSTM's perplexity", lambda r: r <= 0.01),
           "", "**[T] section 6.4 and the Odyssey paper: the forget gate, and a forget bias of 1, help.**",
           line("lstm-noforget", "Criterion for the forget gate helping: the LSTM without it more than 1% "
                "above", lambda r: r > 0.01),
           line("lstm-fb0", "Criterion for the forget bias of 1 helping: the LSTM started at forget bias 0 "
                "more than 1% above", lambda r: r > 0.01)]
    return "\n".join(out)


def _behind(records, name, pairs, rng) -> bool:
    d = difference(records, name, "lstm", "number", FAR, pairs, rng)
    return bool(d and d[2] < 0)


def times(records: dict) -> str:
    done = [r for runs in records.values() for r in runs.values()]
    if not done:
        return ""
    cpu, wall = sum(map(run_cpu, done)), sum(map(run_wall, done))
    stamps = [row["finished_at"] for r in done for row in r["epochs"]] + \
        [r["final"]["finished_at"] for r in done if "final" in r]
    first = min(done, key=lambda r: r["epochs"][0]["finished_at"] if r["epochs"] else "9")
    start = time.mktime(time.strptime(first["epochs"][0]["finished_at"], "%Y-%m-%d %H:%M:%S")) - \
        first["epochs"][0]["seconds"]
    end = time.mktime(time.strptime(max(stamps), "%Y-%m-%d %H:%M:%S"))
    complete = sum("final" in r for r in done)
    return (f"{complete} runs finished and {len(done) - complete} under way; together they have used "
            f"{cpu / 3600:.1f} CPU hours and {wall / 3600:.1f} hours of wall time (one core each; the "
            f"machine's 2 cores were shared with other work). From the first epoch's start to the last "
            f"record: {(end - start) / 3600:.1f} hours ({time.strftime('%Y-%m-%d %H:%M', time.gmtime(start))} "
            f"to {time.strftime('%Y-%m-%d %H:%M', time.gmtime(end))} UTC).")


# --------------------------------------------------------------------------- figures
PANELS = {"cells": ["srnn", "lstm", "lstm-noforget", "lstm-fb0", "gru", "lstm-dropout", "lstm-large", "lstm-4x",
                    "builder-srnn", "builder-lstm", "builder-gru"],
          "ablations": ["srnn", "lstm", "lstm-srnn", "lstm-srnn-out", "lstm-srnn-hidden",
                        "ran-identity", "ran-tanh", "attn", "lstm-attn"]}
TITLES = {"cells": "the chapters' cells (DyNet's builders dashed)",
          "ablations": "the ablations and RANs (08), attention (11)"}


def _style(name):
    import matplotlib
    colours = matplotlib.colormaps["tab10"].colors
    base = name.removeprefix("builder-")
    index = ["srnn", "lstm", "lstm-noforget", "lstm-fb0", "gru", "lstm-large", "lstm-srnn", "lstm-srnn-out",
             "lstm-srnn-hidden", "ran-identity", "ran-tanh", "lstm-dropout", "lstm-4x", "attn",
             "lstm-attn"].index(base)
    # past tab10: ran-tanh and chapter 11's attention (with the ablations), the dropout LSTM and the
    # 4x LSTM (with the chapters' cells, where tab10's brown and green are the large LSTM and the LSTM
    # without forget gate)
    colour = colours[index % 10] if index < 10 else ("black", "deeppink", "black", "saddlebrown",
                                                     "forestgreen")[index - 10]
    return {"color": colour, "ls": "--" if name.startswith("builder-") else "-"}


def plot_perplexity(summary, path: Path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from course import plots
    plots.use_style()
    floor = summary["floor"]["valid"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.4), sharey=True)
    top = 1.0
    for ax, (panel, names) in zip(axes, PANELS.items()):
        for name in names:
            e = summary["models"][name]
            for k, curve in enumerate(e["curves"].values()):
                ys = [v / floor if math.isfinite(v) else math.nan for v in curve]
                top = max([top] + [y for y in ys[1:] if math.isfinite(y)])
                ax.plot(range(1, len(ys) + 1), ys, marker="o", ms=2.5, lw=1.2,
                        label=e["label"] if k == 0 else None, **_style(name))
        ax.axhline(1.0, color="black", lw=1)
        ax.axhline(GOAL_FLOOR, color="grey", ls=":", lw=1)
        ax.annotate(f"floor ({floor:.2f})", (1, 1.0), xytext=(2, -10), textcoords="offset points", fontsize=8)
        ax.annotate(f"goal: {GOAL_FLOOR:.2f} × floor", (1, GOAL_FLOOR), xytext=(2, 3), textcoords="offset points",
                    fontsize=8, color="grey")
        ax.set_xlabel("epoch")
        ax.set_title(TITLES[panel][0].upper() + TITLES[panel][1:])
        ax.legend(frameon=False, fontsize=7, loc="upper right")
    axes[0].set_ylabel("valid perplexity ÷ floor (one line per seed)")
    axes[0].set_ylim(0.98, min(top, 1.6) + 0.02)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_agreement(summary, path: Path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from course import plots
    from course.agreement import DISTANCE_BUCKETS
    plots.use_style()
    buckets = [b for b, _, _ in DISTANCE_BUCKETS]
    fig, axes = plt.subplots(2, 2, figsize=(15, 7.5), sharex=True, sharey=True)
    for row, (panel, names) in enumerate(PANELS.items()):
        for col, (task, title) in enumerate((("number", "number agreement (verbs)"), ("gender", "reflexives"))):
            ax = axes[row, col]
            drawn = [n for n in names if "agreement" in summary["models"][n]]
            for k, name in enumerate(drawn):
                found = summary["models"][name]["agreement"][task]["distance"]
                xs = np.arange(len(buckets)) + (k - (len(drawn) - 1) / 2) * 0.06
                ys = np.array([found[b]["balanced_accuracy"] for b in buckets])
                err = np.array([ys - [found[b]["low"] for b in buckets], [found[b]["high"] for b in buckets] - ys])
                ax.errorbar(xs, ys, yerr=err, marker="o", ms=3, lw=1.2, capsize=2,
                            label=summary["models"][name]["label"], **_style(name))
            ax.axhline(0.5, color="grey", ls=":", lw=1)
            ax.axhline(GOAL_AGREEMENT, color="grey", ls="--", lw=0.8)
            ax.set_xticks(range(len(buckets)), buckets)
            ax.set_ylim(0.4, 1.01)
            ax.set_title(f"{title}: {TITLES[panel]}", fontsize=10)
            if row == 1:
                ax.set_xlabel("distance from cue to target (tokens)")
            if col == 0:
                ax.set_ylabel("class-balanced accuracy (bars: 95% interval)")
            if col == 1:           # the labels and the legend outside the panels, clear of the curves
                for y, text in ((0.5, "chance"), (GOAL_AGREEMENT, f"goal {GOAL_AGREEMENT}")):
                    ax.text(1.01, y, text, transform=ax.get_yaxis_transform(), fontsize=8, color="grey",
                            va="center")
                ax.legend(frameon=False, fontsize=8, loc="center left", bbox_to_anchor=(1.12, 0.5))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write(records_dir=RECORDS, out=RESULTS, quiet=False) -> dict:
    from common import machines_of, report
    from course.agreement import load_pairs
    pairs = load_pairs()
    records = load_records(records_dir)
    summary = summarise(records, pairs)
    fits = Path(records_dir) / "train_fit.json"          # bench/converge_inside.py
    summary["train_fit"] = json.loads(fits.read_text()) if fits.exists() else {}
    found = Path(records_dir) / "ensemble.json"          # bench/converge_ensemble.py
    summary["ensemble"] = json.loads(found.read_text()) if found.exists() else None
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / SUMMARY.name).write_text(json.dumps(summary, indent=1, allow_nan=True) + "\n")
    plot_perplexity(summary, out / "converge_ppl.png")
    if any("agreement" in e for e in summary["models"].values()):
        plot_agreement(summary, out / "converge_agreement.png")
    floor = summary["floor"]
    settings = ", ".join(f"{k} {v}" for k, v in SCHEDULE.items())
    body = "\n\n".join([
        f"The course corpus (1,000,026 training tokens; the grammar's floor: valid {floor['valid']:.2f}, test "
        f"{floor['test']:.2f}), every cell of the ablation table trained until the valid perplexity stops "
        f"improving: {settings}. The learning rate is halved after every epoch that does not lower the valid "
        f"perplexity by {SCHEDULE['min_improvement']:.1%}; the run stops at the "
        f"{ORDINAL.get(SCHEDULE['stop_at_bad_epoch'], str(SCHEDULE['stop_at_bad_epoch']) + 'th')} such epoch, and its best epoch on valid is the model reported. The test split is read once, at the "
        "end. Embed 128, hidden 256, one layer, no dropout, unless the name says otherwise. "
        "Agreement: the 5,000 minimal pairs of data/course/agreement.tsv (500 per task and distance bucket, "
        "half of each class); accuracy is class-balanced (chance 0.5).",
        f"Intervals (95%):\n\n{summary['intervals']}",
        "## Results\n\n" + main_table(summary),
        "## The goals\n\n" + goals(summary, records, pairs),
        "## The papers' claims on this corpus\n\n" + claims(summary, records, pairs),
        "## Valid perplexity after each epoch\n\n![valid perplexity ÷ floor after each epoch](converge_ppl.png)",
        "## Agreement against distance\n\n![agreement against distance](converge_agreement.png)\n\n"
        "### Number agreement (verbs), by distance\n\n" + agreement_table(summary, "number", "distance")
        + "\n\n### Reflexives, by distance\n\n" + agreement_table(summary, "gender", "distance")
        + "\n\n### Number agreement, by attractors (nouns of the other number between cue and verb)\n\n"
        + agreement_table(summary, "number", "attractors")
        + "\n\n### Reflexives, by attractors (words of the other gender between cue and reflexive)\n\n"
        + agreement_table(summary, "gender", "attractors")
        + "\n\nThe attractor buckets are not balanced by class (3+ attractors are mostly plural subjects); the "
          "accuracy there is the mean of the two classes' accuracies, so chance is 0.5 too.",
        "## Chapter 07: depth and residual connections\n\nStacks of LSTM layers (embed = hidden = 128; the "
        "course's hand-written LSTM cell, whose state a lateral residual may rewrite), one seed each, at most "
        f"{MODELS[DEPTH[0]][2]['max_epochs']} epochs. Valid / test perplexity ÷ floor of the best epoch on "
        "valid:\n\n" + depth_table(summary),
        "## Run time\n\n" + times(records)])
    if quiet:
        (out / "converge.md").write_text(body + "\n")
    else:
        report("converge", "The course corpus: every cell trained to convergence", body,
               "python bench/converge.py` (resumable), `python bench/converge.py --tables-only",
               machines=machines_of(r for runs in records.values() for r in runs.values()))
    return summary


if __name__ == "__main__":
    write()
