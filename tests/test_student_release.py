"""The student release as a student gets it: built, copied out of the repository, installed
alone (the student's dependencies only) into a fresh virtual environment, once with dyNET38 2.1
(`pip install -e .`, as its README's table says) and once with 2.2 (`pip install .`, the package
copied alone into site-packages, finding the course's data from the notebook's folder) (the DyNet of macOS, Windows, Linux aarch64 and Python 3.13: its Linux x86-64
wheel is built from the same source), and run there: every lecture, every exercise with the
answers and the grader's hidden tests put back (the grader's package alone on the path for them: the
solutions run nowhere else; on 2.2 as a student runs them, on 2.1 as `nbgrader validate` and the
autograder run them, the capstone graded from the model its 2.2 run trained), `nbgrader validate` on a solved
exercise, `python -m course train`, and the message a student gets for `1 - z` on DyNet 2.2.

The two environments are built once per test run and shared by the xdist workers (tests/student.py);
each costs a minute or two of pip with a warm cache. Each lecture runs once per run and environment:
on DyNet 2.1 the book's build (tests/test_book.py) shows the outputs of that same run.
"""
import json
import shutil
from pathlib import Path

import nbformat
import pytest

from autograder import chapters, exercises
from autograder.probes import ch10_capstone as probes
from autograder.notebook_runner import stderr_in_graded_cells, with_answers
from tests.conftest import ROOT, once_per_run
from tests.student import editable, grader_alone, lecture_run, student_on

DYNETS = ["2.1", "2.2"]
LECTURES = [c.notebook("lectures").name for c in chapters.load()]     # the chapter manifest
EXERCISES = [c.notebook("exercises").name for c in chapters.load()]
GRADED_ON = "2.1"                  # the DyNet of the hub and of the grader's machine (Linux x86-64)
CAPSTONE = "10_capstone.ipynb"
CAPSTONE_MODEL = probes.CHECKPOINT_NAME        # the folder the capstone saves its model to, beside the notebook
INSTRUCTOR_ONLY = ["jupyterhub", "pamela", "sphinx", "myst-nb", "pytest", "playwright", "nh3"]
@pytest.fixture(scope="session", params=DYNETS, ids=[f"dynet{v}" for v in DYNETS])
def student(request, tmp_path_factory):
    return student_on(tmp_path_factory, request.param)


def test_the_environment_is_the_students_alone(student):
    dynet = student.home.name.removeprefix("student-dynet")
    where = student.run(student.python, "-c", "import course, importlib.metadata as m; "
                        "print(course.__file__); print(m.version('dyNET38'))", cwd=student.home).stdout.split()
    assert Path(where[0]).is_relative_to(student.release if editable(dynet) else student.venv) and where[1] == dynet
    root = student.run(student.python, "-c", "from course import paths; print(paths.ROOT)",
                       cwd=student.release / "lectures").stdout.strip()
    assert Path(root) == student.release.resolve(), "the course's folder is not found from a notebook's folder"
    assert not student.release.is_relative_to(ROOT)
    installed = student.run(student.python, "-m", "pip", "list", "--format=json").stdout
    names = {p["name"].lower() for p in json.loads(installed)}
    assert not names & set(INSTRUCTOR_ONLY), f"a student installs {names & set(INSTRUCTOR_ONLY)}"
    assert {"nbgrader", "jupyterlab", "ipykernel", "dynet38"} <= names
    cannot = student.run(student.python, "-c", "import autograder", check=False, cwd=student.home)
    assert cannot.returncode != 0, "the grader is importable from the student's environment"


@pytest.mark.notebook
@pytest.mark.parametrize("name", LECTURES)
def test_lecture_runs_in_the_release(student, name, tmp_path_factory):
    ran = lecture_run(tmp_path_factory, student, name)      # the release's own copy, in this environment
    assert (ran / "returncode").read_text() == "0", \
        f"lectures/{name} failed in the release:\n{(ran / 'stderr').read_text()[-4000:]}"


@pytest.mark.notebook
@pytest.mark.parametrize("name", EXERCISES)
def test_solved_exercise_passes_its_hidden_tests_in_the_release(student, name, tmp_path_factory):
    """The release's exercise with the answers and the grader's hidden tests put back (the solution notebook,
    cell for cell: tests/test_notebooks.py), run in the student's environment with the grader's package alone
    beside it: every cell runs, the visible and the hidden checks pass, and no graded cell writes to stderr
    (nbgrader would score it 0).

    On DyNet 2.2 (a laptop's: macOS, Windows) it runs as a student runs it; on 2.1 (the hub's and the
    grader's machine) as `nbgrader validate` and the autograder run it, NBGRADER_EXECUTION set: the exercises
    train their smaller models, and the capstone loads the model its 2.2 run trained and saved (a laptop's
    model, graded where the grader runs) rather than training for another 60 seconds."""
    graded = student.home.name == f"student-dynet{GRADED_ON}"
    model = None
    if name == CAPSTONE and graded:
        trained = solved_run(tmp_path_factory, student_on(tmp_path_factory, "2.2"), name)
        assert (trained / "returncode").read_text() == "0", f"the capstone did not train on DyNet 2.2:\n" \
                                                             f"{(trained / 'stderr').read_text()[-4000:]}"
        model = trained / CAPSTONE_MODEL
    if name == CAPSTONE and not graded:
        ran = solved_run(tmp_path_factory, student, name)            # once: the 2.1 run grades its model
    else:
        ran = solved_run(tmp_path_factory, student, name, graded=graded, model=model, once=False)
    assert (ran / "returncode").read_text() == "0", \
        f"exercises/{name} solved failed in the release:\n{(ran / 'stderr').read_text()[-4000:]}"
    executed = nbformat.read(ran / name, as_version=4)
    assert not stderr_in_graded_cells(executed), "graded cells wrote to stderr"
    if model is not None:
        printed = "".join(o.get("text", "") for c in executed.cells if c.cell_type == "code" for o in c.outputs)
        assert f"loaded {CAPSTONE_MODEL}/" in printed, "the graded capstone did not load the saved model"


def solved_run(tmp_path_factory, student, name, graded=False, model: Path | None = None, once=True) -> Path:
    """exercises/``name`` solved (the answers and the hidden tests put back) and executed in ``student``'s
    release: a folder holding ``returncode``, ``stderr`` and, when it ran to the end, the executed notebook
    and the capstone's saved model. ``model``: a saved capstone model put beside the notebook first.
    ``once``: one run per test run, shared (the capstone's 2.2 run, which the 2.1 run grades)."""
    def execute(folder: Path):
        solved = student.release / "exercises" / f"solved_{name}"
        nbformat.write(exercises.inject_solutions(nbformat.read(student.release / "exercises" / name, as_version=4),
                                                  nbformat.read(ROOT / "solutions" / name, as_version=4)), solved)
        if model is not None:
            shutil.copytree(model, solved.parent / CAPSTONE_MODEL, dirs_exist_ok=True)
        done = student.execute(solved, grader=grader_alone(folder / "grader"), graded=graded)
        (folder / "returncode").write_text(str(done.returncode))
        (folder / "stderr").write_text(done.stderr)
        if done.returncode == 0:
            shutil.copy(solved, folder / name)
            if name == CAPSTONE and not graded:
                shutil.copytree(solved.parent / CAPSTONE_MODEL, folder / CAPSTONE_MODEL)
    key = f"{student.home.name}-solved-{name}"
    if once:
        return once_per_run(tmp_path_factory, key, execute)
    folder = tmp_path_factory.mktemp(key)
    execute(folder)
    return folder


def test_nbgrader_validate_passes_a_solved_exercise_and_fails_the_stub(student):
    answered = student.release / "exercises" / "validate_05_gru.ipynb"
    nbformat.write(with_answers(student.release / "exercises" / "05_gru.ipynb", ROOT / "solutions" / "05_gru.ipynb"),
                   answered)
    passed = student.run(student.venv / "bin" / "nbgrader", "validate", answered, check=False)
    assert "Success! Your notebook passes all the tests." in passed.stdout, passed.stdout[-3000:] + passed.stderr[-2000:]
    stub = student.run(student.venv / "bin" / "nbgrader", "validate", student.release / "exercises" / "05_gru.ipynb",
                       check=False)
    assert "NotImplementedError" in stub.stdout, stub.stdout[-2000:]


def test_the_command_line_trains_in_the_release(student, tmp_path):
    out = tmp_path / "run"
    student.run(student.python, "-m", "course", "train", "--cell", "gru", "--epochs", "1", "--max-sentences", "300",
                "--embed", "16", "--hidden", "16", "--no-progress", "--out", out, timeout=600)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["test_ppl"] > 1


def test_one_minus_z_is_computed_or_explained_where_the_student_writes_it(student):
    """In a notebook on DyNet 2.2, `1 - z` fails with the cause and the fix in the error itself;
    on 2.1 it computes. `-z + 1`, the course's spelling, works on both."""
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("from course import runtime\ndy = runtime.init(seed=1)\nprint(runtime.describe())"),
        nbformat.v4.new_code_cell("z = dy.inputVector([0.25, -2.0])\nprint((-z + 1).npvalue())"),
        nbformat.v4.new_code_cell("print((1 - z).npvalue())")])
    path = student.release / "exercises" / "one_minus_z.ipynb"
    nbformat.write(nb, path)
    student.execute(path, allow_errors=True)
    cells = nbformat.read(path, as_version=4).cells
    assert "[0.75 3.  ]" in cells[1].outputs[0]["text"]
    outputs = cells[2].outputs
    if student.home.name.endswith("2.1"):
        assert "[0.75 3.  ]" in outputs[0]["text"]
    else:
        assert "DyNet 2.2: a number on the left" in cells[0].outputs[0]["text"]
        error = next(o for o in outputs if o["output_type"] == "error")
        assert error["ename"] == "TypeError" and "write `-x + 1` for `1 - x`" in error["evalue"], error


def test_one_minus_x_in_a_cell_file_is_trained_or_explained_on_the_command_line(student, tmp_path):
    (tmp_path / "mine.py").write_text(
        "import dynet as dy\n\n\n"
        "def leaky_shapes(d_in, d_h):\n    return {'W': (d_h, d_in)}\n\n\n"
        "def leaky_step(p, x, state):\n    (h,) = state\n"
        "    z = dy.logistic(p['W'] * x)\n    return (dy.cmult(1 - z, h) + z,)\n")
    done = student.run(student.python, "-m", "course", "train", "--cell", f"{tmp_path / 'mine.py'}:leaky_step",
                       "--epochs", "1", "--max-sentences", "50", "--embed", "8", "--hidden", "8", "--no-progress",
                       "--out", tmp_path / "run", check=False, timeout=600)
    if student.home.name.endswith("2.1"):
        assert done.returncode == 0, done.stderr[-2000:]
    else:
        assert done.returncode != 0 and "write `-x + 1` for `1 - x`" in done.stderr, done.stderr[-2000:]
        assert "line 11 of mine.py" in done.stderr, done.stderr[-2000:]
