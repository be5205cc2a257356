"""The checks of chapter 03's lstm_step (LSTM without forget gate, tutorial eqs 47-51, with
eq 52's logistic in its correct form): the reference and an equivalent rewrite pass;
plausible mistakes fail exactly the checks of the parts they break, with a message that
names the mistake (the input and output gates swapped keep the carousel's point)."""
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
        return dy.cdiv(dy.ones(z.dim()[0], batch_size=z.dim()[1]), dy.exp(-z) + 1)

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
    return dy.cdiv(dy.ones(z.dim()[0], batch_size=z.dim()[1]), -dy.exp(-z) + 1)


MEMORY, OUTPUT, STEP, GRADIENTS, CAROUSEL = (f"ch03.lstm_{k}" for k in
                                             ("memory", "output", "step", "gradients", "carousel"))
NAMES = (MEMORY, OUTPUT, STEP, GRADIENTS, CAROUSEL)
# mistake: (step, {each check it fails: a phrase of that check's message})
MISPRINT, SWAPPED = "misprints it", "the input gate reads the output gate's parameters"
MISTAKES = {
    "misprinted eq 52": (_variant(gate=misprinted_logistic),
                         {MEMORY: MISPRINT, OUTPUT: "check o_t (eq 49", STEP: MISPRINT}),
    "tanh output gate": (_variant(output_gate=dy.tanh),
                         {OUTPUT: "check o_t (eq 49", STEP: "the output gate uses tanh"}),
    "input and output gates swapped": (_variant(swap_io=True),
                                       {MEMORY: SWAPPED, OUTPUT: "is o_t computed from W_xo", STEP: SWAPPED}),
    "coupled gates (1 - i) * c_prev": (_variant(cell=lambda i, u, c: dy.cmult(i, u) + dy.cmult(-i + 1, c)),
                                       {MEMORY: "multiplied by (1 - i_t)", STEP: "multiplied by (1 - i_t)",
                                        CAROUSEL: "constant error carousel"}),
    "previous cell dropped": (_variant(cell=lambda i, u, c: dy.cmult(i, u)),
                              {MEMORY: "c_{t-1} is missing", STEP: "c_{t-1} is missing",
                               CAROUSEL: "constant error carousel"}),
    "h = o * c without tanh": (_variant(hidden=lambda o, c: dy.cmult(o, c)),
                               {OUTPUT: "so h_t must be tanh(c_t)", STEP: "eq 51 squashes the memory cell"}),
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


def problems(fn, name=STEP):
    return run_check(all_checks()[name], {"lstm_step": fn})


def failing(fn):
    return {name: found for name in NAMES if (found := problems(fn, name))}


def test_the_checks_are_registered():
    assert all(all_checks()[name].functions == ("lstm_step",) for name in NAMES)


@pytest.mark.parametrize("correct", [reference, rewritten])
def test_correct_steps_pass(correct):
    assert failing(correct) == {}


@pytest.mark.parametrize("name", sorted(MISTAKES))
def test_a_mistake_fails_the_checks_of_its_parts_and_is_named(name):
    step, hints = MISTAKES[name]
    found = failing(step)
    assert set(found) == set(hints), found
    assert all(hints[check] in " ".join(p) for check, p in found.items()), found


def test_swapped_gates_are_named_not_blamed_on_the_logistic():
    """The issue's wrong-way hint: the gates' wiring is named, the logistic is not."""
    found = failing(MISTAKES["input and output gates swapped"][0])
    assert "the input gate reads the output gate's parameters" in found[MEMORY][0]
    assert not any("logistic" in p for ps in found.values() for p in ps), found


def test_h_must_come_first_in_the_state():
    found = problems(state_in_the_wrong_order)
    assert found == ["the state is returned as (c, h): return (h, c), h first (the next step and the "
                     "model read state[0] as h)"]


def test_numpy_inside_fails_on_the_gradients_only():
    found = failing(numpy_inside)
    assert set(found) == {GRADIENTS} and "outside DyNet" in found[GRADIENTS][0], found
