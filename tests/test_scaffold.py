"""``python -m autograder.scaffold``, run into a copy of the course: the pieces it writes import, the
grader, the manifest, the slip table and pytest pick them up, and once the reference is written the
stub tests pass against it and catch a wrong function. A new chapter gets its notebooks and its row
in the README's table; what cannot be scaffolded is refused with the reason."""
import shutil
import subprocess
import sys

import nbformat
import pytest

from tests.conftest import ROOT

PARTS = ["autograder", "course", "data/course", "solutions", "lectures", "exercises", "tests", "README.md"]
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "submissions", "work", ".ipynb_checkpoints")


@pytest.fixture
def copy(tmp_path):
    """The parts of the course the scaffold and the checks read, copied."""
    for part in PARTS:
        source, target = ROOT / part, tmp_path / part
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=IGNORE)
        else:
            shutil.copy(source, target)
    return tmp_path


def run(copy, *args, check=True):
    """A command in the copy, importing the copy's packages (not this checkout's)."""
    result = subprocess.run([sys.executable, *args], cwd=copy, capture_output=True, text=True, timeout=600,
                            env={"PYTHONPATH": str(copy), "PATH": "", "HOME": str(copy)})
    if check:
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


PICKED_UP = """
from course import runtime
runtime.init(seed=1, mem=1024)          # as tests/conftest.py, which the test modules import
import autograder
from autograder import chapters, grader, probes
from autograder.reference.grading import all_checks
from tests import slips
assert autograder.__file__.startswith({copy!r}), autograder.__file__
f = next(f for f in chapters.functions() if f.name == "gru_mix")
assert (f.chapter, f.checks, f.probe, f.tests) == ("05_gru", "autograder/reference/ch05_gru_mix.py",
    "autograder/probes/ch05_gru_mix.py", "tests/test_checks_ch05_gru_mix.py"), f
c = all_checks()["ch05.gru_mix"]
assert c.functions == ("gru_mix",) and c.visible == "gru_mix_tests" and c.lecture[0] == "05_gru", c
probe = probes.lookup(c.probe)                      # the sandbox's import, without reference code
assert probe.__module__ == "autograder.probes.ch05_gru_mix"
import numpy as np
assert probe({{"gru_mix": lambda x: 2 * x}}, {{"args": {{"x": [[1.0, 2.0]]}}}})["output"].tolist() == [[2.0, 4.0]]
spec = grader.spec_of(chapters.load()[5].notebook("solutions"))
assert "gru_mix" in spec.answers, spec.answers
assert ("gru_mix_tests", 1.0, ["ch05.gru_mix"]) in [(g, p, list(n)) for g, p, n in spec.tests], spec.tests
assert [s.answer for s in slips.collect()].count("gru_mix") == 1
assert "tests/test_checks_ch05_gru_mix.py" in chapters.test_modules()
print("picked up")
"""


def test_a_scaffolded_function_is_picked_up_and_its_stubs_test_it(copy):
    made = run(copy, "-m", "autograder.scaffold", "05_gru", "gru_mix")
    for path in ("autograder/reference/ch05_gru_mix.py", "autograder/probes/ch05_gru_mix.py",
                 "tests/test_checks_ch05_gru_mix.py", "solutions/05_gru.ipynb", "autograder/chapters.toml"):
        assert f"wrote {path}" in made.stdout, made.stdout
    assert (copy / "README.md").read_text() == (ROOT / "README.md").read_text()   # no new chapter, no new row
    assert "picked up" in run(copy, "-c", PICKED_UP.format(copy=str(copy))).stdout
    # the stubs fail until the reference is written ...
    stub = run(copy, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
               "tests/test_checks_ch05_gru_mix.py", check=False)
    assert stub.returncode == 1 and "2 failed" in stub.stdout and "write the reference gru_mix" in stub.stdout, stub.stdout
    # ... and, once it is, pass against it and catch a wrong function
    reference = copy / "autograder" / "reference" / "ch05_gru_mix.py"
    reference.write_text(reference.read_text().replace('    raise NotImplementedError("write the reference gru_mix")',
                                                       "    return 2 * x"))
    filled = run(copy, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                 "tests/test_checks_ch05_gru_mix.py", "tests/test_chapters.py", check=False)
    assert filled.returncode == 0 and "passed" in filled.stdout, filled.stdout[-3000:]
    # the manifest checks against the tree (test_chapters.py) passed in the copy; the exercise is
    # generated from the solution, the answer replaced by nbgrader's stub
    run(copy, "-m", "autograder.exercises", "05_gru")
    exercise = nbformat.read(copy / "exercises" / "05_gru.ipynb", as_version=4)
    answer = next(c for c in exercise.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "gru_mix")
    assert "def gru_mix(x):" in answer.source and "BEGIN SOLUTION" not in answer.source


STEP_PICKED_UP = """
from course import runtime
runtime.init(seed=1, mem=1024)
from autograder import chapters
from autograder.reference.grading import all_checks
f = next(f for f in chapters.functions() if f.name == "gru_again")
assert (f.probe, f.reference) == ("autograder/probes/__init__.py", "autograder/reference/cells.py"), f
checks = all_checks()
assert {checks[n].probe for n in ("ch05.gru_again", "ch05.gru_again_gradients")} == {"autograder.probes:step"}
print("picked up")
"""


def test_a_scaffolded_step_function_is_judged_against_its_reference_cell(copy):
    made = run(copy, "-m", "autograder.scaffold", "05_gru", "gru_again", "--step")
    assert "autograder/probes/ch05_gru_again.py" not in made.stdout
    assert not (copy / "autograder" / "probes" / "ch05_gru_again.py").exists()
    assert "picked up" in run(copy, "-c", STEP_PICKED_UP).stdout
    solution = nbformat.read(copy / "solutions" / "05_gru.ipynb", as_version=4)
    assert any("def gru_again(p, x, state):" in c.source for c in solution.cells)
    tests = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "tests/test_checks_ch05_gru_again.py"]
    stub = run(copy, *tests, check=False)
    assert stub.returncode == 1 and "unknown cell 'TODO'" in stub.stdout, stub.stdout[-3000:]
    checks = copy / "autograder" / "reference" / "ch05_gru_again.py"
    checks.write_text(checks.read_text().replace('CELL = "TODO"', 'CELL = "gru"'))      # the course's own GRU
    filled = run(copy, *tests, check=False)
    assert filled.returncode == 0 and "2 passed" in filled.stdout, filled.stdout[-3000:]


def test_a_new_chapter_gets_its_notebooks_and_its_row(copy):
    run(copy, "-m", "autograder.scaffold", "12_transformer", "block_step", "--title", 'The "transformer" block')
    assert (copy / "lectures" / "12_transformer.ipynb").is_file()
    solution = nbformat.read(copy / "solutions" / "12_transformer.ipynb", as_version=4)
    assert "runtime.init(" in solution.cells[1].source
    assert "| 11 | From the weighted sum" in (copy / "README.md").read_text()
    assert '| 12 | The "transformer" block |\n' in (copy / "README.md").read_text()
    listed = run(copy, "-c", "from autograder import chapters; print(chapters.stems()[-1], chapters.chapter_range())")
    assert listed.stdout.split() == ["12_transformer", "00", "to", "12"]


@pytest.mark.parametrize("args, says", [
    (["12_transformer", "block_step"], "is a new chapter: say what it is about with --title"),
    (["05_gru", "gru_step"], "is already a graded function of 05_gru"),
    (["05_gru", "Gru-Step"], "must be a Python name"),
    (["5_gru", "gru_mix"], "must be a stem like 05_gru"),
    (["05_gated", "gru_mix", "--title", "x"], "chapter 05 is 05_gru, not 05_gated"),
    (["12_transformer", "block_step", "--title", "a | b"], "without '|' or line breaks"),
])
def test_what_cannot_be_scaffolded_is_refused_with_the_reason(copy, args, says):
    before = (copy / "autograder" / "chapters.toml").read_text()
    refused = run(copy, "-m", "autograder.scaffold", *args, check=False)
    assert refused.returncode == 2 and says in refused.stderr, refused.stderr
    assert (copy / "autograder" / "chapters.toml").read_text() == before
