"""Chapter 05's checks pass the reference (and `1 - z` written naturally, on any DyNet) and
fail plausible wrong GRUs, each exactly in the checks of the parts it breaks and
with a message that names it: the sample class's NumPy answer (gradients only:
its values are right), eq 59's weights exchanged, the reset gate in the wrong
place or left out, the gates swapped, the candidate's bias missing."""
import numpy as np
import pytest

from autograder import probes
from autograder.reference import ch05_gru as ch05
from autograder.reference import grading
from autograder.reference.cells import gru_step as reference_gru_step
from course import runtime
from tests.slips import Slip

dy = runtime.dynet()
CHECKS = {c.name: c for c in ch05.CHECKS}
STEP, GRADIENTS, UPDATE, RESET, BUILDER = (f"ch05.gru_{k}" for k in
                                           ("step", "gradients", "update_gate", "reset_gate", "builder"))
NAMES = (STEP, GRADIENTS, UPDATE, RESET, BUILDER)


def problems(step, name="ch05.gru_step"):
    return grading.run_check(CHECKS[name], {"gru_step": step})


def gate(p, g, x, h):
    return dy.logistic(dy.affine_transform([p["b_" + g], p["W_x" + g], x, p["W_h" + g], h]))


def gru(p, x, state, interpolate, reset_inside=True, r_name="r", z_name="z", reset=True, bias=True):
    (h_prev,) = state
    r, z = gate(p, r_name, x, h_prev), gate(p, z_name, x, h_prev)
    b = p["b_h"] if bias else p["b_h"] * 0
    if reset_inside:                                  # eq 58: W_hh (r * h)
        read = dy.cmult(r, h_prev) if reset else h_prev
        candidate = dy.tanh(dy.affine_transform([b, p["W_xh"], x, p["W_hh"], read]))
    else:                                             # r * (W_hh h): another GRU variant
        candidate = dy.tanh(dy.affine_transform([b, p["W_xh"], x]) + dy.cmult(r, p["W_hh"] * h_prev))
    return (interpolate(z, h_prev, candidate),)


def one_minus_z_spelled_for_any_dynet(p, x, state):
    """Eq 59 as the course writes it: -z + 1 is 1 - z, and dyNET38 2.2 computes it too."""
    return gru(p, x, state, lambda z, h, c: dy.cmult(-z + 1, h) + dy.cmult(z, c))


def one_minus_z_written_out(p, x, state):
    return gru(p, x, state, lambda z, h, c: h - dy.cmult(z, h) + dy.cmult(z, c))


def z_exchanged(p, x, state):
    """z close to 1 keeps the old state: the convention of other libraries, not eq 59's."""
    return gru(p, x, state, lambda z, h, c: dy.cmult(z, h) + dy.cmult(-z + 1, c))


def reset_after_matrix(p, x, state):
    return gru(p, x, state, lambda z, h, c: dy.cmult(-z + 1, h) + dy.cmult(z, c), reset_inside=False)


def gates_swapped(p, x, state):
    return gru(p, x, state, lambda z, h, c: dy.cmult(-z + 1, h) + dy.cmult(z, c), r_name="z", z_name="r")


def reset_left_out(p, x, state):
    return gru(p, x, state, lambda z, h, c: dy.cmult(-z + 1, h) + dy.cmult(z, c), reset=False)


def candidate_without_bias(p, x, state):
    return gru(p, x, state, lambda z, h, c: dy.cmult(-z + 1, h) + dy.cmult(z, c), bias=False)


def gru_in_numpy(p, x, state):
    sig = lambda a: 1 / (1 + np.exp(-a))
    P = {k: v.npvalue() for k, v in p.items()}
    X, H = (e.npvalue().reshape(e.dim()[0][0], -1) for e in (x, state[0]))
    r = sig(P["W_xr"] @ X + P["W_hr"] @ H + P["b_r"][:, None])
    z = sig(P["W_xz"] @ X + P["W_hz"] @ H + P["b_z"][:, None])
    candidate = np.tanh(P["W_xh"] @ X + P["W_hh"] @ (r * H) + P["b_h"][:, None])
    return (dy.inputTensor((1 - z) * H + z * candidate, batched=True),)


@pytest.mark.parametrize("step", [reference_gru_step, one_minus_z_spelled_for_any_dynet, one_minus_z_written_out])
@pytest.mark.parametrize("name", NAMES)
def test_right_answers_pass(name, step):
    assert problems(step, name) == []


# How the grader runs a step (autograder/sandbox.py): traced, then replayed without student code.
TRACED_NATURAL = """
import json
from course import runtime
runtime.init(seed=1)
import _dynet, dynet as dy
from autograder import probes
from autograder.probes import trace
from autograder.reference import ch05_gru
trace.install(dy, _dynet)


def gru_step(p, x, state):          # eq 59 as the tutorial writes it: a number on the left
    (h_prev,) = state
    r = dy.logistic(dy.affine_transform([p["b_r"], p["W_xr"], x, p["W_hr"], h_prev]))
    z = dy.logistic(dy.affine_transform([p["b_z"], p["W_xz"], x, p["W_hz"], h_prev]))
    candidate = dy.tanh(dy.affine_transform([p["b_h"], p["W_xh"], x, p["W_hh"], dy.cmult(r, h_prev)]))
    return (dy.cmult(1 - z, h_prev) + dy.cmult(z, candidate),)


found = {}
for check in ch05_gru.CHECKS:
    inputs = check.make_inputs()
    program = trace.trace_step({"gru_step": gru_step}, inputs)
    found[check.name] = check.judge(probes.transported(trace.replay(program, inputs)), inputs)
print(json.dumps(found))
"""


def test_one_minus_z_scores_as_the_reference_through_the_grader_on_any_dynet():
    """`1 - z` and `-z + 1` get the same score: the grader traces the step and replays its
    program with the number moved to the right (autograder/probes/trace.py), so even dyNET38
    2.2, which refuses `1 - z` itself, grades the tutorial's spelling as eq 59."""
    import json
    import subprocess
    import sys
    from tests.conftest import ROOT
    done = subprocess.run([sys.executable, "-c", TRACED_NATURAL], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(found) == set(NAMES) and not any(found.values()), found


EXCHANGED = "z_t and 1 - z_t are exchanged"
SWAPPED = "the reset gate reads the update gate's parameters"
AFTER = "eq 58 applies it to h_{t-1} before W_hh"
# mistake -> {each check it fails: a phrase of that check's message}
MISTAKES = {
    z_exchanged: {STEP: EXCHANGED, UPDATE: EXCHANGED, BUILDER: EXCHANGED},
    reset_after_matrix: {STEP: AFTER, RESET: AFTER, BUILDER: AFTER},
    reset_left_out: {STEP: "the reset gate is not used", RESET: "the reset gate is not used",
                     BUILDER: "the reset gate is not used"},
    gates_swapped: {STEP: SWAPPED, UPDATE: SWAPPED, RESET: SWAPPED, BUILDER: SWAPPED},
    candidate_without_bias: {STEP: "check eqs 56-59", UPDATE: "the candidate tanh(W_xh x_t + b_h) alone",
                             RESET: "the candidate h~_t = tanh(W_xh x_t + W_hh (r_t * h_{t-1}) + b_h)",
                             BUILDER: "differs from dy.GRUBuilder's"},
    gru_in_numpy: {GRADIENTS: "outside DyNet"},
}


def failing(step):
    return {name: found for name in NAMES if (found := problems(step, name))}


@pytest.mark.parametrize("wrong", list(MISTAKES), ids=[f.__name__ for f in MISTAKES])
def test_a_mistake_fails_the_checks_of_its_parts_and_is_named(wrong):
    found = failing(wrong)
    assert set(found) == set(MISTAKES[wrong]), found
    assert all(MISTAKES[wrong][check] in " ".join(p) for check, p in found.items()), found


def test_the_update_gate_check_is_not_blamed_for_the_reset_gate():
    """The issue's wrong-way hint: a reset gate after W_hh passes the update-gate check."""
    assert problems(reset_after_matrix, UPDATE) == []
    found = problems(z_exchanged, UPDATE)
    assert found == [found[0]] and EXCHANGED in found[0]


def test_the_update_gate_check_names_the_units_that_go_wrong():
    def keeps_nothing(p, x, state):        # eq 59 without its first term
        return gru(p, x, state, lambda z, h, c: dy.cmult(z, c))
    found = problems(keeps_nothing, UPDATE)
    assert any("(b_z = -30, z_t = 0)" in p for p in found) and not any("(b_z = +30" in p for p in found), found


def test_builder_reference_agrees_with_the_reference_cell():
    inputs = CHECKS["ch05.gru_builder"].make_inputs()
    assert probes.compare(ch05.run_gru_builder(inputs), probes.run_step(reference_gru_step, inputs)) == []


def test_a_step_that_returns_a_bare_expression_is_refused():
    with pytest.raises(TypeError, match="tuple of 1"):
        problems(lambda p, x, state: one_minus_z_spelled_for_any_dynet(p, x, state)[0])


def test_checks_are_registered_and_run_from_a_notebook():
    assert set(NAMES) <= set(grading.all_checks())
    grading.check("ch05.gru_step", gru_step=one_minus_z_spelled_for_any_dynet, points=1)
    with pytest.raises(AssertionError, match="ch05.gru_step"):
        grading.check("ch05.gru_step", gru_step=z_exchanged)


# ------------------------------------------------------------------ slips
# Each slip is one mistake a student makes in the solution's answer cell, graded end to end by
# tests/test_slips.py, which makes the slip table of autograder/README.md from them.
SLIPS = [
    # ------------------------------------------------------------------ 05: gru_step
    Slip("reset gate applied after W_hh", "05_gru", "gru_step",
         old='x, p["W_hh"], dy.cmult(r, h_prev)]))',
         new='x]) + dy.cmult(r, p["W_hh"] * h_prev))',
         visible="gru_step_update_gate", shows="is r applied to h_prev before W_hh?",
         failing=("ch05.gru_reset_gate", "ch05.gru_step", "ch05.gru_builder"),
         says="eq 58 applies it to h_{t-1} before W_hh", lost=3),
    Slip("z and 1 - z exchanged", "05_gru", "gru_step",
         old="dy.cmult(-z + 1, h_prev) + dy.cmult(z, candidate)",
         new="dy.cmult(z, h_prev) + dy.cmult(-z + 1, candidate)",
         visible="gru_step_update_gate", shows="with z = 0 the state must stay as it was",
         failing=("ch05.gru_update_gate", "ch05.gru_step", "ch05.gru_builder"),
         says="z_t and 1 - z_t are exchanged", lost=3),
]
