"""The chapter-07 checks pass a correct stacked_step and fail plausible mistakes: each in
the residual modes it touches (one check per mode), with a message naming it."""
import sys

import pytest

if "dynet" not in sys.modules:          # tests/conftest.py normally configures DyNet first
    import dynet_config
    dynet_config.set(random_seed=42, mem=512, autobatch=0)

import dynet as dy  # noqa: E402
import numpy as np  # noqa: E402

from autograder.reference import ch07_stacked_residual as ch07  # noqa: E402
from autograder.reference.grading import all_checks, check, run_check  # noqa: E402
from course.cell import Cell  # noqa: E402
from course.data import Vocab  # noqa: E402
from tests.slips import Slip  # noqa: E402


MODE_CHECKS = {None: "ch07.stacked", "vertical": "ch07.residual_vertical", "lateral": "ch07.residual_lateral"}
NAMES = (*MODE_CHECKS.values(), "ch07.stacked_gradients")


def run(fn, name="ch07.stacked"):
    return run_check(all_checks()[name], {"stacked_step": fn})


def failing(fn):
    return {name: found for name in NAMES if (found := run(fn, name))}


variant = ch07.variant


def test_checks_are_registered():
    assert set(NAMES) <= set(all_checks())


def test_reference_passes_its_own_checks():
    for name in NAMES:
        check(name, stacked_step=ch07.reference_stacked_step, points=1)


def test_the_correct_variant_passes():
    assert failing(variant()) == {}


def residual_before_the_layer(steps, params, x, states, residual=None):
    """Written as a student would: the input added to h_{t-1}, going into the layer."""
    new_states = []
    for step, p, state in zip(steps, params, states):
        if residual is not None:
            state = (state[0] + x,) + tuple(state[1:])
        state = step(p, x, state)
        new_states.append(state)
        x = state[0]
    return x, new_states


@pytest.mark.parametrize("mistake, modes, says", [
    (variant(pass_up_sum=False), ["vertical", "lateral"], "the next layer reads h without the residual"),
    (variant(lateral_writes_state=False), ["lateral"], "must also replace h (new_state[0])"),
    (variant(vertical_writes_state=True), ["vertical"], "must stay as its step returned it"),
    (variant(first_layer_residual=False), ["vertical", "lateral"], "the first layer needs its residual too"),
    (variant(every_layer_reads_x=True), [None, "vertical", "lateral"], "not x_t (eq 60)"),
    (residual_before_the_layer, ["vertical", "lateral"], "added to h_{t-1} before the layer runs"),
])
def test_mistakes_fail_in_the_modes_they_touch_and_are_named(mistake, modes, says):
    found = failing(mistake)
    assert set(found) == {MODE_CHECKS[m] for m in modes}, found
    assert all(found[MODE_CHECKS[m]][0].startswith(f"residual={m!r}: ") and says in found[MODE_CHECKS[m]][0]
               for m in modes), found


def test_values_taken_out_of_dynet_fail_on_gradients_only():
    def detached(steps, params, x, states, residual=None):
        h, new_states = ch07.reference_stacked_step(steps, params, x, states, residual)
        return dy.inputTensor(h.npvalue().reshape(ch07.D, -1), batched=True), new_states
    found = failing(detached)
    assert list(found) == ["ch07.stacked_gradients"], found
    assert all("computed outside DyNet" in p for p in found["ch07.stacked_gradients"])


def test_a_wrong_return_shape_is_explained():
    with pytest.raises(TypeError, match="top_output, new_states"):
        run(lambda steps, params, x, states, residual=None: ch07.reference_stacked_step(
            steps, params, x, states, residual)[0])


def test_reference_matches_the_course_rnnlm(tiny_corpus):
    """The course's RNNLM stacks layers the same way (its hidden_states, residual modes)."""
    from course import lm
    from autograder.reference.cells import make_cell
    vocab = Vocab.build(tiny_corpus)
    ids = [[vocab.index(w) for w in s] for s in tiny_corpus[:5]]
    inputs = [[vocab.bos] * 5] + [[s[t] if t < len(s) else vocab.eos for s in ids] for t in range(4)]
    for residual in (None, "vertical", "lateral"):
        model = lm.RNNLM(vocab, make_cell("lstm"), embed=6, hidden=6, layers=3, residual=residual)
        dy.renew_cg()
        course_outputs = [h.npvalue() for h in model.hidden_states(inputs)]
        states = [layer.start(5) for layer in model.layers]
        steps = [layer.cell.step for layer in model.layers]
        params = [layer.p for layer in model.layers]
        for t, words in enumerate(inputs):
            h, states = ch07.reference_stacked_step(steps, params, dy.lookup_batch(model.embeddings, words),
                                                    states, residual)
            assert np.allclose(h.npvalue(), course_outputs[t], atol=1e-6), residual


def test_an_unknown_mode_is_refused():
    cell = Cell("toy", lambda p, x, s: (x,), lambda d_in, d_h: {}, 1)
    dy.renew_cg()
    x = dy.inputTensor(np.ones(2))
    with pytest.raises(ValueError, match="residual must be one of"):
        ch07.reference_stacked_step([cell.step], [{}], x, [(x,)], residual="horizontal")


def test_checks_judge_the_numbers_as_the_sandbox_returns_them():
    """The autograder carries the probe's numbers through an npz file: flat, all arrays."""
    from autograder.probes import ch07_stacked_residual as probes
    from autograder.probes import to_arrays as flatten
    from autograder.probes import from_arrays as _unflatten
    lateral = all_checks()["ch07.residual_lateral"]
    inputs = lateral.make_inputs()
    numbers = _unflatten(flatten(probes.stacked_step({"stacked_step": variant()}, inputs)))
    assert set(numbers) == {"lateral"} and lateral.judge(numbers, inputs) == []
    wrong = _unflatten(flatten(probes.stacked_step({"stacked_step": variant(lateral_writes_state=False)}, inputs)))
    assert lateral.judge(wrong, inputs)


def horizontal(fn):
    return run_check(all_checks()["ch07.residual_horizontal"], {"horizontal_step": fn})


def test_the_horizontal_residual_passes_and_its_slips_are_named():
    assert horizontal(ch07.reference_horizontal_step) == []
    for hint, slip in ch07.HORIZONTAL_SLIPS:
        assert horizontal(slip) == [hint]


def test_a_horizontal_residual_outside_dynet_fails_on_gradients():
    def detached(step, p, x, state):
        h, c = ch07.reference_horizontal_step(step, p, x, state)
        return dy.inputTensor(h.npvalue().reshape(ch07.D, -1), batched=True), c
    found = horizontal(detached)
    assert len(found) == 1 and "gradients differ" in found[0], found


# ------------------------------------------------------------------ slips
# Each slip is one mistake a student makes in the solution's answer cell, graded end to end by
# tests/test_slips.py, which makes the slip table of autograder/README.md from them.
SLIPS = [
    # ------------------------------------------------------------------ 07: stacked_step
    Slip("residual added before the layer's nonlinearity", "07_stacked_residual", "stacked_step",
         old="        state = step(p, x, state)\n"
             "        h = state[0]\n"
             "        if residual is not None:\n"
             "            h = h + x ",
         new="        if residual is not None:\n"
             "            state = (state[0] + x,) + tuple(state[1:])\n"
             "        state = step(p, x, state)\n"
             "        h = state[0]\n"
             "        if residual is not None:\n"
             "            h = h ",
         visible="stacked_step_tests", shows="residual='vertical', step 1: top output",
         failing=("ch07.residual_vertical", "ch07.residual_lateral"),
         says="the residual is added to h_{t-1} before the layer runs", lost=2),
    Slip("lateral residual not passed to the next step", "07_stacked_residual", "stacked_step",
         old='if residual == "lateral":',
         new="if False:",
         visible="stacked_step_tests", shows="residual='lateral', step 1: new states",
         failing=("ch07.residual_lateral",),
         says="must also replace h (new_state[0])", lost=1),
    Slip("horizontal residual adds the input x_t, not h_{t-1}", "07_stacked_residual", "horizontal_step",
         old="return (new_state[0] + state[0],)",
         new="return (new_state[0] + x,)",
         visible="horizontal_step_tests", shows="step 1: new state (h, c)",
         failing=("ch07.residual_horizontal",),
         says="adds the fast state of the previous time step", lost=1),
]
