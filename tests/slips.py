"""A slip: one mistake a student makes, built from the solution notebook by a source substitution
in one answer cell. Each chapter's slips are the ``SLIPS`` of its checks' test file (the chapter
manifest names it); tests/test_slips.py grades each end to end and makes autograder/README.md's slip
table from them. This module imports nothing of the grader: the checks' tests also run where no
grader is installed (the DyNet 2.2 suite)."""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Slip:
    name: str            # what the student did, as the table says it
    chapter: str         # the notebook, "05_gru"
    answer: str          # grade_id of the answer cell the slip is in
    old: str             # text of the solution's answer cell ...
    new: str             # ... and what the student wrote instead
    visible: str         # grade_id of the visible test cell that catches it ...
    shows: str           # ... and a phrase of what it shows the student
    failing: tuple       # the hidden checks that fail; the first says ...
    says: str            # ... this (a phrase of its message)
    lost: float          # the points the slip costs the notebook (a new graded function leaves it as it is)
    explained: tuple = ()  # test cells that lose points with no visible failure of their own


def collect() -> list[Slip]:
    """Every chapter's slips, in the chapter manifest's order (the table's numbering)."""
    from autograder import chapters
    found = []
    for tests in chapters.test_modules():
        module = importlib.import_module(".".join(Path(tests).with_suffix("").parts))
        found += getattr(module, "SLIPS", [])
    return found
