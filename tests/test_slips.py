"""The slip table of autograder/README.md, tested end to end.

Each slip is one mistake a student makes, built from the solution notebook by a
source substitution in one answer cell (:class:`tests.slips.Slip`); each chapter's are
the ``SLIPS`` of its checks' test file, which the chapter manifest names. For each:

1. the trusted grader (:func:`autograder.grader.grade`, one sandbox run) fails
   exactly the hidden checks the table names, says the expected message, and gives
   every test cell the share of its points that the other checks earn (the split the
   solution's ``points=`` states) and the notebook the expected score;
2. run as the student runs it (every code cell in order, the test cells without
   their hidden part, in this process), the visible test cell named in the table
   fails with the message the table quotes, and so does the visible part of every
   test cell that loses points: no slip passes visibly and then fails hidden.

The README's tables are rendered from ``SLIPS`` and the solutions' points
(``python -m tests.test_slips`` prints them, ``--write`` puts them into autograder/README.md)
and a test keeps them the same.
"""
from __future__ import annotations

import contextlib
import io
import json
import warnings
import re
import sys

import nbformat
import pytest

from autograder import chapters, grader
from autograder.cellmarks import marks
from autograder.reference.grading import all_checks, check_calls, split_points
from tests import slips
from tests.conftest import ROOT, once_per_run
from tests.slips import Slip

LIMITS = grader.Limits(wall_s=120, cpu_s=120)
HIDDEN = "### BEGIN HIDDEN TESTS"


SLIPS = slips.collect()      # every chapter's, in the chapter manifest's order


def solution_with(slip: Slip):
    """The solution notebook with the slip in its answer cell."""
    nb = nbformat.read(ROOT / "solutions" / f"{slip.chapter}.ipynb", as_version=4)
    cells = [c for c in nb.cells if marks(c).get("grade_id") == slip.answer]
    assert len(cells) == 1 and cells[0].source.count(slip.old) == 1, \
        f"{slip.name}: {slip.old!r} must occur once in the answer cell {slip.answer}"
    cells[0].source = cells[0].source.replace(slip.old, slip.new)
    return nb


def is_test(cell) -> bool:
    return bool(marks(cell).get("grade"))


def visible_failures(nb) -> dict:
    """Run the notebook as a student does, up to its last test cell, in this process:
    every code cell in order, each test cell without its hidden part. Returns
    {test cell: its error} for the test cells that fail."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    last = max(i for i, c in enumerate(code) if is_test(c))
    namespace = {"__name__": "__main__"}
    failures = {}
    for cell in code[:last + 1]:
        source = cell.source.split(HIDDEN)[0]
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")          # a slip's log(0): the student sees it too
            try:
                exec(compile(source, marks(cell).get("grade_id", "cell"), "exec"),
                     namespace)
            except Exception as err:
                if not is_test(cell):
                    raise
                failures[marks(cell)["grade_id"]] = f"{type(err).__name__}: {err}"
    return failures


def expected_points(slip: Slip) -> dict:
    """Each test cell's points: the shares of its checks that do not fail."""
    return {gid: sum(share for name, share in shares.items() if name not in slip.failing)
            for gid, shares in grader.spec_of(ROOT / "solutions" / f"{slip.chapter}.ipynb").shares.items()}


def table() -> str:
    """The slip table of autograder/README.md."""
    lines = ["| # | chapter | slip | visible check that fails: what it shows | hidden checks that fail | score "
             "| message |",
             "|---|---|---|---|---|---|---|"]
    for n, slip in enumerate(SLIPS, 1):
        total = sum(points for _, points, _ in grader.spec_of(ROOT / "solutions" / f"{slip.chapter}.ipynb").tests)
        failing = ", ".join(f"`{name}`" for name in slip.failing)
        lines.append(f"| {n} | {slip.chapter} | {slip.name} | `{slip.visible}`: `{slip.shows}` ... | {failing} | "
                     f"{total - slip.lost:g}/{total:g} | `{slip.says}` ... |")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="session")
def graded(tmp_path_factory):
    """Each slip graded once per run by the trusted grader (one sandbox run each), by the worker
    that meets it first; both of its tests, on either worker, read that result."""
    def grade(slip: Slip) -> grader.Result:
        def build(folder):
            path = folder / f"{slip.chapter}.ipynb"
            nbformat.write(solution_with(slip), path)
            (folder / "result.json").write_text(json.dumps(grader.grade(path, slip.chapter, LIMITS).to_json()))
        folder = once_per_run(tmp_path_factory, f"slip{SLIPS.index(slip):02d}", build)
        return grader.Result(**json.loads((folder / "result.json").read_text()))
    return grade


@pytest.mark.parametrize("slip", SLIPS, ids=[f"{s.chapter}-{s.name}" for s in SLIPS])
def test_the_grader_gives_each_cell_its_points_and_says_why(slip, graded):
    result = graded(slip)
    assert result.failure is None and not result.aborted, (result.failure, result.notes)
    failing = {name for cell in result.cells for name, problems in cell["checks"].items() if problems}
    assert failing == set(slip.failing), {c["grade_id"]: c["checks"] for c in result.cells}
    said = [p for cell in result.cells for p in cell["checks"].get(slip.failing[0], [])]
    assert any(slip.says in p for p in said), said
    assert {c["grade_id"]: c["points"] for c in result.cells} == pytest.approx(expected_points(slip))
    assert result.max_score - result.score == pytest.approx(slip.lost)
    for cell in result.cells:               # messages are short and numbers-and-names only
        for problems in cell["checks"].values():
            assert all(len(p) <= 400 for p in problems), problems


@pytest.mark.parametrize("slip", SLIPS, ids=[f"{s.chapter}-{s.name}" for s in SLIPS])
def test_the_visible_checks_catch_it_first(slip, graded):
    failures = visible_failures(solution_with(slip))
    assert slip.visible in failures, f"{slip.name} passes the visible check {slip.visible}"
    assert slip.shows in failures[slip.visible], failures[slip.visible]
    losing = {c["grade_id"] for c in graded(slip).cells if c["points"] < c["max_points"]}
    assert losing - set(slip.explained) <= set(failures), \
        f"{sorted(losing - set(failures))} lose points but pass visibly"


@pytest.mark.parametrize("chapter", sorted({s.chapter for s in SLIPS}))
def test_the_solution_passes_every_visible_check(chapter):
    nb = nbformat.read(ROOT / "solutions" / f"{chapter}.ipynb", as_version=4)
    assert visible_failures(nb) == {}


def test_every_check_says_what_it_ran_where_to_reread_and_which_visible_check_matches():
    """The feedback page's metadata: ``about`` (the inputs, in words), ``lecture`` (a
    heading or equation the lecture holds), ``visible`` (the test cell whose hidden
    tests name the check)."""
    for name, c in all_checks().items():
        assert c.about and len(c.about) <= 300, name
        stem, where = c.lecture
        lecture = nbformat.read(ROOT / "lectures" / f"{stem}.ipynb", as_version=4)
        text = "\n".join(cell.source for cell in lecture.cells if cell.cell_type == "markdown")
        found = (f"\\tag{{{where[3:]}}}" in text) if where.startswith("eq ") else (where in text)
        assert found, f"{name}: {where!r} is not in lectures/{stem}.ipynb"
        solution = next(ch.notebook("solutions") for ch in chapters.load() if ch.prefix == name[:4])
        shares = grader.spec_of(solution).shares
        assert name in shares.get(c.visible, {}), f"{name}: {c.visible} is no test cell that names it"


def test_a_cell_splits_its_points_as_its_calls_say():
    source = ('check("ch05.a", f=f, points=2)\n'
              'check("ch05.b", f=f)\ncheck(\n    "ch05.c", f=f)\n')
    assert check_calls(source) == [("ch05.a", 2.0), ("ch05.b", None), ("ch05.c", None)]
    assert split_points(4, check_calls(source)) == {"ch05.a": 2.0, "ch05.b": 1.0, "ch05.c": 1.0}
    with pytest.raises(ValueError, match="do not add up"):
        split_points(3, [("ch05.a", 2.0), ("ch05.b", 2.0)])
    with pytest.raises(ValueError, match="do not add up"):
        split_points(3, [("ch05.a", 2.0)])


def points_table() -> str:
    """Each test cell's points and their split over its checks, for every chapter with a cell that
    splits its points (00, 01 and the capstone hold one check per cell: nothing to split)."""
    lines = ["| chapter | test cell: points = check points + ... | total |", "|---|---|---|"]
    for path in (c.notebook("solutions") for c in chapters.load()):
        spec = grader.spec_of(path)
        if all(len(shares) == 1 for shares in spec.shares.values()):
            continue
        cells = "; ".join(f"`{gid}` {points:g} = " + " + ".join(f"{name.split('.')[1]} {share:g}"
                                                              for name, share in spec.shares[gid].items())
                          for gid, points, _ in spec.tests)
        lines.append(f"| {path.stem} | {cells} | {sum(points for _, points, _ in spec.tests):g} |")
    return "\n".join(lines) + "\n"


def write_tables(readme=ROOT / "autograder" / "README.md") -> bool:
    """Put both tables into autograder/README.md in place of the ones there (each found by its
    header row); True if anything changed."""
    text = new = readme.read_text()
    for made in (points_table(), table()):
        header = re.escape(made.split("\n")[0])
        new, found = re.subn(header + r"\n\|[-|]+\|\n(?:\|.*\|\n)*", lambda _: made, new, count=1)
        if not found:
            raise ValueError(f"{readme} has no table headed {made.splitlines()[0]!r} to replace")
    readme.write_text(new)
    return new != text


def test_the_readme_tables_are_these():
    readme = (ROOT / "autograder" / "README.md").read_text()
    assert points_table() in readme and table() in readme, \
        "the tables of autograder/README.md are stale: python -m tests.test_slips --write"


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        print("autograder/README.md " + ("updated" if write_tables() else "already up to date"))
    else:
        print(points_table(), end="\n")
        print(table(), end="")
