"""The command line: train writes metrics.json and a checkpoint that evaluate loads."""
import json
import subprocess
import sys

from tests.conftest import ROOT


def course(*args):
    return subprocess.run([sys.executable, "-m", "course", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def test_train_then_evaluate(tmp_path):
    run = course("train", "--cell", "gru", "--corpus", "course", "--epochs", "1", "--max-sentences", "200",
                 "--hidden", "16", "--embed", "16", "--out", str(tmp_path / "run"))
    assert run.returncode == 0, run.stderr
    assert "held-out perplexity" in run.stdout and "floor" in run.stdout
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert {"valid_ppl", "test_ppl", "tokens_per_s", "settings", "runtime", "device"} <= set(metrics)
    assert metrics["device"] == "CPU" and "DyNet" in metrics["runtime"]
    again = course("evaluate", str(tmp_path / "run" / "checkpoint"), "--split", "test", "--max-sentences", "200")
    assert again.returncode == 0, again.stderr
    assert f"{metrics['test_ppl']:.2f}" in again.stdout


def test_bad_input_is_one_clear_line_and_a_nonzero_exit(tmp_path):
    run = course("train", "--corpus", str(tmp_path / "missing"))
    assert run.returncode == 2 and run.stderr.startswith("error: ") and "unknown corpus" in run.stderr
    run = course("evaluate", str(tmp_path))
    assert run.returncode == 2 and "not a checkpoint" in run.stderr
