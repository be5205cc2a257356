"""The sandbox that runs student code for the trusted grader: confined, limited,
and only numbers come back."""
import inspect
import textwrap

import pytest

from autograder import landlock, sandbox
from autograder.reference import cells, steps
from course import runtime
from tests.conftest import ROOT

CHECK = steps.gradients_check("test.gru_step", "gru_step", "gru", seed=20261122)
CHECKS = {name: steps.gradients_check(name, "gru_step", "gru", seed=seed) for name, seed in (("test.a", 1), ("test.b", 2))}
LIMITS = sandbox.Limits(wall_s=30, cpu_s=30, memory_mb=3000)


def run(source: str, limits=LIMITS):
    inputs = {CHECK.name: CHECK.make_inputs()}
    probes = [{"check": CHECK.name, "probe": CHECK.probe, "functions": list(CHECK.functions)}]
    numbers, errors, notes, _ = sandbox.run_code([("gru_step", source)], probes, inputs, limits)
    problems = (CHECK.judge(numbers[CHECK.name], inputs[CHECK.name]) if CHECK.name in numbers
                else [errors.get(CHECK.name, "no result")])
    return problems, errors, notes


def helpers_source():
    """The reference gru_step needs the module's small helpers; a student's cell would too."""
    module = inspect.getsource(cells)
    start = module.index("def _gate(")
    return module[start:module.index("\n\n\n", start)] + "\n\n"


@pytest.fixture(scope="module")
def correct():
    return "from course import runtime\ndy = runtime.dynet()\n" + helpers_source() + \
        textwrap.dedent(inspect.getsource(cells.gru_step))


def test_a_correct_answer_passes(correct):
    problems, errors, notes = run(correct)
    assert problems == [] and not errors, (problems, errors, notes)


def test_an_answer_cell_that_draws_with_matplotlib_is_graded(correct):
    """The sandbox does not load Matplotlib before confinement (no check uses it); a cell that imports
    it loads it from the installed packages, still readable, and draws with Agg into its scratch space."""
    drawing = correct + textwrap.dedent("""
        import matplotlib
        import matplotlib.pyplot as plt
        plt.plot([1, 2, 3]); plt.savefig("figure.png"); plt.close()
        assert matplotlib.get_backend().lower() == "agg"
    """)
    problems, errors, notes = run(drawing)
    assert problems == [] and not errors, (problems, errors, notes)


def test_numpy_instead_of_dynet_fails_on_gradients(correct):
    detached = correct + textwrap.dedent("""
        _real = gru_step
        def gru_step(p, x, state):
            (h,) = _real(p, x, state)
            return (dy.inputTensor(h.npvalue(), batched=True),)
    """)
    problems, _, _ = run(detached)
    assert any("gradients differ" in p for p in problems)


@pytest.mark.skipif(not landlock.available(), reason="Landlock is not available on this kernel")
@pytest.mark.parametrize("target", ["autograder/reference/cells.py", "solutions", "autograder/heldout",
                                    "tests/conftest.py", "autograder/probes/__init__.py", "course/lm.py"])
def test_student_code_cannot_read_reference_or_grader_files(correct, target):
    path = str(ROOT / target)
    snoop = f"\nimport os\nos.listdir({path!r}) if os.path.isdir({path!r}) else open({path!r}).read()\n"
    _, errors, _ = run(correct + snoop)
    assert "PermissionError" in errors.get("cell:gru_step", ""), errors


@pytest.mark.skipif(not landlock.available(), reason="Landlock is not available on this kernel")
def test_student_code_cannot_import_the_reference(correct):
    _, errors, _ = run(correct + "\nfrom autograder.reference.cells import gru_step\n")
    assert "Error" in errors.get("cell:gru_step", "")


def test_an_endless_loop_costs_its_cell_its_time_limit_only():
    # answer cells run outside the main thread: signal.signal raises there, so the loop ignores SIGINT itself
    loop = "while True:\n    try:\n        while True:\n            pass\n    except KeyboardInterrupt:\n        pass\n"
    problems, _, notes = run(loop, sandbox.Limits(cell_s=3, wall_s=60, cpu_s=60, memory_mb=3000))
    assert problems and any("time limit" in n for n in notes)


@pytest.mark.parametrize("declared", [False, True], ids=["grader's limit", "check's own limit"])
def test_an_endless_loop_in_a_probe_costs_that_check_only(correct, declared):
    """The first check's probe loops; the second check, on the same function, is still graded.
    The probe's limit is the grader's (Limits.check_s), or the one its check declares
    (Check.seconds): with a grader's limit past the whole submission's, only the check's
    own limit leaves time for the second check."""
    inputs = {name: c.make_inputs() for name, c in CHECKS.items()}
    first, second = sorted(CHECKS)
    marker = float(inputs[first]["params"]["W_xr"][0, 0])          # only the first check's inputs loop
    looping = correct + f"\n_real = gru_step\ndef gru_step(p, x, state):\n" \
        f"    while abs(float(p['W_xr'].npvalue()[0, 0]) - {marker!r}) < 1e-6:\n        pass\n" \
        "    return _real(p, x, state)\n"
    probes = [{"check": name, "probe": c.probe, "functions": list(c.functions)} for name, c in CHECKS.items()]
    limits = sandbox.Limits(check_s=4, wall_s=90)
    if declared:
        probes[0]["seconds"], limits = 4, sandbox.Limits(check_s=120, wall_s=60)
    numbers, errors, notes, _ = sandbox.run_code([("gru_step", looping)], probes, inputs, limits)
    assert "time limit" in errors[first] and second in numbers, (errors, notes)


def test_patching_the_probes_is_caught(correct):
    problems, _, notes = run(correct + "\nimport autograder.probes as P\nP.run_step = lambda s, i: {}\n")
    assert problems and any("changed autograder.probes.run_step" in n for n in notes)


def test_no_datagram_leaves_the_sandbox(correct):
    import socket
    listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    listener.bind(("127.0.0.1", 0))
    listener.settimeout(1)
    port = listener.getsockname()[1]
    send = f"\nimport socket\nsocket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', {port}))\n"
    _, errors, _ = run(correct + send)
    with pytest.raises(socket.timeout):
        listener.recvfrom(10)
    assert "OSError" in errors.get("cell:gru_step", ""), errors


def test_exiting_the_process_costs_only_this_submission():
    problems, _, notes = run("import os\nos._exit(3)\n")
    assert problems and any("exit code 3" in n for n in notes)


def test_a_memory_bomb_hits_the_limit_and_earns_nothing(correct):
    problems, errors, notes = run(correct + "\nx = bytearray(8 * 1024**3)\n")
    assert problems and any("memory limit" in n for n in notes)


def test_a_missing_function_is_reported_by_name():
    problems, _, _ = run("def something_else():\n    pass\n")
    assert "gru_step is not defined" in problems[0]


@pytest.mark.skipif(runtime.gpu_requested(), reason="the premise is a CPU's speed: on an H200 the 10,000 products "
                    "ran within the 15 s (bench/results/gpu_run.md), and more would not fit the memory limit")
def test_the_replay_of_a_traced_program_counts_in_the_submissions_time(correct):
    """A step whose DyNet operations are cheap to record and slow to run (lazy
    matrix products): the replay is stopped when the submission's time is up."""
    import time
    heavy = correct.replace("def gru_step(", "def _gru_step(") + textwrap.dedent("""
        import numpy as _np
        _m = _np.full((300, 300), 1.0 / 300)

        def gru_step(p, x, state):
            (h,) = _gru_step(p, x, state)
            m = dy.inputTensor(_m)
            acc = m
            for _ in range(10_000):
                acc = acc * m
            return (h + dy.sum_elems(acc) * 0,)
        """)
    start = time.monotonic()
    problems, _, _ = run(heavy, sandbox.Limits(wall_s=15, cell_s=10, check_s=60, cpu_s=120, memory_mb=3000))
    assert problems and "replayed" in problems[0], problems
    assert time.monotonic() - start < 15 + sandbox.START_S / 3 + sandbox.REPLAY_GRACE_S, "the replay ran past the budget"
