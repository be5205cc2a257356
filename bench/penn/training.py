"""Training under Zaremba's budget (penn.models.SMALL): the learning rate of each epoch, the
resumable runs (course.runs.Run: checkpoints in runs/ptb/, records in bench/results/ptb/), and
what a record says of a run (diverged, or failed in training and not continued)."""
from __future__ import annotations

import json
import math
import time
from pathlib import Path

from common import RESULTS, ROOT, machine
from penn.models import MODELS, SMALL, Budget, build_model, config_of

from course import runtime, schedules
from course.evaluation import stream_perplexity
from course.sources import stream_ids

RUNS = RESULTS / "ptb"
WORK = ROOT / "runs" / "ptb"


def learning_rate(epoch: int, config: Budget = SMALL) -> float:
    """The rate of ``epoch`` (counted from 1) under the configuration's schedule (Zaremba's:
    course.schedules.FixedDecay, from ``decay_after`` and ``lr_decay``)."""
    lr, schedule = config.training.learning_rate, schedules.of(config.training)
    for finished in range(1, epoch):
        lr = schedule.next_lr(lr, finished, None)
    return lr


def runs_dir(max_sentences=None) -> Path:
    """Where the records go: bench/results/ptb for real runs; smoke tests (a capped
    corpus) keep theirs beside their checkpoints, out of the results."""
    return RUNS if not max_sentences else WORK / "smoke"


def run_name(name: str, max_sentences=None) -> str:
    return name if not max_sentences else f"{name}-n{max_sentences}"


def train_model(name: str, vocab, splits, epochs: int, config: Budget | None = None, runs=RUNS, work=WORK,
                max_sentences=None, cell=None, log=print, after_epoch=None) -> dict:
    """Train (or continue training) one model to ``epochs`` epochs; return its record.

    The run is a :class:`course.runs.Run` in ``work/NAME``: after epoch k the parameters go
    to its resume/ (and to checkpoint/ when the epoch is the best on valid), then the record
    (one row per epoch) to ``runs/NAME.json``, which names them; so a run that stops anywhere
    continues from its last finished epoch. ``after_epoch(row)`` is called after all that
    (the tests interrupt a run there).
    """
    runtime.dynet()             # DyNet started (with its seed and memory) before course.lm is imported
    from course.runs import Run, RunError
    config = config or config_of(name)
    runs, work = Path(runs), Path(work)
    key = run_name(name, max_sentences)
    record_path = runs / f"{key}.json"
    run_dir = Run(work / key, record=record_path, built_in_code=True)
    run_dir.refuse_old_layout()

    model = build_model(name, vocab, config, cell)
    recorded = config.recorded()
    record = {"model": name, "cell": cell.name if cell is not None else MODELS[name][0], "config": recorded,
              "max_sentences": max_sentences, "vocab": len(vocab), "params": model.param_count(),
              "epochs": []}
    if record_path.exists():
        saved = json.loads(record_path.read_text())
        if saved.get("config") != recorded:
            raise ValueError(f"{record_path} was trained with {saved.get('config')}, not {recorded}: "
                             "move it away to start again")
        if saved["epochs"] and failed_in_training(saved["epochs"][-1], saved):
            log(f"{key}: failed in training in epoch {len(saved['epochs'])}, not continued (move "
                f"{record_path} away to train it again)")
            return saved
        if saved["epochs"] and run_dir.last.is_dir():
            record = saved
            run_dir.load()                     # resume/ is the one the record names
            model.restore(run_dir.last)
            log(f"{key}: continuing after epoch {len(record['epochs'])} (checkpoint {run_dir.last})")
        elif saved["epochs"]:
            log(f"{key}: {record_path} has {len(saved['epochs'])} epoch(s) but no checkpoint in "
                f"{run_dir.last}; training again from the start")
    rows = record["epochs"]
    if len(rows) >= epochs:
        return record
    if not run_dir.claim():
        raise RunError(f"{key} is being trained by another process (its pid is in {run_dir.lock})")
    valid_ids, test_ids = stream_ids(splits["valid"], vocab), stream_ids(splits["test"], vocab)
    clock = {"start": time.perf_counter(), "failed": False, "improved": False}

    def improved(state, better):
        clock["improved"] = better

    def record_epoch(row, state):
        """The engine's row as the records hold it; then the checkpoint and the record."""
        train_end = clock["start"] + row["seconds"]
        rows[-1] = {"epoch": row["epoch"], "lr": learning_rate(row["epoch"], config), "train_ppl": row["train_ppl"],
                    "valid_ppl": row["valid_ppl"], "test_ppl": stream_perplexity(model, test_ids),
                    "train_tokens": row["tokens"], "train_seconds": row["seconds"],
                    "train_cpu_seconds": row["cpu_seconds"], "tokens_per_s": row["tokens"] / row["seconds"],
                    "tokens_per_cpu_s": row["tokens"] / row["cpu_seconds"]}
        rows[-1]["eval_seconds"] = time.perf_counter() - train_end
        finish_epoch(rows[-1], state)
        clock["start"] = time.perf_counter()

    def finish_epoch(row, state):
        record["machine"] = machine()
        run_dir.save(model, state, clock["improved"], record)
        log(f"{key}: epoch {row['epoch']}  train {row['train_ppl']:.1f}  valid {row['valid_ppl']:.1f}  "
            f"test {row['test_ppl']:.1f}  {row['tokens_per_s']:.0f} tokens/s "
            f"({row['tokens_per_cpu_s']:.0f} per CPU second)  {row['train_seconds'] / 60:.1f} + "
            f"{row['eval_seconds'] / 60:.1f} min")
        if after_epoch:
            after_epoch(row)
        if failed_in_training(row, record):
            log(f"{key}: the training loss or the valid perplexity diverged; not continued")
            clock["failed"] = True

    from course import training
    state = training.TrainState(len(rows) + 1, 0, learning_rate(len(rows) + 1, config),
                          min((r["valid_ppl"] for r in rows), default=math.inf), rows)
    log(f"{key}: epochs {state.epoch}-{epochs}, lr {state.lr:g}")
    try:
        # resumable: a run continued in a new process (each epoch's checkpoint) trains as one that never
        # stopped, and as `python -m course train --stream`, which always is (bench/stream_cli.py)
        training.train(model, splits["train"], splits["valid"], config.training.but(epochs=epochs), progress=False,
                       log=None, resume=state, on_save=improved, on_epoch=record_epoch, stop=lambda: clock["failed"],
                       resumable=True)
    except training.TrainingDiverged as err:      # the epoch is recorded, its training perplexity infinite
        done, start = err.state, time.perf_counter()
        log(f"    {err}")
        row = {"epoch": done.epoch, "lr": learning_rate(done.epoch, config), "train_ppl": math.inf,
               "valid_ppl": stream_perplexity(model, valid_ids), "test_ppl": stream_perplexity(model, test_ids),
               "train_tokens": done.predictions, "train_seconds": done.seconds, "train_cpu_seconds": done.cpu_seconds,
               "tokens_per_s": done.predictions / max(done.seconds, 1e-9),
               "tokens_per_cpu_s": done.predictions / max(done.cpu_seconds, 1e-9)}
        row["eval_seconds"] = time.perf_counter() - start
        rows.append(row)
        clock["improved"] = False           # its parameters are kept to resume/ only
        finish_epoch(row, done)
    finally:
        run_dir.release()
    return record


def load_records(runs=RUNS, max_sentences=None) -> dict:
    records = {}
    for name in MODELS:
        path = Path(runs) / f"{run_name(name, max_sentences)}.json"
        if path.exists():
            records[name] = json.loads(path.read_text())
    return records


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
