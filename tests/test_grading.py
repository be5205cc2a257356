"""The grading registry is complete and keeps reference code out of the sandbox."""
import pkgutil
import subprocess
import sys

import nbformat
import pytest

import autograder.probes
from autograder import chapters
from autograder.cellmarks import marks
from autograder.reference.grading import all_checks
from autograder.grader import spec_of
from tests.conftest import ROOT

SOLUTIONS = [c.notebook("solutions") for c in chapters.load()]     # the chapter manifest


def test_check_names_are_unique_and_named_by_chapter():
    checks = all_checks()
    assert all(name.startswith("ch") and "." in name for name in checks)
    assert all(c.probe.startswith("autograder.probes") for c in checks.values())


@pytest.mark.parametrize("path", SOLUTIONS, ids=[p.stem for p in SOLUTIONS])
def test_every_test_cell_names_registered_checks(path):
    """The trusted grader awards a test cell's points only through its named checks."""
    spec = spec_of(path)
    registered = all_checks()
    assert spec.tests, f"{path.name} has no graded test cells"
    for grade_id, points, checks in spec.tests:
        assert points > 0, f"{path.name}:{grade_id} has no points"
        assert checks, f"{path.name}:{grade_id} names no check(...) in its hidden tests"
        unknown = [c for c in checks if c not in registered]
        assert not unknown, f"{path.name}:{grade_id} names unregistered checks {unknown}"


@pytest.mark.parametrize("path", SOLUTIONS, ids=[p.stem for p in SOLUTIONS])
def test_answer_cells_define_the_function_they_are_named_after(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        meta = marks(cell)
        if meta.get("solution") and not meta.get("grade") and cell.cell_type == "code":
            assert f"def {meta['grade_id']}(" in cell.source, f"{path.name}: answer cell {meta['grade_id']}"


def test_probe_modules_never_load_reference_code():
    modules = ["autograder.probes"] + [f"autograder.probes.{m.name}"
                                       for m in pkgutil.iter_modules(autograder.probes.__path__)]
    code = ("import sys\nfrom course import runtime\nruntime.init(seed=1)\n"
            + "".join(f"import {m}\n" for m in modules)
            + "print(sorted(m for m in sys.modules if m.startswith('autograder.reference')))")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                            env={"PYTHONPATH": str(ROOT), "PATH": ""}, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]", f"probes imported reference code: {result.stdout}"


def test_a_step_built_on_dynets_fused_lstm_operations_earns_nothing():
    """Lecture 07 shows DyNet's fused LSTM operations; they must not answer chapter 04."""
    from autograder.reference import cells
    from autograder.reference.grading import chapter_checks, run_check
    from course import runtime
    dy = runtime.dynet()

    def fused_lstm_step(p, x, state):
        h_prev, c_prev = state
        W_x = dy.concatenate([p["W_x" + g] for g in "ifou"])
        W_h = dy.concatenate([p["W_h" + g] for g in "ifou"])
        b = dy.concatenate([p["b_" + g] for g in "ifou"])
        gates = dy.vanilla_lstm_gates(x, h_prev, W_x, W_h, b)
        c = dy.vanilla_lstm_c(c_prev, gates)
        return (dy.vanilla_lstm_h(c, gates), c)

    check = chapter_checks("ch04")["ch04.lstm_step"]
    assert run_check(check, {"lstm_step": cells.lstm_step}) == []
    problems = run_check(check, {"lstm_step": fused_lstm_step})
    assert problems and "fused LSTM" in problems[0]
