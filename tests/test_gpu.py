"""On a GPU: the same tests pass with DyNet on the GPU (COURSE_GPU=1).

Skipped, with the reason, where DyNet cannot start on a GPU (the dyNET38 wheel is
CPU-only; a CUDA build without a usable GPU says why): never counted as passed there.
"""
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT


def gpu_start() -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from course import runtime; runtime.init(seed=1, gpu=True)"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)


START = gpu_start()
NO_GPU = START.returncode != 0
WHY = (START.stderr.strip().splitlines() or ["no reason given"])[-1][:200]


@pytest.mark.skipif(NO_GPU, reason=f"DyNet cannot use a GPU here: {WHY}")
def test_cells_and_language_model_tests_pass_on_the_gpu():
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "tests/test_cells.py", "tests/test_lm.py", "tests/test_weights.py"],
                         cwd=ROOT, capture_output=True, text=True, timeout=1200,
                         env={**os.environ, "COURSE_GPU": "1"})
    assert run.returncode == 0, run.stdout[-3000:]


def test_a_gpu_request_either_starts_or_says_why():
    assert START.returncode == 0 or "GPU" in START.stderr
