"""Every notebook runs top to bottom, is stored clean, and exercises match solutions.

* solutions/ execute without an error, hidden tests and all, and no graded test cell
  writes to stderr (nbgrader would score it 0): in tests/test_student_release.py, as
  the release's exercises with the answers and hidden tests put back (the last point
  below), on both DyNet versions; lectures/ execute in the release too, and the book
  (tests/test_book.py) shows those runs (nothing in the release imports the grader those
  runs put beside it: tests/test_release.py);
* exercises/ are what nbgrader generates from solutions/ (regenerated and compared);
* an exercise as shipped runs until its first student cell, which stops with the
  expected NotImplementedError;
* an exercise with the solution cells and hidden tests put back is the solution
  notebook, cell for cell, so executing the solution executes it.
"""
import nbformat
import pytest

from autograder import exercises
from autograder.cellmarks import marks
from autograder import chapters
from tests.conftest import ROOT
from autograder.notebook_runner import execute, first_error

CHAPTERS = chapters.load()           # the manifest; tests/test_chapters.py checks it against the tree
LECTURES = [c.notebook("lectures") for c in CHAPTERS]
SOLUTIONS = [c.notebook("solutions") for c in CHAPTERS]
EXERCISES = [c.notebook("exercises") for c in CHAPTERS]
ALL = LECTURES + SOLUTIONS + EXERCISES


def ids(paths):
    return [f"{p.parent.name}/{p.stem}" for p in paths]


def test_every_chapter_has_a_lecture_a_solution_and_an_exercise():
    assert LECTURES, "no chapters in autograder/chapters.toml"
    assert all(p.is_file() for p in ALL), [str(p) for p in ALL if not p.is_file()]


@pytest.mark.parametrize("path", ALL, ids=ids(ALL))
def test_notebook_is_stored_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
    assert not dirty, f"{path.name}: cells {dirty} have outputs; strip them before committing"


@pytest.mark.parametrize("path", ALL, ids=ids(ALL))
def test_first_code_cell_starts_the_runtime(path):
    first = next(c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")
    assert "runtime.init(" in first.source and "runtime.describe()" in first.source


def test_exercises_are_generated_from_the_solutions(tmp_path):
    for generated in exercises.generate(out_dir=tmp_path):
        committed = ROOT / "exercises" / generated.name
        assert committed.exists(), f"{generated.name} missing: run `make exercises`"
        assert committed.read_bytes() == generated.read_bytes(), \
            f"exercises/{generated.name} is stale: run `make exercises` and commit"


@pytest.mark.parametrize("path", EXERCISES, ids=ids(EXERCISES))
def test_exercise_with_solutions_put_back_is_the_solution(path):
    exercise = nbformat.read(path, as_version=4)
    solution = nbformat.read(ROOT / "solutions" / path.name, as_version=4)
    restored = exercises.inject_solutions(exercise, solution)
    assert [c.source for c in restored.cells] == [c.source for c in solution.cells]
    for cell in exercise.cells:                        # and the student copy hides them
        assert "BEGIN SOLUTION" not in cell.source and "BEGIN HIDDEN TESTS" not in cell.source


@pytest.mark.notebook
@pytest.mark.parametrize("path", EXERCISES, ids=ids(EXERCISES))
def test_exercise_as_shipped_stops_at_the_first_student_cell(path):
    nb, _, _ = execute(path, stop_at_error=True)
    where = first_error(nb)
    assert where is not None, f"{path.name} ran through without the student's answers"
    index, ename = where
    assert ename == "NotImplementedError", f"cell {index} raised {ename}, not the expected stub error"
    answers = [i for i, c in enumerate(nb.cells) if marks(c).get("solution")]
    assert index >= answers[0], "an error before the first student cell"


def test_a_kernel_that_dies_at_its_start_is_started_again_and_no_other_failure_is(tmp_path, monkeypatch):
    """Two kernels started at once can be given the same free port; the one that finds it taken dies
    before it answers, before any cell has run: notebook_runner starts it again. A kernel that
    died another way is reported, not hidden."""
    from autograder import notebook_runner
    path = tmp_path / "two.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(1 + 1)")]), path)
    real, starts = notebook_runner.NotebookClient, []

    def dying(message, times):
        class Client(real):
            def execute(self, **kwargs):
                starts.append(message)
                if len(starts) <= times:
                    raise RuntimeError(message)
                return super().execute(**kwargs)
        return Client
    monkeypatch.setattr(notebook_runner, "NotebookClient", dying("Kernel died before replying to kernel_info", 2))
    nb, _, error = execute(path)
    assert error is None and len(starts) == 3 and nb.cells[0].outputs[0]["text"] == "2\n"
    starts.clear()
    monkeypatch.setattr(notebook_runner, "NotebookClient", dying("Kernel died before replying to kernel_info", 3))
    with pytest.raises(RuntimeError, match="kernel_info"):          # three starts, then it says so
        execute(path)
    starts.clear()
    monkeypatch.setattr(notebook_runner, "NotebookClient", dying("Kernel didn't respond in 60 seconds", 1))
    with pytest.raises(RuntimeError, match="respond"):
        execute(path)
    assert len(starts) == 1
