"""bench/samples.py: how a retrained converged run is compared with its committed record."""
import json

import samples  # bench/samples.py (pytest puts bench/ on the path)


def test_a_retrained_run_is_compared_epoch_by_epoch_with_the_committed_record(tmp_path):
    committed = json.loads((samples.RESULTS / "converge" / "lstm-s1.json").read_text())
    (tmp_path / "lstm-s1.json").write_text(json.dumps(committed))
    assert "valid perplexity per epoch identical; test" in samples.committed_match("lstm", tmp_path)
    ours = json.loads(json.dumps(committed))
    ours["epochs"][1]["valid_ppl"] *= 1.01
    ours["machine"] = "Other CPU, 2 cores | rest"
    (tmp_path / "lstm-s1.json").write_text(json.dumps(ours))
    text = samples.committed_match("lstm", tmp_path)
    assert text.startswith("on Other CPU (committed: ")
    assert "differs from epoch 2 on, by 0.00%, 1.00%, 0.00%" in text
    assert f"best {committed['final']['best_epoch']} (committed: {committed['final']['best_epoch']})" in text
