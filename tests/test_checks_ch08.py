"""The chapter-08 checks pass the reference and fail plausible wrong answers, each in the
checks of what it breaks, with a message naming it. A record is judged against the step's
own memory cell, so a step with wrong equations and a faithful record keeps that point."""
import sys

import numpy as np
import pytest

if "dynet" not in sys.modules:          # tests/conftest.py normally configures DyNet first
    import dynet_config
    dynet_config.set(random_seed=42, mem=512, autobatch=0)

import dynet as dy  # noqa: E402

from autograder.reference import cells as ref  # noqa: E402
from autograder.reference import weights as W  # noqa: E402
from autograder.reference.ch08_weighted_sum import STEPS  # noqa: E402
from autograder.reference.grading import all_checks, run_check  # noqa: E402
from tests.slips import Slip  # noqa: E402

CHECKS = all_checks()


def problems(name, **functions):
    return run_check(CHECKS[name], functions)


def gate(p, g, x, h):
    return dy.logistic(dy.affine_transform([p["b_" + g], p["W_x" + g], x, p["W_h" + g], h]))


# ---------------------------------------------------------------- step functions
@pytest.mark.parametrize("function", sorted(STEPS))
def test_reference_cells_pass_their_checks(function):
    step = ref.CELLS[STEPS[function]].step
    for name in (f"ch08.{function}", f"ch08.{function}_gradients"):
        if name in CHECKS:
            assert problems(name, **{function: step}) == []


def content_with_tanh(p, x, state):
    """The full LSTM's habit: a non-linear content layer (eq 2, not eq 9)."""
    h_prev, c_prev = state
    i, f, o = (gate(p, g, x, h_prev) for g in "ifo")
    c = dy.cmult(i, dy.tanh(p["W_xu"] * x)) + dy.cmult(f, c_prev)
    return (dy.cmult(o, dy.tanh(c)), c)


def swapped_gates(p, x, state):
    q = dict(p)
    for a, b in (("W_xi", "W_xf"), ("W_hi", "W_hf"), ("b_i", "b_f")):
        q[a], q[b] = p[b], p[a]
    return ref.lstm_minus_srnn_step(q, x, state)


def computed_outside_dynet(p, x, state):
    """Right values, but as constants: no gradient reaches the parameters."""
    h, c = ref.lstm_minus_srnn_step(p, x, state)
    batch = h.dim()[1]
    return tuple(dy.inputTensor(e.npvalue().reshape(-1, batch), batched=True) for e in (h, c))


def out_without_tanh(p, x, state):
    h_prev, c_prev = state
    i, f = gate(p, "i", x, h_prev), gate(p, "f", x, h_prev)
    c = dy.cmult(i, p["W_xu"] * x) + dy.cmult(f, c_prev)
    return (c, c)


def hidden_without_output_gate(p, x, state):
    _, c_prev = state
    i, f = (dy.logistic(dy.affine_transform([p["b_" + g], p["W_x" + g], x])) for g in "if")
    c = dy.cmult(i, p["W_xu"] * x) + dy.cmult(f, c_prev)
    return (dy.tanh(c), c)


def ran_gates_read_h(p, x, state, record=None):
    """RAN with the LSTM's wiring: gates read h_{t-1} = tanh(c_{t-1}), not c_{t-1}."""
    h_prev, c_prev = state
    i = dy.logistic(dy.affine_transform([p["b_i"], p["W_ci"], h_prev, p["W_xi"], x]))
    f = dy.logistic(dy.affine_transform([p["b_f"], p["W_cf"], h_prev, p["W_xf"], x]))
    content = dy.affine_transform([p["b_u"], p["W_xu"], x])
    c = dy.cmult(i, content) + dy.cmult(f, c_prev)
    if record is not None:
        record.update(i=i, f=f, content=content)
    return (dy.tanh(c), c)


def ran_identity_with_tanh(p, x, state):
    return ref.ran_tanh_step(p, x, state)


def ran_without_content_bias(p, x, state):
    _, c_prev = state
    i = dy.logistic(dy.affine_transform([p["b_i"], p["W_ci"], c_prev, p["W_xi"], x]))
    f = dy.logistic(dy.affine_transform([p["b_f"], p["W_cf"], c_prev, p["W_xf"], x]))
    c = dy.cmult(i, p["W_xu"] * x) + dy.cmult(f, c_prev)
    return (dy.tanh(c), c)


def c_right_h_wrong(p, x, state):
    h, c = ref.lstm_minus_srnn_step(p, x, state)
    return (h * 2, c)


@pytest.mark.parametrize("function, wrong, says", [
    ("lstm_minus_srnn_step", content_with_tanh, "the content layer is squashed with tanh"),
    ("lstm_minus_srnn_step", swapped_gates, "the input gate reads the forget gate's parameters"),
    ("lstm_minus_srnn_step", c_right_h_wrong, "c_t is right up to there, h_t is not"),
    ("lstm_minus_srnn_out_step", out_without_tanh, "h_t = c_t: eq 10 outputs tanh(c_t)"),
    ("lstm_minus_srnn_hidden_step", hidden_without_output_gate, "has no output gate"),
    ("ran_tanh_step", ran_gates_read_h, "in a RAN they read the previous memory cell c_{t-1}"),
    ("ran_tanh_step", ran_without_content_bias, "b_u is missing from the content layer"),
    ("ran_identity_step", ran_identity_with_tanh, "outputs the memory cell itself"),
])
def test_a_wrong_step_fails_its_values_check_only_and_is_named(function, wrong, says):
    found = problems(f"ch08.{function}", **{function: wrong})
    assert len(found) == 1 and says in found[0], found
    if f"ch08.{function}_gradients" in CHECKS:
        assert problems(f"ch08.{function}_gradients", **{function: wrong}) == []


def test_outside_dynet_fails_the_gradients_check_only():
    assert problems("ch08.lstm_minus_srnn_step", lstm_minus_srnn_step=computed_outside_dynet) == []
    found = problems("ch08.lstm_minus_srnn_step_gradients", lstm_minus_srnn_step=computed_outside_dynet)
    assert len(found) == 1 and "outside DyNet" in found[0], found


# ---------------------------------------------------------------- record
RECORDING = {name: ref.CELLS[STEPS[name]].step
             for name in ("lstm_minus_srnn_step", "lstm_minus_srnn_out_step",
                          "lstm_minus_srnn_hidden_step", "ran_tanh_step")}


def test_reference_cells_record_what_the_weights_need():
    assert problems("ch08.record_gates", **RECORDING) == []


def test_a_wrong_step_with_a_faithful_record_keeps_the_record_point():
    """The issue's wrong-way hint: RAN gates reading h_{t-1} recorded right are not blamed."""
    assert problems("ch08.record_gates", **{**RECORDING, "ran_tanh_step": ran_gates_read_h}) == []


def test_record_check_names_a_step_without_record():
    found = problems("ch08.record_gates", **{**RECORDING, "ran_tanh_step": ran_without_content_bias})
    assert found == ["ran_tanh_step has no record=None parameter: add it and, when a dict is given, "
                     "store the gates in it (record['i'] = i ...)"]


def test_record_check_fails_gated_content():
    def records_gated_content(p, x, state, record=None):
        inner = {}
        new_state = ref.lstm_minus_srnn_out_step(p, x, state, record=inner)
        if record is not None:
            record.update(i=inner["i"], f=inner["f"], content=dy.cmult(inner["i"], inner["content"]))
        return new_state

    found = problems("ch08.record_gates", **{**RECORDING, "lstm_minus_srnn_out_step": records_gated_content})
    assert len(found) == 1 and "record['content']" in found[0], found


def test_a_wrong_step_with_a_wrong_record_is_told_about_both():
    def gated_content_and_wrong_gates(p, x, state, record=None):
        new_state = ran_gates_read_h(p, x, state, record=record)
        if record is not None:
            record["content"] = dy.cmult(record["i"], record["content"])
        return new_state

    found = problems("ch08.record_gates", **{**RECORDING, "ran_tanh_step": gated_content_and_wrong_gates})
    assert len(found) == 1 and "does not rebuild your c_t" in found[0], found

    def pre_activation_gate(p, x, state, record=None):
        new_state = ran_gates_read_h(p, x, state, record=record)
        if record is not None:
            record["i"] = dy.affine_transform([p["b_i"], p["W_ci"], state[0], p["W_xi"], x])
        return new_state

    found = problems("ch08.record_gates", **{**RECORDING, "ran_tanh_step": pre_activation_gate})
    assert len(found) == 1 and "outside [0, 1]" in found[0], found


# ---------------------------------------------------------------- memory_weights
def reference_w(i, f):
    return W.memory_weights(i, f)[0]


def product_from_j(i, f):
    """Off by one: the product includes f_j."""
    w = reference_w(i, f)
    return w * f[None, :, :]


def by_division(i, f):
    """w_j^t = i_j * F_t / F_j with running products F: breaks when a gate is 0."""
    running = np.cumprod(f, axis=0)
    T = len(i)
    w = np.zeros((T, T, i.shape[1]))
    with np.errstate(divide="ignore", invalid="ignore"):
        for t in range(T):
            for j in range(t + 1):
                w[t, j] = i[j] * running[t] / running[j]
    return w


def transposed(i, f):
    return reference_w(i, f).transpose(1, 0, 2)


def test_memory_weights_reference_passes():
    assert problems("ch08.memory_weights", memory_weights=reference_w) == []
    assert problems("ch08.memory_weights_saturated", memory_weights=reference_w) == []


@pytest.mark.parametrize("wrong, checks, hint", [
    (product_from_j, {"ch08.memory_weights", "ch08.memory_weights_saturated"}, "w[t, t] must be i_t"),
    (by_division, {"ch08.memory_weights_saturated"}, "never by dividing"),
    (transposed, {"ch08.memory_weights", "ch08.memory_weights_saturated"}, "indexed [j, t]"),
])
def test_memory_weights_checks_fail_wrong_answers(wrong, checks, hint):
    found = {name: p for name in ("ch08.memory_weights", "ch08.memory_weights_saturated")
             if (p := problems(name, memory_weights=wrong))}
    assert set(found) == checks and all(any(hint in p for p in ps) for ps in found.values()), found


def test_memory_weights_must_return_one_array():
    with pytest.raises(TypeError, match="must return one array"):
        problems("ch08.memory_weights", memory_weights=W.memory_weights)    # (w, w0)


# ---------------------------------------------------------------- most_influential
def test_most_influential_reference_passes():
    assert problems("ch08.most_influential", most_influential=lambda w: W.most_influential(w, "max")) == []


def including_self(w):
    strength = w.max(axis=-1)
    return np.array([-1] + [int(np.argmax(strength[t, :t + 1])) for t in range(1, len(w))])


@pytest.mark.parametrize("wrong, hint", [
    (lambda w: W.most_influential(w, "l2"), "largest component"),
    (including_self, "only predecessors"),
    (lambda w: np.maximum(W.most_influential(w, "max"), 0), "return -1"),
])
def test_most_influential_check_fails_wrong_answers(wrong, hint):
    found = problems("ch08.most_influential", most_influential=wrong)
    assert found and any(hint in p for p in found), found


# ------------------------------------------------------------------ slips
# Each slip is one mistake a student makes in the solution's answer cell, graded end to end by
# tests/test_slips.py, which makes the slip table of autograder/README.md from them.
SLIPS = [
    # ------------------------------------------------------------------ 08: ablations, weights
    Slip("RAN gates reading h_prev, not c_prev", "08_weighted_sum", "ran_step",
         old='    _, c_prev = state\n'
             '    content = dy.affine_transform([p["b_u"], p["W_xu"], x])\n'
             '    i = dy.logistic(dy.affine_transform([p["b_i"], p["W_ci"], c_prev, p["W_xi"], x]))\n'
             '    f = dy.logistic(dy.affine_transform([p["b_f"], p["W_cf"], c_prev, p["W_xf"], x]))',
         new='    h_prev, c_prev = state\n'
             '    content = dy.affine_transform([p["b_u"], p["W_xu"], x])\n'
             '    i = dy.logistic(dy.affine_transform([p["b_i"], p["W_ci"], h_prev, p["W_xi"], x]))\n'
             '    f = dy.logistic(dy.affine_transform([p["b_f"], p["W_cf"], h_prev, p["W_xf"], x]))',
         visible="ran_tanh_step_visible", shows="the gates read c_prev (W_ci, W_cf), not h_prev",
         failing=("ch08.ran_tanh_step", "ch08.ran_identity_step"),
         says="in a RAN they read the previous memory cell c_{t-1}", lost=2),
    Slip("LSTM - S-RNN with a tanh content layer", "08_weighted_sum", "lstm_minus_srnn_step",
         old='content = p["W_xu"] * x',
         new='content = dy.tanh(p["W_xu"] * x)',
         visible="lstm_minus_srnn_step_visible", shows="eq 9's content layer is W_xu x_t alone",
         failing=("ch08.lstm_minus_srnn_step",),
         says="the content layer is squashed with tanh", lost=1),
    Slip("memory weights: the product includes f_j", "08_weighted_sum", "memory_weights",
         old="w[t, t] = i[t]",
         new="w[t, t] = i[t] * f[t]",
         visible="memory_weights_visible", shows="w[:, :, 0] should be",
         failing=("ch08.memory_weights", "ch08.memory_weights_saturated"),
         says="w[t, t] must be i_t", lost=2),
    Slip("most influential word: the word itself counted", "08_weighted_sum", "most_influential",
         old="np.argmax(strength[t, :t])",
         new="np.argmax(strength[t, :t + 1])",
         visible="most_influential_visible", shows="only predecessors j < t count",
         failing=("ch08.most_influential",),
         says="only predecessors count", lost=1),
]
