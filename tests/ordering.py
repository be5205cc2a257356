"""The order `make test` hands its work to the two xdist workers: longest first.

pytest-xdist's ``--dist loadgroup`` deals out work units (a whole ``xdist_group``, or one test) in
the order the workers collected them, each to the worker that runs out first. Dealt in file order,
a ten-minute unit met late ran alone at the end while the other core idled; dealt longest first,
the short tests fill in around the long ones and the workers finish together.

A test's length is what it took the last time it ran here (kept in pytest's cache,
``.pytest_cache/v/tests/durations``) or, on a fresh clone, the estimate in ``HINTS``
(bench/results/test_times.md); a group's length is the sum of its tests'. The tests of a module
that holds a module-scoped fixture stay together, in their order, so that each worker builds it
once. Without xdist nothing is reordered.
"""
from __future__ import annotations

import pytest

CACHE_KEY = "tests/durations"
DEFAULT_S = 1.0
# Seconds per test on a 2-core machine, for a fresh clone (no cached durations): the slow ones
# only, by node id prefix (the longest matching prefix counts). Only the order depends on them.
HINTS = {      # the medians of two fresh-clone runs on an Intel Xeon, 2026-12-06
    "tests/test_autograder.py::test_each_submission_gets_exactly_what_it_earned": 2,    # the class, graded once: about 75
    "tests/test_autograder.py::test_feedback_pages": 30,
    "tests/test_dask_grading.py::test_a_cluster": 110,           # the class graded on the cluster
    "tests/test_dask_grading.py::test_the_workers": 22,          # the cluster's environment
    "tests/test_book.py::test_every_lecture_ran": 290,           # the lectures run in the release (2.1), the build
    "tests/test_book.py::test_every_page_in_the_browser": 53,
    "tests/test_dynet_versions.py::": 55,
    "tests/test_hub.py::test_a_class_on_the_hub": 120,
    "tests/test_hub.py::test_a_student_runs": 11,
    "tests/test_student_release.py::": 8,                       # a notebook in a fresh kernel
    "tests/test_student_release.py::test_lecture_runs_in_the_release[dynet2.2-03": 25,
    "tests/test_student_release.py::test_lecture_runs_in_the_release[dynet2.2-07": 19,
    "tests/test_student_release.py::test_lecture_runs_in_the_release[dynet2.2-09": 30,
    "tests/test_student_release.py::test_lecture_runs_in_the_release[dynet2.2-10": 55,
    "tests/test_student_release.py::test_solved_exercise_passes_its_hidden_tests_in_the_release[dynet2.1-03": 10,
    "tests/test_student_release.py::test_solved_exercise_passes_its_hidden_tests_in_the_release[dynet2.2-03": 22,
    "tests/test_student_release.py::test_solved_exercise_passes_its_hidden_tests_in_the_release[dynet2.1-08": 4,
    "tests/test_student_release.py::test_solved_exercise_passes_its_hidden_tests_in_the_release[dynet2.2-08": 19,
    "tests/test_student_release.py::test_solved_exercise_passes_its_hidden_tests_in_the_release[dynet2.1-09": 4,
    "tests/test_student_release.py::test_solved_exercise_passes_its_hidden_tests_in_the_release[dynet2.2-09": 28,
    "tests/test_student_release.py::test_solved_exercise_passes_its_hidden_tests_in_the_release[dynet2.1-10": 7,  # grades 2.2's model
    "tests/test_student_release.py::test_solved_exercise_passes_its_hidden_tests_in_the_release[dynet2.2-10": 68,
    "tests/test_cli_stream.py::test_ctrl_c": 39,
    "tests/test_ptb_bench.py::test_the_command_line_in_stream_mode": 25,
    "tests/test_attacks_feedback.py::test_honest_work": 29,
    "tests/test_grading_runs.py::test_a_run_waits": 23,
    "tests/test_grammar.py::test_make_corpus": 22,
    "tests/test_grader_ch11.py::test_the_grader_gives": 14,        # chapter 11's class, graded once
    "tests/test_slips.py::test_the_grader": 1,
    "tests/test_generation.py::": 1,
    "tests/test_gpu_speed.py::test_the_dynet_cpu_row": 4,
    "tests/test_deadlines.py::": 3,
}


def without_group(nodeid: str) -> str:
    """The node id without the ``@group`` xdist's loadgroup appends (as xdist splits it)."""
    return nodeid.rsplit("@", 1)[0] if nodeid.rfind("@") > nodeid.rfind("]") else nodeid


def estimate(nodeid: str, measured: dict) -> float:
    nodeid = without_group(nodeid)
    if nodeid in measured:
        return measured[nodeid]
    prefixes = [p for p in HINTS if nodeid.startswith(p)]
    return HINTS[max(prefixes, key=len)] if prefixes else DEFAULT_S


def group_of(item) -> str | None:
    names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                    for m in item.iter_markers("xdist_group")})
    return "_".join(names) or None


def holds_module_fixture(item) -> bool:
    return any(defs[-1].scope in ("module", "package", "class")
               for defs in item._fixtureinfo.name2fixturedefs.values() if defs)


def longest_first(items: list, measured: dict) -> list:
    """``items`` in blocks (an xdist group; a module's tests when it holds a module-scoped
    fixture; else one test), the longest block first; each block keeps its tests' order."""
    blocks: dict = {}
    for item in items:
        group = group_of(item)
        key = ("group", group) if group else \
              ("module", item.nodeid.split("::")[0]) if holds_module_fixture(item) else ("test", item.nodeid)
        blocks.setdefault(key, []).append(item)
    cost = {key: sum(estimate(i.nodeid, measured) for i in block) for key, block in blocks.items()}
    order = sorted(blocks, key=lambda key: -cost[key])           # stable: ties keep the file order
    return [item for key in order for item in blocks[key]]


def configure(config):
    # xdist would otherwise reorder the units by how many tests each holds, not how long they take
    if getattr(config.option, "dist", "no") == "loadgroup":
        config.option.loadscopereorder = False


def configure_node(node):
    """The controller reads the durations once and hands them to every worker, so that all of
    them sort alike (xdist stops when the workers' orders differ)."""
    cache = getattr(node.config, "cache", None)
    node.workerinput[CACHE_KEY] = cache.get(CACHE_KEY, {}) if cache is not None else {}


def modifyitems(config, items):
    if CACHE_KEY in getattr(config, "workerinput", {}):            # an xdist worker
        items[:] = longest_first(items, config.workerinput[CACHE_KEY])


class Durations:
    """The controller's record of each test's time (set-up, call and tear-down), saved at the end."""

    def __init__(self):
        self.seconds: dict = {}

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report):
        nodeid = without_group(report.nodeid)
        self.seconds[nodeid] = self.seconds.get(nodeid, 0.0) + report.duration

    @pytest.hookimpl
    def pytest_sessionfinish(self, session):
        cache = getattr(session.config, "cache", None)
        if cache is not None and self.seconds:
            cache.set(CACHE_KEY, {**cache.get(CACHE_KEY, {}), **{k: round(v, 2) for k, v in self.seconds.items()}})
