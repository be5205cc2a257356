"""A cell's marks are a mapping whatever JSON the student wrote (the whole path: tests/test_autograder.py,
student `unreadable_marks`)."""
import nbformat
import pytest

from autograder import trusted
from autograder.cellmarks import course_marks, marks
from tests.conftest import ROOT

ANSWER = {"grade_id": "gru_step", "solution": True, "grade": False}


@pytest.mark.parametrize("cell", [None, "x", {}, {"metadata": []}, {"metadata": "x"}, {"metadata": {"nbgrader": "x"}},
                                  {"metadata": {"nbgrader": 3}}, {"metadata": {"nbgrader": ["grade_id"]}},
                                  {"metadata": {"nbgrader": {"grade_id": ["gru_step"], "solution": True}}}])
def test_marks_that_are_not_a_mapping_are_none(cell):
    assert marks(cell) == {} and course_marks(cell) == {}


def test_marks_are_the_cells_own():
    cell = nbformat.v4.new_code_cell(metadata={"nbgrader": dict(ANSWER), "course": {"copy_of": "gru_step"}})
    assert marks(cell) is cell.metadata.nbgrader and marks(cell)["grade_id"] == "gru_step"
    assert course_marks(cell) == {"copy_of": "gru_step"}


def test_the_grader_reads_a_notebook_with_unreadable_marks():
    nb = trusted.read_submission(ROOT / "autograder" / "samples" / "submissions" / "unreadable_marks" / "05_gru.ipynb")
    spec = trusted.spec_of(ROOT / "solutions" / "05_gru.ipynb")
    cells, duplicates = trusted.answer_sources(nb, spec.answers)
    assert [gid for gid, _ in cells] == ["gru_step"] and duplicates == []
    assert "cells 1, 2, 5 of the notebook carry nbgrader marks" in trusted.odd_cells(nb, spec)[0]
