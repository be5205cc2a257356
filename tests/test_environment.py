"""The setup files agree: conda and pip pins, the README's benchmark list and `make bench`."""
import re
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
NOT_IN_MAKE_BENCH = {"ptb.py", "gpu_speed.py", "converge.py", "converge_inside.py"}


def test_readme_lists_every_benchmark_and_make_bench_runs_the_quick_ones():
    readme = (ROOT / "README.md").read_text()
    makefile = (ROOT / "Makefile").read_text()
    scripts = sorted(p.name for p in (ROOT / "bench").glob("*.py") if p.name != "common.py")
    assert scripts, "no benchmark scripts found"
    for name in scripts:
        assert f"| `bench/{name}` |" in readme, f"bench/{name} is missing from the README's benchmark table"
        # every benchmark is part of `make bench` but the hours-long PTB reproduction and the GPU table
        assert (f"bench/{name}" in makefile) == (name not in NOT_IN_MAKE_BENCH), name
