"""The one training engine: settings, schedules, and the stream source (state carried
from segment to segment, resumed exactly, chunked softmax the same)."""
import dataclasses
import math

import numpy as np
import pytest

from course import evaluation, lm, runtime, schedules, sources, training
from course.data import Vocab
from course.settings import (DEFAULTS, MODEL_DEFAULTS, ModelSettings, Settings, add_options, from_record, record,
                             to_options)

dy = runtime.dynet()


def test_settings_are_two_typed_parts_with_one_set_of_defaults():
    assert lm.Config().embed == MODEL_DEFAULTS.embed and lm.Config().hidden == MODEL_DEFAULTS.hidden
    assert Settings(optimizer="sgd").learning_rate == 1.0 and Settings().learning_rate == 0.002
    # a record written before stream, bptt, lr_decay and the plateau's fields existed still loads
    old = {k: v for k, v in record(MODEL_DEFAULTS, DEFAULTS).items()
           if k not in ("stream", "bptt", "lr_decay", "min_gain", "patience")}
    assert from_record({**old, "hidden": 7, "retired": 1}) == (MODEL_DEFAULTS.but(hidden=7), DEFAULTS)
    with pytest.raises(TypeError, match=r"unknown training setting\(s\) \['hiden'\]"):
        DEFAULTS.but(hiden=7)
    # a model's field given to training is refused, naming where it belongs
    with pytest.raises(TypeError, match=r"\['hidden'\].*ModelSettings, given to RNNLM.from_settings"):
        DEFAULTS.but(hidden=7)
    with pytest.raises(ValueError, match="optimizer must be one of"):
        DEFAULTS.but(optimizer="rmsprop")
    with pytest.raises(ValueError, match=r"embed \(8\) must equal hidden \(16\)"):
        ModelSettings(embed=8, hidden=16, residual="vertical")


def test_settings_written_as_options_parse_back_to_themselves():
    """to_options is add_options' inverse: a bench's settings become `python -m course train` arguments."""
    import argparse
    model = ModelSettings(cell="f.py:step", embed=16, hidden=16, residual="vertical", init_scale=0.1)
    run = Settings(stream=True, bptt=20, optimizer="sgd", lr=1.0, decay_after=4, epochs=2, max_batches=3)
    parser = argparse.ArgumentParser()
    add_options(parser, ModelSettings)
    add_options(parser, Settings)
    args = parser.parse_args(to_options(model) + to_options(run))
    assert (ModelSettings.from_args(args), Settings.from_args(args)) == (model, run)
    assert to_options(DEFAULTS) == [] and "--stream" in to_options(run) and "--reset-state" not in to_options(run)
    with pytest.raises(ValueError, match=r"--clip: the command line cannot give clip = None"):
        to_options(dataclasses.replace(DEFAULTS, clip=None))      # no option makes a value None


def test_the_model_is_built_from_its_settings(tiny_corpus):
    vocab = Vocab.build(tiny_corpus)
    settings = ModelSettings(cell="gru", embed=6, hidden=6, layers=2, residual="vertical", init_scale=0.05)
    model = lm.RNNLM.from_settings(vocab, settings, seed=3)
    assert (model.config.cell, model.config.embed, model.config.hidden, model.config.layers,
            model.config.residual) == ("gru", 6, 6, 2, "vertical")
    values = np.concatenate([p.as_array().ravel() for p in model.pc.parameters_list()])
    assert np.abs(values).max() <= 0.05
    again = lm.RNNLM.from_settings(vocab, settings, seed=3)
    assert np.array_equal(values, np.concatenate([p.as_array().ravel() for p in again.pc.parameters_list()]))


def test_the_plateau_reads_its_parameters_from_the_settings():
    assert schedules.of(DEFAULTS.but(min_gain=0.001, patience=3)) == schedules.Plateau(0.5, 0.001, 3)


def test_plateau_counts_a_gain_by_its_minimum_and_stops_after_its_patience():
    plateau = schedules.Plateau(decay=0.5, min_gain=0.001, patience=2)
    assert plateau.gained(99.8, 100.0) and not plateau.gained(99.95, 100.0)
    assert plateau.next_lr(0.2, 3, False) == 0.1 and plateau.next_lr(0.2, 3, True) == 0.2
    assert plateau.next_lr(0.2, 3, None) == 0.2                 # no held-out split: the rate stays
    rows = [{"improved": True}, {"improved": False}, {"improved": True}]
    assert plateau.stop(rows) is None
    assert plateau.stop(rows + [{"improved": False}]) == "2 epochs without a gain on valid"
    fixed = schedules.FixedDecay(0.5, after=2)
    assert [fixed.next_lr(1.0, e, False) for e in (1, 2, 3)] == [1.0, 0.5, 0.5]
    assert schedules.of(DEFAULTS.but(decay_after=4)) == schedules.FixedDecay(0.5, 4)


def test_train_stops_when_its_schedule_says_so(tiny_corpus, monkeypatch):
    model = lm.RNNLM(Vocab.build(tiny_corpus), "srnn", embed=4, hidden=4)
    held_out = iter([10.0, 10.5, 9.0, 9.5, 1.0])
    monkeypatch.setattr(evaluation, "evaluate", lambda *a, **k: next(held_out))
    epochs = []
    history = training.train(model, tiny_corpus, tiny_corpus[:5], epochs=5, progress=False, log=None,
                       schedule=schedules.Plateau(patience=2), on_epoch=lambda row, state: epochs.append(state.epoch))
    assert [r["improved"] for r in history] == [True, False, True, False]
    assert epochs == [2, 3, 4, 5]          # on_epoch sees the state after each epoch


def test_a_stream_is_cut_into_rows_and_segments(tiny_corpus):
    v = Vocab.build(tiny_corpus)
    ids = sources.stream_ids(tiny_corpus, v)
    assert ids[0] == v.eos and ids.count(v.eos) == len(tiny_corpus) + 1
    stream = sources.Stream(tiny_corpus, v, batch_size=3, bptt=5)
    n = len(ids) // 3
    assert len(stream) == (n - 1) // 5
    first, second = stream.batch(1, 1, 0, "ignored"), stream.batch(1, 1, 1, ["carried"])
    assert first.start is None and second.start == ["carried"]     # reset at an epoch's start
    assert [row[0] for row in second.inputs] == ids[5:10] and [row[1] for row in second.targets] == ids[n + 6:n + 11]
    assert second.n_predictions == 15 and second.size == 3
    with pytest.raises(ValueError, match="too short for 400 rows"):
        sources.Stream(tiny_corpus[:3], v, batch_size=400, bptt=5)


@pytest.mark.parametrize("cell", ["lstm", "gru", "hand"])
def test_a_carried_state_is_what_one_long_pass_computes(tiny_corpus, cell):
    """Scoring a stream in segments of 7 or 100 steps, the state carried, gives the
    perplexity of one pass over it, for builders and for a hand-written cell."""
    from autograder.reference.cells import make_cell
    v = Vocab.build(tiny_corpus)
    model = lm.RNNLM(v, make_cell("lstm") if cell == "hand" else cell, embed=6, hidden=5, layers=2)
    ids = sources.stream_ids(tiny_corpus[:20], v)
    dy.renew_cg()
    hs = model.hidden_states([[w] for w in ids[:-1]])
    scores = [dy.pickneglogsoftmax(dy.affine_transform([model.b_s.expr(), model.W_hs.expr(), h]), t)
              for h, t in zip(hs, ids[1:])]
    whole = math.exp(dy.esum(scores).value() / (len(ids) - 1))
    assert evaluation.stream_perplexity(model, ids, steps=7) == pytest.approx(whole, rel=1e-5)
    assert evaluation.stream_perplexity(model, ids, steps=100) == pytest.approx(whole, rel=1e-5)


def test_a_stream_segment_trains_the_same_with_the_softmax_in_chunks(tiny_corpus, monkeypatch):
    v = Vocab.build(tiny_corpus)
    runtime.init(seed=3)
    model = lm.RNNLM(v, "lstm", embed=6, hidden=6, layers=2)
    stream = sources.Stream(tiny_corpus, v, batch_size=4, bptt=6)
    carried = [[np.random.default_rng(k).normal(size=(6, 4)) * 0.3 for _ in range(2)] for k in range(2)]

    def step():
        segment = stream.batch(1, 1, 2, carried)
        for p in model.pc.parameters_list():
            p.scale_gradient(0.0)
        loss = model.train_step(segment, 0.0, 0.25)
        grads = [p.grad_as_array().copy() for p in model.pc.parameters_list()]
        return loss, grads, segment.end
    whole, whole_grads, whole_end = step()
    monkeypatch.setattr(lm, "SOFTMAX_BUDGET", 10)
    monkeypatch.setattr(lm, "SOFTMAX_CHUNK", 5 * len(v))
    chunked, chunked_grads, chunked_end = step()
    assert chunked == pytest.approx(whole, rel=1e-6)
    for a, b in zip(whole_grads, chunked_grads):
        np.testing.assert_allclose(a, b, atol=1e-6)
    for a, b in zip(whole_end, chunked_end):
        for x, y in zip(a, b):
            np.testing.assert_allclose(x, y, atol=1e-6)
    assert not np.allclose(whole_end[0][0], carried[0][0])


def test_a_stopped_stream_run_continues_exactly(tiny_corpus):
    """Stopped mid-epoch, its carried state saved in the TrainState (as JSON numbers), a
    stream run continues as if it had never stopped."""
    import json
    settings = Settings(epochs=2, batch_size=3, bptt=4, stream=True, optimizer="sgd", lr=0.5, dropout=0.2,
                        seed=3)

    def fresh():
        runtime.init(seed=4)
        return lm.RNNLM(Vocab.build(tiny_corpus), "lstm", embed=6, hidden=6)
    whole = fresh()
    rows = training.train(whole, tiny_corpus, tiny_corpus[:10], settings, progress=False, log=None, resumable=True)
    assert len(sources.Stream(tiny_corpus, whole.vocab, 3, 4)) > 20

    stopped, saved = fresh(), []
    calls = iter(range(10_000))
    training.train(stopped, tiny_corpus, tiny_corpus[:10], settings, progress=False, log=None, resumable=True,
             stop=lambda: next(calls) == 30, on_save=lambda state, improved: saved.append(state))
    state = training.TrainState(**json.loads(json.dumps(dataclasses.asdict(saved[-1]))))
    assert state.epoch == 2 and state.batch > 0 and state.carried is not None
    runtime.init(seed=99)
    again = training.train(stopped, tiny_corpus, tiny_corpus[:10], settings, progress=False, log=None, resumable=True,
                     resume=state)
    keys = ("train_ppl", "valid_ppl", "lr")
    assert [{k: r[k] for k in keys} for r in again] == [{k: r[k] for k in keys} for r in rows]
    for a, b in zip(whole.pc.parameters_list(), stopped.pc.parameters_list()):
        np.testing.assert_array_equal(a.as_array(), b.as_array())


def test_init_scale_draws_every_parameter_uniformly_from_its_seed(tiny_corpus):
    def drawn(seed):
        model = lm.RNNLM(Vocab.build(tiny_corpus), "lstm", embed=6, hidden=5, layers=2)
        model.init_uniform(0.1, seed)
        return np.concatenate([p.as_array().ravel() for p in model.pc.parameters_list()]
                              + [p.as_array().ravel() for p in model.pc.lookup_parameters_list()])
    values = drawn(1)
    assert values.size == lm.RNNLM(Vocab.build(tiny_corpus), "lstm", embed=6, hidden=5, layers=2).param_count()
    assert np.abs(values).max() <= 0.1 and 0.04 < np.abs(values).mean() < 0.06
    assert np.array_equal(values, drawn(1)) and not np.array_equal(values, drawn(2))
