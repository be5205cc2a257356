"""One training run and its folder, for the command line (``python -m course train --out OUT``)
and the benchmarks (bench/converge.py, bench/ptb.py): :class:`Run`.

    OUT/metrics.json   the run's record: settings, corpus, one row per epoch, status; once it
                       is finished, the best epoch's valid and test perplexity beside the
                       yardstick (unigram, Kneser-Ney trigram). A bench keeps its record in
                       bench/results instead (``Run(folder, record=...)``), in its own format.
    OUT/checkpoint/    the model of the best epoch so far (what ``evaluate`` scores)
    OUT/resume/        the model at the end of the last epoch, or at a Ctrl-C, with
                       where training stood (``train --resume OUT`` continues from it)
    OUT/lock           the process training it, while it trains (a second is refused)

Nothing is lost or mixed: an existing OUT is refused unless the run is continued
(``--resume``) or replaced (``--overwrite``); every file is replaced whole (written
beside, then renamed); ``metrics.json``, written last, records the sha256 of the
parameters in ``checkpoint/`` and ``resume/``, and a folder whose parts do not
belong together is refused on load, naming the files. A training loop that diverges
(:class:`course.training.TrainingDiverged`) leaves the run as its last save left it.
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
from course.files import save_parameters, sha256_of, write_atomic, write_json

PARTS = ("metrics.json", "checkpoint", "resume", "lock")
OLD_LAYOUTS = ("latest.dy", "best.dy", "params-e*.dy")    # the benches' folders before Run


class RunError(DataError):
    """An --out or --resume folder that cannot be used as asked; the message says why."""


def is_run(folder: Path) -> bool:
    return (folder / "metrics.json").is_file()


class Run:
    """A run's folder (``checkpoint/``, ``resume/``, ``lock``) and its record (``metrics.json``
    in the folder, or ``record``, a file elsewhere). ``built_in_code``: the model is rebuilt
    in code before it is restored (a bench's), so only its parameters are saved (with their
    checksum); else it is saved whole, for :meth:`course.lm.RNNLM.load`."""

    def __init__(self, folder, record=None, built_in_code: bool = False):
        self.folder, self.built_in_code = Path(folder), built_in_code
        self.record = Path(record) if record is not None else self.folder / "metrics.json"
        self.best, self.last, self.lock = self.folder / "checkpoint", self.folder / "resume", self.folder / "lock"

    def check_new(self, overwrite: bool) -> None:
        """Refuse a folder that cannot take a new run, before anything is read or trained: a
        file, another run (unless ``overwrite``), a folder holding anything else, a place
        that cannot be written. Changes nothing."""
        out = self.folder
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

    def start(self) -> None:
        """Create the folder for a new run, removing a previous run's parts."""
        for name in PARTS:
            path = self.folder / name
            if path.is_dir():
                shutil.rmtree(path)
            elif name != "lock":
                path.unlink(missing_ok=True)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise RunError(f"cannot create --out {self.folder} ({err.strerror}): name a folder you can "
                           "write to.") from None

    def claim(self) -> bool:
        """Take the lock (creating the folder); False when another live process holds it."""
        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            holder = int(self.lock.read_text())
            os.kill(holder, 0)
            return holder == os.getpid()
        except (FileNotFoundError, ValueError, ProcessLookupError):
            pass
        self.lock.write_text(str(os.getpid()))
        return True

    def release(self) -> None:
        """Give the lock back, if this process holds it."""
        try:
            if int(self.lock.read_text()) == os.getpid():
                self.lock.unlink()
        except (FileNotFoundError, ValueError):
            pass

    def refuse_old_layout(self) -> None:
        """A bench run started before :class:`Run` kept its parameters in other files: refuse to
        mix them with this layout, saying what to do."""
        old = sorted(p.name for pattern in OLD_LAYOUTS for p in self.folder.glob(pattern))
        if old and not self.last.is_dir():
            raise RunError(f"{self.folder} holds a run saved in an older layout ({', '.join(old)}), which "
                           "cannot be continued: finish it with the bench of that time, or move the folder "
                           "away to train the run again.")

    def save(self, model, state, improved: bool, record: dict, info: dict | None = None) -> dict:
        """Save the run after an epoch (``improved``: it is the best so far) or at a stop:
        the model and training state to resume/, the model to checkpoint/ when improved,
        then the record, which names both. Returns the record written."""
        info = info or {}
        if improved:
            best = self._save_model(model, self.best, {**info, "epoch": state.epoch - 1})
            record["checkpoint"] = {"params_sha256": best["params_sha256"], "epoch": best["epoch"]}
        last = self._save_model(model, self.last, {**info, "state": asdict(state)})
        record["resume"] = {"params_sha256": last["params_sha256"], "epoch": state.epoch, "batch": state.batch}
        self.write(record)
        read_record(self.last)                   # what was written reads back
        return record

    def _save_model(self, model, directory: Path, info: dict) -> dict:
        if not self.built_in_code:
            return model.save(directory, info)
        directory.mkdir(parents=True, exist_ok=True)
        save_parameters(model.pc, directory / "params.dy")
        record = {"params_sha256": sha256_of(directory / "params.dy"), **info}
        write_atomic(directory / RECORD, json.dumps(record, indent=1) + "\n")
        return record

    def write(self, record: dict) -> None:
        self.record.parent.mkdir(parents=True, exist_ok=True)
        write_json(self.record, record)

    def load(self) -> dict:
        """The record, after checking that checkpoint/ and resume/ are the ones it names."""
        if not self.record.is_file():
            raise RunError(f"{self.folder} holds no run (no {self.record.name}): name the --out folder of a "
                           "`python -m course train` run.")
        try:
            record = json.loads(self.record.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise RunError(f"{self.record} is not valid JSON ({err}): {DAMAGED}") from None
        for part, folder in (("checkpoint", self.best), ("resume", self.last)):
            expected = record.get(part, {}).get("params_sha256")
            if expected is None:
                continue
            if not (folder / RECORD).is_file():
                raise RunError(f"{folder} is missing, though {self.record} names it: {DAMAGED}")
            if read_record(folder).get("params_sha256") != expected:
                raise RunError(f"{self.record} and {folder} belong to different models (a save was cut "
                               f"short, or files were copied in): {DAMAGED}")
        return record

    def resume_state(self):
        """The :class:`course.training.TrainState` saved in resume/, and resume/'s record."""
        from course import training
        record = read_record(self.last)
        return training.TrainState(**record["state"]), record
