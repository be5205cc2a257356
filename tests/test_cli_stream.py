"""``python -m course train --stream``: the training text as one stream in segments of
--bptt steps, the state carried from segment to segment, through the real command line:
Ctrl-C and --resume exact, held-out text scored as a stream, characters, and a
vocabulary large enough for the softmax to be computed in chunks."""
import random

from tests.test_cli import course, env, interrupt, metrics  # noqa: F401  (env: a fixture)

STREAM = ["--stream", "--bptt", "5", "--max-sentences", "8000", "--batch-size", "2", "--epochs", "2",
          "--optimizer", "sgd", "--lr", "0.5", "--dropout", "0.3", "--hidden", "16", "--embed", "16"]
# (an epoch of about 14,700 batches: about four seconds here, so the once-a-second bar shows it under way)


def same_run(a, b):
    a, b = metrics(a), metrics(b)
    assert a["valid_ppl"] == b["valid_ppl"] and a["test_ppl"] == b["test_ppl"]
    drop = ("seconds", "cpu_seconds", "tokens_per_s")
    assert [{k: v for k, v in r.items() if k not in drop} for r in a["history"]] == \
        [{k: v for k, v in r.items() if k not in drop} for r in b["history"]]


def test_ctrl_c_in_a_stream_and_resume_continue_exactly(tmp_path, env):
    stopped = tmp_path / "stopped"
    code, stdout, stderr = interrupt(env, ["train", *STREAM, "--out", stopped], epoch=2)
    assert code == 130 and "Traceback" not in stderr, stderr
    assert "stopped after batch" in stdout and "in epoch 2" in stdout
    saved = metrics(stopped)
    assert saved["settings"]["stream"] is True and saved["settings"]["bptt"] == 5
    assert len(saved["history"]) == 1 and saved["resume"]["batch"] > 0
    resumed = course(env, "train", "--resume", stopped, "--no-progress")
    assert resumed.returncode == 0, resumed.stderr
    whole = tmp_path / "whole"
    run = course(env, "train", *STREAM, "--no-progress", "--out", whole)
    assert run.returncode == 0, run.stderr
    same_run(stopped, whole)
    assert (stopped / "checkpoint" / "params.dy").read_bytes() == (whole / "checkpoint" / "params.dy").read_bytes()
    # the held-out splits are read as one stream too, by evaluate as by train
    evaluated = course(env, "evaluate", whole, "--split", "test")
    assert evaluated.returncode == 0, evaluated.stderr
    assert f"perplexity {metrics(whole)['test_ppl']:.2f} (read as one stream" in evaluated.stdout


def test_a_character_stream_reports_bits_per_character(tmp_path, env):
    rng = random.Random(2)
    words = "the a cat dog bird sat ran slept on under mat rug tree and saw it".split()
    text = tmp_path / "mine.txt"
    text.write_text("\n".join(" ".join(rng.choice(words) for _ in range(rng.randint(2, 12)))
                              for _ in range(400)) + "\n")
    out = tmp_path / "chars"
    run = course(env, "train", "--corpus", text, "--unit", "char", "--stream", "--bptt", "20", "--batch-size", "4",
                 "--hidden", "16", "--embed", "16", "--no-progress", "--out", out)
    assert run.returncode == 0, run.stderr
    m = metrics(out)
    assert m["settings"]["unit"] == "char" and m["settings"]["stream"] is True
    assert 1 < m["valid_ppl"] < 40 and "bits per character" in run.stdout


def test_a_large_vocabulary_streams_with_the_softmax_in_chunks(tmp_path, env):
    """28k words x 35 steps x 20 rows exceed course.lm.SOFTMAX_BUDGET: each segment's softmax
    is computed in chunks, and a stopped run still continues exactly."""
    rng = random.Random(5)
    pool = [f"w{k}" for k in range(40_000)]
    text = tmp_path / "wide.txt"
    text.write_text("\n".join(" ".join(rng.choice(pool) for _ in range(10)) for _ in range(6000)) + "\n")
    args = ["train", "--corpus", text, "--stream", "--bptt", "35", "--batch-size", "20", "--max-batches", "30",
            "--optimizer", "sgd", "--lr", "0.5", "--hidden", "8", "--embed", "8"]
    from course import lm
    stopped, whole = tmp_path / "stopped", tmp_path / "whole"
    code, stdout, stderr = interrupt(env, [*args, "--out", stopped], epoch=1)
    assert code == 130 and "stopped after batch" in stdout, stderr
    assert course(env, "train", "--resume", stopped, "--no-progress").returncode == 0
    run = course(env, *args, "--no-progress", "--out", whole)
    assert run.returncode == 0, run.stderr
    vocab = int(run.stdout.split("vocabulary ")[1].split(";")[0].replace(",", ""))
    assert 35 * 20 * vocab > lm.SOFTMAX_BUDGET
    same_run(stopped, whole)


def test_a_run_older_than_a_setting_resumes_with_its_default(tmp_path, env):
    """A metrics.json written before --stream, --bptt, ... existed continues as it was trained."""
    import json
    out = tmp_path / "old"
    run = course(env, "train", "--max-sentences", "200", "--hidden", "8", "--embed", "8", "--no-progress",
                 "--out", out)
    assert run.returncode == 0, run.stderr
    saved = metrics(out)
    for name in ("stream", "bptt", "lr_decay", "init_scale", "max_batches"):
        del saved["settings"][name]
    (out / "metrics.json").write_text(json.dumps(saved))
    again = course(env, "train", "--resume", out, "--epochs", "2", "--no-progress")
    assert again.returncode == 0, again.stderr
    resumed = metrics(out)
    assert len(resumed["history"]) == 2 and resumed["settings"]["stream"] is False
    assert resumed["settings"]["lr_decay"] == 0.5


def test_reset_state_starts_every_segment_from_zeros():
    """--reset-state: each segment's loss in training is the loss of that segment read from zeros
    (learning rate 0, so the model does not change between segments); carried, it is not."""
    import numpy as np

    from course import evaluation, lm, runtime, sources, training
    from course.corpora import read_corpus
    from course.data import Vocab
    from course.settings import Settings
    dy = runtime.init(seed=5)       # the same weights whichever tests ran before in this process
    text = read_corpus("course", "train")[:60]
    vocab = Vocab.build(text)
    model = lm.RNNLM(vocab, "lstm", embed=8, hidden=8)
    quiet = Settings(stream=True, bptt=4, batch_size=3, optimizer="sgd", lr=0.0, max_batches=6)
    source = sources.of(quiet.but(reset_state=True), text, vocab)
    from_zeros = []
    for index in range(6):
        dy.renew_cg()
        part = sources.segment(source.data, index * 4, index * 4 + 4)          # start None: zeros
        from_zeros.append(dy.sum_batches(model.batch_losses(part)[0]).value())
    expected = evaluation.perplexity(sum(from_zeros), 6 * 4 * 3)
    reset = training.train(model, text, None, quiet.but(reset_state=True), progress=False, log=None)[0]["train_ppl"]
    carried = training.train(model, text, None, quiet, progress=False, log=None)[0]["train_ppl"]
    # The same computation gives the same bits (reset == expected); a carried state moves the loss of
    # this small untrained model by 1.2e-4 to 5.1e-4 of it over seeds 1 to 7 (seed 5: 2.2e-4). Asking
    # for more than 1e-4, as this test once did, failed for the weights some test orders left.
    assert np.isclose(reset, expected, rtol=1e-9, atol=0) and not np.isclose(carried, expected, rtol=1e-6, atol=0)


def test_reset_state_through_the_command_line(tmp_path, env):
    from tests.test_cli import refused
    refused(course(env, "train", "--reset-state", "--max-sentences", "200", "--hidden", "8", "--embed", "8"),
            "--reset-state", "--stream")
    out = tmp_path / "reset"
    run = course(env, "train", "--stream", "--bptt", "5", "--reset-state", "--max-sentences", "400",
                 "--batch-size", "4", "--hidden", "8", "--embed", "8", "--no-progress", "--out", out)
    assert run.returncode == 0, run.stderr
    m = metrics(out)
    assert m["settings"]["reset_state"] is True and m["settings"]["stream"] is True
    carried = tmp_path / "carried"
    assert course(env, "train", "--stream", "--bptt", "5", "--max-sentences", "400", "--batch-size", "4",
                  "--hidden", "8", "--embed", "8", "--no-progress", "--out", carried).returncode == 0
    assert metrics(carried)["history"][0]["train_ppl"] != m["history"][0]["train_ppl"]
