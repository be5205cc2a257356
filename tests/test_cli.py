"""The command line as a user meets it: train and evaluate, Ctrl-C and --resume, an
existing or bad --out, damaged checkpoints, a text file of one's own, bad options.

Every run is a real ``python -m course`` subprocess; Ctrl-C is a real SIGINT."""
import json
import os
import random
import re
import shutil
import signal
import site
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.test_lm import CELLS as CELL_FILE   # step functions in a file of their own

SMALL = ["--hidden", "16", "--embed", "16", "--no-progress"]


@pytest.fixture
def env(tmp_path):
    """The yardstick's cache in a temporary folder, and unbuffered output."""
    return {**os.environ, "COURSE_CACHE": str(tmp_path / "cache"), "PYTHONUNBUFFERED": "1"}


def course(env, *args, cwd=ROOT, python=(sys.executable,)):
    return subprocess.run([*python, "-m", "course", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def refused(run, *words):
    """A clear one-line error: exit 2, the words in it, no traceback."""
    assert run.returncode == 2, (run.stdout, run.stderr)
    assert "Traceback" not in run.stderr + run.stdout
    for word in words:
        assert word in run.stderr, (word, run.stderr)


def metrics(out):
    return json.loads((out / "metrics.json").read_text())


def write_text_corpus(path, lines=300, seed=3):
    rng = random.Random(seed)
    words = "the a cat dog bird sat ran slept on under mat rug tree and saw it".split()
    path.write_text("\n".join(" ".join(rng.choice(words) for _ in range(rng.randint(2, 12)))
                              for _ in range(lines)) + "\n")
    return path


# ---------------------------------------------------------------- train, evaluate

def test_train_then_evaluate_with_the_yardstick(tmp_path, env):
    out = tmp_path / "run"
    run = course(env, "train", "--cell", "gru", "--max-sentences", "200", *SMALL, "--out", out)
    assert run.returncode == 0, run.stderr
    assert "held-out perplexity" in run.stdout and "floor" in run.stdout
    assert "unigram" in run.stdout and "Kneser-Ney trigram" in run.stdout
    m = metrics(out)
    assert {"valid_ppl", "test_ppl", "tokens_per_s", "settings", "runtime", "device"} <= set(m)
    assert m["status"] == "finished" and m["device"] == "CPU" and "DyNet" in m["runtime"]
    assert set(m["yardstick"]) == {"unigram", "Kneser-Ney trigram"}
    assert all(0 < m["yardstick"][k]["test"] < 10_000 for k in m["yardstick"])
    assert list((tmp_path / "cache" / "yardstick").glob("*.json"))      # computed once, kept
    # evaluate takes the run folder or its checkpoint, and the model's own corpus by default
    for target in (out, out / "checkpoint"):
        again = course(env, "evaluate", target, "--split", "test", "--max-sentences", "200")
        assert again.returncode == 0, again.stderr
        assert f"perplexity {m['test_ppl']:.2f}" in again.stdout
        assert f"{m['yardstick']['unigram']['test']:10.2f}" in again.stdout


def test_a_text_file_of_ones_own_in_words_and_in_characters(tmp_path, env):
    text = write_text_corpus(tmp_path / "mine.txt", lines=300)
    run = course(env, "train", "--corpus", text, *SMALL, "--out", tmp_path / "words")
    assert run.returncode == 0, run.stderr
    assert "the first 80% of its lines for training, the next 10% valid, the last 10% test" in run.stdout
    assert "240 / 30 / 30 sentences" in run.stdout
    run = course(env, "train", "--corpus", text, "--unit", "char", *SMALL, "--out", tmp_path / "chars")
    assert run.returncode == 0, run.stderr
    vocab = json.loads((tmp_path / "chars" / "checkpoint" / "vocab.json").read_text())
    assert " " in vocab and all(len(t) == 1 for t in vocab[3:])          # characters, the space too
    # evaluate defaults to that file and that unit
    again = course(env, "evaluate", tmp_path / "chars", "--split", "valid")
    assert again.returncode == 0, again.stderr
    assert f"perplexity {metrics(tmp_path / 'chars')['valid_ppl']:.2f}" in again.stdout


def test_max_tokens_trains_on_less_but_keeps_the_whole_vocabulary(tmp_path, env):
    text = write_text_corpus(tmp_path / "mine.txt", lines=400)
    course(env, "train", "--corpus", text, *SMALL, "--out", tmp_path / "all")
    run = course(env, "train", "--corpus", text, *SMALL, "--max-tokens", "100", "--out", tmp_path / "few")
    assert run.returncode == 0, run.stderr
    assert "training on the first" in run.stdout and "the vocabulary comes from all" in run.stdout
    vocab = [json.loads((tmp_path / r / "checkpoint" / "vocab.json").read_text()) for r in ("all", "few")]
    assert vocab[0] == vocab[1]
    assert metrics(tmp_path / "few")["history"][0]["tokens_per_s"] > 0


def test_a_very_long_line_is_cut_into_pieces_not_a_crash(tmp_path, env):
    folder = tmp_path / "corpus"
    folder.mkdir()
    write_text_corpus(folder / "train.txt", lines=100)
    with (folder / "train.txt").open("a") as f:
        f.write(" ".join(["the"] * 184_758) + "\n")
    shutil.copy(folder / "train.txt", folder / "valid.txt")
    write_text_corpus(folder / "test.txt", lines=50, seed=4)
    run = course(env, "train", "--corpus", folder, *SMALL, "--max-length", "1000")
    assert run.returncode == 0, run.stderr
    assert "1 train line(s) longer than 1,000 tokens were cut into pieces of 1,000" in run.stdout


# ---------------------------------------------------------------- Ctrl-C and --resume

def interrupt(env, args, epoch=1, sig=signal.SIGINT):
    """Start a run and send it a real SIGINT (or ``sig``) as soon as its progress bar shows batches
    done in ``epoch`` (so that the signal lands in the middle of that epoch). The bar is
    redrawn once a second: an epoch must last longer than that, or its first update is 100%."""
    child = subprocess.Popen([sys.executable, "-m", "course", *map(str, args)], cwd=ROOT, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen = ""
    while not re.search(rf"epoch {epoch}/\d+: +\d+%\|[^|\r]*\| *[1-9]\d*/\d+ ", seen):
        chunk = os.read(child.stderr.fileno(), 65536)          # the bar is on stderr
        assert chunk, f"the run ended before it was interrupted:\n{seen}"
        seen += chunk.decode("utf-8", "replace")
    child.send_signal(sig)
    stdout, stderr = child.communicate(timeout=300)
    return child.returncode, stdout.decode(), seen + stderr.decode()


EXACT = ["--max-sentences", "4000", "--batch-size", "1", "--epochs", "2", "--optimizer", "sgd",
         "--lr", "0.5", "--dropout", "0.3", "--hidden", "16", "--embed", "16"]


def test_ctrl_c_saves_and_resume_continues_exactly(tmp_path, env):
    """SGD (stateless) and dropout (its masks seeded per batch): Ctrl-C in the first epoch,
    then --resume, ends with the same parameters, byte for byte, and the same metrics as
    a run that was never stopped."""
    stopped = tmp_path / "stopped"
    code, stdout, stderr = interrupt(env, ["train", *EXACT, "--out", stopped], epoch=1)
    assert code == 130 and "Traceback" not in stderr, stderr
    assert "stopped after batch" in stdout and "in epoch 1" in stdout
    assert f"python -m course train --resume {stopped}" in stdout
    saved = metrics(stopped)
    assert saved["status"] == "interrupted" and saved["history"] == [] and 0 < saved["resume"]["batch"]
    resumed = course(env, "train", "--resume", stopped, "--no-progress")
    assert resumed.returncode == 0, resumed.stderr
    assert f"continuing {stopped} at epoch 1, batch {saved['resume']['batch']}" in resumed.stdout

    whole = tmp_path / "whole"
    assert course(env, "train", *EXACT, "--no-progress", "--out", whole).returncode == 0
    a, b = metrics(stopped), metrics(whole)
    for key in ("valid_ppl", "test_ppl", "yardstick"):
        assert a[key] == b[key], key
    drop = ("seconds", "cpu_seconds", "tokens_per_s")
    assert [{k: v for k, v in r.items() if k not in drop} for r in a["history"]] == \
        [{k: v for k, v in r.items() if k not in drop} for r in b["history"]]
    params = [(run / "checkpoint" / "params.dy").read_bytes() for run in (stopped, whole)]
    assert params[0] == params[1]


def test_resume_with_adam_continues_but_says_its_moments_restart(tmp_path, env):
    """What is not exact: DyNet cannot save Adam's moment estimates, so they start again
    from zero on --resume; the finished epochs and the parameters are kept as saved."""
    out = tmp_path / "adam"
    args = ["train", "--max-sentences", "4000", "--batch-size", "1", "--epochs", "2", "--hidden", "16",
            "--embed", "16", "--out", out]
    code, stdout, _ = interrupt(env, args, epoch=2)
    assert code == 130 and "in epoch 2" in stdout
    first_epoch = metrics(out)["history"]
    assert len(first_epoch) == 1
    resumed = course(env, "train", "--resume", out, "--no-progress")
    assert resumed.returncode == 0, resumed.stderr
    assert "Adam's moment estimates start again from zero" in resumed.stdout
    m = metrics(out)
    assert m["status"] == "finished" and m["history"][0] == first_epoch[0] and len(m["history"]) == 2


def test_resume_keeps_the_runs_settings_and_can_train_further(tmp_path, env):
    out = tmp_path / "run"
    assert course(env, "train", "--max-sentences", "100", *SMALL, "--out", out).returncode == 0
    refused(course(env, "train", "--resume", out, "--hidden", "32"), "--hidden 32", "the run's: 16")
    refused(course(env, "train", "--resume", out), "has finished its 1 epoch", "--epochs N")
    (out / "lock").write_text(str(os.getpid()))           # a live process is training it: refused
    refused(course(env, "train", "--resume", out, "--epochs", "2"), "being trained by another process")
    assert (out / "lock").read_text() == str(os.getpid())      # the holder keeps its lock
    (out / "lock").unlink()
    further = course(env, "train", "--resume", out, "--epochs", "2", "--no-progress")
    assert further.returncode == 0, further.stderr
    assert [r["epoch"] for r in metrics(out)["history"]] == [1, 2] and not (out / "lock").exists()
    refused(course(env, "train", "--resume", tmp_path / "nothing"), "holds no run")


# ---------------------------------------------------------------- --out

def test_an_existing_out_is_refused_unless_resume_or_overwrite(tmp_path, env):
    out = tmp_path / "run"
    assert course(env, "train", "--max-sentences", "100", *SMALL, "--out", out).returncode == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    refused(course(env, "train", "--max-sentences", "100", *SMALL, "--out", out),
            "already holds a run", "--resume", "--overwrite")
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    again = course(env, "train", "--max-sentences", "100", *SMALL, "--hidden", "8", "--out", out, "--overwrite")
    assert again.returncode == 0, again.stderr
    assert metrics(out)["settings"]["hidden"] == 8
    assert json.loads((out / "checkpoint" / "config.json").read_text())["hidden"] == 8

    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "mine.txt").write_text("keep me\n")
    refused(course(env, "train", *SMALL, "--out", folder, "--overwrite"), "holds other files")
    assert (folder / "mine.txt").read_text() == "keep me\n"


def test_an_out_that_is_a_file_is_refused_before_training(tmp_path, env):
    target = tmp_path / "file"
    target.write_text("not a folder\n")
    run = course(env, "train", *SMALL, "--out", target)
    refused(run, "is a file")
    assert "epoch" not in run.stdout and target.read_text() == "not a folder\n"


# ---------------------------------------------------------------- evaluation that cannot mislead

@pytest.fixture
def trained(tmp_path, env):
    """A small finished run on a text file."""
    text = write_text_corpus(tmp_path / "mine.txt")
    out = tmp_path / "run"
    run = course(env, "train", "--corpus", text, *SMALL, "--out", out)
    assert run.returncode == 0, run.stderr
    return out


@pytest.mark.parametrize("keep", [0.99, 0.6])
def test_a_damaged_checkpoint_is_refused_naming_the_file(trained, env, keep):
    params = trained / "checkpoint" / "params.dy"
    data = params.read_bytes()
    params.write_bytes(data[:int(len(data) * keep)])
    refused(course(env, "evaluate", trained / "checkpoint"), str(params), "does not match the checksum")


def test_metrics_and_checkpoint_that_do_not_belong_together_are_refused(trained, env, tmp_path):
    other = tmp_path / "other"
    text = write_text_corpus(tmp_path / "other.txt", seed=9)
    assert course(env, "train", "--corpus", text, *SMALL, "--out", other).returncode == 0
    shutil.rmtree(trained / "checkpoint")
    shutil.copytree(other / "checkpoint", trained / "checkpoint")      # a checkpoint of another model
    refused(course(env, "evaluate", trained), "metrics.json", "belong to different models")
    refused(course(env, "train", "--resume", trained), "belong to different models")


def test_evaluate_on_a_foreign_corpus_shows_and_limits_unknown_words(trained, env):
    foreign = course(env, "evaluate", trained, "--corpus", "course", "--split", "valid",
                     "--max-sentences", "300")
    refused(foreign, "unknown to the model", "--max-unknown")
    assert "are not in the model's vocabulary" in foreign.stdout
    anyway = course(env, "evaluate", trained, "--corpus", "course", "--split", "valid",
                    "--max-sentences", "300", "--max-unknown", "1")
    assert anyway.returncode == 0, anyway.stderr
    assert "scored as <unk>" in anyway.stdout and "perplexity" in anyway.stdout


def test_a_checkpoint_saved_without_its_corpus_needs_corpus(tmp_path, env):
    script = ("from course import runtime; runtime.init(seed=1)\n"
              "from course import lm; from course.data import Vocab\n"
              "lm.RNNLM(Vocab.build([['a', 'cat']]), 'srnn', 4, 4).save('plain')\n")
    subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env={**env, "PYTHONPATH": str(ROOT)},
                   check=True)
    refused(course(env, "evaluate", tmp_path / "plain"), "does not record the corpus", "--corpus")


# ---------------------------------------------------------------- cells from files, no autograder

def test_the_course_package_trains_a_students_cell_without_autograder(tmp_path, env):
    """course/ alone (no autograder/ beside it) imports, and trains a step function
    from a file, which evaluate then rebuilds from that file."""
    alone = tmp_path / "alone"
    shutil.copytree(ROOT / "course", alone / "course", ignore=shutil.ignore_patterns("__pycache__"))
    cell = alone / "my_cell.py"
    cell.write_text(CELL_FILE)
    write_text_corpus(alone / "mine.txt")
    # The repository's packages are installed editable (a .pth file puts them on the path);
    # -S skips the .pth files, so only site-packages' own packages and course/ beside the cell import.
    env = {**env, "PYTHONPATH": os.pathsep.join(site.getsitepackages())}
    python = (sys.executable, "-S")
    probe = subprocess.run([*python, "-c", "import course, course.lm, importlib.util; "
                            "print(course.__file__, importlib.util.find_spec('autograder'))"],
                           cwd=alone, env=env, capture_output=True, text=True)
    assert probe.stdout.split() == [str(alone / "course" / "__init__.py"), "None"], probe.stderr

    def alone_course(*args):
        return course(env, *args, cwd=alone, python=python)
    run = alone_course("train", "--corpus", "mine.txt", "--cell", "my_cell.py:elman_step", *SMALL, "--out", "run")
    assert run.returncode == 0, run.stderr
    assert "model my_cell.py:elman_step" in run.stdout
    again = alone_course("evaluate", "run", "--split", "valid")
    assert again.returncode == 0, again.stderr
    assert f"perplexity {metrics(alone / 'run')['valid_ppl']:.2f}" in again.stdout

    refused(alone_course("train", "--corpus", "mine.txt", "--cell", "my_cell.py:lonely_step"),
            "defines no lonely_shapes")
    refused(alone_course("train", "--corpus", "mine.txt", "--cell", "my_cell.py:gru_step"),
            "defines no function gru_step")
    refused(alone_course("train", "--corpus", "mine.txt", "--cell", "hand-lstm"),
            "unknown cell 'hand-lstm'", "file.py:lstm_step")
    cell.write_text(CELL_FILE.replace("dy.tanh", "dy.logistic"))
    refused(alone_course("evaluate", "run"), "my_cell.py", "has changed since the model was trained")


# ---------------------------------------------------------------- bad options

@pytest.mark.parametrize("option, value", [
    ("--mem", "0"), ("--mem", "-1"), ("--mem", "999999999"), ("--lr", "-1"), ("--lr", "nan"),
    ("--hidden", "-5"), ("--hidden", "0"), ("--embed", "0"), ("--epochs", "0"), ("--layers", "0"),
    ("--max-sentences", "0"), ("--max-sentences", "-5"), ("--batch-size", "0"), ("--dropout", "1"),
    ("--vocab-size", "2"), ("--clip", "-1"), ("--seed", "0"), ("--max-tokens", "0"), ("--max-length", "0"),
])
def test_a_bad_option_is_refused_naming_the_value_and_what_to_give(option, value, capsys):
    from course.__main__ import main
    with pytest.raises(SystemExit) as exit_:
        main(["train", option, value])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}: got '{value}'; give " in err and "Traceback" not in err


@pytest.mark.parametrize("args, says", [
    (["--residual", "vertical", "--embed", "8", "--hidden", "16"], "must equal hidden (16)"),
    (["--residual", "lateral", "--embed", "8", "--hidden", "8"], "--residual lateral"),
    (["--hidden", "100000", "--embed", "100000"], "for its parameters alone"),
    (["--corpus", "/nonexistent/corpus"], "unknown corpus"),
])
def test_options_that_only_fail_together_are_refused_before_training(args, says, env, tmp_path):
    run = course(env, "train", *args, "--max-sentences", "50", "--out", tmp_path / "run")
    refused(run, says)
    assert "epoch" not in run.stdout and not (tmp_path / "run").exists()
