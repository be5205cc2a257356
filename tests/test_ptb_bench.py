"""bench/ptb.py (its code: bench/penn/): Zaremba's stream training, resumable runs, the tables,
the speed variants.

The bench code runs here on a few hundred Penn Treebank sentences (from
data/external/ptb once fetched, or the copy beside the repository) with a tiny
network; where no PTB copy exists, on a small made-up corpus instead, so these
tests never skip for want of data (only the check of PTB's own sizes does).
"""
import json
import math
import random

import numpy as np
import pytest

from tests.conftest import SHARED_PTB

import stream_cli  # bench/stream_cli.py
from penn.corpus import find_source, load_corpus
from penn.figure import plot_curves
from penn.growth import growth_table, measure_growth, state_growth
from penn.models import CHANGED, LOWER_LR, MODELS, PAPER_NAME, SMALL, build_model, config_of
from penn.speed import SPEED_VARIANTS, measure, speed_cell, step_softmax_class
from penn.tables import common_epochs, tables
from penn.training import diverged, failed_in_training, learning_rate, load_records, train_model

from course import evaluation, lm, runtime, sources, training

dy = runtime.dynet()
TINY = SMALL.but(embed=8, hidden=8, batch_size=4, bptt=5)


def made_up_corpus(directory):
    """Words drawn with Zipf frequencies, as in real text: a model learns their frequencies
    in one epoch and beats a uniform guess (the bench stops a run that does not)."""
    rng = random.Random(3)
    words = "the a cat dog bird sat ran slept on under mat rug tree N <unk>".split()
    weights = [1 / (k + 1) for k in range(len(words))]
    for split, n in (("train", 300), ("valid", 40), ("test", 40)):
        lines = (" ".join(rng.choices(words, weights, k=rng.randint(3, 20))) for _ in range(n))
        (directory / f"{split}.txt").write_text("\n".join(lines) + "\n")
    return str(directory)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """(vocab, splits): 300 training sentences, 40 valid, 40 test."""
    source = find_source() or made_up_corpus(tmp_path_factory.mktemp("fake_ptb"))
    vocab, splits = load_corpus(source, max_sentences=300)
    splits["valid"], splits["test"] = splits["valid"][:40], splits["test"][:40]
    return vocab, splits


def test_stream_columns_and_segments_follow_zarembas_reader(corpus):
    vocab, splits = corpus
    sentences = splits["train"]
    ids = sources.stream_ids(sentences, vocab)
    assert ids[0] == vocab.eos and ids[-1] == vocab.eos
    assert len(ids) == 1 + sum(len(s) + 1 for s in sentences)
    stream = sources.Stream(sentences, vocab, 4, 5)
    n = len(ids) // 4
    assert stream.data.shape == (4, n)
    assert stream.data[1].tolist() == ids[n:2 * n]               # row b = tokens [b n, (b+1) n)
    assert len(stream) == (n - 1) // 5                            # Zaremba's epoch_size
    x, y = np.array(stream.batch(1, 1, 3).inputs).T, np.array(stream.batch(1, 1, 3).targets).T
    assert np.array_equal(y[:, :-1], x[:, 1:]) and np.array_equal(x, stream.data[:, 15:20])
    assert np.array_equal(y, stream.data[:, 16:21])


def test_the_command_line_in_stream_mode_trains_as_the_ptb_bench(tmp_path):
    """``python -m course train --stream`` with Zaremba's small settings gives the PTB bench's
    training perplexity over the first 30 segments of its first epoch, to the last digit:
    one engine (course.training.train, course.sources.Stream) under both. The whole first epoch, with
    valid and test: bench/stream_cli.py (bench/results/stream_cli.md).

    The command line reads PTB's whole training split and the first 200 sentences of valid and
    test: what is compared is training, and scoring the whole of both (155,000 tokens) took four
    fifths of the test's time. Held-out text read as a stream: tests/test_cli_stream.py."""
    import os
    import subprocess
    import sys
    from course.corpora import corpus_files
    source = find_source()
    if source is None:
        pytest.skip(f"no Penn Treebank copy (data/external/ptb or {SHARED_PTB}): fetch it with "
                    "`python -m course data fetch ptb --from DIR`")
    segments, c = 30, SMALL
    vocab, splits = load_corpus(source)
    model = build_model("lstm", vocab, c)
    bench_row = training.train(model, splits["train"], None, c.training.but(epochs=1, max_batches=segments),
                               progress=False, log=None, resumable=True)[0]   # as train_model
    (tmp_path / "hand_lstm.py").write_text(stream_cli.HAND_LSTM)
    cut = tmp_path / "ptb"
    cut.mkdir()
    train = corpus_files(source)["train"]
    (cut / ("train.txt.gz" if train.suffix == ".gz" else "train.txt")).symlink_to(train)
    for split in ("valid", "test"):
        (cut / f"{split}.txt").write_text("".join(" ".join(s) + "\n" for s in splits[split][:200]))
    args = stream_cli.command_line_args(str(cut), segments)
    run = subprocess.run([sys.executable, "-m", "course", "train", *args], cwd=tmp_path,
                         env={**os.environ, "COURSE_CACHE": str(tmp_path / "cache")},
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr
    cli_row = json.loads((tmp_path / "run" / "metrics.json").read_text())["history"][0]
    assert cli_row["tokens"] == bench_row["tokens"] == segments * c.training.bptt * c.training.batch_size
    assert cli_row["train_ppl"] == bench_row["train_ppl"]


def test_ptb_stream_has_zarembas_sizes():
    source = find_source()
    if source is None:
        pytest.skip(f"no Penn Treebank copy (data/external/ptb or {SHARED_PTB}): fetch it with "
                    "`python -m course data fetch ptb --from DIR`")
    vocab, splits = load_corpus(source)
    assert len(vocab) == 10001                    # PTB's 10k (</s> included) and the course's <s>
    ids = sources.stream_ids(splits["train"], vocab)
    assert len(ids) == 929589 + 1                 # the published 929,589 tokens with </s>, + the leading </s>
    stream = sources.Stream(splits["train"], vocab, 20, SMALL.training.bptt)
    assert stream.data.shape == (20, 46479)
    assert SMALL.training.bptt == 20               # the small configuration's seq_length / num_steps
    assert len(stream) == 2323                     # (46,479 - 1) // 20
    assert len(sources.stream_ids(splits["test"], vocab)) - 1 == 82430


@pytest.mark.parametrize("cell", ["lstm", "hand-lstm", "gru", "srnn", "ran-tanh", "lstm-srnn-hidden"])
def test_carried_state_continues_the_stream_exactly(corpus, cell):
    """Two segments with the state carried over = one long segment (loss and final
    state); starting the second from zeros instead ends elsewhere, so the carry matters."""
    vocab, splits = corpus
    from autograder.reference.cells import make_cell
    model = build_model("lstm", vocab, TINY.but(init_scale=0.5),
                        cell=cell if cell in lm.BUILDERS else make_cell(cell.removeprefix("hand-")))
    data = sources.columns(sources.stream_ids(splits["train"], vocab), 3)[:, :13]

    def run(start, end, carried=None):
        dy.renew_cg()
        final = []
        losses, _ = model.batch_losses(sources.segment(data, start, end, carried), final=final)
        return dy.sum_batches(losses).value(), model.state_values(final)

    whole, whole_state = run(0, 12)
    first, carried = run(0, 8)
    second, second_state = run(8, 12, carried)
    _, fresh_state = run(8, 12)
    assert first + second == pytest.approx(whole, rel=1e-5)
    for layer_whole, layer_second, layer_fresh in zip(whole_state, second_state, fresh_state):
        for a, b, c in zip(layer_whole, layer_second, layer_fresh):
            assert a.shape == (TINY.model.hidden, 3)
            np.testing.assert_allclose(b, a, atol=1e-5)
            assert np.abs(c - a).max() > 1e-3


def test_stream_perplexity_reads_each_split_as_one_stream(corpus):
    """Evaluation in segments with the state carried = the whole split in one segment."""
    vocab, splits = corpus
    model = build_model("lstm", vocab, TINY.but(init_scale=0.5))
    ids = sources.stream_ids(splits["valid"][:6], vocab)
    dy.renew_cg()
    data = sources.columns(ids, 1)
    total = dy.sum_batches(model.batch_losses(sources.segment(data, 0, len(ids) - 1))[0]).value()
    expected = math.exp(total / (len(ids) - 1))
    assert evaluation.stream_perplexity(model, ids, steps=7) == pytest.approx(expected, rel=1e-5)
    assert evaluation.stream_perplexity(model, ids) == pytest.approx(expected, rel=1e-5)


def test_every_parameter_starts_uniform_in_plus_minus_0_1(corpus):
    vocab, _ = corpus
    model = build_model("lstm-srnn", vocab, TINY.but(hidden=32, embed=32))
    values = np.concatenate([p.as_array().ravel() for p in model.pc.parameters_list()] +
                            [p.as_array().ravel() for p in model.pc.lookup_parameters_list()])
    assert values.size == model.param_count()
    assert np.abs(values).max() <= 0.1
    assert 0.045 < np.abs(values).mean() < 0.055          # uniform on [-0.1, 0.1]: mean |x| = 0.05
    b_f = model.layers[0].params["b_f"].as_array()         # no forget bias of 1: it is drawn like the rest
    assert np.abs(b_f).max() <= 0.1


def test_learning_rate_schedule_is_zarembas(tiny_corpus):
    expected = [1, 1, 1, 1, 0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625,
                0.001953125]
    assert [learning_rate(e) for e in range(1, 14)] == expected
    # the same schedule as course.training.train's decay_after (the course's own trainer)
    from course.data import Vocab
    model = lm.RNNLM(Vocab.build(tiny_corpus), "srnn", 4, 4)
    history = training.train(model, tiny_corpus, tiny_corpus[:5], epochs=6, batch_size=16, optimizer="sgd",
                       lr=1.0, lr_decay=0.5, decay_after=4, progress=False, log=None)
    assert [row["lr"] for row in history] == [learning_rate(e) for e in range(1, 7)]
    # a run that changes the budget changes only what it says it changes
    changed = config_of("srnn-lr0.1")
    assert changed == SMALL.but(lr=0.1) and config_of("srnn") == SMALL
    assert [learning_rate(e, changed) for e in (1, 4, 5, 6)] == pytest.approx([0.1, 0.1, 0.05, 0.025])


def test_the_committed_records_name_todays_configurations():
    """train_model continues a record only with the configuration it names (Budget.recorded, under
    the records' old names): every committed run can still be continued."""
    from penn.training import RUNS
    records = load_records(RUNS)
    assert len(records) >= 10
    for name, record in records.items():
        assert list(record["config"].items()) == list(config_of(name).recorded().items()), name


def test_every_lower_rate_run_is_its_base_model_with_only_the_rate_changed():
    expected = {f"{base}-lr{lr:g}" for base, rates in LOWER_LR.items() for lr in rates}
    assert set(CHANGED) == expected and "gru-lr0.5" in expected and "ran-tanh-lr0.1" in expected
    for name in expected:
        base = PAPER_NAME[name]
        assert MODELS[name][0] == MODELS[base][0]              # the same cell
        assert config_of(name) == SMALL.but(lr=CHANGED[name]["lr"])
        assert MODELS[name][1].endswith(f"learning rate {CHANGED[name]['lr']:g}")
    order = list(MODELS)                                              # each right after its base model
    for name in expected:
        base = PAPER_NAME[name]
        between = order[order.index(base) + 1:order.index(name)]
        assert all(PAPER_NAME.get(n) == base for n in between)
    assert MODELS["srnn-lr0.1"][1] == "S-RNN, learning rate 0.1"   # not "S-RNN (LSTM - GATES), ..."


class Interrupt(Exception):
    pass


def test_interrupted_run_continues_and_does_not_retrain(corpus, tmp_path, monkeypatch):
    vocab, splits = corpus
    config = TINY.but(decay_after=1)
    where = {"runs": tmp_path / "results", "work": tmp_path / "work", "log": lambda line: None}

    def stop(row):
        raise Interrupt

    with pytest.raises(Interrupt):                        # killed after its first epoch
        train_model("lstm", vocab, splits, 3, config, after_epoch=stop, **where)
    saved = json.loads((tmp_path / "results" / "lstm.json").read_text())
    assert [r["epoch"] for r in saved["epochs"]] == [1]
    assert sorted(p.name for p in (tmp_path / "work" / "lstm").iterdir()) == ["checkpoint", "resume"]   # a course.runs.Run
    assert json.loads((tmp_path / "work" / "lstm" / "resume" / "checkpoint.json").read_text())["state"]["epoch"] == 2

    calls = []
    real_train = training.train
    monkeypatch.setattr(training, "train", lambda *a, **k: calls.append(k["resume"].epoch) or real_train(*a, **k))
    resumed = train_model("lstm", vocab, splits, 3, config, **where)
    assert calls == [2]                                   # epochs 2 and 3 only, through the engine
    assert resumed["epochs"][0] == saved["epochs"][0]
    assert [r["lr"] for r in resumed["epochs"]] == [1.0, 0.5, 0.25]
    assert sorted(p.name for p in (tmp_path / "work" / "lstm").iterdir()) == ["checkpoint", "resume"]   # lock given back

    again = train_model("lstm", vocab, splits, 3, config, **where)
    assert calls == [2] and again == resumed              # finished: nothing retrained

    # the interrupted-and-resumed run is the run that was never interrupted
    straight = train_model("lstm", vocab, splits, 3, config, runs=tmp_path / "r2",
                           work=tmp_path / "w2", log=lambda line: None)
    for a, b in zip(straight["epochs"], resumed["epochs"]):
        assert a["test_ppl"] == pytest.approx(b["test_ppl"], rel=1e-6)
        assert a["train_ppl"] == pytest.approx(b["train_ppl"], rel=1e-6)

    changed = config.but(hidden=12)                    # another configuration is refused, not mixed in
    with pytest.raises(ValueError, match="move it away"):
        train_model("lstm", vocab, splits, 4, changed, **where)

    # a run left half-done by the bench before course.runs.Run (params-eK.dy) is refused, saying why
    old = tmp_path / "old" / "lstm"
    old.mkdir(parents=True)
    (old / "params-e1.dy").write_text("")
    with pytest.raises(ValueError, match=r"older layout \(params-e1.dy\).*move the folder away"):
        train_model("lstm", vocab, splits, 3, config, runs=tmp_path / "r3", work=tmp_path / "old",
                    log=lambda line: None)


def test_tables_render_from_real_and_synthetic_runs(corpus, tmp_path):
    vocab, splits = corpus
    runs = tmp_path / "results"
    real = train_model("srnn", vocab, splits, 1, TINY, runs=runs, work=tmp_path / "w", log=lambda line: None)
    text = tables(13, runs)
    row = next(line for line in text.splitlines() if line.startswith("| S-RNN"))
    assert f"**{real['epochs'][0]['test_ppl']:.1f}**" in row and "| 1 of 13 |" in row
    assert "| LSTM | hand-lstm |  | not run |" in text
    assert f"{real['epochs'][0]['tokens_per_cpu_s']:,.0f}" in row
    assert "cannot be judged yet" in text
    # the recurrent layers' share: an S-RNN layer has W_x, W_h and b
    h, e = TINY.model.hidden, TINY.model.embed
    recurrent = (e * h + h * h + h) + (TINY.model.layers - 1) * (2 * h * h + h)
    assert f"| {real['params']:,} ({recurrent:,}) |" in row
    assert "114.5" in text and "352.6" in text and "82.9" in text     # the published numbers

    # a complete set of (made-up) finished runs: the pattern verdicts follow the numbers
    fake = {"lstm": 120.0, "srnn": 160.0, "gru": 118.0, "lstm-srnn": 117.0, "lstm-srnn-out": 121.0,
            "lstm-srnn-hidden": 140.0, "ran-identity": 125.0, "ran-tanh": 119.0}
    for name, test_ppl in fake.items():
        rows = [{"epoch": e, "lr": learning_rate(e), "train_ppl": 100.0, "valid_ppl": test_ppl + 5,
                 "test_ppl": test_ppl, "train_tokens": 1000, "train_seconds": 2.0, "train_cpu_seconds": 1.0,
                 "eval_seconds": 1.0}
                for e in range(1, 14)]
        (runs / f"{name}.json").write_text(json.dumps({"model": name, "cell": name, "params": 1234567,
                                                       "epochs": rows}))
    (runs / "speed.json").write_text(json.dumps({
        "rounds": 3, "segments": 8, "load_average": [1.0, 1.0, 1.0],
        "tokens_per_cpu_s": {v["label"]: 500.0 + 100 * k for k, v in enumerate(SPEED_VARIANTS)},
        "tokens_per_s": {v["label"]: 300.0 for v in SPEED_VARIANTS}}))
    text = tables(13, runs)
    assert "| LSTM | lstm | 1,234,567 | 13 | 125.0 | **120.0** | 500 | 1,000 | 1 min |" in text
    assert "S-RNN (LSTM - GATES) far behind" in text and "**holds** (+33%)" in text
    assert "Ablations of the S-RNN close to the LSTM" in text and "**does not hold**" in text
    assert "largest gap 17%" in text
    assert "| 13 | 0.00195 | 125.0 / 120.0 |" in text                                     # the per-epoch table
    assert "GRU as good as the LSTM or better (criterion: at most 10% above it; the RAN paper: -7%" in text
    assert "**holds** (-2% at learning rate 1). Other runs: learning rate 0.5, not run." in text  # gru 118 vs 120
    assert "RAN (identity) as good as the LSTM or better" in text and "**holds** (+4% at learning rate 1)." in text
    assert "The same budget for every model" not in text                              # all finished

    # runs stopped at different epochs: the shared budget is the shortest run's, read at that epoch
    for name, stop in (("srnn", 3), ("gru", 5)):
        record = json.loads((runs / f"{name}.json").read_text())
        record["epochs"] = record["epochs"][:stop]
        for row in record["epochs"]:
            row["test_ppl"] = fake[name] + 10 * (stop - row["epoch"]) + 40
        (runs / f"{name}.json").write_text(json.dumps(record))
    text = tables(13, runs)
    assert "### The same budget for every model: the first 3 epoch(s)" in text
    assert "learning rate 1)" in text and "has not started to decay" in text
    assert "| S-RNN (LSTM - GATES) | 200.0 (+67%) |" in text           # srnn epoch 3 vs lstm's 120.0
    assert "| GRU | 178.0 (+48%) |" in text                            # gru epoch 3: 118 + 20 + 40
    assert "| GRU | only 5 of 13 epochs |" in text                     # ... and at 13 epochs
    assert "| RAN (tanh), learning rate 0.5 | not run |" in text
    assert "| S-RNN (LSTM - GATES) | srnn | 1,234,567 | 3 of 13 |" in text
    assert "(diverged)" not in text

    # a cell that diverged at rate 1 is judged on its lower-rate run, which says it changed the budget
    for name, test_ppl in (("ran-tanh", 5000.0), ("ran-tanh-lr0.5", 150.0), ("ran-tanh-lr0.1", 140.0)):
        rows = [{"epoch": e, "lr": 0.1, "train_ppl": 100.0, "valid_ppl": test_ppl, "test_ppl": test_ppl,
                 "train_tokens": 1000, "train_seconds": 2.0, "train_cpu_seconds": 1.0, "eval_seconds": 1.0}
                for e in range(1, 14)]
        (runs / f"{name}.json").write_text(json.dumps({"model": name, "cell": "ran-tanh", "params": 1,
                                                       "vocab": 1000, "epochs": rows}))
    text = tables(13, runs)
    assert "RAN (tanh) as good as the LSTM or better" in text
    assert "**does not hold** (+17% at learning rate 0.1, a changed budget)." in text      # 140 vs 120
    assert "| RAN (tanh), learning rate 0.1 |" in text
    for name in ("ran-tanh-lr0.5", "ran-tanh-lr0.1"):
        (runs / f"{name}.json").unlink()
    text = tables(13, runs)
    assert "RAN (tanh) as good as the LSTM or better" in text
    assert "every run of it diverged. Other runs: learning rate 0.5, not run; 0.1, not run." in text
    record = json.loads((runs / "ran-tanh.json").read_text())       # diverged in its first epoch
    record["epochs"] = record["epochs"][:1]
    (runs / "ran-tanh.json").write_text(json.dumps(record))
    text = tables(13, runs)
    assert "| RAN (tanh) | only 1 of 13 epochs (diverged) |" in text
    assert "every run of it so far diverged. Other runs: learning rate 1, diverged in epoch 1; 0.5, not run; 0.1, not run." in text
    (runs / "ran-tanh.json").unlink()

    # a run worse than a uniform guess over its vocabulary is marked as diverged, here and in the verdict
    # (and a diverged run does not hold the shared budget back: the GRU's 5 epochs become it)
    record = json.loads((runs / "srnn.json").read_text())
    record["vocab"] = 150
    record["epochs"] += [{**record["epochs"][-1], "epoch": e} for e in range(4, 14)]
    (runs / "srnn.json").write_text(json.dumps(record))
    text = tables(13, runs)
    assert "### The same budget for every model: the first 5 epoch(s)" in text
    assert "**200.0** (diverged) |" in text and "| S-RNN (LSTM - GATES) | 200: diverged |" in text
    assert "far behind (criterion: > 20% above the LSTM; the papers: +60 to +68%): **not judged**" in text
    assert plot_curves(load_records(runs), tmp_path / "curves.png").stat().st_size > 10_000
    assert plot_curves({}, tmp_path / "none.png") is None

    first = SPEED_VARIANTS[0]["label"]
    assert f"| {first} | 500 |  | 1.00x | 300 |" in text
    assert f"| {SPEED_VARIANTS[2]['label']} | 700 |  | 1.40x | 300 |" in text
    assert "one softmax per step runs at 1.80x" in text and "about 33% of the cost" in text


def _copy_lstm_weights(source, target, layout):
    """Copy a hand-lstm's weights into the bench's plain or stacked LSTM (same model)."""
    target.embeddings.init_from_array(source.embeddings.as_array())
    target.W_hs.set_value(source.W_hs.as_array())
    target.b_s.set_value(source.b_s.as_array())
    for src, dst in zip(source.layers, target.layers):
        p = {k: v.as_array() for k, v in src.params.items()}
        if layout == "plain-lstm":
            for k, v in p.items():
                dst.params[k].set_value(v)
        else:
            dst.params["W_x"].set_value(np.vstack([p["W_x" + g] for g in "ifou"]))
            dst.params["W_h"].set_value(np.vstack([p["W_h" + g] for g in "ifou"]))
            dst.params["b"].set_value(np.concatenate([p["b_" + g] for g in "ifou"]))


@pytest.mark.parametrize("layout", ["plain-lstm", "stacked-lstm"])
def test_speed_variants_compute_the_same_model(corpus, layout):
    """The bench-only LSTM layouts and the per-step softmax change the speed, not the numbers."""
    vocab, splits = corpus
    hand = build_model("lstm", vocab, TINY)
    other = build_model("lstm", vocab, TINY, cell=speed_cell(layout))
    _copy_lstm_weights(hand, other, layout)
    step = build_model("lstm", vocab, TINY, kind=step_softmax_class())
    for a, b in zip(hand.pc.parameters_list() + hand.pc.lookup_parameters_list(),
                    step.pc.parameters_list() + step.pc.lookup_parameters_list()):
        (b.set_value if hasattr(b, "set_value") else b.init_from_array)(a.as_array())
    segment = sources.segment(sources.columns(sources.stream_ids(splits["train"], vocab), 4), 0, 6)
    values = []
    for model in (hand, other, step):
        dy.renew_cg()
        values.append(dy.sum_batches(model.batch_losses(segment)[0]).value())
    assert values[1] == pytest.approx(values[0], rel=1e-5)
    assert values[2] == pytest.approx(values[0], rel=1e-5)


def test_measure_times_every_variant(corpus):
    vocab, splits = corpus
    for variant in SPEED_VARIANTS:
        if variant.get("mem") or variant.get("autobatch"):
            continue                                      # need a fresh process (tested by --speed)
        speed = measure(variant, vocab, splits["train"], 2, TINY)
        assert all(speed[clock] > 0 and math.isfinite(speed[clock]) for clock in ("wall", "cpu"))


def test_state_growth_measures_the_memory_cell_along_the_stream(corpus):
    """A RAN whose gates are open (sigma(10)) and whose content is a constant 0.5 adds
    a * f^k at every step: its cell after n tokens is sum_{k<n} a f^k, exactly, in both
    layers, while its output tanh(c) stays below 1."""
    vocab, splits = corpus
    model = build_model("ran-tanh", vocab, TINY)
    for layer in model.layers:
        for name, p in layer.params.items():
            p.set_value(np.full(p.shape(), {"b_i": 10.0, "b_f": 10.0, "b_u": 0.5}.get(name, 0.0)))
    ids = sources.stream_ids(splits["train"], vocab)
    assert len(ids) > 1_001
    growth = state_growth(model, ids, marks=(100, 1_000))
    gate = 1 / (1 + math.exp(-10.0))
    for mark in (100, 1_000):
        expected = sum(0.5 * gate * gate ** k for k in range(mark))
        assert growth["max_abs_cell"][str(mark)] == pytest.approx([expected, expected], rel=1e-4)
    assert growth["max_abs_cell"]["end"][0] > growth["max_abs_cell"]["1000"][0]
    assert growth["ppl"] == pytest.approx(evaluation.stream_perplexity(model, ids), rel=1e-6)
    assert growth["tokens"] == len(ids) - 1


def test_measure_growth_trains_apart_and_renders(corpus, tmp_path, monkeypatch):
    vocab, splits = corpus
    small = {**splits, "valid": splits["valid"][:10]}
    monkeypatch.setattr("penn.growth.config_of", lambda name: TINY)
    result = measure_growth(["lstm-srnn-out", "ran-tanh"], vocab, small, epochs=1, work=tmp_path,
                            log=lambda line: None)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lstm-srnn-out", "lstm-srnn-out.json", "ran-tanh",
                                                          "ran-tanh.json"]
    assert set(result["models"]) == {"lstm-srnn-out", "ran-tanh"}
    for m in result["models"].values():
        assert len(m["max_abs_cell"]["end"]) == TINY.model.layers and math.isfinite(m["ppl"])
    text = growth_table(result)
    assert "| RAN (tanh) | c itself | tanh(c) |" in text and "| LSTM - S-RNN - OUT | h = tanh(c) | tanh(c) |" in text
    assert "after 100 tokens" in text and "at the end" in text
    assert text.index("after 100 tokens") < text.index("at the end")
    largest = max(max(v) for v in result["models"]["lstm-srnn-out"]["max_abs_cell"].values())
    assert f"read a squashed value reach at most {largest:,.1f}; the RAN (tanh)'s reach" in text
    assert "RAN (identity) has the same gates" not in text                 # not measured here


def test_the_shared_budget_counts_each_cell_by_its_longest_run():
    """A cell abandoned at one learning rate and run on at another is compared at the epochs of
    the longer run; a diverged run never holds the shared budget back."""
    def record(n, ppl=100.0):
        return {"vocab": 1000, "epochs": [{"test_ppl": ppl}] * n}

    records = {"lstm": record(13), "gru": record(3), "gru-lr0.5": record(9), "ran-tanh-lr0.1": record(1),
               "ran-tanh-lr0.5": record(13), "srnn": record(3, ppl=1e6)}
    assert common_epochs(records, 13) == 9
    records["srnn-lr0.1"] = record(4)
    assert common_epochs(records, 13) == 4
    assert common_epochs({"srnn": record(3, ppl=1e6)}, 13) == 0


def test_a_diverged_run_is_recorded_and_not_continued(corpus, tmp_path, monkeypatch):
    vocab, splits = corpus
    calls = []
    real_build, real_train = build_model, training.train

    def poisoned(*a, **k):                # a model whose loss is NaN from its first segment on
        model = real_build(*a, **k)
        model.embeddings.init_from_array(np.full(model.embeddings.shape(), np.nan))
        calls.append(model.W_hs.as_array().copy())
        return model
    monkeypatch.setattr("penn.training.build_model", poisoned)
    monkeypatch.setattr(training, "train", lambda model, *a, **k: calls.append(model) or real_train(model, *a, **k))
    where = {"runs": tmp_path / "results", "work": tmp_path / "work", "log": lambda line: None}
    record = train_model("lstm", vocab, splits, 3, TINY, **where)
    before, model = calls
    assert np.array_equal(model.W_hs.as_array(), before)                    # never updated from a NaN loss
    assert len(record["epochs"]) == 1 and record["epochs"][0]["train_tokens"] == 0   # stopped in epoch 1 of 3
    assert record["epochs"][0]["train_ppl"] == math.inf and diverged(record["epochs"][0], record)
    again = train_model("lstm", vocab, splits, 3, TINY, **where)
    assert len(calls) == 3 and again == json.loads((tmp_path / "results" / "lstm.json").read_text())

    # a test perplexity that overflows is reported as diverged but does not stop training:
    # only the training and valid splits decide whether a run goes on
    row = {"train_ppl": 80.0, "valid_ppl": 140.0, "test_ppl": math.inf}
    assert diverged(row, {"vocab": 1000}) and not failed_in_training(row, {"vocab": 1000})
    assert failed_in_training({**row, "valid_ppl": 2000.0}, {"vocab": 1000})


def test_growth_table_says_what_became_of_the_identity_ran():
    def measured(largest):
        return {"ppl": 150.0, "tokens": 5000, "max_abs_cell": {"100": [1.0, largest / 10], "end": [2.0, largest]}}

    result = {"epochs": 1, "split": "valid", "models": {
        "lstm-srnn-out": measured(9.0), "ran-tanh": measured(50_000.0), "ran-identity-lr0.5": measured(3.0)}}
    text = growth_table(result)
    assert "reach at most 9.0; the RAN (tanh)'s reach 50,000 or more, growing at every mark" in text
    assert "The RAN (identity) has the same gates but outputs c itself" in text and "at most 3.0." in text
    assert "infinite perplexity" not in text
    rows = [{"epoch": e, "valid_ppl": v, "test_ppl": t} for e, v, t in
            ((1, 200.0, 190.0), (2, 150.0, math.inf), (3, math.inf, math.inf))]
    text = growth_table(result, {"ran-identity-lr0.5": {"epochs": rows}})
    assert ("reached an infinite perplexity on the test stream after epoch 2 and on the valid stream after "
            "epoch 3; nothing in the cell itself bounds it.") in text


def test_tables_rebuilt_from_records_name_the_machines_that_trained_them():
    from common import machines_of
    records = [{"machine": "AMD EPYC, 2 cores | DyNet 2.1 | seed 1, 1024 MB"},
               {"machine": "AMD EPYC, 2 cores | DyNet 2.1 | seed 2, 1024 MB"},
               {"machine": "Intel Xeon, 2 cores | DyNet 2.1 | seed 1, 1024 MB"}, {}]
    assert machines_of(records) == ("AMD EPYC, 2 cores | DyNet 2.1 | 1024 MB (2 runs); "
                                    "Intel Xeon, 2 cores | DyNet 2.1 | 1024 MB (1 run)")
    assert machines_of([{}]) == "not recorded"
