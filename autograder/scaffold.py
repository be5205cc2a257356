"""A new graded function, scaffolded: ``python -m autograder.scaffold CHAPTER FUNCTION``.

Writes the pieces a graded function needs, each a working stub with its TODOs, and records them in
the chapter manifest (``autograder/chapters.toml``), so that the grader, the tests and the tables
pick them up with no list edited by hand:

* ``autograder/reference/chNN_FUNCTION.py``: the reference (NumPy) and the check;
* ``autograder/probes/chNN_FUNCTION.py``: the probe that runs the student's function in the sandbox;
* ``tests/test_checks_chNN_FUNCTION.py``: the checks' tests and the function's slips;
* in ``solutions/CHAPTER.ipynb``: the answer cell and a test cell whose hidden part runs the check;
* the manifest's ``[[function]]`` entry.

With ``--step``, a recurrent step function ``f(p, x, state)``: no probe file (the shared step probe
runs it, traced), its checks built by ``autograder/reference/steps.py`` against a reference cell that
you add to ``autograder/reference/cells.py``.

A chapter the manifest does not have yet (``--title`` says what it is about) also gets its
``[[chapter]]`` entry, a lecture and a solution notebook to write, and its row in the README's
chapter table. The four files to fill in by hand are then the solution notebook, the reference,
the probe (for a step: cells.py) and the test; the exercise and the tables are generated (the command prints how).
docs/contributing.md walks through it.
"""
from __future__ import annotations

import argparse
import json
import keyword
import re
import sys
from pathlib import Path

import nbformat

from autograder import chapters
from course.paths import ROOT

FUNCTION = re.compile(r"[a-z][a-z0-9_]*")

REFERENCE = '''"""Chapter {number}'s graded {function}: its reference and its check (scaffolded by
``python -m autograder.scaffold``; fill in each TODO).

The check follows ``autograder.reference.grading.Check``: ``make_inputs`` draws the grader's inputs
(seeded; fresh ones, never the notebook's), the probe (``{probe}``) runs the student's function on
them in the sandbox, and ``judge`` compares its numbers with :func:`reference` without revealing the
reference's values.
"""
from __future__ import annotations

import numpy as np

from autograder.reference.grading import Check

LECTURE = ("{stem}", "{heading}")      # TODO: the heading or "eq N" of the lecture to reread
ATOL = 1e-6


def reference(x):
    """TODO: {function} from the lecture's equations, in NumPy: the same arguments as the student's."""
    raise NotImplementedError("write the reference {function}")


def make_inputs() -> dict:
    """TODO: inputs that expose mistakes (non-zero, non-symmetric, a batch above 1)."""
    rng = np.random.default_rng({seed})
    return {{"args": {{"x": rng.normal(size=(4, 3))}}}}


def judge(numbers: dict, inputs: dict) -> list:
    """What is wrong with the student's numbers, in words (empty when right)."""
    expected = np.asarray(reference(**inputs["args"]), dtype=float)
    got = np.asarray(numbers["output"], dtype=float)
    if got.shape != expected.shape:
        return [f"{function} returned shape {{got.shape}}, expected {{expected.shape}}"]
    if not np.allclose(got, expected, atol=ATOL):
        return [f"{function}'s values differ from the reference by up to {{np.abs(got - expected).max():.3g}} "
                f"(tolerance {{ATOL}}): TODO, say which part of the equations to check"]
    return []


CHECKS = [
    Check("{prefix}.{function}", ("{function}",), make_inputs, "{probe}", judge,
          about="TODO: what the grader's inputs are like, in words (never their values)",
          lecture=LECTURE, visible="{function}_tests"),
]
'''

PROBE = '''"""The probe of chapter {number}'s {function} (scaffolded by ``python -m autograder.scaffold``):
what runs the student's function inside the sandbox. It returns plain numbers and never imports
``autograder.reference`` (the sandbox must not hold reference code)."""
from __future__ import annotations

import numpy as np


def probe(functions: dict, inputs: dict) -> dict:
    """Call the student's {function} on the grader's inputs; its result as an array."""
    args = {{name: np.array(value) for name, value in inputs["args"].items()}}
    return {{"output": np.asarray(functions["{function}"](**args), dtype=float)}}
'''

TEST = '''"""Chapter {number}'s {function} (scaffolded by ``python -m autograder.scaffold``): the reference
passes its checks, a wrong function fails them with a message that names the mistake, and the
slips, which tests/test_slips.py grades end to end and lists in autograder/README.md."""
from autograder.reference import {module} as checks
from autograder.reference.grading import run_check
from tests.slips import Slip

CHECKS = {{c.name: c for c in checks.CHECKS}}


def test_the_reference_passes_every_check():
    for name, c in CHECKS.items():
        assert run_check(c, {{"{function}": checks.reference}}) == [], name


def test_a_wrong_function_fails_and_is_named():
    def wrong(**args):                # TODO: a plausible mistake, and the words its message must say
        return checks.reference(**args) + 1
    problems = run_check(CHECKS["{prefix}.{function}"], {{"{function}": wrong}})
    assert problems and "differ from the reference" in problems[0], problems

'''

#: the end of both test templates: the slips (``says``: the words of the check's message)
SLIPS = '''
SLIPS = [
    # TODO: one Slip per mistake a student makes (tests/slips.py says each field)
    Slip("TODO: the mistake, as the slip table says it", "{stem}", "{function}",
         old="TODO: text of the solution's answer cell", new="TODO: what the student wrote instead",
         visible="{function}_tests", shows="TODO: a phrase of the visible check's message",
         failing=("{prefix}.{function}",), says="{says}", lost=1),
]
'''

STEP_REFERENCE = '''"""Chapter {number}'s graded step function {function}: its checks (scaffolded by
``python -m autograder.scaffold --step``; fill in each TODO).

A step function ``{function}(p, x, state) -> new_state`` is run by the shared probe
(``autograder.probes:step``, traced in the sandbox) and judged against a reference cell of
``autograder/reference/cells.py`` (its ``CELLS``) by the builders of ``autograder/reference/steps.py``:
the states over several steps, then every parameter's gradient.
"""
from __future__ import annotations

from autograder.reference import steps

CELL = "TODO"                     # the reference cell: its name in autograder/reference/cells.py CELLS
LECTURE = ("{stem}", "{heading}")      # TODO: the heading or "eq N" of the lecture to reread
SEED = {seed}
VISIBLE = "{function}_tests"

CHECKS = [
    steps.values_check("{prefix}.{function}", "{function}", CELL, seed=SEED, lecture=LECTURE, visible=VISIBLE,
                       explain={{0: "TODO: which equation to check when h_t is the first state to differ"}}),
    steps.gradients_check("{prefix}.{function}_gradients", "{function}", CELL, seed=SEED + 1, visible=VISIBLE),
]
'''

STEP_TEST = '''"""Chapter {number}'s step function {function} (scaffolded by ``python -m autograder.scaffold
--step``): the reference cell passes its checks, a wrong step fails them, and the slips, which
tests/test_slips.py grades end to end and lists in autograder/README.md."""
from autograder.reference import {module} as checks
from autograder.reference.cells import make_cell
from autograder.reference.grading import run_check
from course import runtime
from tests.slips import Slip

dy = runtime.dynet()
CHECKS = {{c.name: c for c in checks.CHECKS}}


def test_the_reference_passes_every_check():
    for name, c in CHECKS.items():
        assert run_check(c, {{"{function}": make_cell(checks.CELL).step}}) == [], name


def test_a_wrong_step_fails_and_is_named():
    def wrong(p, x, state):          # TODO: a plausible mistake, and the words its message must say
        return tuple(dy.tanh(s) for s in state)
    problems = run_check(CHECKS["{prefix}.{function}"], {{"{function}": wrong}})
    assert problems and "differs from step" in problems[0], problems

'''

ANSWER = '''# The lecture: ../lectures/{stem}.ipynb, {heading}
import numpy as np


def {function}({arguments}):
    """TODO: what {function} computes, its arguments and their shapes."""
    ### BEGIN SOLUTION
    raise NotImplementedError("TODO: the solution")
    ### END SOLUTION
'''

TEST_CELL = '''# TODO: a visible check on fixed inputs, with a message that helps
assert {function} is not None
### BEGIN HIDDEN TESTS
from autograder.reference.grading import check
check("{prefix}.{function}", {function}={function})
### END HIDDEN TESTS
'''


class ScaffoldError(ValueError):
    """The command cannot scaffold what was asked: the message says why and what to do."""


def nbgrader(cell, grade_id: str, solution: bool, grade: bool, points: float | None = None):
    meta = {"grade": grade, "grade_id": grade_id, "locked": not solution, "schema_version": 3,
            "solution": solution, "task": False}
    if points is not None:
        meta["points"] = points
    cell.metadata["nbgrader"] = meta
    return cell


def new_notebook(title: str, text: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                   "language_info": {"name": "python"}}
    nb.cells = [nbformat.v4.new_markdown_cell(f"# {title}\n\n{text}"),
                nbformat.v4.new_code_cell("from course import runtime\ndy = runtime.init(seed=1)\n"
                                          "print(runtime.describe())")]
    return nb


def first_heading(lecture: Path) -> str:
    """The lecture's first section heading (the place a check sends a student by default)."""
    for cell in nbformat.read(lecture, as_version=4).cells:
        if cell.cell_type == "markdown":
            found = re.search(r"^## (.+)$", cell.source, re.M)
            if found:
                return found[1].strip()
    raise ScaffoldError(f"{lecture} has no '## ' section heading for the check to send students to; add one")


def scaffold(stem: str, function: str, title: str | None = None, root: Path = ROOT,
             step: bool = False) -> list[Path]:
    """Write the pieces of graded ``function`` in chapter ``stem`` under ``root``; return the paths
    written or changed. ``step``: a recurrent step function, run by the shared step probe and
    judged against a reference cell of autograder/reference/cells.py (no probe file)."""
    root = Path(root)
    manifest = root / "autograder" / "chapters.toml"
    if not chapters.STEM.fullmatch(stem):
        raise ScaffoldError(f"chapter {stem!r} must be a stem like 05_gru: two digits, an underscore, a name")
    if not FUNCTION.fullmatch(function) or keyword.iskeyword(function):
        raise ScaffoldError(f"function {function!r} must be a Python name in lower case, like gru_step")
    known = {c.stem: c for c in chapters.load(manifest)}
    number, prefix = stem[:2], "ch" + stem[:2]
    module = f"{prefix}_{function}"
    paths = {"checks": f"autograder/reference/{module}.py", "probe": f"autograder/probes/{module}.py",
             "tests": f"tests/test_checks_{module}.py"}
    if step:
        paths["probe"] = "autograder/probes/__init__.py"     # the shared step probe: nothing to write
    taken = [paths[k] for k in ("checks", "tests") + (() if step else ("probe",)) if (root / paths[k]).exists()]
    if taken:
        raise ScaffoldError(f"{', '.join(taken)} exists already: is {function} scaffolded? Pick another name")
    if stem not in known and number in {c.number for c in known.values()}:
        raise ScaffoldError(f"chapter {number} is {next(c.stem for c in known.values() if c.number == number)}, "
                            f"not {stem}: give its stem, or a new number for a new chapter")
    if stem in known and function in {f.name for f in known[stem].functions}:
        raise ScaffoldError(f"{function} is already a graded function of {stem}")
    if stem not in known and not title:
        raise ScaffoldError(f"{stem} is a new chapter: say what it is about with --title \"...\" (the README's table)")
    if title is not None and ("|" in title or not title.isprintable()):
        raise ScaffoldError(f"--title {title!r} goes into a Markdown table row: write it without '|' or line breaks")
    written = []
    lecture, solution = root / "lectures" / f"{stem}.ipynb", root / "solutions" / f"{stem}.ipynb"
    entry = ""
    if stem not in known:
        entry += f'\n[[chapter]]\nstem = "{stem}"\ntitle = {json.dumps(title)}\n'     # JSON's escapes are TOML's
        for path, kind in ((lecture, "lecture"), (solution, "exercise")):
            if not path.exists():
                nb = new_notebook(f"{number} · {title}" + (" (exercise)" if kind == "exercise" else ""),
                                  f"TODO: the {kind}." if kind == "lecture" else
                                  f"Read `lectures/{stem}.ipynb` first. TODO: what this exercise asks.")
                if kind == "lecture":
                    nb.cells.append(nbformat.v4.new_markdown_cell(f"## 1 · {function}\n\nTODO: the equations."))
                nbformat.write(nb, path)
                written.append(path)
    heading = first_heading(lecture)
    fields = dict(number=number, stem=stem, prefix=prefix, function=function, module=module,
                  heading=heading.replace('"', '\\"'), seed=int(number) * 1000 + 7,
                  probe=f"autograder.probes.{module}:probe", arguments="p, x, state" if step else "x")
    templates = ((("checks", STEP_REFERENCE), ("tests", STEP_TEST)) if step else
                 (("checks", REFERENCE), ("probe", PROBE), ("tests", TEST)))
    fields["says"] = "differs from step" if step else "differ from the reference"
    for key, template in templates:
        template += SLIPS if key == "tests" else ""
        path = root / paths[key]
        path.write_text(template.format(**fields))
        written.append(path)
    nb = nbformat.read(solution, as_version=4)
    nb.cells += [nbformat.v4.new_markdown_cell(f"## Part: `{function}`\n\nTODO: what to write.\n\n"
                                               f"The lecture: [lecture {number}](../lectures/{stem}.ipynb), {heading}."),
                 nbgrader(nbformat.v4.new_code_cell(ANSWER.format(**fields)), function, True, False),
                 nbgrader(nbformat.v4.new_code_cell(TEST_CELL.format(**fields)), f"{function}_tests", False, True, 1)]
    nbformat.write(nb, solution)
    written.append(solution)
    entry += (f'\n[[function]]\nname = "{function}"\nchapter = "{stem}"\nchecks = "{paths["checks"]}"\n'
              + ('reference = "autograder/reference/cells.py"\n' if step else "")
              + f'probe = "{paths["probe"]}"\ntests = "{paths["tests"]}"\n')
    manifest.write_text(manifest.read_text().rstrip("\n") + "\n" + entry)
    written.append(manifest)
    if stem not in known:
        chapters.write_readme(root / "README.md", manifest)
        written.append(root / "README.md")
    return written


NEXT = """
Scaffolded {function} in {stem}. Fill in the four files (each TODO):
  solutions/{stem}.ipynb: the answer cell and its visible test
  autograder/reference/{module}.py: the reference, the inputs, the judge
  autograder/probes/{module}.py: the probe
  tests/test_checks_{module}.py: the tests and the slips
then generate the rest:
  python -m autograder.exercises {stem}    (exercises/{stem}.ipynb)
  python -m tests.test_slips --write    (the slip and points tables of autograder/README.md)
and run: pytest tests/test_chapters.py tests/test_checks_{module}.py, then pytest tests/test_slips.py -k {stem}
"""

STEP_NEXT = """
Scaffolded {function} in {stem}. Fill in the four files (each TODO):
  solutions/{stem}.ipynb: the answer cell and its visible test
  autograder/reference/{module}.py: CELL, the lecture, what each check explains
  autograder/reference/cells.py: the reference step, its Cell, and its name in CELLS
  tests/test_checks_{module}.py: the tests and the slips
then generate the rest:
  python -m autograder.exercises {stem}    (exercises/{stem}.ipynb)
  python -m tests.test_slips --write    (the slip and points tables of autograder/README.md)
and run: pytest tests/test_chapters.py tests/test_checks_{module}.py, then pytest tests/test_slips.py -k {stem}
"""


def main(argv=None):
    parser = argparse.ArgumentParser(description="Scaffold a new graded function (and, with --title, a new chapter)")
    parser.add_argument("chapter", help="the chapter's stem, e.g. 05_gru (a new one needs --title)")
    parser.add_argument("function", help="the function students write, e.g. gru_step")
    parser.add_argument("--title", help="a new chapter's title, as the README's chapter table shows it")
    parser.add_argument("--step", action="store_true",
                        help="a recurrent step function, step(p, x, state): judged against a reference cell of "
                             "autograder/reference/cells.py by the shared step probe (no probe file)")
    args = parser.parse_args(argv)
    try:
        written = scaffold(args.chapter, args.function, args.title, step=args.step)
    except (ScaffoldError, chapters.ManifestError) as err:
        print(f"scaffold: {err}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path.relative_to(ROOT)}")
    print((STEP_NEXT if args.step else NEXT).format(stem=args.chapter, function=args.function,
                                                    module=f"ch{args.chapter[:2]}_{args.function}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
