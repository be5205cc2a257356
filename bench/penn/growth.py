"""Why the RANs fail under Zaremba's budget: how large each layer's memory cell grows along
the valid stream (state_growth, measure_growth) and the table that says so (growth_table)."""
from __future__ import annotations

import math
from pathlib import Path

from common import table
from penn.models import MODELS, build_model, config_of
from penn.training import WORK, train_model

from course.evaluation import stream_perplexity
from course.sources import stream_ids

# Why the RANs fail under this budget. RAN (tanh) and LSTM - S-RNN - OUT compute the same
# memory cell (c_t = i_t * W_xu x_t + f_t * c_{t-1}, h_t = tanh(c_t); the RAN adds a bias to
# W_xu x_t) and differ in what the gates read: tanh(c_{t-1}) in the ablation, c_{t-1} itself
# in the RAN ([RAN] section 4.3). Zaremba's budget carries the state through a whole epoch
# (46,479 steps per column) and evaluates each split as one stream, so a cell that nothing
# bounds can grow for tens of thousands of steps. This measures how large each layer's
# memory cell gets.
GROWTH_MODELS = ("lstm", "lstm-srnn-out", "ran-tanh", "ran-tanh-lr0.5", "ran-identity-lr0.5")
GROWTH_EPOCHS = 1          # every model trained this far in its own folder, then measured
GROWTH_MARKS = (100, 1_000, 10_000)   # tokens read; the end of the split is added


def state_growth(model, ids, marks=GROWTH_MARKS) -> dict:
    """The perplexity of ``ids`` read as one stream and the largest |value| in each layer's
    memory cell (the last vector of its state: c for the LSTM family and the RANs) once the
    first ``mark`` tokens are read, for each mark and at the end."""
    import numpy as np
    largest = {}

    def note(count, carried):
        values = [float(np.abs(layer[-1]).max()) for layer in carried]
        for mark in marks:
            if mark not in largest and count >= mark:
                largest[mark] = values
        largest["end"] = values

    ppl = stream_perplexity(model, ids, after_segment=note)
    return {"ppl": ppl, "tokens": len(ids) - 1, "max_abs_cell": {str(k): v for k, v in largest.items()}}


def measure_growth(names, vocab, splits, epochs=GROWTH_EPOCHS, work=WORK / "growth", log=print) -> dict:
    """Train each model ``epochs`` epochs in ``work`` (kept apart from the results; the same
    seed and schedule as the main runs) and measure its memory cell on the valid stream."""
    result = {"epochs": epochs, "split": "valid", "models": {}}
    for name in names:
        config = config_of(name)
        model = build_model(name, vocab, config)
        record = train_model(name, vocab, splits, epochs, config, runs=work, work=work, log=log)
        model.restore(Path(work) / name / "resume")         # the last epoch's parameters (course.runs.Run)
        result["models"][name] = state_growth(model, stream_ids(splits["valid"], vocab))
        log(f"{name}: valid {record['epochs'][-1]['valid_ppl']:.1f}, "
            f"largest |c| {result['models'][name]['max_abs_cell']['end']}")
    return result


# cell -> (what its gates read of the previous state, its output h_t)
WIRING = {"hand-lstm": ("h = o * tanh(c)", "o * tanh(c)"), "lstm-srnn-out": ("h = tanh(c)", "tanh(c)"),
          "ran-tanh": ("c itself", "tanh(c)"), "ran-identity": ("c itself", "c itself")}


def growth_table(result: dict, records=None) -> str:
    """The growth measurement as a table and what it shows; ``records`` (the runs) add what
    became of a RAN (identity) run later on."""
    models = result["models"]
    wiring = {name: WIRING[MODELS[name][0]] for name in models}
    marks = sorted(next(iter(models.values()))["max_abs_cell"], key=lambda m: math.inf if m == "end" else int(m))
    heading = [f"after {int(m):,} tokens" if m != "end" else "at the end" for m in marks]
    rows = [[MODELS[name][1], *wiring[name], f"{m['ppl']:,.1f}"]
            + [" / ".join(f"{v:,.1f}" for v in m["max_abs_cell"][mark]) for mark in marks]
            for name, m in models.items()]
    tokens = next(iter(models.values()))["tokens"]
    epochs = result["epochs"]
    text = (f"Each model trained {epochs} epoch{'s' * (epochs != 1)} under its budget (the same seed and "
            f"schedule as its run above), then the {result['split']} split ({tokens:,} tokens) read as one "
            "stream, as in the evaluation. The largest |value| in each layer's memory cell c "
            "(layer 1 / layer 2) as the stream goes on:\n\n"
            + table(["model", "its gates read the previous", "its output h", f"{result['split']} ppl"]
                    + heading, rows))
    largest = {name: max(max(v) for v in m["max_abs_cell"].values()) for name, m in models.items()}
    squashed = [n for n in models if wiring[n][0] != "c itself"]
    ran_tanh = [n for n in models if wiring[n] == ("c itself", "tanh(c)")]
    ran_identity = [n for n in models if wiring[n] == ("c itself", "c itself")]
    if squashed and ran_tanh:
        growing = all(max(models[n]["max_abs_cell"][a]) < max(models[n]["max_abs_cell"][b])
                      for n in ran_tanh for a, b in zip(marks, marks[1:]))
        text += ("\n\nRAN (tanh) and LSTM - S-RNN - OUT compute the same memory cell "
                 "(c_t = i_t * W x_t + f_t * c_{t-1}, h_t = tanh(c_t); the RAN adds a bias to W x_t); "
                 "they differ in what their gates read. At the points measured, the cells whose gates "
                 f"read a squashed value reach at most {max(largest[n] for n in squashed):,.1f}; the RAN "
                 f"(tanh)'s reach {min(largest[n] for n in ran_tanh):,.0f} or more"
                 + (", growing at every mark along the stream" if growing else "") + ". A likely reading: "
                 "its output tanh(c) saturates, so once c is large the loss no longer sees how large, "
                 "while the gates, which read c itself, keep feeding it.")
        if ran_identity:
            text += (" The RAN (identity) has the same gates but outputs c itself, so the softmax sees "
                     f"every unit of it: its cell reaches at most {max(largest[n] for n in ran_identity):,.1f}.")
            for name in ran_identity:
                rows_ = (records or {}).get(name, {}).get("epochs", [])
                gone = {split: next((r["epoch"] for r in rows_ if not math.isfinite(r[f"{split}_ppl"])), None)
                        for split in ("test", "valid")}
                if gone["test"]:
                    text += (f" That holds only while training keeps it so: the same run ({MODELS[name][1]}) "
                             f"reached an infinite perplexity on the test stream after epoch {gone['test']}"
                             + (f" and on the valid stream after epoch {gone['valid']}" if gone["valid"] else "")
                             + "; nothing in the cell itself bounds it.")
        text += (" Zaremba's budget carries the state through 46,479 steps per column and epoch and reads "
                 "each evaluation split as one stream; the RAN paper's batch of 512 would cut PTB's training "
                 "stream into columns of 1,815 steps.")
    return text
