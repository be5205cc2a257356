"""bench/gpu_speed.py: the speed table runs its CPU rows anywhere and says which rows could
not run and why (here: no GPU; PyTorch where it is not installed), and it states the goals
of issue 22 from the numbers. On a GPU machine the same run fills the GPU rows."""
import json
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT

import gpu_speed  # bench/gpu_speed.py (pytest's pythonpath holds bench/)

pytestmark = pytest.mark.xdist_group("gpu-speed")   # one worker runs the benchmark once (module fixture)

try:
    import torch  # noqa: F401
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False
HAVE_GPU = shutil.which("nvidia-smi") is not None


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One round of the small configuration, one timed segment per row (the builder row
    takes the same path as the course's LSTM on the GPU, and is left out)."""
    out = tmp_path_factory.mktemp("gpu_speed")
    done = subprocess.run([sys.executable, "bench/gpu_speed.py", "--configs", "small", "--rounds", "1",
                           "--rows", "dynet-cpu,dynet-gpu,torch-gpu,torch-cpu",
                           "--segments-cpu", "1", "--segments-gpu", "1", "--generated", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return out, json.loads((out / "gpu_speed.json").read_text()), (out / "gpu_speed.md").read_text()


def test_the_dynet_cpu_row_runs_and_counts_the_tokens_it_timed(run):
    _, result, table = run
    cpu = result["summary"]["small"]["dynet-cpu"]
    assert cpu["tokens_per_s"] > 0
    assert cpu["tokens_per_round"] == 20 * 20          # one segment: batch 20 x 20 steps
    assert "DyNet" in cpu["about"]
    assert "a generated stream" in table and "10,001 ids" in table
    assert "| small: 2 x 200, batch 20, 20 steps | DyNet, CPU (one core), the course's LSTM |" in table


def test_rows_that_cannot_run_here_say_why(run):
    _, result, table = run
    small = result["summary"]["small"]
    if not HAVE_GPU:
        for row in ("dynet-gpu", "torch-gpu"):
            assert small[row]["kind"] == "could not run here", small[row]
            assert "GPU" in small[row]["not_run"] or "PyTorch is not installed" in small[row]["not_run"]
        assert "not run (could not run here): A GPU was requested" in table
        assert "DyNet GPU / DyNet CPU on medium" not in table        # medium was left out
    if HAVE_TORCH:
        assert small["torch-cpu"]["tokens_per_s"] > 0 and small["torch-cpu"]["tokens_per_round"] == 400
    else:
        assert "PyTorch is not installed" in small["torch-cpu"]["not_run"]


def test_results_go_to_out_and_not_to_bench_results(run):
    out, _, table = run
    assert sorted(p.name for p in out.iterdir()) == ["gpu_speed.json", "gpu_speed.md"]
    assert "## Goals (issue 22)" in table and "nvidia-smi -L" in table


def test_goals_are_read_off_the_medium_rows():
    speeds = {"dynet-cpu": 100.0, "dynet-gpu": 2500.0, "torch-gpu": 4000.0}
    summary = {"medium": {row: {"tokens_per_s": v} for row, v in speeds.items()}}
    text = gpu_speed.goals(summary)
    assert "DyNet GPU / DyNet CPU on medium: 25.0x (goal: at least 20x): met" in text
    assert "PyTorch GPU / DyNet GPU on medium: 1.6x (goal: at most 2x): met" in text
    summary["medium"]["dynet-gpu"] = {"not_run": "no GPU", "kind": "could not run here"}
    assert gpu_speed.goals(summary).count("not measured") == 2
    summary["medium"]["dynet-gpu"] = {"tokens_per_s": 1000.0}
    text = gpu_speed.goals(summary)
    assert "10.0x (goal: at least 20x): not met" in text and "4.0x (goal: at most 2x): not met" in text


def test_the_ptb_text_is_read_when_a_copy_is_given(tmp_path):
    for split in ("train", "valid", "test"):
        (tmp_path / f"{split}.txt").write_text("the cat sat on the mat\na dog ran\n" * 200)
    columns, size, text = gpu_speed.training_columns(gpu_speed.find_ptb(str(tmp_path)), 400)
    assert text.startswith("Penn Treebank's training split") and size == 3 + 8
    assert columns.shape == (20, 400 // 20)
    with pytest.raises(SystemExit, match="no train.txt there"):
        gpu_speed.find_ptb(str(tmp_path / "missing"))
