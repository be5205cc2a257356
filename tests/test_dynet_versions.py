"""The course's own code on the other DyNet: the tests of the cells, the language model, the data,
the runtime and every chapter's checks, run again in a fresh environment with dyNET38 2.2 (what
macOS, Windows, Linux aarch64 and Python 3.13 install) beside this one's 2.1. 2.2 refuses a number
on the left of an expression; these tests fail wherever the course, its reference code or its checks
still write one, and show that the grader scores `1 - z` as eq 59 there too
(test_checks_ch05.py's traced test)."""
import os
import subprocess
import sys
import tomllib
from pathlib import Path

from autograder import chapters
from tests.conftest import ROOT, once_per_run

OTHER_DYNET = "dyNET38==2.2"
SUITES = ["tests/test_cells.py", "tests/test_lm.py", "tests/test_layers.py", "tests/test_data.py", "tests/test_runtime.py",
          *chapters.test_modules()]        # every chapter's checks' tests (the chapter manifest)


def pins():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = ("numpy", "matplotlib", "tqdm", "nbclient", "pytest==", "pytest-timeout")
    found = [dep for dep in project["dependencies"] + project["optional-dependencies"]["test"]
             if dep.startswith(wanted)]
    return [OTHER_DYNET, *found]


def make_environment(folder: Path):
    """A fresh virtual environment in ``folder``/venv with dyNET38 2.2 and the pins the suite needs."""
    venv = folder / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    # this checkout's pip installs into it (ensurepip's own pip alone took 12 s here)
    install = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
                              "--quiet", *pins()], capture_output=True, text=True)
    assert install.returncode == 0, install.stderr[-3000:]


def test_the_course_passes_its_tests_on_dynet_2_2(tmp_path_factory):
    # built once per run, started early beside other tests (tests/conftest.py: environments_built_early)
    python = str(once_per_run(tmp_path_factory, "dynet2.2-suite", make_environment) / "venv" / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if k not in {"VIRTUAL_ENV", "PYTEST_XDIST_WORKER",
                                                               "PYTEST_CURRENT_TEST", "PYTEST_XDIST_TESTRUNUID"}}
    env["PYTHONPATH"] = str(ROOT)
    run = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", *SUITES],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    version = subprocess.run([python, "-c", "import importlib.metadata as m; print(m.version('dyNET38'))"],
                             capture_output=True, text=True).stdout.strip()
    assert version == "2.2"
    assert run.returncode == 0, f"on dyNET38 2.2:\n{run.stdout[-5000:]}"
