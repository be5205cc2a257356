"""The setup files agree: conda and pip pins, the README's benchmark list and `make bench`;
the test runner keeps grouped tests together."""
import os
import re
import subprocess
import sys
import tomllib

from tests.conftest import ROOT


def pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def pins_from_pyproject():
    """Every pin: the student's dependencies and the instructor's extras."""
    project = pyproject()
    return sorted(set(project["dependencies"]).union(*project["optional-dependencies"].values()))


def environment_pins(name):
    lines = (ROOT / name).read_text().splitlines()
    return sorted(m.group(1) for line in lines if (m := re.match(r"\s+- (dyNET38==\S+; .*|[A-Za-z0-9_.\-]+==\S+)\s*$", line)))


def test_conda_environments_pin_what_pyproject_pins():
    """environment.yml is the student's set, environment-instructor.yml adds the extras."""
    assert environment_pins("environment.yml") == sorted(pyproject()["dependencies"])
    assert environment_pins("environment-instructor.yml") == pins_from_pyproject()


def test_every_dependency_is_pinned_exactly():
    assert all("==" in dep for dep in pins_from_pyproject())


def test_reading_a_notebook_builds_no_uri_parsers():
    """Why jsonschema is pinned (pyproject.toml): from 4.25 on, importing it (nbformat does, in every
    notebook run, Jupyter server and grading) imports rfc3987_syntax, which builds 38 parsers: 1.9 s here."""
    loaded = subprocess.run([sys.executable, "-c", "import sys, nbformat; print('rfc3987_syntax' in sys.modules)"],
                            capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "False", "importing nbformat loads rfc3987_syntax: keep jsonschema below 4.25 (pyproject.toml)"


def test_the_student_set_holds_nothing_of_the_instructors():
    student = " ".join(pyproject()["dependencies"]).lower()
    for tool in ["jupyterhub", "pamela", "sphinx", "myst", "pytest", "playwright", "nh3"]:
        assert tool not in student, f"{tool} is an instructor's tool: it belongs in an extra"


def test_dynet_is_chosen_per_platform():
    """2.1 (it computes `1 - z`) where it has a wheel, Linux x86-64 with Python 3.11/3.12; 2.2
    everywhere else. The markers are evaluated here for the five platforms and three Pythons."""
    from packaging.requirements import Requirement
    dynet = [Requirement(dep) for dep in pyproject()["dependencies"] if dep.startswith("dyNET38")]
    for system, machine in [("linux", "x86_64"), ("linux", "aarch64"), ("darwin", "arm64"),
                            ("darwin", "x86_64"), ("win32", "AMD64")]:
        for python in ["3.11", "3.12", "3.13"]:
            env = {"sys_platform": system, "platform_machine": machine, "python_version": python}
            chosen = [str(r.specifier) for r in dynet if r.marker.evaluate(env)]
            want = "==2.1" if (system, machine) == ("linux", "x86_64") and python != "3.13" else "==2.2"
            assert chosen == [want], (env, chosen)


# hours on one core; rows that need a GPU machine; a night of training, and what needs its checkpoints
NOT_IN_MAKE_BENCH = {"ptb.py", "stream_cli.py", "gpu_speed.py", "converge.py", "converge_inside.py", "converge_ensemble.py"}


def test_readme_lists_every_benchmark_and_make_bench_runs_the_quick_ones():
    readme = (ROOT / "README.md").read_text()
    makefile = (ROOT / "Makefile").read_text()
    scripts = sorted(p.name for p in (ROOT / "bench").glob("*.py") if p.name != "common.py")
    assert scripts, "no benchmark scripts found"
    for name in scripts:
        assert f"| `bench/{name}` |" in readme, f"bench/{name} is missing from the README's benchmark table"
        # every benchmark is part of `make bench` but the hours-long PTB reproduction and the GPU table
        assert (f"bench/{name}" in makefile) == (name not in NOT_IN_MAKE_BENCH), name


GROUPED = '''
import os, pytest
pytestmark = pytest.mark.xdist_group("together")
def record(): open(os.environ["WORKERS_FILE"], "a").write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")
''' + "".join(f"def test_{k}(): record()\n" for k in range(6))
OTHERS = "import time\n" + "".join(f"def test_{k}(): time.sleep(0.02)\n" for k in range(40))


def test_xdist_groups_keep_their_tests_on_one_worker(tmp_path):
    """`make test` runs with --dist loadgroup so that the tests sharing one hub or one
    graded class (xdist_group) run on one worker; pytest 9.2 with pytest-xdist 3.8 silently
    spread them over both (the renamed node ids were ignored), and test_hub then met a
    second hub without the class's work."""
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    for name in ("a", "b"):
        (tmp_path / f"test_other_{name}.py").write_text(OTHERS)
    workers = tmp_path / "workers.txt"
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup",
                          "-p", "no:cacheprovider", str(tmp_path)], cwd=tmp_path, capture_output=True,
                         text=True, env={**os.environ, "WORKERS_FILE": str(workers)}, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:]
    seen = workers.read_text().split()
    assert len(seen) == 6 and len(set(seen)) == 1, seen
