"""The result store: the grader's record of each submission, and the grade table's rows.

``<course>/trusted/<student>/<notebook>.json`` holds what the grader said about a submission
(its checks and notes; for one refused at intake or whose nbgrader run failed, the reason):
written by ``GradeInSandbox`` (atomically), or by ``grade.py`` for a submission that was not
graded, and read for the feedback page and the grade table's notes. It is never read back as a
score and never reused for grading: every run grades anew, and the score is the gradebook's
(:func:`load_records` reads it there, after the late penalty, as ``nbgrader export`` does).
"""
from __future__ import annotations

import json
from pathlib import Path

from autograder import intake
from course.files import write_json


def results_dir(course: Path) -> Path:
    return Path(course) / "trusted"


def save_result(course: Path, student: str, notebook: str, result: dict):
    """Write atomically: a reader sees the old result or the new one, never half of one. The
    names are checked whole (intake.inside): a result is never written outside trusted/<student>/."""
    path = intake.inside(results_dir(course), student, f"{notebook}.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, result)


def load_result(course: Path, student: str, notebook: str) -> dict | None:
    path = results_dir(course) / student / f"{notebook}.json"
    return json.loads(path.read_text()) if path.is_file() else None


def status_of(result: dict, needs_manual: bool) -> tuple:
    """(status, reason) of a graded submission, for the grade table."""
    if result.get("failure"):
        return "failed", result["failure"]
    reason = " ".join(result.get("notes", []))
    if needs_manual:
        return "needs manual grade", ("a written answer waits for a grade in formgrader. " + reason).strip()
    return "graded", reason


def load_records(course: Path) -> list:
    """Every graded submission: the gradebook's score after the late penalty (what ``nbgrader
    export``, formgrader and the feedback page show), the penalty and the time it was received,
    the grader's checks and notes, a status and its reason."""
    from nbgrader.api import Gradebook, MissingEntry
    records = []
    gradebook = Path(course) / "gradebook.db"
    with Gradebook(f"sqlite:///{gradebook}") as gb:
        for path in sorted(results_dir(course).glob("*/*.json")):
            student, notebook = path.parent.name, path.stem
            result = load_result(course, student, notebook)
            score, penalty, received, manual = 0.0, 0.0, None, False   # the gradebook's; a failure has none
            if not result.get("failure"):
                try:
                    nb = gb.find_submission_notebook(notebook, notebook, student)
                    penalty, received = nb.late_submission_penalty or 0.0, nb.assignment.timestamp
                    score, manual = max(0.0, nb.score - penalty), nb.needs_manual_grade   # as nbgrader export
                except MissingEntry:
                    result["failure"] = "not in the gradebook: nbgrader autograde did not record it"
            status, reason = status_of(result, manual)
            when = f"{received:%Y-%m-%d %H:%M:%S} UTC" if received else ""
            if penalty:                 # the time it was judged by, and whose record that is
                seen = "first seen by the grader" if intake.first_seen(course, student, notebook) \
                    else "the exchange's record"
                reason = (f"late, {penalty:g} point{'s' if penalty != 1 else ''} taken: received "
                          f"{when[:16]} UTC ({seen})" + (f"; {reason}" if reason else ""))
            records.append({"student": student, **result, "score": score, "late_penalty": penalty,
                            "received": when, "status": status, "reason": reason})
    return records
