"""The student's environment, as tests/test_student_release.py checks it: the release built, copied
out of the repository and installed alone into a fresh virtual environment, once per test run and
DyNet version, shared by the xdist workers (tests.conftest.once_per_run); and the release's lectures
executed there, each once per run and DyNet version, read both by the release's test of that lecture
and, on DyNet 2.1, by the book's build (tests/test_book.py), which shows their outputs instead of
running the lectures a second time.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from autograder.notebook_runner import DIED_AT_START, KERNEL_STARTS
from autograder.release import build
from tests.conftest import ROOT, once_per_run

# the environment whose runs of the lectures the book shows (tests/test_book.py)
BOOK_DYNET = "2.1"
# the backend a student's Jupyter draws with (ipykernel's default): figures inline, as the book shows them
INLINE = "module://matplotlib_inline.backend_inline"


RUN_NOTEBOOK = """
import sys, nbformat
from pathlib import Path
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
path = Path(sys.argv[1])
nb = nbformat.read(path, as_version=4)
for attempt in range(1, KERNEL_STARTS + 1):      # a kernel that died at its start: autograder/notebook_runner.py
    client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}},
                            allow_errors=len(sys.argv) > 2)
    try:
        client.execute()
        break
    except CellExecutionError as err:
        sys.exit(str(err)[-4000:])
    except RuntimeError as err:
        if DIED_AT_START not in str(err) or attempt == KERNEL_STARTS:
            raise
nbformat.write(nb, path)
""".replace("KERNEL_STARTS", str(KERNEL_STARTS)).replace("DIED_AT_START", repr(DIED_AT_START))


def student_environ(backend="Agg", grader: Path | None = None, graded: bool = False):
    """The student's shell: nothing of the repository or its environment on any path; Matplotlib
    draws with ``backend`` (no windows). ``grader``: a folder holding only the grader's package, put on
    Python's path (for a notebook's hidden tests; the student's environment holds no grader).
    ``graded``: NBGRADER_EXECUTION set, as `nbgrader validate` and the autograder set it (an exercise
    then trains smaller models, and the capstone loads its saved model)."""
    env = {k: v for k, v in os.environ.items()
           if k not in {"PYTHONPATH", "VIRTUAL_ENV", "NBGRADER_EXECUTION", "JUPYTER_PATH",
                        "JUPYTER_CONFIG_DIR", "JUPYTER_CONFIG_PATH"}}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if not p.startswith(str(ROOT)))
    env["MPLBACKEND"] = backend
    if grader is not None:
        env["PYTHONPATH"] = str(grader)
    if graded:
        env["NBGRADER_EXECUTION"] = "autograde"
    return env


def grader_alone(folder: Path) -> Path:
    """``folder`` holding the repository's ``autograder`` package alone (a link), for ``grader=``:
    with it on the path the grader is importable, the repository's ``course`` is not."""
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / "autograder"
    if not link.is_symlink():
        link.symlink_to(ROOT / "autograder", target_is_directory=True)
    return folder


class Student:
    def __init__(self, home: Path):
        self.home, self.release, self.venv = home, home / "course-release", home / "venv"
        self.python = self.venv / "bin" / "python"

    def run(self, *args, timeout=900, check=True, cwd=None, backend="Agg", grader=None, graded=False):
        done = subprocess.run([str(a) for a in args], cwd=cwd or self.release,
                              env=student_environ(backend, grader, graded),
                              capture_output=True, text=True, timeout=timeout)
        if check:
            assert done.returncode == 0, f"{' '.join(map(str, args))} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done

    def execute(self, notebook: Path, allow_errors=False, backend="Agg", grader=None, graded=False):
        return self.run(self.python, "-c", RUN_NOTEBOOK, notebook, *(["errors"] if allow_errors else []),
                        cwd=notebook.parent, check=False, backend=backend, grader=grader, graded=graded)


def editable(dynet: str) -> bool:
    return dynet == "2.1"


def make_student(home: Path, dynet: str) -> Student:
    student = Student(home)
    build(student.release)
    # a venv with the newest pip, as `python3 -m venv` and `pip install --upgrade pip` leave it; this checkout's
    # pip puts it in (ensurepip's older pip, then the upgrade, took three times as long)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(student.venv)], check=True)
    pip = subprocess.run([sys.executable, "-m", "pip", "--python", str(student.python), "install", "--quiet", "pip"],
                         capture_output=True, text=True)
    assert pip.returncode == 0, pip.stderr[-3000:]
    # DyNet 2.1's student installs as the release README's table says (-e); 2.2's with `pip install .`,
    # which copies the package alone into site-packages: its lectures find the data from their folder
    student.run(student.python, "-m", "pip", "install", "--quiet", *(["-e"] if editable(dynet) else []), ".")
    if dynet != "2.1":     # what pip installs on macOS, Windows, Linux aarch64 and Python 3.13
        student.run(student.python, "-m", "pip", "install", "--quiet", f"dyNET38=={dynet}")
    return student


def student_on(tmp_path_factory, dynet: str) -> Student:
    """The student's environment with DyNet ``dynet``, built once per run."""
    return Student(once_per_run(tmp_path_factory, f"student-dynet{dynet}", lambda home: make_student(home, dynet)))


def lecture_run(tmp_path_factory, student: Student, name: str, wait: bool = True) -> Path | None:
    """The release's own lectures/``name`` executed in ``student``'s environment, once per run: a folder
    holding ``returncode`` and ``stderr`` of the run and, when it ran to the end, the executed notebook
    ``name``. A lecture that fails is not run again by the next to ask: each reader sees the failure.
    ``wait=False``: None while another worker runs it (tests.conftest.once_per_run)."""
    def execute(folder: Path):
        notebook = student.release / "lectures" / name
        done = student.execute(notebook, backend=INLINE)
        (folder / "returncode").write_text(str(done.returncode))
        (folder / "stderr").write_text(done.stderr)
        if done.returncode == 0:
            shutil.copy(notebook, folder / name)
    return once_per_run(tmp_path_factory, f"{student.home.name}-{name}", execute, wait)
