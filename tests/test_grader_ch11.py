"""Chapter 11 through the instructor's commands (`python -m autograder.grade autograde`, then
`grades`): the solution gets full marks, the stub 0 and each sample student of chapter 11 its
expected score, with its slip named. Apart from tests/test_checks_ch11.py, which the DyNet 2.2 suite
runs without the grader installed."""
import csv
import json
import subprocess
import sys

import pytest

from autograder import grader
from autograder.samples import make_samples
from tests.conftest import ROOT

# one unit of work: the class graded once (a module fixture), not once on each worker
pytestmark = pytest.mark.xdist_group("grader-ch11")
SAMPLES = {name: info for name, info in json.loads((ROOT / "autograder" / "samples" / "expected.json").read_text()).items()
           if info["notebook"] == "11_attention"}


@pytest.fixture(scope="module")
def class_graded(tmp_path_factory):
    """The solution, the stub and chapter 11's sample students, through the instructor's commands."""
    tmp = tmp_path_factory.mktemp("ch11")
    submissions, course = tmp / "class", tmp / "course"
    for student, source in (("solution", ROOT / "solutions" / "11_attention.ipynb"),
                            ("stub", ROOT / "exercises" / "11_attention.ipynb")):
        (submissions / student).mkdir(parents=True)
        (submissions / student / "11_attention.ipynb").write_bytes(source.read_bytes())
    for student in SAMPLES:
        make_samples.write_student(student, submissions)
    run = subprocess.run([sys.executable, "-m", "autograder.grade", "autograde", str(submissions),
                          "--course", str(course), "--workers", "2"],
                         cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr
    grades = subprocess.run([sys.executable, "-m", "autograder.grade", "grades", "--course", str(course)],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert grades.returncode == 0, grades.stdout + grades.stderr
    rows = {r["student"]: r for r in csv.DictReader(open(course / "course-grades.csv"))}
    told = {}
    for student in rows:
        record = json.loads((course / "trusted" / student / "11_attention.json").read_text())
        told[student] = " ".join(p for c in record["cells"] for ps in c["checks"].values() for p in ps)
    return rows, told


def expected_score(info) -> float:
    total = 0.0
    for _, _, weights in grader.spec_of(ROOT / "solutions" / "11_attention.ipynb").tests:
        for name, points in weights.items():
            if info["checks"].get(name, info["functions"]["causal_attention"]):
                total += points
    return total


def test_the_grader_gives_the_solution_full_marks_and_the_stub_nothing(class_graded):
    rows, told = class_graded
    assert float(rows["solution"]["score"]) == 5.0, rows["solution"]
    assert float(rows["stub"]["score"]) == 0.0 and "NotImplementedError" in told["stub"], rows["stub"]


@pytest.mark.parametrize("student", sorted(SAMPLES))
def test_each_sample_student_gets_its_score_and_its_slip_named(class_graded, student):
    rows, told = class_graded
    assert float(rows[student]["score"]) == pytest.approx(expected_score(SAMPLES[student])), rows[student]
    if SAMPLES[student]["words"]:
        assert SAMPLES[student]["words"] in told[student], told[student]
