"""What the benchmarks measured, as the lectures read it.

``bench/results/`` holds the committed results of the ``bench/`` scripts (rerun them to
measure again). This module reads them and prints their tables, so that a lecture cell
shows the idea and the numbers, not the JSON:

* :func:`read` any result file, :func:`converged` the converged models of bench/converge.py;
* :func:`load_weights` a converged LSTM or GRU's embeddings and recurrent weights in a
  DyNet builder, :func:`builder_parameters` a builder's parameters by name;
* tables: :func:`table` (markdown), :func:`test_table`, :func:`ablation_table`, :func:`arrows_table`,
  :func:`far_agreement_table`, :func:`samples_table`; :func:`section` of a bench/results page.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from . import paths

RESULTS = paths.ROOT / "bench" / "results"

#: the parameters of one layer of DyNet's builders, in the order ``builder.get_parameters()[0]``
#: lists them (LSTM: the blocks i, f, o, u stacked in W_x, W_h and b)
BUILDER_PARAMETERS = {"lstm": ("W_x", "W_h", "b"),
                      "gru": ("W_xz", "W_hz", "b_z", "W_xr", "W_hr", "b_r", "W_xh", "W_hh", "b_h")}


def read(name: str):
    """bench/results/NAME.json (NAME may name a file in a folder there: "converge/arrows")."""
    path = RESULTS / f"{name}.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: run the bench/ script that writes it (its docstring "
                                "names the file), or restore the committed one (git checkout -- bench/results).")
    return json.loads(path.read_text())


def converged() -> dict:
    """bench/results/converge.json: every model of bench/converge.py trained to convergence
    ("models" by name: label, settings, seeds, curves, valid/test perplexity and intervals,
    agreement by distance; "floor": the grammar's valid and test perplexity)."""
    return read("converge")


def builder_parameters(model, layer: int = 0) -> dict:
    """{name: NumPy array} of one layer of a builder model (``lm.RNNLM(vocab, "lstm" | "gru")``),
    named as in :data:`BUILDER_PARAMETERS`."""
    kind = model.config.cell
    if kind not in BUILDER_PARAMETERS:
        raise ValueError(f"the model's cell is {kind!r}: only DyNet's {sorted(BUILDER_PARAMETERS)} builders "
                         "have named parameters here")
    values = model.layers[layer].builder.get_parameters()[0]
    return {name: p.as_array() for name, p in zip(BUILDER_PARAMETERS[kind], values)}


def load_weights(vocab, name: str, seed: int = 1, folder=None):
    """A one-layer builder language model with the embeddings and recurrent weights of seed SEED
    of the converged run NAME of bench/converge.py (FOLDER/NAME-sSEED-weights.npz, FOLDER by
    default bench/results/converge/, written by bench/converge_inside.py). Its softmax layer is not stored, so it cannot predict:
    it is for looking at gates. An LSTM's b holds its f block net of the builder's own forget
    bias of 1 (the builder adds it inside the forget gate)."""
    from . import lm
    path = Path(folder or RESULTS / "converge") / f"{name}-s{seed}-weights.npz"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: run bench/converge.py --models {name} --seeds {seed}, "
                                "then bench/converge_inside.py")
    weights = np.load(path)
    if len(vocab) != weights["M"].shape[0]:
        raise ValueError(f"{path.name} was trained with a vocabulary of {weights['M'].shape[0]} words, not "
                         f"{len(vocab)}: pass the course corpus's, data.Vocab.build(read_corpus('course', 'train'))")
    kind = str(weights["builder"])
    order = BUILDER_PARAMETERS[kind]
    model = lm.RNNLM(vocab, kind, embed=weights["M"].shape[1], hidden=weights[order[1]].shape[1])
    model.embeddings.init_from_array(weights["M"].astype(np.float32))
    for parameter, key in zip(model.layers[0].builder.get_parameters()[0], order):
        parameter.set_value(weights[key].astype(np.float32))
    return model


def table(header, rows) -> str:
    """A markdown table: a header and rows of cells (any values, shown with str). A ``|`` inside
    a cell ("KL(p || q)") is escaped: unescaped, it splits the cell and the page shows raw text."""
    def cells(values):
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in values) + " |"
    lines = [cells(header), "|" + "---|" * len(header)]
    lines += [cells(row) for row in rows]
    return "\n".join(lines)


def read_table(name: str, column: str = "") -> list[dict]:
    """The first table of bench/results/NAME.md (the first with a column COLUMN, if given) as
    rows of {header: cell text}, for a page that has no JSON beside it (a lecture's claim reads
    the numbers the bench printed)."""
    path = RESULTS / f"{name}.md"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: run bench/{name}.py, or restore the committed one "
                                "(git checkout -- bench/results).")

    def cells(line):                      # a "\|" inside a cell is a "|" (see table())
        return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip()[1:-1])]

    blocks = [[line for line in block.splitlines() if line.startswith("|")]
              for block in path.read_text().split("\n\n")]
    for rows in blocks:
        if len(rows) >= 2 and set(rows[1]) <= set("|-: ") and (not column or column in cells(rows[0])):
            return [dict(zip(cells(rows[0]), cells(line))) for line in rows[2:]]
    raise ValueError(f"bench/results/{name}.md has no table" + (f" with a column {column!r}" if column else "")
                     + f": rerun bench/{name}.py")


def test_table(runs: dict, floor_test: float) -> str:
    """{label: a model of converged()["models"]} as a table: parameters, seeds, test perplexity
    with its 95% interval over the seeds, and its ratio to the test floor."""
    lines = [f"{'model':40} {'parameters':>10} {'seeds':>5}   test perplexity (95% interval)   / floor"]
    for label, run in runs.items():
        ppl = run["test_ppl"]
        interval = f"[{ppl['low']:.2f}, {ppl['high']:.2f}]" if ppl["low"] is not None else "(one seed)"
        lines.append(f"{label:40} {run['params']:>10,} {len(run['seeds_complete']):>5}   {ppl['mean']:6.2f} "
                     f"{interval:>17}   {ppl['mean'] / floor_test:.3f}")
    return "\n".join(lines)


def ablation_table(results: dict) -> str:
    """Every finished model of converged() (and its ensemble, when there is one), best first:
    seeds, CPU hours a run, test perplexity / floor with its 95% interval over the seeds."""
    finished = {run["label"]: run for run in results["models"].values() if run["test_ratio"]["mean"] is not None}
    width = max([44] + [len(label) for label in finished])          # the longest label sets the column
    lines = [f"{'model':{width}} {'seeds':>5} {'CPU hours a run':>15}   test perplexity ÷ floor (95% interval)"]
    for label, run in sorted(finished.items(), key=lambda item: item[1]["test_ratio"]["mean"]):
        ratio = run["test_ratio"]
        interval = f"[{ratio['low']:.3f}, {ratio['high']:.3f}]" if ratio["low"] is not None else ""
        hours = np.mean(run["cpu_hours"]) if run["cpu_hours"] else 0.0
        lines.append(f"{label:{width}} {len(run['seeds_complete']):>5} {hours:15.2f}   {ratio['mean']:.3f} {interval}")
    ensemble = results.get("ensemble")          # bench/converge_ensemble.py
    if ensemble:
        heaviest = ", ".join(f"{run} {weight:.2f}" for run, weight in list(ensemble["weights"].items())[:3])
        lines.append(f"{'ensemble of ' + str(len(ensemble['weights'])) + ' runs of the models above':{width}} {'':>5} "
                     f"{'':>15}   {ensemble['test_ratio']:.3f}")
        lines.append(f"    its largest weights, fitted on valid: {heaviest}")
    return "\n".join(lines)


def arrows_table(results: dict) -> str:
    """bench/results/converge/arrows.json as a table: for each model, how often the most
    influential previous word of the state that predicts the verb is the agreement cue, by
    [RAN] eq 8, by the L2 norm of w_j^t and by the strongest push; labels from ``results``
    (converged())."""
    found = read("converge/arrows")
    lines = [f"{'':30} {'':>5}   {'the arrow lands on the cue':66}{'on the word before':>18}   on the cue",
             f"{'model':30} {'pairs':>5}   {'eq 8':22}{'L2 norm':22}{'strongest push':22}{'eq 8':>9}{'push':>9}   by chance"]
    for name, counts in found.items():
        shares = "".join(f"{counts[s]['cue_share']:.1%} [{counts[s]['low']:.1%}, {counts[s]['high']:.1%}]".ljust(22)
                         for s in ("max", "l2", "readout"))
        lines.append(f"{results['models'][name]['label']:30} {counts['pairs']:>5}   {shares}"
                     f"{counts['max']['previous_share']:9.1%}{counts['readout']['previous_share']:9.1%}   "
                     f"{counts['chance']:9.1%}")
    return "\n".join(lines)


def interval(entry: dict, digits: int = 3) -> str:
    """'1.104 [1.093, 1.115]': a mean (or class-balanced accuracy) and its 95% interval when it has one."""
    value = entry.get("mean", entry.get("balanced_accuracy"))
    if value is None:
        return "not finished"
    return f"{value:.{digits}f}" + (f" [{entry['low']:.{digits}f}, {entry['high']:.{digits}f}]"
                                    if entry.get("low") is not None else "")


def far_agreement_table(results: dict, names) -> str:
    """A markdown table of the models NAMES of ``results`` (converged()): seeds, test perplexity
    / floor, and class-balanced agreement accuracy at 21+ words (number, reflexives)."""
    rows = []
    for name in names:
        run = results["models"][name]
        far = {t: run.get("agreement", {}).get(t, {}).get("distance", {}).get("21+", {}) for t in ("number", "gender")}
        rows.append(f"| {run['label']} | {len(run['seeds_complete'])} | {interval(run['test_ratio'])} | "
                    f"{interval(far['number']) if far['number'] else ''} | "
                    f"{interval(far['gender']) if far['gender'] else ''} |")
    return ("| model | seeds | test perplexity ÷ floor | number agreement, 21+ words | reflexives, 21+ words |\n"
            "|---|---|---|---|---|\n" + "\n".join(rows))


def section(name: str, heading: str) -> str:
    """The text of the section HEADING (a '## ' heading) of bench/results/NAME.md."""
    page = (RESULTS / f"{name}.md").read_text()
    marker = f"## {heading}"
    if marker not in page:
        raise ValueError(f"bench/results/{name}.md has no section {marker!r}: rerun the bench script that writes it")
    return page.split(marker)[1].split("\n## ")[0]


def samples_table(records: list) -> str:
    """bench/results/samples.json (bench/samples.py: sentences written by converged models) as a
    table: for each model and temperature, its best epoch, test perplexity, the share of its
    sentences the grammar derives and the agreement kept at long subject-verb distances, by task
    (number: subject and verb; reflexive: subject and himself/herself) where the records count
    them apart, with 95% intervals."""
    split = all("long number" in r["agreement"] for r in records)   # records before the split pool the tasks
    kinds = [("long number", "number"), ("long gender", "reflexive")] if split else [("long", "")]
    lines = [f"{'model':24} {'epoch':>7} {'test ppl':>8} {'temp':>5} {'derivable':>9}   "
             + "   ".join(f"{(what + ' ') if what else ''}kept at long distance (95%)".ljust(34)
                        for _, what in kinds).rstrip()]
    for r in records:
        shown = []
        for key, _ in kinds:
            a = r["agreement"][key]
            shown.append((f"{a['kept']:4} of {a['kept'] + a['lost']:4} = {a['share']:.0%} "
                          f"[{a['interval'][0]:.0%}, {a['interval'][1]:.0%}]" if a["kept"] + a["lost"]
                          else "none found").ljust(34))
        lines.append(f"{r['label']:24} {r['best_epoch']:>2} of {r['epochs']:<2} {r['test_ppl']:8.2f} "
                     f"{r['temperature']:5.1f} {r['derivable_share']:9.0%}   " + "   ".join(shown).rstrip())
    return "\n".join(lines)
