"""A cell's marks are a mapping whatever JSON the student wrote (the whole path: tests/test_autograder.py,
student `unreadable_marks`)."""
import re

import nbformat
import pytest

from autograder import grader
from autograder.cellmarks import course_marks, has_marks, is_test, marks, unmark
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
    nb = grader.read_submission(ROOT / "autograder" / "samples" / "submissions" / "unreadable_marks" / "05_gru.ipynb")
    spec = grader.spec_of(ROOT / "solutions" / "05_gru.ipynb")
    cells, duplicates = grader.answer_sources(nb, spec.answers)
    assert [gid for gid, _ in cells] == ["gru_step"] and duplicates == []
    assert "cells 1, 2, 5 of the notebook carry nbgrader marks" in grader.odd_cells(nb, spec)[0]


@pytest.mark.parametrize("cell", [nbformat.v4.new_code_cell(metadata={"nbgrader": {"grade_id": "t", "grade": True}}),
                                  nbformat.v4.new_code_cell(metadata={"nbgrader": "x"}),
                                  nbformat.v4.new_markdown_cell(metadata={"nbgrader": {"grade_id": "t", "grade": True}})])
def test_a_test_cell_is_an_autograded_code_cell_with_readable_marks(cell):
    readable = isinstance(cell.metadata.nbgrader, dict) and cell.cell_type == "code"
    assert is_test(cell) == readable and has_marks(cell)
    unmark(cell, ignored=True)
    assert not has_marks(cell) and marks(cell) == {} and course_marks(cell) == {"ignored": True}
    assert not is_test(nbformat.v4.new_code_cell(metadata={"nbgrader": {"grade_id": "a", "grade": True,
                                                                        "solution": True}}))


# what reads a cell's nbgrader marks itself, not through cellmarks (nbgrader's own readers included)
DIRECT = re.compile(r"""metadata(\[["']nbgrader["']\]|\.nbgrader\b|\.get\(["']nbgrader)|["']nbgrader["'] (not )?in\b"""
                    r"""|\butils\.is_(grade|solution|locked|task)\(""")


def test_every_reader_of_nbgrader_marks_goes_through_cellmarks():
    """The grader's code (the sample class's maker, which writes marks, aside) reads marks only
    through autograder/cellmarks.py, which gives a mapping whatever the student wrote."""
    readers = [f"{path.relative_to(ROOT)}:{number}" for path in sorted((ROOT / "autograder").rglob("*.py"))
               if path.name != "cellmarks.py" and "samples" not in path.parts and "work" not in path.parts
               for number, line in enumerate(path.read_text().splitlines(), 1) if DIRECT.search(line)]
    assert readers == [], f"read the marks with autograder.cellmarks instead: {readers}"
