"""The checks of chapter 02's rnn_step (tutorial eq 44): the reference and an equivalent
rewrite pass; plausible mistakes fail exactly the checks of the part they break, with a
message that names the mistake."""
import numpy as np
import pytest

from autograder.reference.grading import all_checks, run_check
from autograder.samples import make_samples
from course import runtime
from tests.slips import Slip

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


# ---------------------------------------------------------------- srnn_step_backward (by hand, NumPy)
from autograder.probes import ch02_srnn as backward_probes  # noqa: E402
from autograder.reference import ch02_srnn as ch02  # noqa: E402

BACKWARD = ("ch02.backward_inputs", "ch02.backward_params")


def backward_failing(fn):
    return {name: found for name in BACKWARD
            if (found := run_check(all_checks()[name], {"srnn_step_backward": fn}))}


def backward_by_loops(dh, x, h_prev, h, W_xh, W_hh):
    """The same gradients, one sentence and one entry at a time: must pass as well."""
    dx, dh_prev = np.zeros_like(x), np.zeros_like(h_prev)
    dW_xh, dW_hh, db_h = np.zeros_like(W_xh), np.zeros_like(W_hh), np.zeros(len(h))
    for b in range(x.shape[1]):
        for i in range(len(h)):
            da = dh[i, b] * (1 - h[i, b] ** 2)
            db_h[i] += da
            dW_xh[i] += da * x[:, b]
            dW_hh[i] += da * h_prev[:, b]
            dx[:, b] += da * W_xh[i]
            dh_prev[:, b] += da * W_hh[i]
    return dx, dh_prev, dW_xh, dW_hh, db_h


def test_the_numpy_reference_is_dynets_backward():
    for case in ch02.backward_inputs()["cases"]:
        want = ch02.dynet_backward(case)
        got = ch02.reference_srnn_step_backward(**backward_probes.arguments(case))
        for name, value in zip(backward_probes.OUTPUTS, got):
            assert ch02.rel_error(value, want[name]) < 1e-6, name


@pytest.mark.parametrize("correct", [ch02.reference_srnn_step_backward, backward_by_loops])
def test_a_correct_backward_passes(correct):
    assert backward_failing(correct) == {}


@pytest.mark.parametrize("hint, slip, touches", ch02.BACKWARD_SLIPS, ids=[h[:30] for h, _, _ in ch02.BACKWARD_SLIPS])
def test_each_backward_slip_fails_the_check_of_its_part_and_is_named(hint, slip, touches):
    found = backward_failing(slip)
    parts = {"ch02.backward_inputs" for n in touches if n in ch02.INPUT_GRADIENTS} | \
            {"ch02.backward_params" for n in touches if n in ch02.PARAM_GRADIENTS}
    assert set(found) == parts and all(f == [hint] for f in found.values()), found


def test_db_not_summed_over_the_batch_is_a_shape_that_says_so():
    def not_summed(**args):
        dx, dh_prev, dW_xh, dW_hh, _ = ch02.reference_srnn_step_backward(**args)
        return dx, dh_prev, dW_xh, dW_hh, args["dh"] * (1 - args["h"] ** 2)
    found = backward_failing(not_summed)
    assert list(found) == ["ch02.backward_params"], found
    assert "db_h has shape" in found["ch02.backward_params"][0] and "sum da over the batch" in \
        found["ch02.backward_params"][0], found


def test_a_transposed_dW_xh_is_named_by_its_shape():
    def transposed(**args):
        dx, dh_prev, dW_xh, dW_hh, db_h = ch02.reference_srnn_step_backward(**args)
        return dx, dh_prev, dW_xh.T, dW_hh, db_h
    found = backward_failing(transposed)
    assert list(found) == ["ch02.backward_params"] and "dW_xh is transposed" in found["ch02.backward_params"][0]


def test_an_unknown_slip_gets_the_gradients_and_the_case_without_values():
    def doubled_dx(**args):
        dx, *rest = ch02.reference_srnn_step_backward(**args)
        return (2 * dx, *rest)
    found = backward_failing(doubled_dx)
    assert list(found) == ["ch02.backward_inputs"], found
    (message,) = found["ch02.backward_inputs"]
    assert message.startswith("case 1 (d_in=5, d_h=4, batch=7): dx differs from DyNet's gradients"), message


def by_dynet(dh, x, h_prev, h, W_xh, W_hh):
    """DyNet's backward on a graph of the given h: a * (1 - h^2) has the tanh's slope at h."""
    dy.renew_cg()
    W_x, W_h = dy.inputTensor(W_xh), dy.inputTensor(W_hh)
    X, H = dy.inputTensor(x, batched=True), dy.inputTensor(h_prev, batched=True)
    a = dy.cmult(W_x * X + W_h * H, dy.inputTensor(1 - h ** 2, batched=True))
    loss = dy.sum_batches(dy.dot_product(dy.inputTensor(dh, batched=True), a))
    getattr(loss, "back" + "ward")(full=True)                     # a name built at run time
    da = dh * (1 - h ** 2)
    return (X.gradient().reshape(x.shape), H.gradient().reshape(h_prev.shape), W_x.gradient(), W_h.gradient(),
            da.sum(axis=1))


def _sample_answer(source: str):
    namespace = {}
    exec(compile(source, "sample answer", "exec"), namespace)
    return namespace["srnn_step_backward"]


# the sample class's backward_by_dynet: course.gradcheck's DyNet gradients, one sentence at a time,
# each with its bias recovered from h
by_course_helper = _sample_answer(make_samples.BACKWARD_BY_DYNET)


def hook_removed(**args):
    import sys
    sys.setprofile(None)
    return ch02.reference_srnn_step_backward(**args)


@pytest.mark.parametrize("cheat", [by_dynet, by_course_helper, hook_removed])
def test_asking_dynet_for_the_gradients_earns_nothing(cheat):
    """The exercise is the chain rule by hand: a backward that reaches DyNet's differentiation, by
    whatever route, fails both checks with that reason, though its numbers are right."""
    case = ch02.backward_inputs()["cases"][0]
    got = cheat(**backward_probes.arguments(case))
    want = ch02.dynet_backward(case)
    assert all(ch02.rel_error(g, want[n]) < 1e-5 for n, g in zip(backward_probes.OUTPUTS, got))
    found = backward_failing(cheat)
    assert set(found) == set(BACKWARD) and all("asks DyNet for the gradients" in f[0] for f in found.values())


def test_a_backward_that_returns_the_wrong_form_is_refused():
    with pytest.raises(TypeError, match="tuple of 5 arrays"):
        backward_failing(lambda **args: ch02.reference_srnn_step_backward(**args)[:4])


def test_rel_error_is_taken_over_the_array():
    """One entry near 0 does not make an agreeing gradient fail (cs231n's entrywise ratio would)."""
    from course.gradcheck import rel_error
    assert rel_error([1.0, 1e-9], [1.0, 2e-9]) < 1e-8
    assert rel_error([1.0, -2.0], [1.0, 2.0]) == pytest.approx(4 / 4)
    with pytest.raises(ValueError, match="shapes"):
        rel_error(np.zeros((2, 3)), np.zeros((3, 2)))


def by_dynet_built_names(dh, x, h_prev, h, W_xh, W_hh):
    """DyNet's backward with every differentiation name built at run time."""
    dy.renew_cg()
    W_x, W_h = dy.inputTensor(W_xh), dy.inputTensor(W_hh)
    X, H = dy.inputTensor(x, batched=True), dy.inputTensor(h_prev, batched=True)
    a = dy.cmult(W_x * X + W_h * H, dy.inputTensor(1 - h ** 2, batched=True))
    getattr(dy.sum_batches(dy.dot_product(dy.inputTensor(dh, batched=True), a)), "back" + "ward")(full=True)
    grad = [getattr(e, "grad" + "ient")() for e in (X, H, W_x, W_h)]
    return (grad[0].reshape(x.shape), grad[1].reshape(h_prev.shape), grad[2], grad[3],
            (dh * (1 - h ** 2)).sum(axis=1))


def test_dynet_reached_by_built_names_is_caught_where_its_methods_are_c_functions():
    """dyNET38 2.1's methods are C functions, whose calls a profile hook sees; 2.2's are Cython
    functions, which it does not: there this route is the gap autograder/README.md's threat
    table names, and the function is judged on its numbers alone."""
    import types
    found = backward_failing(by_dynet_built_names)
    if isinstance(dy.Expression.backward, types.MethodDescriptorType):
        assert set(found) == set(BACKWARD) and all("asks DyNet" in f[0] for f in found.values()), found
    else:
        assert found == {}, found


# ------------------------------------------------------------------ slips
# Each slip is one mistake a student makes in the solution's answer cell, graded end to end by
# tests/test_slips.py, which makes the slip table of autograder/README.md from them.
SLIPS = [
    # ------------------------------------------------------------------ 02: rnn_step
    Slip("W_hh used transposed", "02_srnn", "rnn_step",
         old='p["W_hh"], h_prev]',
         new='dy.transpose(p["W_hh"]), h_prev]',
         visible="rnn_step_values", shows="row i of W_hh makes unit i",
         failing=("ch02.rnn_recurrence", "ch02.rnn_step"),
         says="W_hh is used transposed", lost=2),
    Slip("bias b_h missing", "02_srnn", "rnn_step",
         old='dy.affine_transform([p["b_h"], p["W_xh"], x, p["W_hh"], h_prev])',
         new='p["W_xh"] * x + p["W_hh"] * h_prev',
         visible="rnn_step_values", shows="with W_hh = 0, h = tanh(W_xh x + b_h) should be",
         failing=("ch02.rnn_input", "ch02.rnn_step"),
         says="b_h is missing", lost=2),
    Slip("logistic where tanh belongs", "02_srnn", "rnn_step",
         old="h = dy.tanh(",
         new="h = dy.logistic(",
         visible="rnn_step_values", shows="with W_hh = 0, h = tanh(W_xh x + b_h) should be",
         failing=("ch02.rnn_step", "ch02.rnn_input", "ch02.rnn_recurrence"),
         says="squashed with the logistic sigmoid", lost=3),
    Slip("the step computed in NumPy", "02_srnn", "rnn_step",
         old='h = dy.tanh(dy.affine_transform([p["b_h"], p["W_xh"], x, p["W_hh"], h_prev]))',
         new='import numpy as np\n'
             '    h = dy.inputTensor(np.tanh(p["W_xh"].npvalue() @ x.npvalue() + p["W_hh"].npvalue() @ '
             'h_prev.npvalue() + p["b_h"].npvalue()[:, None]), batched=True)',
         visible="rnn_step_gradients", shows="no gradient reached W_xh",
         failing=("ch02.rnn_gradients", "ch02.rnn_step", "ch02.rnn_input", "ch02.rnn_recurrence"),
         says="no gradient reaches any parameter", lost=4,
         # numbers computed at the point it ran at are constants, wrong at the grader's fresh point;
         # in the notebook they are right, and the visible gradient check is what says so
         explained=("rnn_step_values",)),
    # ------------------------------------------------------------------ 02: srnn_step_backward, by hand
    Slip("backward without the tanh's derivative", "02_srnn", "srnn_step_backward",
         old="da = dh * (1 - h ** 2)",
         new="da = dh",
         visible="srnn_step_backward_tests", shows="db_h should be",
         failing=("ch02.backward_inputs", "ch02.backward_params"),
         says="the tanh's derivative is missing", lost=2),
    Slip("tanh' taken of h: 1 - tanh(h)**2", "02_srnn", "srnn_step_backward",
         old="da = dh * (1 - h ** 2)",
         new="da = dh * (1 - np.tanh(h) ** 2)",
         visible="srnn_step_backward_tests", shows="db_h should be",
         failing=("ch02.backward_inputs", "ch02.backward_params"),
         says="tanh' is applied to h, which is already tanh(a)", lost=2),
    Slip("dW_hh transposed", "02_srnn", "srnn_step_backward",
         old="dW_hh = da @ h_prev.T",
         new="dW_hh = h_prev @ da.T",
         visible="srnn_step_backward_tests", shows="dW_hh should be",
         failing=("ch02.backward_params",),
         says="dW_hh is transposed", lost=1),
    Slip("db_h not summed over the batch", "02_srnn", "srnn_step_backward",
         old="db_h = da.sum(axis=1)",
         new="db_h = da",
         visible="srnn_step_backward_tests", shows="db_h has shape (2, 2), expected (2,)",
         failing=("ch02.backward_params",),
         says="sum da over the batch", lost=1),
    Slip("dh_prev without W_hh^T", "02_srnn", "srnn_step_backward",
         old="dh_prev = W_hh.T @ da",
         new="dh_prev = da",
         visible="srnn_step_backward_tests", shows="dh_prev should be",
         failing=("ch02.backward_inputs",),
         says="dh_prev is missing W_hh^T", lost=1),
]
