"""Small file utilities the course, the grader and the hub share (``course`` never imports
``autograder`` or ``hub``; they may import this)."""
from __future__ import annotations

import hashlib
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
