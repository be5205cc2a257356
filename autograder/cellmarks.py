"""A notebook cell's marks, read from metadata a student may have written anything into.

A submission is any valid JSON: a cell's ``metadata.nbgrader`` may be a string or a
number, its grade_id a list (``nbformat.reads`` does not validate them, and nbgrader's
own ``utils.is_grade`` and friends assume a mapping). Every reader of marks goes through
here and gets a mapping; no third-party import, so the grader and a grading worker can
use it without loading nbgrader.
"""
from __future__ import annotations

from collections.abc import Mapping


def _entry(cell, key: str) -> Mapping:
    metadata = cell.get("metadata") if isinstance(cell, Mapping) else None
    entry = metadata.get(key) if isinstance(metadata, Mapping) else None
    return entry if isinstance(entry, Mapping) else {}


def marks(cell) -> Mapping:
    """The cell's nbgrader marks (grade_id, grade, solution, locked, points): the
    metadata's own mapping, or ``{}`` when the cell, its metadata or the marks are
    absent or not a mapping, or the grade_id is not text (nbgrader could not read them)."""
    found = _entry(cell, "nbgrader")
    return found if isinstance(found.get("grade_id", ""), str) else {}


def has_marks(cell) -> bool:
    """Whether the cell carries nbgrader marks of any kind, readable or not."""
    metadata = cell.get("metadata") if isinstance(cell, Mapping) else None
    return isinstance(metadata, Mapping) and "nbgrader" in metadata


def is_test(cell) -> bool:
    """An autograded test cell: a code cell marked as a grade cell and not as an answer."""
    meta = marks(cell)
    return cell.get("cell_type") == "code" and bool(meta.get("grade")) and not meta.get("solution")


def unmark(cell, **course):
    """The cell's nbgrader marks removed (it stays, ungraded), and the course's own marks
    set to ``course`` (why: ``copy_of``, ``ignored``)."""
    cell["metadata"].pop("nbgrader", None)
    cell["metadata"]["course"] = course


def course_marks(cell) -> Mapping:
    """The course's own marks (``copy_of``, ``ignored``: see nbgrader_plugin), ``{}``
    as :func:`marks` gives it."""
    return _entry(cell, "course")
