"""The folder a command-line training run writes (``python -m course train --out OUT``).

    OUT/metrics.json   the run: settings, corpus, one row per epoch, status; once it is
                       finished, the best epoch's valid and test perplexity beside the
                       yardstick (unigram, Kneser-Ney trigram)
    OUT/checkpoint/    the model of the best epoch so far (what ``evaluate`` scores)
    OUT/resume/        the model at the end of the last epoch, or at a Ctrl-C, with
                       where training stood (``train --resume OUT`` continues from it)

Nothing is lost or mixed: an existing OUT is refused unless the run is continued
(``--resume``) or replaced (``--overwrite``); every file is replaced whole (written
beside, then renamed); ``metrics.json``, written last, records the sha256 of the
parameters in ``checkpoint/`` and ``resume/``, and a folder whose parts do not
belong together is refused on load, naming the files.
"""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict
from pathlib import Path
from shlex import quote

from course.checkpoint import DAMAGED, RECORD, read_record
from course.data import DataError
from course.files import write_atomic

PARTS = ("metrics.json", "checkpoint", "resume")


class RunError(DataError):
    """An --out or --resume folder that cannot be used as asked; the message says why."""


def is_run(folder: Path) -> bool:
    return (folder / "metrics.json").is_file()


def check(out: Path, overwrite: bool) -> None:
    """Refuse an --out that cannot take a new run, before anything is read or trained: a
    file, another run (unless ``overwrite``), a folder holding anything else, a place
    that cannot be written. Changes nothing."""
    if out.exists() and not out.is_dir():
        raise RunError(f"--out {out} is a file: name a folder (it is created if missing).")
    if out.is_dir() and any(out.iterdir()):
        if not is_run(out):
            raise RunError(f"--out {out} is a folder that holds other files: name a new or empty "
                           "folder for the run.")
        if not overwrite:
            raise RunError(f"--out {out} already holds a run: continue it with "
                           f"`python -m course train --resume {quote(str(out))}`, replace it with --overwrite, "
                           "or name another folder.")
        strays = [p.name for p in out.iterdir() if p.name not in PARTS]
        if strays:
            raise RunError(f"--out {out} holds files that are not the run's ({', '.join(sorted(strays))}): "
                           "move them, or name another folder.")
    existing = next(p for p in [out, *out.absolute().parents] if p.exists())
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise RunError(f"cannot write to --out {out} ({existing} is not a folder you can write to): "
                       "name another folder.")


def start(out: Path) -> None:
    """Create ``out`` for a new run (checked by :func:`check`), removing a previous run's parts."""
    for name in PARTS:
        path = out / name
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise RunError(f"cannot create --out {out} ({err.strerror}): name a folder you can write to.") from None


def save(out: Path, model, state, improved: bool, metrics: dict, info: dict) -> dict:
    """Write the run after an epoch (``improved``: it is the best so far) or at a stop:
    the model and training state to resume/, the model to checkpoint/ when improved,
    then metrics.json, which names both. Returns the metrics written."""
    if improved:
        best = model.save(out / "checkpoint", {**info, "epoch": state.epoch - 1})
        metrics["checkpoint"] = {"params_sha256": best["params_sha256"], "epoch": best["epoch"]}
    last = model.save(out / "resume", {**info, "state": asdict(state)})
    metrics["resume"] = {"params_sha256": last["params_sha256"], "epoch": state.epoch, "batch": state.batch}
    metrics["history"] = state.history
    write_atomic(out / "metrics.json", json.dumps(metrics, indent=1) + "\n")
    read_record(out / "resume")                   # what was written reads back
    return metrics


def load(folder: Path) -> dict:
    """A run's metrics.json, after checking that checkpoint/ and resume/ are the ones
    it names."""
    if not is_run(folder):
        raise RunError(f"{folder} holds no run (no metrics.json): name the --out folder of a "
                       "`python -m course train` run.")
    try:
        metrics = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise RunError(f"{folder / 'metrics.json'} is not valid JSON ({err}): {DAMAGED}") from None
    for part in ("checkpoint", "resume"):
        expected = metrics.get(part, {}).get("params_sha256")
        if expected is None:
            continue
        if not (folder / part / RECORD).is_file():
            raise RunError(f"{folder / part} is missing, though {folder / 'metrics.json'} names it: "
                           f"{DAMAGED}")
        if read_record(folder / part).get("params_sha256") != expected:
            raise RunError(f"{folder / 'metrics.json'} and {folder / part} belong to different "
                           f"models (a save was cut short, or files were copied in): {DAMAGED}")
    return metrics


def resume_state(folder: Path):
    """The :class:`course.training.TrainState` saved in ``folder``/resume."""
    from course import training
    record = read_record(folder / "resume")
    return training.TrainState(**record["state"]), record
