"""The checks of chapter 02's rnn_step (tutorial eq 44): the reference and an equivalent
rewrite pass; plausible mistakes fail exactly the checks of the part they break, with a
message that names the mistake."""
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


NAMES = ("ch02.rnn_input", "ch02.rnn_recurrence", "ch02.rnn_step", "ch02.rnn_gradients")


def problems(fn, name="ch02.rnn_step"):
    return run_check(all_checks()[name], {"rnn_step": fn})


def failing(fn):
    """{check: its problems} for the checks of rnn_step that fail."""
    return {name: found for name in NAMES if (found := problems(fn, name))}


def test_the_checks_are_registered():
    assert all(all_checks()[name].functions == ("rnn_step",) for name in NAMES)


@pytest.mark.parametrize("correct", [reference, rewritten])
def test_correct_steps_pass(correct):
    assert failing(correct) == {}


@pytest.mark.parametrize("wrong, checks, hint", [
    (transposed_recurrence, {"ch02.rnn_recurrence", "ch02.rnn_step"}, "W_hh is used transposed"),
    (no_bias, {"ch02.rnn_input", "ch02.rnn_step"}, "b_h is missing"),
    (logistic_instead_of_tanh, {"ch02.rnn_input", "ch02.rnn_recurrence", "ch02.rnn_step"}, "logistic sigmoid"),
    (ignores_previous_state, {"ch02.rnn_recurrence", "ch02.rnn_step"}, "h_{t-1} does not enter"),
    (bias_after_tanh, {"ch02.rnn_input", "ch02.rnn_step"}, "added after the tanh"),
    (numpy_inside, {"ch02.rnn_gradients"}, "outside DyNet"),
])
def test_a_mistake_fails_the_checks_of_its_part_and_is_named(wrong, checks, hint):
    found = failing(wrong)
    assert set(found) == checks, found
    assert all(hint in " ".join(p) for p in found.values()), found


def test_an_unknown_mistake_gets_the_part_and_the_step():
    def doubled_input(p, x, state):
        return (dy.tanh((p["W_xh"] * x) * 2 + p["W_hh"] * state[0] + p["b_h"]),)
    found = failing(doubled_input)
    assert set(found) == {"ch02.rnn_input", "ch02.rnn_step"}, found
    assert found["ch02.rnn_input"][0].startswith("h_t differs from step 1 on") and \
        "check the input term" in found["ch02.rnn_input"][0], found


def test_a_step_that_returns_no_tuple_is_refused():
    with pytest.raises(TypeError, match="tuple"):
        problems(returns_bare_expression)
