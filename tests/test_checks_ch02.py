"""The check of chapter 02's rnn_step (tutorial eq 44): the reference and an equivalent
rewrite pass; plausible mistakes fail with a message that says what is wrong."""
import numpy as np
import pytest

from autograder.reference.grading import all_checks, run_check
from course import runtime

dy = runtime.dynet()


def reference(p, x, state):
    (h_prev,) = state
    return (dy.tanh(dy.affine_transform([p["b_h"], p["W_xh"], x, p["W_hh"], h_prev])),)


def rewritten(p, x, state):
    """The same equation with plain operators: must pass as well."""
    return (dy.tanh(p["W_hh"] * state[0] + p["b_h"] + p["W_xh"] * x),)


def transposed_recurrence(p, x, state):
    return (dy.tanh(p["W_xh"] * x + dy.transpose(p["W_hh"]) * state[0] + p["b_h"]),)


def no_bias(p, x, state):
    return (dy.tanh(p["W_xh"] * x + p["W_hh"] * state[0]),)


def logistic_instead_of_tanh(p, x, state):
    return (dy.logistic(p["W_xh"] * x + p["W_hh"] * state[0] + p["b_h"]),)


def ignores_previous_state(p, x, state):
    """A feed-forward layer: no recurrence at all."""
    return (dy.tanh(p["W_xh"] * x + p["b_h"]),)


def bias_after_tanh(p, x, state):
    return (dy.tanh(p["W_xh"] * x + p["W_hh"] * state[0]) + p["b_h"],)


def numpy_inside(p, x, state):
    """The right numbers, computed in NumPy: no gradient reaches the parameters."""
    W_xh, W_hh, b_h = (p[k].npvalue() for k in ("W_xh", "W_hh", "b_h"))
    X, H = x.npvalue(), state[0].npvalue()
    return (dy.inputTensor(np.tanh(W_xh @ X + W_hh @ H + b_h[:, None]), batched=True),)


def returns_bare_expression(p, x, state):
    return reference(p, x, state)[0]


def problems(fn):
    return run_check(all_checks()["ch02.rnn_step"], {"rnn_step": fn})


def test_the_check_is_registered():
    assert all_checks()["ch02.rnn_step"].functions == ("rnn_step",)


@pytest.mark.parametrize("correct", [reference, rewritten])
def test_correct_steps_pass(correct):
    assert problems(correct) == []


@pytest.mark.parametrize("wrong, hint", [
    (transposed_recurrence, "differs"),
    (no_bias, "differs"),
    (logistic_instead_of_tanh, "differs"),
    (ignores_previous_state, "differs"),
    (bias_after_tanh, "differs"),
    (numpy_inside, "outside DyNet"),
])
def test_plausible_mistakes_fail_with_a_hint(wrong, hint):
    found = problems(wrong)
    assert found, f"{wrong.__name__} passed the check"
    assert hint in " ".join(found)


def test_a_step_that_returns_no_tuple_is_refused():
    with pytest.raises(TypeError, match="tuple"):
        problems(returns_bare_expression)
