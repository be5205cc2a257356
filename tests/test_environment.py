"""The setup files agree: conda and pip pins, the README's benchmark list and `make bench`;
the test runner keeps grouped tests together."""
import os
import re
import subprocess
import sys
import tomllib

from tests.conftest import ROOT


def pins_from_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return sorted(project["dependencies"])


def pins_from_environment():
    lines = (ROOT / "environment.yml").read_text().splitlines()
    pins = [m.group(1) for line in lines if (m := re.match(r"\s+- ([A-Za-z0-9_.\-]+==\S+)\s*$", line))]
    return sorted(pins)


def test_conda_environment_pins_match_pyproject():
    assert pins_from_pyproject() == pins_from_environment()


def test_every_dependency_is_pinned_exactly():
    assert all("==" in dep for dep in pins_from_pyproject())


def test_dynet_wheel_is_the_one_that_computes_one_minus_z():
    assert "dyNET38==2.1" in pins_from_pyproject()


# hours on one core; rows that need a GPU machine; a night of training, and what needs its checkpoints
NOT_IN_MAKE_BENCH = {"ptb.py", "gpu_speed.py", "converge.py", "converge_inside.py", "converge_ensemble.py"}


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
