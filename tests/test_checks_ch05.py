"""Chapter 05's checks pass the reference (and `1 - z` written naturally) and
fail plausible wrong GRUs: the sample class's NumPy answer (full check only:
its values are right), eq 59's weights exchanged, the reset gate in the wrong
place, the gates swapped."""
import numpy as np
import pytest

from autograder import probes
from autograder.reference import ch05_gru as ch05
from autograder.reference import grading
from autograder.reference.cells import gru_step as reference_gru_step
from course import runtime

dy = runtime.dynet()
CHECKS = {c.name: c for c in ch05.CHECKS}
NAMES = ("ch05.gru_step", "ch05.gru_update_gate", "ch05.gru_builder")


def problems(step, name="ch05.gru_step"):
    return grading.run_check(CHECKS[name], {"gru_step": step})


def gate(p, g, x, h):
    return dy.logistic(dy.affine_transform([p["b_" + g], p["W_x" + g], x, p["W_h" + g], h]))


def gru(p, x, state, interpolate, reset_inside=True, r_name="r", z_name="z"):
    (h_prev,) = state
    r, z = gate(p, r_name, x, h_prev), gate(p, z_name, x, h_prev)
    if reset_inside:                                  # eq 58: W_hh (r * h)
        candidate = dy.tanh(dy.affine_transform([p["b_h"], p["W_xh"], x, p["W_hh"], dy.cmult(r, h_prev)]))
    else:                                             # r * (W_hh h): another GRU variant
        candidate = dy.tanh(dy.affine_transform([p["b_h"], p["W_xh"], x]) + dy.cmult(r, p["W_hh"] * h_prev))
    return (interpolate(z, h_prev, candidate),)


def one_minus_z_natural(p, x, state):
    """How the tutorial writes eq 59; a plain number on the left works in dyNET38 2.1."""
    return gru(p, x, state, lambda z, h, c: dy.cmult(1 - z, h) + dy.cmult(z, c))


def one_minus_z_written_out(p, x, state):
    return gru(p, x, state, lambda z, h, c: h - dy.cmult(z, h) + dy.cmult(z, c))


def z_exchanged(p, x, state):
    """z close to 1 keeps the old state: the convention of other libraries, not eq 59's."""
    return gru(p, x, state, lambda z, h, c: dy.cmult(z, h) + dy.cmult(1 - z, c))


def reset_after_matrix(p, x, state):
    return gru(p, x, state, lambda z, h, c: dy.cmult(1 - z, h) + dy.cmult(z, c), reset_inside=False)


def gates_swapped(p, x, state):
    return gru(p, x, state, lambda z, h, c: dy.cmult(1 - z, h) + dy.cmult(z, c), r_name="z", z_name="r")


def gru_in_numpy(p, x, state):
    sig = lambda a: 1 / (1 + np.exp(-a))
    P = {k: v.npvalue() for k, v in p.items()}
    X, H = (e.npvalue().reshape(e.dim()[0][0], -1) for e in (x, state[0]))
    r = sig(P["W_xr"] @ X + P["W_hr"] @ H + P["b_r"][:, None])
    z = sig(P["W_xz"] @ X + P["W_hz"] @ H + P["b_z"][:, None])
    candidate = np.tanh(P["W_xh"] @ X + P["W_hh"] @ (r * H) + P["b_h"][:, None])
    return (dy.inputTensor((1 - z) * H + z * candidate, batched=True),)


@pytest.mark.parametrize("step", [reference_gru_step, one_minus_z_natural, one_minus_z_written_out])
@pytest.mark.parametrize("name", NAMES)
def test_right_answers_pass(name, step):
    assert problems(step, name) == []


@pytest.mark.parametrize("wrong", [z_exchanged, reset_after_matrix, gates_swapped])
def test_wrong_grus_fail(wrong):
    found = problems(wrong)
    assert found and "differs" in found[0]
    assert problems(wrong, "ch05.gru_builder")


def test_the_update_gate_check_names_what_is_wrong():
    found = problems(z_exchanged, "ch05.gru_update_gate")
    assert any("(z = 0)" in p for p in found) and any("(z = 1)" in p for p in found), found
    found = problems(reset_after_matrix, "ch05.gru_update_gate")     # only the candidate is wrong
    assert "(z = 1)" in found[0] and not any("(z = 0)" in p for p in found), found


@pytest.mark.parametrize("name", NAMES)
def test_numpy_gru_fails_on_gradients_only(name):
    found = problems(gru_in_numpy, name)
    assert len(found) == 1 and "gradients differ" in found[0], found


def test_builder_reference_agrees_with_the_reference_cell():
    inputs = CHECKS["ch05.gru_builder"].make_inputs()
    assert probes.compare(ch05.run_gru_builder(inputs), probes.run_step(reference_gru_step, inputs)) == []


def test_a_step_that_returns_a_bare_expression_is_refused():
    with pytest.raises(TypeError, match="tuple of 1"):
        problems(lambda p, x, state: one_minus_z_natural(p, x, state)[0])


def test_checks_are_registered_and_run_from_a_notebook():
    assert set(NAMES) <= set(grading.all_checks())
    grading.check("ch05.gru_step", gru_step=one_minus_z_natural)
    with pytest.raises(AssertionError, match="ch05.gru_step"):
        grading.check("ch05.gru_step", gru_step=z_exchanged)
