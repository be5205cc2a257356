"""Names a student controls, attacked end to end through the real commands (issue 39, cases 2 and 7).

One student (``mallory``) hands in her own correct 05_gru and, beside it, notebooks whose names try
to leave her folder (``...ipynb`` is chapter ``..``, ``..ipynb``, ``.ipynb``, a folder ``...``),
look like a path (a division slash) or carry control characters (``\\r``, ``ESC[2K``, ``ESC[8m``, a
bidi override) written to forge a "5 / 5 graded" row for another student and hide her own; a student
folder and top-level files with such names come too. The class is graded twice in one course
directory (a term's second run, where the old rmtree of ``submitted/mallory/..`` emptied the class):
the other students' submitted files and grades stay exactly as they were, every odd name is refused
with its reason, nothing is written outside a student's own folder, and the table of `autograde` and
`grades`, course-grades.csv and `nbgrader export` hold no control character.
"""
import contextlib
import csv
import io
import os
import shutil
import subprocess
import sys
import unicodedata

import pytest

from autograder import grade, intake
from course.files import sha256_of
from tests.conftest import ROOT

pytestmark = pytest.mark.xdist_group("attacks-class")
NOTEBOOK = ROOT / "autograder" / "samples" / "submissions" / "correct" / "05_gru.ipynb"
# her row erased, a row for the victim written over it (its "/" a fraction slash: a file name holds no
# "/"), and the rest of her row (status, reason) hidden
FORGED = "\x1b[2K\r" + "aa_victim".ljust(24) + " 05_gru   0 \u2044 5  failed\x1b[8m"
ODD = ["...ipynb", "..ipynb", ".ipynb", "05_gru\u2215..ipynb", "05_gru .ipynb", FORGED + ".ipynb",
       "05_gru\u202eq.ipynb", "\x1b]0;owned\x07.ipynb"]
VICTIMS = ("aa_victim", "zz_victim")


def controls(text: str) -> list:
    """The control and format characters in ``text`` (line ends aside)."""
    return [c for c in text.replace("\r\n", "\n") if c != "\n" and
            (unicodedata.category(c)[0] == "C" or c in "\u2028\u2029")]


def snapshot(course) -> dict:
    """The victims' submitted files (the second run copies them again from the same work, with the
    time first seen: the same bytes) and their gradebook scores."""
    from nbgrader.api import Gradebook
    files = {str(p.relative_to(course)): sha256_of(p) for v in VICTIMS
             for p in sorted((course / "submitted" / v).rglob("*")) if p.is_file()}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        scores = {v: gb.find_submission("05_gru", v).score for v in VICTIMS}
    return {"files": files, "scores": scores}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("names")
    submissions, course = base / "class", base / "course"
    for student in ("aa_victim", "mallory"):
        (submissions / student).mkdir(parents=True)
        shutil.copy(NOTEBOOK, submissions / student / "05_gru.ipynb")
    (submissions / "zz_victim" / "05_gru").mkdir(parents=True)          # nbgrader's layout
    shutil.copy(NOTEBOOK, submissions / "zz_victim" / "05_gru" / "05_gru.ipynb")
    for name in ODD:
        shutil.copy(NOTEBOOK, submissions / "mallory" / name)
    (submissions / "mallory" / "...").mkdir()                             # a folder that is chapter "..."
    shutil.copy(NOTEBOOK, submissions / "mallory" / "..." / "....ipynb")
    (submissions / "eve\x1b[2K\r").mkdir()                               # not a student id
    shutil.copy(NOTEBOOK, submissions / "eve\x1b[2K\r" / "05_gru.ipynb")
    for name in ("05_gru.ipynb", "\x1b[8m.ipynb"):                        # not in a student's folder
        shutil.copy(NOTEBOOK, submissions / name)

    out = io.StringIO()                                                   # first run: `make autograde`
    with contextlib.redirect_stdout(out):
        assert grade.main(["autograde", str(submissions), "--course", str(course)]) == 0
    first, before = out.getvalue(), snapshot(course)
    run = subprocess.run([sys.executable, "-m", "autograder.grade", "autograde", str(submissions),
                          "--course", str(course)], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr
    after = snapshot(course)
    grades = subprocess.run([sys.executable, "-m", "autograder.grade", "grades", "--course", str(course)],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert grades.returncode == 0, grades.stdout + grades.stderr
    grade.nbgrader("export", course=course)
    return {"course": course, "tables": [first, run.stdout, grades.stdout], "before": before, "after": after,
            "records": grade.load_records(course)}


def test_the_other_students_files_and_grades_are_untouched(graded):
    assert graded["before"]["scores"] == graded["after"]["scores"] == {v: 5.0 for v in VICTIMS}
    assert graded["after"]["files"] == graded["before"]["files"]
    for v in VICTIMS:
        for top, name in (("submitted", "05_gru/05_gru.ipynb"), ("trusted", "05_gru.json"),
                          ("autograded", "05_gru/05_gru.ipynb")):
            assert (graded["course"] / top / v / name).is_file(), (top, v)
    rows = {(r["student_id"], r["assignment"]): float(r["score"])
            for r in csv.DictReader(open(graded["course"] / "grades.csv"))}
    assert rows == {("aa_victim", "05_gru"): 5.0, ("mallory", "05_gru"): 5.0, ("zz_victim", "05_gru"): 5.0}


def test_nothing_is_written_outside_a_students_own_folder(graded):
    course = graded["course"]
    for top in ("submitted", "trusted", "autograded"):
        assert sorted(os.listdir(course / top)) == ["aa_victim", "mallory", "zz_victim"], top
        for student in os.listdir(course / top):
            assert sorted(os.listdir(course / top / student)) in (["05_gru"], ["05_gru.json"]), (top, student)
    assert not (course / "05_gru").exists() and not (course / "..json").exists()


def test_each_odd_name_is_refused_with_its_reason_and_her_own_work_graded(graded):
    first = graded["tables"][0]
    lines = first.splitlines()
    refused = [line for line in lines if line.startswith("mallory ") and "failed" in line]
    assert len(refused) == len(ODD) + 1, first                  # and the folder "..."
    assert all("is not one of" in line for line in refused), refused        # the table cuts a reason at 90
    assert any(line.startswith("mallory ") and "5 / 5" in line and "graded" in line for line in lines), first
    assert "\\x1b[2K\\raa_victim" in first and "failed\\x1b[8m" in first, "the forged name, shown escaped"
    for name in ("eve\\x1b[2K\\r", "05_gru.ipynb", "\\x1b[8m.ipynb"):
        assert any(line.startswith(name) and "failed" in line for line in lines), (name, first)


def test_no_control_character_reaches_the_terminal_or_the_csv(graded):
    for text in graded["tables"]:
        assert controls(text) == [], text
        victim_rows = [line for line in text.splitlines() if line.startswith("aa_victim ")]
        assert victim_rows and all("5 / 5" in line for line in victim_rows), text
    for name in ("course-grades.csv", "grades.csv"):
        text = (graded["course"] / name).read_text(encoding="utf-8")
        assert controls(text) == [], name
    written = graded["course"] / "table.csv"
    grade.write_csv(graded["records"] + [{"student": FORGED, "notebook": "05_gru", "score": 0.0, "max_score": 5.0,
                                          "status": "failed", "reason": "\u202e" + FORGED}], written)
    assert controls(written.read_text(encoding="utf-8")) == []


def test_names_are_checked_whole_before_a_path_is_made(tmp_path):
    for names in (["mallory", ".."], ["..", "05_gru"], ["mallory", ""], ["a/b"], ["mallory", "05_gru\r"]):
        with pytest.raises(ValueError):
            intake.inside(tmp_path, *names)
    assert intake.inside(tmp_path, "mallory", "05_gru") == tmp_path / "mallory" / "05_gru"
    with pytest.raises(ValueError, match="course's own submitted"):
        grade.autograde(tmp_path / "course" / "submitted", course=tmp_path / "course")
