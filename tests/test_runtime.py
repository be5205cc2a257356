import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from course import runtime
from tests.conftest import ROOT

dy = runtime.dynet()


def run_python(code: str, **env):
    """Run code in a fresh interpreter (DyNet's settings are fixed per process)."""
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=120)


def test_seed_zero_is_refused_not_silently_random():
    with pytest.raises(ValueError, match="positive integer.*0 as .choose a random seed"):
        runtime.init(seed=0)


def test_reseeding_reproduces_random_draws():
    def draw():
        dy.renew_cg()
        return dy.random_normal((5,)).npvalue()
    runtime.init(seed=123)
    first = draw()
    runtime.init(seed=123)
    np.testing.assert_array_equal(first, draw())


def test_settings_cannot_change_inside_a_running_process():
    with pytest.raises(RuntimeError, match="Restart the kernel"):
        runtime.init(seed=1, mem=runtime.config["mem"] + 1)


def test_numbers_on_the_left_of_an_expression_work_or_are_explained():
    """The GRU's natural `1 - z` (eq 59): dyNET38 2.1 computes it; 2.2 raises TypeError, to which
    runtime.explain() adds the cause and the fix (the course itself never writes it)."""
    dy.renew_cg()
    z = dy.inputVector([0.25, -2.0])
    for spelled, value, expected, fix in [("1 - z", lambda: 1 - z, [0.75, 3.0], "-x + 1"),
                                          ("2 * z", lambda: 2 * z, [0.5, -4.0], "x * 2"),
                                          ("1 + z", lambda: 1 + z, [1.25, -1.0], "x + 1")]:
        if runtime._dynet_version().startswith("2.1"):
            np.testing.assert_allclose(value().npvalue(), expected)
        else:
            with pytest.raises(TypeError) as caught:
                value()
            assert fix in runtime.explain(caught.value), spelled
    np.testing.assert_allclose((-z + 1).npvalue(), [0.75, 3.0])      # what the course writes
    assert runtime.explain(TypeError("unsupported operand type(s) for -: 'int' and 'str'")) is None


def test_banner_is_kept_off_stderr_and_describe_reports_the_settings():
    result = run_python("from course import runtime; runtime.init(seed=7); "
                        "print(runtime.describe()); print(repr(runtime.banner))")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""                                # nbgrader scores stderr 0
    assert re.search(r"DyNet 2\.[12](\.\d+)? on CPU", result.stdout) and "seed 7" in result.stdout
    if runtime._dynet_version().startswith("2.1"):            # 2.2 prints no banner
        assert "random seed: 7" in result.stdout              # the banner, kept for reference


@pytest.mark.parametrize("how", ["argument", "environment"])
def test_asking_for_a_gpu_on_cpu_dynet_fails_clearly(how):
    code = "from course import runtime; runtime.init(seed=1{})".format(
        ", gpu=True" if how == "argument" else "")
    result = run_python(code, COURSE_GPU="1" if how == "environment" else "0")
    assert result.returncode != 0
    assert "GPUUnavailable" in result.stderr and "GPU DyNet" in result.stderr


def test_importing_dynet_first_is_detected():
    result = run_python("import dynet\nfrom course import runtime\nruntime.init(seed=1)")
    assert "imported before course.runtime.init()" in result.stderr


def test_seed_none_picks_and_reports_a_random_seed():
    result = run_python("from course import runtime; runtime.init(seed=None); "
                        "print(runtime.config['seed'])")
    assert int(result.stdout.strip()) >= 1


def test_numpy_float_limits_do_not_warn_after_dynet_starts():
    """DyNet's flush-to-zero mode makes NumPy's first finfo() warn on stderr."""
    result = run_python("from course import runtime; runtime.init(seed=1); import numpy; "
                        "numpy.finfo(numpy.float64); numpy.testing.assert_allclose(1.0, 1.0)")
    assert result.returncode == 0 and result.stderr == ""


def test_dynet_memory_grows_past_its_start_with_the_same_results():
    """runtime.DEFAULT_MEM is a start, not a cap: bench/dynet_start.py's training steps (a graph of tens of
    MB: 34 softmaxes over 5,000 words for 32 sentences, and their gradients) run from a 1 MB start, with
    the losses of a 512 MB one."""
    import dynet_start   # bench/dynet_start.py
    small, large = (subprocess.run([sys.executable, "-c", dynet_start.PROBE, mem], cwd=ROOT, capture_output=True,
                                   text=True, timeout=300) for mem in ("1", "512"))
    assert small.returncode == 0 and large.returncode == 0, small.stderr + large.stderr
    losses = [json.loads(run.stdout.splitlines()[-1])["losses"] for run in (small, large)]
    assert len(losses[0]) == 3 and losses[0] == losses[1]


NAN_LEFT_BEHIND = r"""
import os
import numpy as np
from course import runtime
dy = runtime.init(seed=1)
rng = np.random.default_rng(0)
W, X = rng.normal(size=(2, 3)), rng.normal(size=(3, 8))
def product():
    dy.renew_cg()
    pc = dy.ParameterCollection()
    w = pc.add_parameters((2, 3), init=dy.NumpyInitializer(W)).expr()
    return (w * dy.inputTensor(X, batched=True)).npvalue()
sound = product()
dy.renew_cg()
(dy.exp(-dy.tanh(dy.inputTensor(np.full((64, 64), np.nan), batched=True)) + 1) * 1.0).npvalue()   # a graph of NaN
left = product()
if os.environ["CLEAR"]:
    runtime.clear_memory()
print(int(np.isnan(left).sum()), int(np.array_equal(product(), sound)), int(np.allclose(sound, W @ X, atol=1e-5)))
"""


@pytest.mark.parametrize("clear", [False, True])
def test_a_nan_left_in_dynets_memory_comes_back_in_w_x_until_cleared(clear):
    """DyNet's CPU matrix product computes 0 x (its memory) + W x: after a graph of NaN, a product of
    sound numbers in the next graph is NaN, and stays so until runtime.clear_memory() (which training
    calls at a diverged loss, and the grader's checks at numbers that are not finite)."""
    run = run_python(NAN_LEFT_BEHIND, CLEAR="1" if clear else "")
    assert run.returncode == 0, run.stderr
    nans, same, right = map(int, run.stdout.split())
    assert nans > 0 and right == 1                     # DyNet's own behaviour, which the course works around
    assert same == (1 if clear else 0)
