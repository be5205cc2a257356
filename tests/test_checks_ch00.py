"""The check of chapter 00's warm-up: the reference passes, plausible mistakes fail
with a message that says what is wrong."""
import numpy as np
import pytest

from autograder import grader
from autograder.reference import ch00_dynet_primer as ch00
from autograder.reference.grading import run_check
from course import runtime
from tests.conftest import ROOT

dy = runtime.dynet()


def reference(p, x, y):
    h = dy.tanh(dy.affine_transform([p["b1"], p["W1"], x]))
    return dy.sum_batches(dy.pickneglogsoftmax_batch(dy.affine_transform([p["b2"], p["W2"], h]), y))


def no_sum_batches(p, x, y):
    h = dy.tanh(p["W1"] * x + p["b1"])
    return dy.pickneglogsoftmax_batch(p["W2"] * h + p["b2"], y)


def sigmoid_hidden(p, x, y):
    h = dy.logistic(p["W1"] * x + p["b1"])
    return dy.sum_batches(dy.pickneglogsoftmax_batch(p["W2"] * h + p["b2"], y))


def mean_over_batch(p, x, y):
    return reference(p, x, y) * (1.0 / len(y))


def numpy_inside(p, x, y):
    """The right number, computed in NumPy: no gradient can flow."""
    W1, b1, W2, b2 = (p[k].npvalue() for k in ("W1", "b1", "W2", "b2"))
    X = x.npvalue()
    h = np.tanh(W1 @ X + b1[:, None])
    s = W2 @ h + b2[:, None]
    logp = s - np.log(np.exp(s).sum(axis=0))
    return dy.scalarInput(-logp[y, np.arange(len(y))].sum())


def swapped_layers(p, x, y):
    """Bias of the first layer added after the tanh: right shapes, wrong network."""
    h = dy.tanh(p["W1"] * x) + p["b1"]
    return dy.sum_batches(dy.pickneglogsoftmax_batch(p["W2"] * h + p["b2"], y))


CHECK = {c.name: c for c in ch00.CHECKS}["ch00.mlp_nll"]


def problems(fn):
    """Probe, send the numbers through the sandbox's float-array transport, judge."""
    return run_check(CHECK, {"mlp_nll": fn})


def test_the_reference_passes():
    assert problems(reference) == []


@pytest.mark.parametrize("wrong, hint", [
    (no_sum_batches, "dy.sum_batches"),
    (sigmoid_hidden, "tanh"),
    (mean_over_batch, "mean"),
    (numpy_inside, "no gradient"),
    (swapped_layers, "differs"),
])
def test_plausible_mistakes_fail_with_a_hint(wrong, hint):
    found = problems(wrong)
    assert found, f"{wrong.__name__} passed the check"
    assert hint in " ".join(found)


def test_returning_a_float_fails_with_a_hint():
    found = problems(lambda p, x, y: reference(p, x, y).value())
    assert found and "DyNet expression" in found[0]


def test_numpy_reference_gradients_match_finite_differences():
    inputs = ch00.mlp_inputs(d_in=3, d_h=4, n_classes=3, batch=5)
    params, x, y = inputs["params"], inputs["x"], inputs["y"]
    _, grads = ch00.mlp_nll_numpy(params, x, y)
    eps = 1e-6
    for name, value in params.items():
        numeric = np.zeros_like(value)
        for index in np.ndindex(value.shape):
            up = {**params, name: value.copy()}
            down = {**params, name: value.copy()}
            up[name][index] += eps
            down[name][index] -= eps
            numeric[index] = (ch00.mlp_nll_numpy(up, x, y)[0] - ch00.mlp_nll_numpy(down, x, y)[0]) / (2 * eps)
        np.testing.assert_allclose(grads[name], numeric, rtol=1e-5, atol=1e-7)


def test_the_message_reveals_no_reference_value():
    inputs = ch00.mlp_inputs()
    want, _ = ch00.mlp_nll_numpy(inputs["params"], inputs["x"], inputs["y"])
    for wrong in (no_sum_batches, sigmoid_hidden, mean_over_batch, swapped_layers):
        text = " ".join(problems(wrong))
        assert f"{want:.3f}" not in text and f"{want:.2f}" not in text


@pytest.mark.parametrize("folder, expected", [("solutions", 3.0), ("exercises", 0.0)])
def test_the_trusted_grader_scores_the_chapter(folder, expected):
    """End to end, in the sandbox: the solution earns every point, the shipped stub none."""
    result = grader.grade(ROOT / folder / "00_dynet_primer.ipynb", limits=grader.Limits(wall_s=60))
    assert result.failure is None
    assert (result.score, result.max_score) == (expected, 3.0), result.cells
