"""The check of chapter 03's lstm_step (LSTM without forget gate, tutorial eqs 47-51, with
eq 52's logistic in its correct form): the reference and an equivalent rewrite pass;
plausible mistakes fail."""
import numpy as np
import pytest

from autograder.reference.grading import all_checks, run_check
from course import runtime

dy = runtime.dynet()


def _affine(p, g, x, h_prev):
    return dy.affine_transform([p["b_" + g], p["W_x" + g], x, p["W_h" + g], h_prev])


def reference(p, x, state):
    h_prev, c_prev = state
    u = dy.tanh(_affine(p, "u", x, h_prev))
    i = dy.logistic(_affine(p, "i", x, h_prev))
    o = dy.logistic(_affine(p, "o", x, h_prev))
    c = dy.cmult(i, u) + c_prev
    return (dy.cmult(o, dy.tanh(c)), c)


def rewritten(p, x, state):
    """Plain operators and the logistic spelt out as 1 / (1 + exp(-z)): must pass too."""
    h_prev, c_prev = state

    def sigma(z):
        return dy.cdiv(dy.ones(z.dim()[0], batch_size=z.dim()[1]), 1 + dy.exp(-z))

    pre = {g: p["W_x" + g] * x + p["W_h" + g] * h_prev + p["b_" + g] for g in "uio"}
    c = c_prev + dy.cmult(sigma(pre["i"]), dy.tanh(pre["u"]))
    return (dy.cmult(sigma(pre["o"]), dy.tanh(c)), c)


def _variant(gate=dy.logistic, output_gate=None, cell=None, hidden=None, swap_io=False):
    def step(p, x, state):
        h_prev, c_prev = state
        u = dy.tanh(_affine(p, "u", x, h_prev))
        i = gate(_affine(p, "o" if swap_io else "i", x, h_prev))
        o = (output_gate or gate)(_affine(p, "i" if swap_io else "o", x, h_prev))
        c = cell(i, u, c_prev) if cell else dy.cmult(i, u) + c_prev
        h = hidden(o, c) if hidden else dy.cmult(o, dy.tanh(c))
        return (h, c)
    return step


def misprinted_logistic(z):
    """Eq 52 as printed in the tutorial, 1 / (1 - exp(-x)): not in (0, 1) at all."""
    return dy.cdiv(dy.ones(z.dim()[0], batch_size=z.dim()[1]), 1 - dy.exp(-z))


MISTAKES = {
    "misprinted eq 52": _variant(gate=misprinted_logistic),
    "tanh output gate": _variant(output_gate=dy.tanh),
    "input and output gates swapped": _variant(swap_io=True),
    "coupled gates (1 - i) * c_prev": _variant(cell=lambda i, u, c: dy.cmult(i, u) + dy.cmult(1 - i, c)),
    "previous cell dropped": _variant(cell=lambda i, u, c: dy.cmult(i, u)),
    "h = o * c without tanh": _variant(hidden=lambda o, c: dy.cmult(o, c)),
}


def state_in_the_wrong_order(p, x, state):
    h, c = reference(p, x, state)
    return (c, h)


def numpy_inside(p, x, state):
    """The right numbers, computed in NumPy: no gradient reaches the parameters."""
    v = {k: e.npvalue() for k, e in p.items()}
    X, H, C = x.npvalue(), state[0].npvalue(), state[1].npvalue()

    def pre(g):
        return v["W_x" + g] @ X + v["W_h" + g] @ H + v["b_" + g][:, None]

    def sigma(z):
        return 1 / (1 + np.exp(-z))

    c = sigma(pre("i")) * np.tanh(pre("u")) + C
    h = sigma(pre("o")) * np.tanh(c)
    return (dy.inputTensor(h, batched=True), dy.inputTensor(c, batched=True))


def problems(fn):
    return run_check(all_checks()["ch03.lstm_step"], {"lstm_step": fn})


def test_the_check_is_registered():
    assert all_checks()["ch03.lstm_step"].functions == ("lstm_step",)


@pytest.mark.parametrize("correct", [reference, rewritten])
def test_correct_steps_pass(correct):
    assert problems(correct) == []


@pytest.mark.parametrize("name", sorted(MISTAKES))
def test_plausible_mistakes_fail(name):
    found = problems(MISTAKES[name])
    assert found, f"{name} passed the check"
    assert "differs" in " ".join(found)


def test_h_must_come_first_in_the_state():
    found = problems(state_in_the_wrong_order)
    assert "state[0] at step 1 differs" in " ".join(found)


def test_numpy_inside_fails_on_the_gradients():
    found = problems(numpy_inside)
    assert found and "outside DyNet" in " ".join(found)
    assert not any("state" in f for f in found), "the states are right; only gradients are missing"
