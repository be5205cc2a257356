"""Small file utilities: a file's sha256, a text or JSON file or DyNet's parameters written whole,
a text file read gzipped or not. The instructors' tools use them too; this package imports nothing of theirs."""
from __future__ import annotations

import gzip
import hashlib
import json
import os
from pathlib import Path


def sha256_of(path) -> str:
    """The sha256 of a file's bytes, read a megabyte at a time."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_atomic(path, text: str) -> None:
    """Write a text file so that it is either the old one or the whole new one, never
    half of it (a temporary file beside it, then renamed over it)."""
    path = Path(path)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


def write_json(path, data) -> None:
    """``data`` as JSON (indent 1, a final newline), written whole as :func:`write_atomic` does."""
    write_atomic(path, json.dumps(data, indent=1) + "\n")


def save_parameters(pc, path) -> None:
    """A DyNet ParameterCollection saved whole: the old file or the new one, never half."""
    path = Path(path)
    partial = path.with_name(f".{path.name}.partial")
    pc.save(str(partial))
    os.replace(partial, path)


def read_text(path) -> str:
    """The UTF-8 text of ``path``, or of ``path``.gz if only that exists."""
    path = Path(path)
    if not path.exists() and path.with_name(path.name + ".gz").exists():
        path = path.with_name(path.name + ".gz")
    data = path.read_bytes()
    return (gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8")
