"""The registry of graded checks, shared by notebooks' hidden tests and the
trusted autograder.

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
a ``CHECKS`` list; :func:`all_checks` collects them. A solution notebook's hidden
test runs one in its own kernel::

    from autograder.reference.grading import check
    check("ch05.gru_step", gru_step=gru_step)
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Callable

from autograder import probes


@dataclass
class Check:
    name: str                          # "chNN.what", unique across the course
    functions: tuple                   # names of the student's functions it calls
    make_inputs: Callable[[], dict]    # trusted: the grader's inputs
    probe: str                         # untrusted: "module:function" (autograder/probes/...)
    judge: Callable[[dict, dict], list]  # trusted: (numbers, inputs) -> problems


def load_probe(dotted: str):
    module, _, function = dotted.partition(":")
    if not module.startswith("autograder.probes"):
        raise ValueError(f"probe {dotted!r} must live in autograder/probes/")
    return getattr(importlib.import_module(module), function)


def step_check(name: str, function: str, reference: Callable, d_in: int = 5, d_h: int = 4,
               seed: int = 20261122) -> Check:
    """Check a step function against a reference Cell (``reference()`` returns it):
    every state at every step and every parameter's gradient."""
    def make_inputs():
        cell = reference()
        inputs = probes.make_inputs(cell.shapes(d_in, d_h), cell.n_state, d_in, d_h, seed=seed)
        return {**inputs, "function": function}

    def judge(numbers, inputs):
        if float(numbers.get("fused", 0)):
            return [f"{function} calls DyNet's fused LSTM operations ({', '.join(probes.FUSED)}): "
                    "the exercise is to write the equations yourself"]
        expected = probes.run_step(reference().step, inputs)
        return probes.compare(numbers, expected)

    return Check(name, (function,), make_inputs, "autograder.probes:step", judge)


def chapter_checks(chapter: str) -> dict:
    """The checks of one chapter ("ch05"), by name."""
    import autograder.reference as package
    found = {}
    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith(chapter + "_"):
            for c in importlib.import_module(f"autograder.reference.{info.name}").CHECKS:
                if c.name in found:
                    raise ValueError(f"check {c.name} is registered twice")
                found[c.name] = c
    return found


def all_checks() -> dict:
    import autograder.reference as package
    chapters = sorted({info.name.split("_")[0] for info in pkgutil.iter_modules(package.__path__)
                       if info.name.startswith("ch")})
    found = {}
    for chapter in chapters:
        found.update(chapter_checks(chapter))
    return found


def run_check(c: Check, functions: dict) -> list:
    """Inputs, probe, the trip out of the sandbox, and judge, all in this process:
    the list of problems (empty when the functions pass)."""
    inputs = c.make_inputs()
    return c.judge(probes.transported(load_probe(c.probe)(functions, inputs)), inputs)


def check(name: str, **functions):
    """Run one check in this process (a notebook's hidden test); raise on failure."""
    c = chapter_checks(name.split(".")[0])[name]
    missing = [f for f in c.functions if f not in functions]
    if missing:
        raise TypeError(f"check {name} needs the functions {missing}")
    problems = run_check(c, functions)
    assert not problems, f"{name}: " + "; ".join(problems)
