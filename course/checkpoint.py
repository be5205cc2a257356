"""What a saved model carries to prove it is whole: ``checkpoint.json``.

:meth:`course.lm.RNNLM.save` writes it beside ``params.dy``, ``vocab.json`` and
``config.json``, last: the sha256 of the parameters and of the vocabulary, and
whatever the saver adds (the command line records the corpus and, in a run's
``resume/``, where training stood). Loading checks the sha256 first, so a file that
was cut short, changed or mixed in from another save is refused, named, instead of
loading into wrong numbers. Plain Python: usable before DyNet starts.
"""
from __future__ import annotations

import json
from pathlib import Path

from course.data import DataError
from course.files import sha256_of

RECORD = "checkpoint.json"
DAMAGED = ("the checkpoint is damaged or was changed after it was saved (a copy cut short?); "
           "save or copy it again, or train again.")


class CheckpointError(DataError):
    """A checkpoint that cannot be trusted; the message names the file."""


def read_json(path: Path, kind: type):
    """A JSON file holding a ``kind`` (dict, list), or a :class:`CheckpointError` naming it."""
    try:
        value = json.loads(Path(path).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CheckpointError(f"{path} is not valid JSON ({err}): {DAMAGED}") from None
    if not isinstance(value, kind):
        raise CheckpointError(f"{path} holds a {type(value).__name__}, not a {kind.__name__}: {DAMAGED}")
    return value


def read_record(directory) -> dict:
    """A checkpoint's ``checkpoint.json``, after checking the parameters' sha256 against
    it ({} for a checkpoint saved before the record existed)."""
    directory = Path(directory)
    if not (directory / RECORD).is_file():
        return {}
    record = read_json(directory / RECORD, dict)
    if not (directory / "params.dy").is_file() or \
            sha256_of(directory / "params.dy") != record.get("params_sha256"):
        raise CheckpointError(f"{directory / 'params.dy'} does not match the checksum in "
                              f"{directory / RECORD}: {DAMAGED}")
    return record
