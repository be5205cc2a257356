"""Small helpers for writing course notebooks with correct nbgrader metadata.

    from autograder.nbbuild import md, code, answer, tests, write
    write("solutions/05_gru.ipynb", [md("# ..."), answer("gru_step", src), tests("gru_step_visible", 2, src)])

answer():  a cell the student fills in (nbgrader "autograded answer"); its code
           between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` is replaced by
           a ``raise NotImplementedError`` stub in the exercise.
tests():   a locked, graded test cell worth ``points``; lines between
           ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS`` never reach students.
locked():  a read-only cell students cannot edit (set-up, helpers).
"""
from __future__ import annotations

import nbformat

KERNEL = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
          "language_info": {"name": "python"}}


def _meta(grade_id, *, solution=False, grade=False, locked=False, points=None):
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3,
            "solution": solution, "task": False}
    if grade:
        meta["points"] = points
    return {"nbgrader": meta}


def md(text: str):
    return nbformat.v4.new_markdown_cell(text.strip("\n"))


def code(source: str):
    return nbformat.v4.new_code_cell(source.strip("\n"))


def answer(grade_id: str, source: str):
    return nbformat.v4.new_code_cell(source.strip("\n"), metadata=_meta(grade_id, solution=True))


def tests(grade_id: str, points: float, source: str):
    return nbformat.v4.new_code_cell(source.strip("\n"),
                                     metadata=_meta(grade_id, grade=True, locked=True, points=points))


def locked(grade_id: str, source: str, markdown: bool = False):
    make = nbformat.v4.new_markdown_cell if markdown else nbformat.v4.new_code_cell
    return make(source.strip("\n"), metadata=_meta(grade_id, locked=True))


def write(path, cells):
    nb = nbformat.v4.new_notebook(cells=cells, metadata=KERNEL)
    for i, cell in enumerate(nb.cells):      # stable ids keep diffs small
        cell.id = f"cell-{i:03d}"
    nbformat.validate(nb)
    nbformat.write(nb, path)
