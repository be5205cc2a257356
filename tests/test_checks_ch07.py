"""The chapter-07 check passes a correct stacked_step and fails plausible mistakes."""
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


def run(fn):
    return run_check(all_checks()["ch07.stacked_step"], {"stacked_step": fn})


def variant(pass_up_sum=True, lateral_writes_state=True, first_layer_residual=True,
            vertical_writes_state=False, every_layer_reads_x=False):
    """stacked_step with one of the usual mistakes switched on."""
    def stacked_step(steps, params, x, states, residual=None):
        x_in, new_states = x, []
        for k, (step, p, state) in enumerate(zip(steps, params, states)):
            layer_input = x_in if every_layer_reads_x else x
            state = step(p, layer_input, state)
            h = state[0]
            if residual and (k > 0 or first_layer_residual):
                h_sum = h + layer_input
                if (residual == "lateral" and lateral_writes_state) or vertical_writes_state:
                    state = (h_sum,) + tuple(state[1:])
                h = h_sum if pass_up_sum else h
            new_states.append(state)
            x = h
        return x, new_states
    return stacked_step


def test_check_is_registered():
    assert "ch07.stacked_step" in all_checks()


def test_reference_passes_its_own_check():
    check("ch07.stacked_step", stacked_step=ch07.reference_stacked_step)


def test_the_correct_variant_passes():
    assert run(variant()) == []


@pytest.mark.parametrize("mistake, modes", [
    ({"pass_up_sum": False}, ["'vertical'", "'lateral'"]),
    ({"lateral_writes_state": False}, ["'lateral'"]),
    ({"vertical_writes_state": True}, ["'vertical'"]),
    ({"first_layer_residual": False}, ["'vertical'", "'lateral'"]),
    ({"every_layer_reads_x": True}, ["None", "'vertical'", "'lateral'"]),
])
def test_mistakes_fail_in_the_modes_they_touch(mistake, modes):
    problems = run(variant(**mistake))
    failed = sorted({p.split(":")[0].removeprefix("residual=") for p in problems})
    assert failed == sorted(modes), problems


def test_values_taken_out_of_dynet_fail_on_gradients():
    def detached(steps, params, x, states, residual=None):
        h, new_states = ch07.reference_stacked_step(steps, params, x, states, residual)
        return dy.inputTensor(h.npvalue().reshape(ch07.D, -1), batched=True), new_states
    problems = run(detached)
    assert problems and all("gradients differ" in p for p in problems)


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


def test_check_judges_the_numbers_as_the_sandbox_returns_them():
    """The autograder carries the probe's numbers through an npz file: flat, all arrays."""
    from autograder.probes import ch07_stacked_residual as probes
    from autograder.probes import to_arrays as flatten
    from autograder.probes import from_arrays as _unflatten
    inputs = ch07.make_inputs()
    numbers = _unflatten(flatten(probes.stacked_step({"stacked_step": variant()}, inputs)))
    assert ch07.judge(numbers, inputs) == []
    wrong = _unflatten(flatten(probes.stacked_step({"stacked_step": variant(lateral_writes_state=False)}, inputs)))
    assert ch07.judge(wrong, inputs)
