"""The command line's traps, each closed and tested through a real ``python -m course``
process: memory estimated before training, a corpus too small refused up front,
evaluate's line limit, a NaN blamed on the cell, SIGTERM, literal <unk>, progress
during evaluation and on stderr, defaults in --help, bits per character, quoted hints."""
import json
import math
import re
import signal

from tests.test_cli import SMALL, course, env, interrupt, metrics, refused, write_text_corpus  # noqa: F401
from tests.test_lm import CELLS


def test_memory_is_estimated_before_training_and_refused_with_the_fix(tmp_path, env):
    huge = course(env, "train", "--batch-size", "99999999999999999999", "--hidden", "512", "--out", tmp_path / "run")
    refused(huge, "training needs about", "MB, more than", "its largest batch holds 53,819 sentences",
            "Lower --batch-size (--batch-size ")
    assert not (tmp_path / "run").exists() and "epoch" not in huge.stdout
    capped = course(env, "train", "--batch-size", "2048", "--max-sentences", "4000", "--mem", "64",
                    "--out", tmp_path / "run")
    refused(capped, "more than --mem 64 MB", "Lower --batch-size")
    assert not (tmp_path / "run").exists()


def test_a_corpus_too_small_for_its_splits_is_refused_with_the_real_cause(tmp_path, env):
    three = tmp_path / "three.txt"
    three.write_text("the cat sat\na dog ran far\nthe bird flew\n")
    for args, says in [(["--corpus", three], "give more text"),
                       (["--max-sentences", "1"], "a larger --max-sentences"),
                       (["--max-sentences", "100", "--vocab-size", "4"], "--vocab-size 4 keeps too few words")]:
        run = course(env, "train", *args, *SMALL, "--out", tmp_path / "run")
        refused(run, "are not in the vocabulary", says)
        assert "different corpus" not in run.stderr and "epoch" not in run.stdout
        assert not (tmp_path / "run").exists()


def test_evaluate_uses_the_line_limit_the_run_was_trained_with(tmp_path, env):
    out = tmp_path / "run"
    assert course(env, "train", "--max-sentences", "200", *SMALL, "--out", out).returncode == 0
    again = course(env, "evaluate", out)
    assert again.returncode == 0, again.stderr
    assert "as the model was trained (--max-sentences 200)" in again.stdout
    assert f"perplexity {metrics(out)['test_ppl']:.2f}" in again.stdout


def test_a_nan_from_the_first_batch_of_ones_own_cell_blames_the_cell(tmp_path, env):
    cell = tmp_path / "cells.py"
    cell.write_text(CELLS + "\n\ndef nan_shapes(d_in, d_h):\n    return elman_shapes(d_in, d_h)\n\n\n"
                    "def nan_step(p, x, state):\n    (h,) = elman_step(p, x, state)\n"
                    "    return (dy.cdiv(h, h - h),)\n")
    run = course(env, "train", "--cell", f"{cell}:nan_step", "--max-sentences", "100", *SMALL)
    refused(run, "the very first batch", "cells.py:nan_step returns nan or inf")
    assert "lower the learning rate" not in run.stderr


def test_sigterm_saves_and_stops_like_ctrl_c(tmp_path, env):
    out = tmp_path / "run"
    code, stdout, stderr = interrupt(env, ["train", "--max-sentences", "4000", "--batch-size", "1", *SMALL[:4],
                                           "--out", out], sig=signal.SIGTERM)
    assert code == 143 and "Traceback" not in stderr, stderr
    assert "SIGTERM: stopping after this batch" in stdout and "stopped after batch" in stdout
    saved = metrics(out)
    assert saved["status"] == "interrupted" and saved["resume"]["batch"] > 0


def test_literal_unk_in_a_corpus_is_counted(tmp_path, env):
    text = tmp_path / "mine.txt"
    lines = write_text_corpus(text).read_text().splitlines()
    text.write_text("\n".join(line + " <unk>" for line in lines) + "\n")
    run = course(env, "train", "--corpus", text, *SMALL)
    assert run.returncode == 0, run.stderr
    assert "tokens that are <unk> in the corpus itself (its own unknown words): train " in run.stdout
    assert "train 0.0%" not in run.stdout.split("itself")[1].splitlines()[0]


def test_progress_is_on_stderr_and_shown_while_evaluating(tmp_path, env):
    run = course(env, "train", "--max-sentences", "300", *SMALL[:4])           # the bar on
    assert run.returncode == 0, run.stderr
    assert "epoch 1/1" in run.stderr and "epoch 1/1" not in run.stdout
    assert "epoch 1: held-out" in run.stderr and "test" in run.stderr
    assert "scoring the test split (300 sentences)" in run.stdout


def test_help_shows_the_defaults_of_the_one_settings_object(env):
    """Every setting of the model and of training is an option whose --help default is the field's own."""
    from dataclasses import fields

    from course.settings import DEFAULTS, MODEL_DEFAULTS
    help_text = course(env, "train", "--help").stdout
    options = re.split(r"\n  (?=--)", help_text)
    for defaults, f in [(d, f) for d in (MODEL_DEFAULTS, DEFAULTS) for f in fields(d)]:
        flag = "--" + f.name.replace("_", "-")
        text = " ".join(next(o for o in options if o.startswith(flag + " ") or o.startswith(flag + "\n")).split())
        default = getattr(defaults, f.name)
        if default is not None and not isinstance(default, bool):
            assert f"(default: {default})" in text, (flag, text)
    shown = " ".join(help_text.split())
    assert "sentences per batch (with --stream: rows of the stream) (default: 32)" in shown
    assert "learning rate; default: 0.002 for adam, 1 for sgd" in shown


def test_a_character_model_reports_bits_per_character(tmp_path, env):
    text = write_text_corpus(tmp_path / "mine.txt")
    out = tmp_path / "chars"
    run = course(env, "train", "--corpus", text, "--unit", "char", *SMALL, "--out", out)
    assert run.returncode == 0, run.stderr
    m = metrics(out)
    assert m["bits_per_char"]["test"] == math.log2(m["test_ppl"])
    assert f"bits per character: valid {math.log2(m['valid_ppl']):.3f}, test {math.log2(m['test_ppl']):.3f}" in run.stdout


def test_the_resume_hint_quotes_its_path(tmp_path, env):
    out = tmp_path / "my run"
    run = course(env, "train", "--max-sentences", "100", *SMALL, "--out", out)
    assert run.returncode == 0, run.stderr
    assert f"python -m course train --resume '{out}'" in run.stdout
    again = course(env, "train", "--max-sentences", "100", *SMALL, "--out", out)
    refused(again, f"--resume '{out}'")
    json.loads((out / "metrics.json").read_text())
