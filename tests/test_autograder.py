"""The sample class, graded end to end (nbgrader + trusted grading), without a browser.

Every cheat gets no credit it did not earn, every failure has a readable reason,
no student's grade depends on another's, grading twice gives the same score,
feedback pages reveal no hidden test and no reference value.
"""
import csv
import json
import shutil

import nbformat
import pytest

from autograder import grade, trusted
from autograder.reference.grading import all_checks
from autograder.samples import make_samples
from tests.conftest import ROOT

SAMPLES = ROOT / "autograder" / "samples"
EXPECTED = json.loads((SAMPLES / "expected.json").read_text())
LIMITS = trusted.Limits(wall_s=40, cpu_s=40)


def expected_score(student: str) -> float:
    """Each test cell earns its points when every function its checks call is right."""
    info = EXPECTED[student]
    checks = all_checks()
    total = 0.0
    for _, points, names in trusted.spec_of(ROOT / "solutions" / f"{info['notebook']}.ipynb").tests:
        functions = {f for name in names for f in checks[name].functions}
        if names and all(info["fractions"].get(f, 0.0) == 1.0 for f in functions):
            total += points
    return total


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    work = tmp_path_factory.mktemp("work")
    records = grade.autograde(SAMPLES / "submissions", work=work, workers=4, cell_timeout=60,
                              wall_s=180, limits=LIMITS)
    return work, {r["student"]: r for r in records}


def test_sample_submissions_are_generated_from_the_exercises(tmp_path, monkeypatch):
    monkeypatch.setattr(make_samples, "OUT", tmp_path / "submissions")
    monkeypatch.setattr(make_samples, "HERE", tmp_path)
    make_samples.build()
    for path in sorted((tmp_path / "submissions").rglob("*.ipynb")):
        committed = SAMPLES / "submissions" / path.relative_to(tmp_path / "submissions")
        assert committed.read_bytes() == path.read_bytes(), \
            f"{committed} is stale: run `python -m autograder.samples.make_samples`"


@pytest.mark.parametrize("student", sorted(EXPECTED))
def test_each_submission_gets_exactly_what_it_earned(graded, student):
    _, records = graded
    record = records[student]
    assert record["score"] == expected_score(student), record
    assert record["status"] in EXPECTED[student]["statuses"], record
    if record["status"] != "graded" or record["score"] < record["max_score"]:
        assert record["reason"] or any(p for c in record["cells"] for p in c["checks"].values()), \
            "a lost point needs a readable reason"


def test_the_whole_class_is_graded_and_nothing_is_lost(graded):
    work, records = graded
    assert set(records) == set(EXPECTED)
    assert len(list((work / "results").glob("*/*.json"))) == len(EXPECTED)


def test_grading_the_same_submission_twice_gives_the_same_score(tmp_path):
    path = SAMPLES / "submissions" / "wrong_gate_order" / "04_forget_gate.ipynb"
    first = trusted.grade(path, limits=LIMITS)
    second = trusted.grade(path, limits=LIMITS)
    assert first.to_json() == second.to_json()


def test_grade_table_csv_has_a_status_for_everyone(graded, tmp_path):
    work, records = graded
    grade.write_csv(list(records.values()), tmp_path / "grades.csv")
    rows = list(csv.DictReader(open(tmp_path / "grades.csv")))
    assert len(rows) == len(EXPECTED)
    assert {r["status"] for r in rows} <= {"graded", "failed", "suspicious", "needs manual grade"}
    failed = [r for r in rows if r["status"] == "failed"]
    assert failed and all(r["reason"] for r in failed)


def test_feedback_shows_checks_but_no_hidden_test_or_reference_value(graded):
    _, records = graded
    solution = nbformat.read(ROOT / "solutions" / "05_gru.ipynb", as_version=4)
    hidden = [line.strip() for cell in solution.cells for line in cell.source.splitlines()
              if "check(" in line or "autograder" in line]
    for record in records.values():
        page = grade.feedback_html(record)
        assert record["notebook"] in page
        assert "BEGIN HIDDEN" not in page and not any(line in page for line in hidden)
