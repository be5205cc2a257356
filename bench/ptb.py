"""Penn Treebank: the course's models beside the papers' published tables (issue 9).

Every model trains with the budget of Zaremba et al. (2014), "Recurrent Neural
Network Regularization", the non-regularised "small" configuration (their
Table 1: valid 120.7, test 114.5):

* 2 layers of 200 units, embeddings of 200, untied softmax over the 10k words;
* the training text read as one stream: the sentences joined, each followed by
  ``</s>``, the stream cut into 20 columns, and trained in segments of 20 steps
  (truncated backpropagation through time) whose final state starts the next
  segment (it is reset at the start of each epoch, as theirs is). 20 steps, not
  the 35 of their medium and large configurations: the small configuration's
  ``seq_length``/``num_steps`` is 20 in both of their published programs (the
  authors' Torch ``main.lua``, "Trains 1h and gives test 115 perplexity", and
  TensorFlow's PTB tutorial ``SmallConfig``);
* SGD, learning rate 1 for 4 epochs, then halved after every epoch, 13 epochs
  (the TensorFlow tutorial's schedule, also ``course.lm.train(decay_after=4)``);
  gradient norm clipped to 5 (the loss: summed over the steps, averaged over
  the 20 columns); every parameter drawn uniformly from [-0.1, 0.1], so no
  forget-gate bias (theirs has none); no dropout.

Valid and test perplexity are measured on each split read as one stream (batch
1, the state carried from the first word to the last), so every word sees its
whole history, as in their test evaluation. Every word and every ``</s>`` is predicted.

Resumable: after each epoch the parameters go to ``runs/ptb/MODEL/`` (ignored by
git: tens of MB per model, nothing to commit) and the numbers to
``bench/results/ptb/MODEL.json``; a run that stops continues from its last
finished epoch. The tables are rebuilt from whatever runs exist, with a figure of
the valid perplexity per epoch (``bench/results/ptb.png``). Every run follows the
same schedule, so while some runs are short of 13 epochs the models are also
compared at the epoch they have all reached: the same budget for each.

Some runs change the budget and say so: ``srnn-lr0.1``, ``gru-lr0.5``, ``ran-tanh-lr0.1``, ...
train a cell that does not train at Zaremba's learning rate of 1 at a lower one (see ``LOWER_LR``).

    .venv/bin/python bench/ptb.py                          # all models (hours each)
    .venv/bin/python bench/ptb.py --models lstm            # Zaremba's LSTM alone
    .venv/bin/python bench/ptb.py --models gru,ran-tanh --epochs 3   # the first 3 epochs (resumable to 13)
    .venv/bin/python bench/ptb.py --models lstm,srnn --epochs 1 --max-sentences 500   # smoke test
    .venv/bin/python bench/ptb.py --speed                  # what makes training faster
    .venv/bin/python bench/ptb.py --state-growth           # why the RANs fail: their memory cell grows
    .venv/bin/python bench/ptb.py --tables-only
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from common import RESULTS, ROOT, machine, report, table

from course import runtime
from course.files import save_parameters, write_json
from course.sources import columns, stream_ids, stream_perplexity

RUNS = RESULTS / "ptb"
WORK = ROOT / "runs" / "ptb"

# Zaremba et al. (2014), the "small" configuration, non-regularised.
SMALL = {"layers": 2, "embed": 200, "hidden": 200, "epochs": 13, "batch": 20, "steps": 20,
         "lr": 1.0, "decay": 0.5, "decay_after": 4, "clip": 5.0, "init_scale": 0.1, "seed": 1}

# bench name -> (a DyNet builder, or an autograder.reference.cells name with "hand-" for the
# hand-written twin of a builder; the papers' name for it)
BASE_MODELS = {
    "lstm": ("hand-lstm", "LSTM"),
    "srnn": ("srnn", "S-RNN (LSTM - GATES)"),
    "gru": ("gru", "GRU"),
    "lstm-srnn": ("lstm-srnn", "LSTM - S-RNN"),
    "lstm-srnn-out": ("lstm-srnn-out", "LSTM - S-RNN - OUT"),
    "lstm-srnn-hidden": ("lstm-srnn-hidden", "LSTM - S-RNN - HIDDEN"),
    "ran-identity": ("ran-identity", "RAN (identity)"),
    "ran-tanh": ("ran-tanh", "RAN (tanh)"),
}
# Runs that change the budget, and why: the learning rate alone is lowered for the cells
# that do not train at Zaremba's rate of 1. The S-RNN's gradients explode within its first
# updates (its hidden units saturate at +-1 after two updates, and clipping the norm to 5
# does not bring it back); the weighted-sum paper met the same with its S-RNN on translation
# and lowered the rate to 0.1 (002_*, footnote 2). The GRU trained at 1 for two epochs and
# then fell apart (valid 184 -> 448); the RAN (tanh) never got below 2,300 and the RAN
# (identity) overflowed in its first epoch (bench/results/ptb/*.json). The RAN paper trained
# with Adam, so no SGD rate of theirs exists to copy: each is tried at 0.5 and 0.1.
LOWER_LR = {"srnn": (0.1,), "gru": (0.5,), "ran-identity": (0.5, 0.1), "ran-tanh": (0.5, 0.1)}
MODELS, CHANGED, PAPER_NAME = {}, {}, {}   # every run, in table order; changed run -> its settings;
for _base, (_cell, _label) in BASE_MODELS.items():   # -> the model whose published number it sits beside
    MODELS[_base] = (_cell, _label)
    for _lr in LOWER_LR.get(_base, ()):
        _name = f"{_base}-lr{_lr:g}"
        MODELS[_name] = (_cell, f"{_label.split(' (LSTM')[0]}, learning rate {_lr:g}")
        CHANGED[_name], PAPER_NAME[_name] = {"lr": _lr}, _base


def config_of(name: str) -> dict:
    return {**SMALL, **CHANGED.get(name, {})}

# The seeds' PTB tables, as published (perplexity; the weighted-sum papers do not say
# which split their table reports; Zaremba's test split is used in their tutorial code).
PUBLISHED = {
    # 000_*: "LSTM as a Dynamically Computed Element-wise Weighted Sum", workshop version, Table 1
    "ws_medium": {"srnn": 140.9, "lstm": "83.9 ± 0.3", "lstm-srnn": 80.5, "lstm-srnn-out": 81.6},
    "ws_large": {"srnn": 126.1, "lstm": "78.8 ± 0.2", "lstm-srnn": 76.0, "lstm-srnn-out": 78.5},
    # 002_*: the same paper, later version, Table 1 (adds - S-RNN - HIDDEN; the S-RNN is "- GATES")
    "ws2_medium": {"lstm": "83.9 ± 0.3", "lstm-srnn": 80.5, "lstm-srnn-out": 81.6,
                   "lstm-srnn-hidden": 83.3, "srnn": 140.9},
    "ws2_large": {"lstm": "78.8 ± 0.2", "lstm-srnn": 76.0, "lstm-srnn-out": 78.5,
                  "lstm-srnn-hidden": 82.9, "srnn": 126.1},
    # 004_*: "Recurrent Additive Networks", Table 1 (PTB row)
    "ran": {"srnn": 352.6, "gru": 147.1, "lstm": 157.7, "ran-identity": 130.9, "ran-tanh": 121.0},
}
ZAREMBA_SMALL = {"valid": 120.7, "test": 114.5}


def dynet():
    return runtime.dynet()


# --------------------------------------------------------------------------- data
def load_corpus(corpus="ptb", max_sentences=None):
    """(vocab, {split: sentences}); the vocabulary always comes from the whole
    training split (PTB's 10k words plus the course's <s> and </s>), and
    ``max_sentences`` caps every split (smoke tests)."""
    from course.corpora import read_corpus
    from course.data import Vocab
    splits = {s: read_corpus(corpus, s) for s in ("train", "valid", "test")}
    vocab = Vocab.build(splits["train"])
    if max_sentences:
        splits = {s: sents[:max_sentences] for s, sents in splits.items()}
    return vocab, splits


def schedule(config=SMALL):
    """Zaremba's schedule: lr for the first ``decay_after`` epochs, then multiplied by
    ``decay`` after every further epoch (course.schedules.FixedDecay)."""
    from course import schedules
    return schedules.FixedDecay(config["decay"], config["decay_after"])


def learning_rate(epoch: int, config=SMALL) -> float:
    """The rate of ``epoch`` (counted from 1) under :func:`schedule`."""
    lr = config["lr"]
    for finished in range(1, epoch):
        lr = schedule(config).next_lr(lr, finished, None)
    return lr


def settings(config=SMALL, epochs: int | None = None, max_batches: int | None = None):
    """The configuration as course.lm.train takes it: a stream in ``batch`` rows, segments of
    ``steps``, SGD with the gradient norm clipped."""
    from course.settings import Settings
    return Settings(embed=config["embed"], hidden=config["hidden"], layers=config["layers"],
                    init_scale=config["init_scale"], stream=True,
                    bptt=config["steps"], batch_size=config["batch"], optimizer="sgd", lr=config["lr"],
                    clip=config["clip"], lr_decay=config["decay"], decay_after=config["decay_after"],
                    seed=config["seed"], epochs=epochs or config["epochs"], max_batches=max_batches)


# --------------------------------------------------------------------------- model
def build_model(name: str, vocab, config=SMALL, cell=None, kind=None):
    """The course's RNNLM (or ``kind``, a subclass) with every parameter drawn from
    U(-init_scale, init_scale)."""
    from course import lm
    if cell is None:
        from autograder.reference.cells import make_cell
        key = MODELS[name][0]
        cell = key if key in lm.BUILDERS else make_cell(key.removeprefix("hand-"))
    model = (kind or lm.RNNLM)(vocab, cell, config["embed"], config["hidden"], config["layers"])
    model.init_uniform(config["init_scale"], config["seed"])
    return model


# --------------------------------------------------------------------------- resumable runs
def runs_dir(max_sentences=None) -> Path:
    """Where the records go: bench/results/ptb for real runs; smoke tests (a capped
    corpus) keep theirs beside their checkpoints, out of the results."""
    return RUNS if not max_sentences else WORK / "smoke"


def run_name(name: str, max_sentences=None) -> str:
    return name if not max_sentences else f"{name}-n{max_sentences}"


def train_model(name: str, vocab, splits, epochs: int, config=None, runs=RUNS, work=WORK,
                max_sentences=None, cell=None, log=print, after_epoch=None) -> dict:
    """Train (or continue training) one model to ``epochs`` epochs; return its record.

    After epoch k the parameters are saved to ``work/NAME/params-eK.dy``, then the
    record (one row per epoch) to ``runs/NAME.json``, then the previous checkpoint is
    removed; the record says which checkpoint belongs to it, so a run that stops
    anywhere continues from its last finished epoch. ``after_epoch(row)`` is called
    after all that (the tests interrupt a run there).
    """
    dynet()                     # DyNet started (with its seed and memory) before course.lm is imported
    config = config or config_of(name)
    runs, work = Path(runs), Path(work)
    key = run_name(name, max_sentences)
    record_path = runs / f"{key}.json"

    def checkpoint_of(epoch):
        return work / key / f"params-e{epoch}.dy"

    model = build_model(name, vocab, config, cell)
    recorded = {k: v for k, v in config.items() if k != "epochs"}
    record = {"model": name, "cell": cell.name if cell is not None else MODELS[name][0], "config": recorded,
              "max_sentences": max_sentences, "vocab": len(vocab), "params": model.param_count(),
              "epochs": []}
    if record_path.exists():
        saved = json.loads(record_path.read_text())
        if saved.get("config") != recorded:
            raise ValueError(f"{record_path} was trained with {saved.get('config')}, not {recorded}: "
                             "move it away to start again")
        checkpoint = checkpoint_of(len(saved["epochs"]))
        if saved["epochs"] and failed_in_training(saved["epochs"][-1], saved):
            log(f"{key}: failed in training in epoch {len(saved['epochs'])}, not continued (move "
                f"{record_path} away to train it again)")
            return saved
        if saved["epochs"] and checkpoint.exists():
            record = saved
            model.pc.populate(str(checkpoint))
            log(f"{key}: continuing after epoch {len(record['epochs'])} (checkpoint {checkpoint})")
        elif saved["epochs"]:
            log(f"{key}: {record_path} has {len(saved['epochs'])} epoch(s) but no checkpoint at "
                f"{checkpoint}; training again from the start")
    rows = record["epochs"]
    if len(rows) >= epochs:
        return record
    runs.mkdir(parents=True, exist_ok=True)
    (work / key).mkdir(parents=True, exist_ok=True)
    valid_ids, test_ids = stream_ids(splits["valid"], vocab), stream_ids(splits["test"], vocab)
    clock = {"start": time.perf_counter(), "failed": False}

    def record_epoch(row, state):
        """The engine's row as the records hold it; then the checkpoint and the record."""
        train_end = clock["start"] + row["seconds"]
        rows[-1] = {"epoch": row["epoch"], "lr": learning_rate(row["epoch"], config), "train_ppl": row["train_ppl"],
                    "valid_ppl": row["valid_ppl"], "test_ppl": stream_perplexity(model, test_ids),
                    "train_tokens": row["tokens"], "train_seconds": row["seconds"],
                    "train_cpu_seconds": row["cpu_seconds"], "tokens_per_s": row["tokens"] / row["seconds"],
                    "tokens_per_cpu_s": row["tokens"] / row["cpu_seconds"]}
        rows[-1]["eval_seconds"] = time.perf_counter() - train_end
        finish_epoch(rows[-1])
        clock["start"] = time.perf_counter()

    def finish_epoch(row):
        epoch = row["epoch"]
        save_parameters(model.pc, checkpoint_of(epoch))
        record["machine"] = machine()
        write_json(record_path, record)
        checkpoint_of(epoch - 1).unlink(missing_ok=True)
        log(f"{key}: epoch {epoch}  train {row['train_ppl']:.1f}  valid {row['valid_ppl']:.1f}  "
            f"test {row['test_ppl']:.1f}  {row['tokens_per_s']:.0f} tokens/s "
            f"({row['tokens_per_cpu_s']:.0f} per CPU second)  {row['train_seconds'] / 60:.1f} + "
            f"{row['eval_seconds'] / 60:.1f} min")
        if after_epoch:
            after_epoch(row)
        if failed_in_training(row, record):
            log(f"{key}: the training loss or the valid perplexity diverged; not continued")
            clock["failed"] = True

    from course import lm
    state = lm.TrainState(len(rows) + 1, 0, learning_rate(len(rows) + 1, config),
                          min((r["valid_ppl"] for r in rows), default=math.inf), rows)
    log(f"{key}: epochs {state.epoch}-{epochs}, lr {state.lr:g}")
    try:
        lm.train(model, splits["train"], splits["valid"], settings(config, epochs), schedule=schedule(config),
                 progress=False, log=None, resume=state, on_epoch=record_epoch, stop=lambda: clock["failed"])
    except lm.TrainingDiverged as err:      # the epoch is recorded, its training perplexity infinite
        done, start = err.state, time.perf_counter()
        log(f"    {err}")
        row = {"epoch": done.epoch, "lr": learning_rate(done.epoch, config), "train_ppl": math.inf,
               "valid_ppl": stream_perplexity(model, valid_ids), "test_ppl": stream_perplexity(model, test_ids),
               "train_tokens": done.predictions, "train_seconds": done.seconds, "train_cpu_seconds": done.cpu_seconds,
               "tokens_per_s": done.predictions / max(done.seconds, 1e-9),
               "tokens_per_cpu_s": done.predictions / max(done.cpu_seconds, 1e-9)}
        row["eval_seconds"] = time.perf_counter() - start
        rows.append(row)
        finish_epoch(row)
    return record


# --------------------------------------------------------------------------- state growth
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
        model = build_model(name, vocab, config_of(name))
        record = train_model(name, vocab, splits, epochs, runs=work, work=work, log=log)
        model.pc.populate(str(Path(work) / name / f"params-e{epochs}.dy"))
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


# --------------------------------------------------------------------------- speed
# Variants of one training segment, each timed on the same PTB segments. They compute
# the same model (except "batch", which changes the training itself, and is listed
# for information). Settings that DyNet reads at import (mem, autobatch) need a
# fresh process, so every variant runs in its own worker process.
SPEED_VARIANTS = [
    {"label": "builder LSTM (DyNet's VanillaLSTMBuilder: one stacked gate matrix, in C++)", "cell": "lstm"},
    {"label": "hand LSTM, one matrix per gate, affine_transform (the course's cell)", "cell": "hand-lstm"},
    {"label": "hand LSTM, one matrix per gate, W*x + U*h + b (no affine_transform)", "cell": "plain-lstm"},
    {"label": "hand LSTM, one stacked gate matrix, one affine_transform", "cell": "stacked-lstm"},
    {"label": "builder LSTM, one softmax per time step (20 softmaxes of 20 columns)", "cell": "lstm",
     "softmax": "step"},
    {"label": "builder LSTM, DyNet autobatch on", "cell": "lstm", "autobatch": 1},
    {"label": "builder LSTM, DyNet memory 256 MB (default 1024)", "cell": "lstm", "mem": 256},
    {"label": "builder LSTM, DyNet memory 4096 MB", "cell": "lstm", "mem": 4096},
    {"label": "builder LSTM, batch 40 (changes the training)", "cell": "lstm", "batch": 40},
    {"label": "builder LSTM, batch 80 (changes the training)", "cell": "lstm", "batch": 80},
    {"label": "the output layer alone (10k softmax of fixed inputs, no recurrent layer): the floor",
     "cell": "softmax-only"},
]
SPEED_DEFAULTS = {"softmax": "segment", "autobatch": 0, "mem": 1024, "batch": 20}


def _lstm_plain_step(p, x, state):
    """LSTM of tutorial eqs 54-55 with W*x + U*h + b instead of affine_transform (speed only)."""
    dy = dynet()
    h_prev, c_prev = state
    gate = {g: p["W_x" + g] * x + p["W_h" + g] * h_prev + p["b_" + g] for g in "uifo"}
    c = dy.cmult(dy.logistic(gate["i"]), dy.tanh(gate["u"])) + dy.cmult(dy.logistic(gate["f"]), c_prev)
    return (dy.cmult(dy.logistic(gate["o"]), dy.tanh(c)), c)


def _lstm_stacked_step(p, x, state):
    """LSTM of tutorial eqs 54-55 with the four gates in one (4 d_h, .) matrix (speed only)."""
    dy = dynet()
    h_prev, c_prev = state
    d = c_prev.dim()[0][0]
    z = dy.affine_transform([p["b"], p["W_x"], x, p["W_h"], h_prev])
    ifo = dy.logistic(dy.pickrange(z, 0, 3 * d))
    i, f, o = (dy.pickrange(ifo, k * d, (k + 1) * d) for k in range(3))
    c = dy.cmult(i, dy.tanh(dy.pickrange(z, 3 * d, 4 * d))) + dy.cmult(f, c_prev)
    return (dy.cmult(o, dy.tanh(c)), c)


def speed_cell(name: str):
    """A cell for the speed table: the two bench-only LSTM layouts, or a course cell."""
    from course import lm
    from course.cell import Cell
    if name == "plain-lstm":
        return Cell("plain-lstm", _lstm_plain_step,
                    lambda d_in, d_h: {k: v for g in "uifo" for k, v in
                                       {"W_x" + g: (d_h, d_in), "W_h" + g: (d_h, d_h), "b_" + g: (d_h,)}.items()},
                    n_state=2)
    if name == "stacked-lstm":
        return Cell("stacked-lstm", _lstm_stacked_step,
                    lambda d_in, d_h: {"W_x": (4 * d_h, d_in), "W_h": (4 * d_h, d_h), "b": (4 * d_h,)},
                    n_state=2)
    from autograder.reference.cells import make_cell
    return name if name in lm.BUILDERS else make_cell(name.removeprefix("hand-"))


def measure(variant: dict, vocab, train_sentences, segments_timed: int, config=SMALL) -> dict:
    """Training tokens per wall second and per CPU second of one variant on the first
    segments of the training stream, trained by course.lm.train (one untimed segment
    first, to warm DyNet up)."""
    from course import lm
    variant = {**SPEED_DEFAULTS, **variant}
    config = {**config, "batch": variant["batch"]}
    if variant["cell"] == "softmax-only":
        return _measure_softmax(vocab, train_sentences, segments_timed, config)
    model = build_model("lstm", vocab, config, cell=speed_cell(variant["cell"]),
                        kind=_step_softmax_class() if variant["softmax"] == "step" else lm.RNNLM)
    lm.train(model, train_sentences, None, settings(config, 1, max_batches=1), progress=False, log=None)
    row = lm.train(model, train_sentences, None, settings(config, 1, max_batches=segments_timed),
                   progress=False, log=None)[0]
    return {"wall": row["tokens"] / row["seconds"], "cpu": row["tokens"] / row["cpu_seconds"]}


def _step_softmax_class():
    from course import lm

    class StepSoftmax(lm.RNNLM):
        """The course's model with one softmax per time step instead of one per segment
        (the speed table's comparison; the same numbers)."""

        def batch_losses(self, batch, dropout: float = 0.0, final=None):
            dy = dynet()
            hs = self.hidden_states(batch.inputs, dropout, start=getattr(batch, "start", None), final=final)
            W, b = self.W_hs.expr(True), self.b_s.expr(True)
            losses = [dy.pickneglogsoftmax_batch(dy.affine_transform([b, W, h]), targets)
                      for h, targets in zip(hs, batch.targets)]
            return dy.concatenate_to_batch(losses), np.ones(len(hs) * batch.size)

        def _fits(self, batch) -> bool:
            return True
    return StepSoftmax


def _measure_softmax(vocab, train_sentences, segments_timed: int, config) -> dict:
    """Tokens/s of the softmax layer alone (forward, backward, SGD update) on fixed
    hidden vectors: what the output layer costs whatever the recurrent cell."""
    dy = dynet()
    model = build_model("lstm", vocab, {**config, "layers": 1}, cell="srnn")
    trainer = dy.SimpleSGDTrainer(model.pc, config["lr"])
    data = columns(stream_ids(train_sentences, vocab), config["batch"])
    hidden = np.random.default_rng(1).uniform(-1, 1, (config["hidden"], config["batch"] * config["steps"]))
    count, start, cpu_start = 0, None, None
    steps = config["steps"]
    for k in range((data.shape[1] - 1) // steps):
        targets = data[:, k * steps + 1:(k + 1) * steps + 1]
        if k == 1:
            start, cpu_start = time.perf_counter(), time.process_time()
        if k > segments_timed:
            break
        dy.renew_cg()
        scores = dy.affine_transform([model.b_s.expr(True), model.W_hs.expr(True),
                                      dy.inputTensor(hidden, batched=True)])
        loss = dy.sum_batches(dy.pickneglogsoftmax_batch(scores, targets.T.reshape(-1).tolist()))
        loss.value()
        (loss * (1.0 / config["batch"])).backward()
        trainer.update()
        count += targets.size if k >= 1 else 0
    return {"wall": count / (time.perf_counter() - start), "cpu": count / (time.process_time() - cpu_start)}


def speed_worker(index: int, segments_timed: int, corpus: str):
    variant = {**SPEED_DEFAULTS, **SPEED_VARIANTS[index]}
    runtime.init(seed=1, mem=variant["mem"], autobatch=bool(variant["autobatch"]))
    vocab, splits = load_corpus(corpus)
    # enough sentences for the timed segments at the largest batch
    need = (segments_timed + 2) * SMALL["steps"] * variant["batch"]
    sentences, total = [], 0
    for s in splits["train"]:
        sentences.append(s)
        total += len(s) + 1
        if total > need:
            break
    print(json.dumps(measure(variant, vocab, sentences, segments_timed)))


def speed(rounds: int, segments_timed: int, corpus: str) -> dict:
    """Every variant, timed in its own process, ``rounds`` interleaved rounds (so
    background load hits all alike); returns the median tokens/s of each, per wall
    second and per CPU second."""
    results = {v["label"]: {"wall": [], "cpu": []} for v in SPEED_VARIANTS}
    for r in range(rounds):
        for index, variant in enumerate(SPEED_VARIANTS):
            out = subprocess.run([sys.executable, __file__, "--speed-worker", str(index),
                                  "--speed-segments", str(segments_timed), "--corpus", corpus],
                                 capture_output=True, text=True, check=False)
            if out.returncode != 0:
                raise RuntimeError(f"speed worker for {variant['label']!r} failed:\n{out.stderr[-2000:]}")
            value = json.loads(out.stdout.strip().splitlines()[-1])
            for clock in ("wall", "cpu"):
                results[variant["label"]][clock].append(value[clock])
            print(f"round {r + 1}/{rounds}: {value['cpu']:7.0f} tokens per CPU s, {value['wall']:7.0f} "
                  f"per wall s  {variant['label']}", flush=True)
    return {"rounds": rounds, "segments": segments_timed, "machine": machine(),
            "load_average": os.getloadavg(),
            "tokens_per_cpu_s": {k: statistics.median(v["cpu"]) for k, v in results.items()},
            "tokens_per_s": {k: statistics.median(v["wall"]) for k, v in results.items()},
            "all": results}


# --------------------------------------------------------------------------- tables
def _fmt(x, digits=1):
    return "" if x is None else (f"{x:.{digits}f}" if isinstance(x, float) else str(x))


def _minutes(seconds):
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"


def load_records(runs=RUNS, max_sentences=None) -> dict:
    records = {}
    for name in MODELS:
        path = Path(runs) / f"{run_name(name, max_sentences)}.json"
        if path.exists():
            records[name] = json.loads(path.read_text())
    return records


def _params(record: dict) -> str:
    """All parameters, and in brackets the recurrent layers' alone (the RAN paper counts those)."""
    total = record["params"]
    vocab, config = record.get("vocab"), record.get("config")
    if not vocab or not config:
        return f"{total:,}"
    # embeddings (vocab x embed) and the softmax layer (vocab x hidden + vocab biases)
    recurrent = total - vocab * config["embed"] - vocab * (config["hidden"] + 1)
    return f"{total:,} ({recurrent:,})"


def _broken(ppl: float, row: dict, record: dict) -> bool:
    """Worse than guessing every word uniformly, or a training loss that stopped being a number."""
    return ppl > record.get("vocab", math.inf) or not math.isfinite(row.get("train_ppl", 0))


def failed_in_training(row: dict, record: dict) -> bool:
    """The run is not continued. Only the training and valid splits decide that; the test
    split is for reporting (a model can overflow on it alone, as RAN (identity) did)."""
    return _broken(row["valid_ppl"], row, record)


def diverged(row: dict, record: dict) -> bool:
    """What the tables report: the run has diverged on the test split."""
    return _broken(row["test_ppl"], row, record)


def results_table(records: dict, epochs: int) -> str:
    header = ["model", "cell", "params (recurrent)", "epochs", "valid ppl", "test ppl", "train tokens / s",
              "tokens / CPU s", "wall time", "published (PTB, their configuration)"]
    published = {
        "lstm": f"Zaremba small (same configuration): valid {ZAREMBA_SMALL['valid']}, test "
                f"{ZAREMBA_SMALL['test']}; WS medium {PUBLISHED['ws_medium']['lstm']}, large "
                f"{PUBLISHED['ws_large']['lstm']}; RAN {PUBLISHED['ran']['lstm']}",
    }
    for name in MODELS:
        if name == "lstm":
            continue
        key, bits = PAPER_NAME.get(name, name), []
        if key in PUBLISHED["ws2_medium"]:
            bits.append(f"WS medium {PUBLISHED['ws2_medium'][key]}, large {PUBLISHED['ws2_large'][key]}")
        if key in PUBLISHED["ran"]:
            bits.append(f"RAN {PUBLISHED['ran'][key]}")
        published[name] = "; ".join(bits)
    rows = []
    for name, (_, label) in MODELS.items():
        record = records.get(name)
        if record is None or not record["epochs"]:
            rows.append([label, MODELS[name][0], "", "not run", "", "", "", "", "", published[name]])
            continue
        done = record["epochs"][:epochs]
        last = done[-1]
        wall = sum(r["train_seconds"] + r["eval_seconds"] for r in done)
        tokens = sum(r["train_tokens"] for r in done)
        speed_ = tokens / sum(r["train_seconds"] for r in done)
        cpu = sum(r.get("train_cpu_seconds", 0) for r in done)
        shown = f"{len(done)}" if len(done) >= epochs else f"{len(done)} of {epochs}"
        test = f"**{last['test_ppl']:.1f}**" + (" (diverged)" if diverged(last, record) else "")
        rows.append([label, record["cell"], _params(record), shown, _fmt(last["valid_ppl"]), test, f"{speed_:,.0f}", f"{tokens / cpu:,.0f}" if cpu else "",
                     _minutes(wall), published[name]])
    return table(header, rows)


def curves_table(records: dict, epochs: int) -> str:
    names = [n for n in MODELS if n in records and records[n]["epochs"]]
    if not names:
        return "(no epochs finished yet)"
    rows = []
    for epoch in range(1, epochs + 1):
        row = [epoch, f"{learning_rate(epoch):.3g}"]
        for name in names:
            r = records[name]["epochs"][epoch - 1] if epoch <= len(records[name]["epochs"]) else None
            row.append(f"{r['valid_ppl']:.1f} / {r['test_ppl']:.1f}" if r else "")
        rows.append(row)
    return table(["epoch", "lr"] + [MODELS[n][1] for n in names], rows)


def pattern(records: dict, epochs: int) -> str:
    """The papers' two claims, checked on whatever runs are complete."""
    final = {n: r["epochs"][epochs - 1]["test_ppl"] for n, r in records.items() if len(r["epochs"]) >= epochs}
    if "lstm" not in final:
        return ("The pattern cannot be judged yet: the LSTM run has not finished its "
                f"{epochs} epochs.")
    lstm = final["lstm"]
    lines = [f"Test perplexity after {epochs} epoch(s), relative to the LSTM's {lstm:.1f}, beside the same "
             "ratio in the papers' PTB tables:", ""]
    rows = []
    for name in MODELS:
        if name == "lstm":
            continue
        key = PAPER_NAME.get(name, name)
        if key in PUBLISHED["ws2_medium"]:       # the weighted-sum paper's table, else the RAN paper's
            ref = [PUBLISHED[f"ws2_{size}"][key] / float(PUBLISHED[f"ws2_{size}"]["lstm"].split()[0]) - 1
                   for size in ("medium", "large")]
            published = f"{ref[0]:+.0%} (medium), {ref[1]:+.0%} (large)"
        else:
            published = f"{PUBLISHED['ran'][key] / PUBLISHED['ran']['lstm'] - 1:+.0%} (RAN Table 1)"
        if name not in records or not records[name]["epochs"]:
            here = "not run"
        elif name not in final:
            done = records[name]["epochs"]
            here = f"only {len(done)} of {epochs} epochs" + (" (diverged)" if diverged(done[-1], records[name]) else "")
        elif diverged(records[name]["epochs"][epochs - 1], records[name]):
            here = f"{final[name]:,.0f}: diverged"
        else:
            here = f"{final[name]:.1f} ({final[name] / lstm - 1:+.0%})"
        rows.append([MODELS[name][1], here, published])
    lines.append(table(["model", "here: test ppl (vs LSTM)", "published (vs LSTM)"], rows))
    verdicts = []
    for name in ("srnn", "srnn-lr0.1"):
        if name not in final:
            continue
        claim = f"{MODELS[name][1]} far behind (criterion: > 20% above the LSTM; the papers: +60 to +68%): "
        if diverged(records[name]["epochs"][epochs - 1], records[name]):
            verdicts.append(claim + "**not judged**: the run diverged (worse than a uniform guess), "
                            "which says the S-RNN is hard to train here, not how far behind it is.")
        else:
            holds = final[name] > 1.2 * lstm
            verdicts.append(claim + f"**{'holds' if holds else 'does not hold'}** ({final[name] / lstm - 1:+.0%}).")
    ablations = [n for n in ("lstm-srnn", "lstm-srnn-out", "lstm-srnn-hidden") if n in final]
    if ablations:
        worst = max(abs(final[n] / lstm - 1) for n in ablations)
        verdicts.append(f"Ablations of the S-RNN close to the LSTM (criterion: within 10%; the papers: "
                        f"-4% to +5%): **{'holds' if worst <= 0.10 else 'does not hold'}** for "
                        f"{len(ablations)} of 3 finished (largest gap {worst:.0%}).")
    for base in ("gru", "ran-identity", "ran-tanh"):
        verdicts.append(_additive_verdict(base, final, records, epochs))
    return "\n".join(lines + [""] + [f"- {v}" for v in verdicts])


def _additive_verdict(base: str, final: dict, records: dict, epochs: int) -> str:
    """The RAN paper's claim for one cell, judged on its best run that trained, at whichever
    learning rate tried (a lower one is a changed budget, and the verdict says so)."""
    lstm = final["lstm"]
    family = [base] + [c for c in CHANGED if PAPER_NAME[c] == base]
    tried = [n for n in family if n in final]
    trained = [n for n in tried if not diverged(records[n]["epochs"][epochs - 1], records[n])]
    stopped = [n for n in family if n not in final and records.get(n, {}).get("epochs")
               and diverged(records[n]["epochs"][-1], records[n])]      # diverged before this epoch
    others = []                                                         # the runs short of this epoch
    for n in family:
        done = records.get(n, {}).get("epochs") or []
        if n not in final:
            others.append(f"{config_of(n)['lr']:g}, " + ("not run" if not done else f"diverged in epoch "
                          f"{len(done)}" if n in stopped else f"{len(done)} of {epochs} epochs"))
    elsewhere = f" Other runs: learning rate {'; '.join(others)}." if others else ""
    claim = (f"{MODELS[base][1]} as good as the LSTM or better (criterion: at most 10% above it; "
             f"the RAN paper: {PUBLISHED['ran'][base] / PUBLISHED['ran']['lstm'] - 1:+.0%}, with Adam "
             "and dropout): ")
    if not tried:
        return claim + ("**not judged**: every run of it so far diverged." if stopped else "not finished.") + elsewhere
    if not trained:
        return claim + "**not judged**: every run of it diverged." + elsewhere
    best = min(trained, key=lambda n: final[n])
    holds = final[best] <= 1.1 * lstm
    at = f"learning rate {config_of(best)['lr']:g}" + (", a changed budget" if best in CHANGED else "")
    return (claim + f"**{'holds' if holds else 'does not hold'}** ({final[best] / lstm - 1:+.0%} at {at})."
            + elsewhere)


def common_epochs(records: dict, epochs: int) -> int:
    """The most epochs every cell has had in one of its runs (the budget they all had): each
    cell counts its longest run at any learning rate; a run that diverged is left out, since
    it would not be continued."""
    longest = {}
    for name, r in records.items():
        if r["epochs"] and not diverged(r["epochs"][-1], r):
            base = PAPER_NAME.get(name, name)
            longest[base] = max(longest.get(base, 0), len(r["epochs"]))
    return min([epochs] + list(longest.values())) if longest else 0


def patterns(records: dict, epochs: int) -> str:
    """The pattern after the full schedule and, while runs are short of it, at the budget all share."""
    full = f"### After all {epochs} epochs\n\n" + pattern(records, epochs)
    shared = common_epochs(records, epochs)
    if shared == epochs or "lstm" not in records or shared == 0:
        return full
    ran = [MODELS[n][1] for n in MODELS if n in records and records[n]["epochs"]]
    lr = ", ".join(sorted({f"{learning_rate(e):g}" for e in range(1, shared + 1)}))
    early = "" if shared > SMALL["decay_after"] else (" An early reading: the learning rate has not "
                                                      "started to decay yet.")
    return (full + f"\n\n### The same budget for every model: the first {shared} epoch(s)\n\n"
            f"Every run follows the same schedule, so the first {shared} epoch(s) of each (learning rate "
            f"{lr}) are the same budget for all {len(ran)} runs.{early}\n\n"
            + pattern(records, shared))


def speed_table(result: dict) -> str:
    cpu, wall = result["tokens_per_cpu_s"], result["tokens_per_s"]
    base = cpu[SPEED_VARIANTS[0]["label"]]
    spread = {label: "{:,.0f} to {:,.0f}".format(min(v["cpu"]), max(v["cpu"]))
              for label, v in result.get("all", {}).items()}
    rows = [[label, f"{cpu[label]:,.0f}", spread.get(label, ""), f"{cpu[label] / base:.2f}x",
             f"{wall[label]:,.0f}"] for label in cpu]
    load = ", ".join(f"{x:.1f}" for x in result.get("load_average", []))
    return (f"Training tokens per second on the first {result['segments']} segments of the PTB training "
            f"stream (2 layers of 200, batch 20 unless stated, {SMALL['steps']} steps, 10k softmax, SGD); each variant "
            f"in a fresh process, median of {result['rounds']} interleaved rounds. The machine is shared "
            f"(load average {load} on 2 cores at the end), so the wall clock mostly measures the other "
            "programs: compare the tokens per CPU second (this process's own CPU time).\n\n"
            + table(["variant", "tokens / CPU s", "rounds' range", "vs the first row", "tokens / wall s"], rows)
            + "\n\n" + speed_notes(cpu))


def speed_notes(cpu: dict) -> str:
    """What the speed table means for the runs (the share of the softmax from the numbers)."""
    labels = [v["label"] for v in SPEED_VARIANTS]
    base, floor = cpu[labels[0]], cpu[labels[-1]]
    return ("What the runs keep: one softmax over the whole segment (course.lm's way; one softmax per "
            f"step runs at {cpu[labels[4]] / base:.2f}x), DyNet's defaults otherwise (autobatch off: "
            "it finds nothing to batch in a graph that is batched already; memory 1024 MB) and the "
            "course's own reference cells. How the LSTM's gates are laid out (DyNet's builder, one "
            "matrix per gate, one stacked matrix, with or without affine_transform) changes little "
            "next to the spread between rounds on this shared machine. Larger batches change the "
            "training (Zaremba's is 20), so they are listed, not used. What remains is the 10k-word "
            f"softmax: the output layer alone runs at {floor:,.0f} tokens per CPU second, about "
            f"{base / floor:.0%} of the cost of a whole training step; only a faster matrix product "
            "(DyNet built with a BLAS, or a GPU) would shorten it.")


PUBLISHED_TEXT = f"""## The papers' PTB tables, as published

Zaremba et al. (2014), Table 1, non-regularised LSTM (the "small" configuration used here:
2 x 200, 13 epochs): valid **{ZAREMBA_SMALL['valid']}**, test **{ZAREMBA_SMALL['test']}**.

Weighted-sum paper, workshop version (seeds `000_*`, Table 1; Zaremba's medium = 2 x 650 and
large = 2 x 1500 configurations, with dropout):

| configuration | S-RNN | LSTM | LSTM - S-RNN | LSTM - S-RNN - output gate |
|---|---|---|---|---|
| PTB (Medium Model) | 140.9 | 83.9 ± 0.3 | 80.5 | 81.6 |
| PTB (Large Model) | 126.1 | 78.8 ± 0.2 | 76.0 | 78.5 |

The same paper, later version (seeds `002_*`, Table 1):

| configuration | LSTM | - S-RNN | - S-RNN - OUT | - S-RNN - HIDDEN | - GATES |
|---|---|---|---|---|---|
| PTB (Medium) | 83.9 ± 0.3 | 80.5 | 81.6 | 83.3 | 140.9 |
| PTB (Large) | 78.8 ± 0.2 | 76.0 | 78.5 | 82.9 | 126.1 |

Recurrent additive networks (seeds `004_*`, Table 1; 1 layer, embeddings 256, hidden 1024,
50% variational dropout, Adam, batch 512, 100 epochs):

| | Simple RNN | GRU | LSTM | RAN (identity) | RAN (tanh) |
|---|---|---|---|---|---|
| PTB | 352.6 | 147.1 | 157.7 | 130.9 | 121.0 |
| # RNN parameters | 1.31M | 3.94M | 5.25M | 2.89M | 2.89M |

Its Table 2 (the LSTM simplified step by step; the middle column's heading is lost in the seed's
text extraction, the text calls it "Simplified Content Layer"): PTB 157.7 (original LSTM),
134.7, 121.0 (RAN (tanh)); RNN parameters 5.25M, 4.20M, 2.89M.
"""

SETUP_TEXT = """## Setup, and how it differs from the papers

Every model: Zaremba et al.'s (2014) non-regularised "small" budget (2 layers of 200,
embeddings 200, 13 epochs, batch 20, truncated backpropagation over 20 steps with the state
carried between segments and reset at each epoch, SGD lr 1 halved after every epoch past the
4th, gradient norm clipped at 5, all parameters uniform in [-0.1, 0.1], no dropout). Only the
recurrent cell changes (the course's `course.lm.RNNLM` with the reference cells of
`autograder/reference/cells.py`, S-RNN and GRU through DyNet's builders, which compute the
same equations). Differences from their code, all small:

- 20 steps, not 35: the small configuration unrolls 20 steps in both of their published
  programs (the authors' Torch `main.lua`, "Trains 1h and gives test 115 perplexity", and the
  TensorFlow PTB tutorial's `SmallConfig`); 35 belongs to the medium and large configurations;
- the learning rate is halved from epoch 5 on (the TensorFlow tutorial; the Torch program
  halves from epoch 6);
- the vocabulary has 10,001 entries: PTB's 10,000 (with `</s>` as end of sentence) and the
  course's `<s>`, which the stream never uses (one more embedding and softmax row);
- the stream starts with `</s>`, so the first word is predicted too; valid and test are each
  read as one stream (batch 1, as their Torch test evaluation; their validation read 20
  columns), every word counted;
- one LSTM bias per gate (their Torch LSTM has two, one in each of its input and recurrent
  linear maps: the same function);
- the seed is fixed (1) and one run per model is reported (the weighted-sum papers give the
  LSTM's spread over 5 runs: ± 0.2 to ± 0.3). A run is bit-for-bit repeatable on one machine,
  not across machines: the same seed and code gave epoch-1 perplexities 0.2% to 0.9% apart on
  two hosts of this project (floating-point rounding differs between CPUs, and training
  amplifies it);
- runs named "learning rate X" change one setting, the learning rate, for a cell that does not
  train at 1 (the S-RNN, the GRU and the RANs; `LOWER_LR` in `bench/ptb.py` says why), and
  keep the schedule (halved after every epoch past the 4th);
- the weighted-sum papers trained Zaremba's *medium* and *large* configurations with dropout,
  and the RAN paper a 1 x 1024 network with dropout and Adam for 100 epochs: their numbers are
  for bigger, regularised models. Here every model gets the small, unregularised budget, so the
  absolute numbers are higher and the comparison is of the pattern.
"""


PLOT_TOP = 1000      # valid perplexity above which the figure cuts a curve off


def plot_curves(records: dict, path: Path) -> Path | None:
    """Valid perplexity after each epoch, one line per run, Zaremba's 120.7 dashed.

    One colour per cell; its runs at a lower learning rate are dashed, then dotted. Values
    above PLOT_TOP are cut off (their thousands would flatten the lines that matter, between
    100 and 300), and runs with none below it are left out."""
    names = [n for n in MODELS if any(r["valid_ppl"] <= PLOT_TOP for r in records.get(n, {}).get("epochs", []))]
    if not names:
        return None
    import matplotlib
    matplotlib.use("Agg")
    from course import plots
    curves = {MODELS[n][1]: [r["valid_ppl"] if math.isfinite(r["valid_ppl"]) else math.nan
                             for r in records[n]["epochs"]] for n in names}
    ax = plots.loss_curves(curves, xlabel="epoch", ylabel="valid perplexity", logy=True,
                           title=f"PTB, Zaremba's small budget (cut at {PLOT_TOP:,}; runs entirely above it left out)")
    bases = list(BASE_MODELS)
    colours = matplotlib.colormaps["tab10"].colors
    for name, line in zip(names, ax.lines):
        base = PAPER_NAME.get(name, name)
        variant = 0 if name == base else 1 + LOWER_LR[base].index(CHANGED[name]["lr"])
        line.set(color=colours[bases.index(base) % len(colours)], ls=("-", "--", ":")[variant], marker="o",
                 markersize=4)
    from matplotlib.ticker import NullFormatter, ScalarFormatter
    ax.set_ylim(top=PLOT_TOP)
    ax.set_yticks([t for t in (100, 120, 150, 200, 300, 500, 1000) if t <= PLOT_TOP])
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xticks(range(1, max(len(c) for c in curves.values()) + 1))
    ax.axhline(ZAREMBA_SMALL["valid"], color="black", ls="--", lw=1.0)
    ax.annotate(f"Zaremba small LSTM, valid {ZAREMBA_SMALL['valid']}", (0.02, ZAREMBA_SMALL["valid"]),
                xycoords=("axes fraction", "data"), textcoords="offset points", xytext=(0, -10), fontsize=8)
    ax.legend(frameon=False, fontsize=7, loc="upper right")
    ax.figure.set_size_inches(7.5, 4.5)
    ax.figure.tight_layout()
    ax.figure.savefig(path, dpi=120)
    return path


def tables(epochs: int, runs=RUNS, max_sentences=None) -> str:
    records = load_records(runs, max_sentences)
    figure = Path(runs).with_suffix(".png")      # bench/results/ptb.png, drawn by main()
    parts = [f"Penn Treebank (Mikolov's 10k-word version), {epochs} epochs"
             + (f", first {max_sentences} sentences of each split (smoke test)" if max_sentences else "")
             + ". Test perplexity in bold; wall time includes the valid and test evaluation after every "
               "epoch. The machine has 2 cores shared with other work, and DyNet uses one: speeds "
               "are what the run got, not what an idle core gives.",
             "## Results\n\n" + results_table(records, epochs),
             "## Does the papers' pattern hold?\n\n" + patterns(records, epochs),
             "## Valid / test perplexity after each epoch\n\n"
             + (f"![valid perplexity after each epoch]({figure.name})\n\n" if figure.exists() else "")
             + curves_table(records, epochs)]
    growth_path = Path(runs) / "state-growth.json"
    if growth_path.exists():
        parts.append("## The RANs under this budget: how large the memory cell grows along the stream\n\n"
                     + growth_table(json.loads(growth_path.read_text()), records))
    parts += [PUBLISHED_TEXT.strip(), SETUP_TEXT.strip()]
    speed_path = Path(runs) / "speed.json"
    if speed_path.exists():
        parts.append("## Speed: what makes training faster without changing the model\n\n"
                     + speed_table(json.loads(speed_path.read_text())))
    return "\n\n".join(parts)


# --------------------------------------------------------------------------- command line
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, from {', '.join(MODELS)}")
    parser.add_argument("--epochs", type=int, default=SMALL["epochs"])
    parser.add_argument("--max-sentences", type=int, default=None, help="cap every split (smoke tests)")
    parser.add_argument("--tables-only", action="store_true")
    parser.add_argument("--speed", action="store_true", help="time the speed variants, then write the tables")
    parser.add_argument("--state-growth", action="store_true",
                        help=f"train {', '.join(GROWTH_MODELS)} {GROWTH_EPOCHS} epoch(s) apart and measure how "
                             "large their memory cells grow on the valid stream, then write the tables")
    parser.add_argument("--speed-rounds", type=int, default=3)
    parser.add_argument("--speed-segments", type=int, default=8)
    parser.add_argument("--speed-worker", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--corpus", default="ptb", help="corpus name or folder (default: ptb)")
    args = parser.parse_args(argv)
    if args.speed_worker is not None:
        return speed_worker(args.speed_worker, args.speed_segments, args.corpus)
    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        parser.error(f"unknown model(s) {unknown}: choose from {', '.join(MODELS)}")
    runtime.init(seed=SMALL["seed"], mem=SPEED_DEFAULTS["mem"])
    if args.speed:
        result = speed(args.speed_rounds, args.speed_segments, args.corpus)
        RUNS.mkdir(parents=True, exist_ok=True)
        write_json(RUNS / "speed.json", result)
        print(speed_table(result))
    elif args.state_growth:
        vocab, splits = load_corpus(args.corpus)
        result = measure_growth(GROWTH_MODELS, vocab, splits, log=lambda line: print(line, flush=True))
        RUNS.mkdir(parents=True, exist_ok=True)
        write_json(RUNS / "state-growth.json", result)
    elif not args.tables_only:
        vocab, splits = load_corpus(args.corpus, args.max_sentences)
        for name in names:
            train_model(name, vocab, splits, args.epochs, config_of(name), runs=runs_dir(args.max_sentences),
                        max_sentences=args.max_sentences, log=lambda line: print(line, flush=True))
    command = "python bench/ptb.py" + (f" --epochs {args.epochs}" if args.epochs != SMALL["epochs"] else "")
    if args.max_sentences:
        command += f" --max-sentences {args.max_sentences}"
    command += "` (the runs, resumable) and `python bench/ptb.py --speed"
    name = "ptb" if not args.max_sentences else f"ptb-n{args.max_sentences}"
    if args.max_sentences:      # smoke-test tables are printed, not kept
        print(tables(args.epochs, runs_dir(args.max_sentences), args.max_sentences))
    else:
        plot_curves(load_records(), RUNS.with_suffix(".png"))
        report(name, "Penn Treebank: the course's models beside the papers", tables(args.epochs), command)


if __name__ == "__main__":
    main()
