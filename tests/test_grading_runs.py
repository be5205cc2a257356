"""One nbgrader run per submission, forked from a server that has imported nbgrader and the grader
once (grade.nbgrader): many runs at once on one gradebook, none lost to SQLite's lock; a run that
outlives its time is killed and raises, and the next run grades as before."""
from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import nbformat
import pytest

from autograder import grade
from tests.conftest import ROOT, sandbox_processes

SAMPLES = ROOT / "autograder" / "samples" / "submissions"


def class_of_copies(folder, n: int, student: str = "correct"):
    for i in range(n):
        shutil.copytree(SAMPLES / student, folder / f"s{i:02d}")
    return folder


def test_a_pool_of_16_runs_on_one_gradebook_loses_none(tmp_path):
    course = tmp_path / "course"
    records = grade.autograde(class_of_copies(tmp_path / "class", 16), course=course, workers=16)
    assert len(records) == 16
    for r in records:
        assert (r["status"], r["score"], r["max_score"]) == ("graded", 5.0, 5.0), r
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "rnnlm-course") as gb:
        assert sorted(s.student_id for s in gb.assignment_submissions("05_gru")) == [f"s{i:02d}" for i in range(16)]
        assert all(s.score == 5.0 for s in gb.assignment_submissions("05_gru"))


def test_a_run_waits_for_a_gradebook_locked_longer_than_sqlites_default(tmp_path):
    course = tmp_path / "course"
    grade.autograde(class_of_copies(tmp_path / "class", 1), course=course, workers=1)
    held = 12                                         # SQLite's Python driver gives up after 5 s
    lock = sqlite3.connect(course / "gradebook.db", isolation_level=None, check_same_thread=False)
    lock.execute("BEGIN EXCLUSIVE")
    release = threading.Timer(held, lock.execute, ["COMMIT"])
    release.start()
    start = time.monotonic()
    try:
        grade.autograde_submission(course, "s00", "05_gru")
    finally:
        release.join()
        lock.close()
    assert time.monotonic() - start >= held
    [record] = grade.load_records(course)
    assert (record["status"], record["score"]) == ("graded", 5.0), record


def orphaned_sandboxes() -> list:
    """Sandbox processes whose grading process is gone: their parent is now init (PID 1)."""
    return [args for ppid, args in sandbox_processes() if ppid == 1]


def test_a_run_past_its_time_is_killed_and_the_next_one_grades(tmp_path):
    """The killed run's answer cell sleeps a minute, so that it outlives its second on any machine (a
    plain run of this submission can finish within one); its sandbox is killed with it (it ran on,
    orphaned, before); the next run grades the submission as it was."""
    course = tmp_path / "course"
    grade.autograde(class_of_copies(tmp_path / "class", 1), course=course, workers=1)
    submitted = course / "submitted" / "s00" / "05_gru" / "05_gru.ipynb"
    as_submitted = submitted.read_bytes()
    slow = nbformat.reads(as_submitted.decode(), as_version=4)
    answer = next(c for c in slow.cells if c.get("metadata", {}).get("nbgrader", {}).get("solution"))
    answer.source = "import time\ntime.sleep(60)\n" + answer.source
    nbformat.write(slow, submitted)
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        grade.nbgrader("autograde", "05_gru", "--student", "s00", "--force", course=course, timeout=1)
    assert time.monotonic() - started < 30, "the run was not stopped at its time"
    deadline = time.monotonic() + 10                 # its sandbox dies with it, not a minute later
    while orphaned_sandboxes() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not orphaned_sandboxes(), "the killed run's sandbox runs on:\n" + "\n".join(orphaned_sandboxes())
    submitted.write_bytes(as_submitted)
    grade.autograde_submission(course, "s00", "05_gru")
    [record] = grade.load_records(course)
    assert (record["status"], record["score"]) == ("graded", 5.0), record


def test_a_failing_nbgrader_command_reports_its_output(tmp_path):
    course = tmp_path / "course"
    grade.prepare_course(course, ["05_gru"])
    run = grade.nbgrader("autograde", "no_such_chapter", "--student", "nobody", course=course, check=False)
    assert run.returncode != 0 and "no_such_chapter" in run.stdout
    with pytest.raises(RuntimeError, match="no_such_chapter"):
        grade.nbgrader("autograde", "no_such_chapter", course=course)


def test_a_new_gradebook_records_the_schema_revision_nbgrader_itself_reads(tmp_path, monkeypatch):
    """The fork server reads nbgrader's schema revision once (nbgrader_preload.alembic_head) for the
    gradebooks its runs create: it must be the one nbgrader's own `alembic heads` process prints."""
    from nbgrader.api import get_alembic_version
    # nbgrader's `alembic` command, on the PATH as the runs have it (grade.nbgrader)
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    course = tmp_path / "course"
    grade.prepare_course(course, ["05_gru"])
    with sqlite3.connect(course / "gradebook.db") as db:
        [(recorded,)] = db.execute("SELECT version_num FROM alembic_version").fetchall()
    assert recorded == get_alembic_version()
