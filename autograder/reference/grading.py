"""Stage 5, the checks: the registry of graded checks, shared by notebooks' hidden tests and
the grader (:mod:`autograder.grader`).

A :class:`Check` is split so that student code and grading never share a process:

* ``make_inputs() -> dict`` (trusted): the grader's inputs, plain numbers plus
  small settings (seeded, so every run grades alike);
* ``probe`` (untrusted, in the sandbox): the dotted name ``"module:function"`` of
  ``probe(functions, inputs) -> dict`` that calls the student's functions (a dict
  name -> callable taken from the submitted notebook) and returns plain numbers.
  Probe modules live in ``autograder/probes/`` and never import reference code
  (``tests/test_grading.py`` checks), because the sandbox must not hold it;
* ``judge(numbers, inputs) -> list[str]`` (trusted): computes the reference and
  lists what is wrong, helpfully, without revealing reference values.

Chapters register checks in ``autograder/reference/chNN_*.py`` modules, each with
a ``CHECKS`` list, named in the chapter manifest (``autograder/chapters.toml``);
:func:`all_checks` collects them. A solution notebook's hidden
test runs one in its own kernel::

    from autograder.reference.grading import check
    check("ch05.gru_step", gru_step=gru_step, points=2)

A test cell's points are split over the checks its hidden tests name:
``points=`` states a check's share (``check`` ignores it when it runs; the trusted
grader reads it with :func:`check_calls` and :func:`split_points`), and the checks
without one share what is left equally.

Each check also says, for the student's feedback page, what its inputs were like
(``about``, never their values), where to reread (``lecture``: a lecture
notebook's stem and a heading or equation it holds) and which visible test cell
checks the same kind of thing (``visible``, a grade_id of the chapter's notebook).
"""
from __future__ import annotations

import ast
import importlib
from dataclasses import dataclass
from typing import Callable

from autograder import chapters as manifest
from autograder import probes


@dataclass
class Check:
    name: str                          # "chNN.what", unique across the course
    functions: tuple                   # names of the student's functions it calls
    make_inputs: Callable[[], dict]    # trusted: the grader's inputs
    probe: str                         # untrusted: "module:function" (autograder/probes/...)
    judge: Callable[[dict, dict], list]  # trusted: (numbers, inputs) -> problems
    about: str = ""                    # what the grader's inputs are like (never their values)
    lecture: tuple = ()                # (lecture notebook stem, heading or equation), to reread
    visible: str = ""                  # grade_id of the visible test cell of the same kind
    seconds: int | None = None         # the probe's time limit, when it needs more than Limits.check_s


def chapter_checks(chapter: str) -> dict:
    """The checks of one chapter ("ch05"), by name: those of the modules the chapter manifest
    names for it (tests/test_chapters.py: every chNN_*.py module is named there)."""
    found = {}
    for module in manifest.check_modules(chapter):
        for c in importlib.import_module(module).CHECKS:
            if c.name in found:
                raise ValueError(f"check {c.name} is registered twice")
            found[c.name] = c
    return found


def all_checks() -> dict:
    found = {}
    for chapter in manifest.load():
        found.update(chapter_checks(chapter.prefix))
    return found


def graded_functions(steps_only: bool = False) -> set:
    """The names of the functions the checks call (what students write), from the checks
    themselves; ``steps_only``: those of the checks that trace a recurrent step."""
    return {name for c in all_checks().values() if not steps_only or c.probe in probes.TRACED
            for name in c.functions}


def run_check(c: Check, functions: dict) -> list:
    """Inputs, probe, the trip out of the sandbox, and judge, all in this process:
    the list of problems (empty when the functions pass)."""
    inputs = c.make_inputs()
    probes.clean_memory()
    return c.judge(probes.transported(probes.lookup(c.probe)(functions, inputs)), inputs)


def check(name: str, points: float | None = None, **functions):
    """Run one check in this process (a notebook's hidden test); raise on failure.
    ``points`` is the check's share of its test cell's points: read by the trusted
    grader from the cell's source, ignored here."""
    c = chapter_checks(name.split(".")[0])[name]
    missing = [f for f in c.functions if f not in functions]
    if missing:
        raise TypeError(f"check {name} needs the functions {missing}")
    problems = run_check(c, functions)
    assert not problems, f"{name}: " + "; ".join(problems)


def check_calls(source: str) -> list:
    """The ``check(...)`` calls of a test cell, in order: ``[(name, points or None)]``."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    calls = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "check" and node.args
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            points = next((k.value.value for k in node.keywords
                           if k.arg == "points" and isinstance(k.value, ast.Constant)), None)
            calls.append((node.lineno, node.col_offset, node.args[0].value,
                          None if points is None else float(points)))
    return [(name, points) for *_, name, points in sorted(calls)]


def split_points(cell_points: float, calls: list) -> dict:
    """Each named check's share of a test cell's points: the stated ``points=``,
    and what is left split equally over the checks that state none."""
    stated = sum(points for _, points in calls if points is not None)
    rest = [name for name, points in calls if points is None]
    if stated > cell_points + 1e-9 or (not rest and calls and abs(stated - cell_points) > 1e-9):
        raise ValueError(f"the checks' points ({stated:g}) do not add up to the cell's {cell_points:g}")
    share = (cell_points - stated) / len(rest) if rest else 0.0
    return {name: (share if points is None else points) for name, points in calls}
