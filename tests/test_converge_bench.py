"""bench/converge.py and converge_tables.py: the schedule, resuming, pair outcomes, intervals, tables.

Runs use the first few hundred sentences of the course corpus and a model of 8 units,
so a whole run takes seconds.
"""
import json
import re

import numpy as np
import pytest


import converge  # bench/converge.py (pytest puts bench/ on the path)
import converge_ensemble
import converge_inside
import converge_tables

from course import bench, evaluation, lm, schedules, training
from course.agreement import agreement_accuracy, load_pairs
from course.data import Vocab

TINY = {"embed": 8, "hidden": 8, "dropout": 0.0}


@pytest.fixture
def tiny(monkeypatch):
    """A tiny LSTM and a tiny S-RNN in the plan, at most 3 epochs; 300 sentences per split."""
    monkeypatch.setitem(converge.MODELS, "tiny-lstm", ("tiny LSTM", "lstm", TINY))
    monkeypatch.setitem(converge.MODELS, "tiny-srnn", ("tiny S-RNN", "builder:srnn", TINY))
    monkeypatch.setattr(converge, "TRAINING", converge.TRAINING.but(epochs=3))
    return converge.load_splits(max_sentences=300)


def test_a_run_stops_evaluates_its_best_epoch_and_is_not_trained_twice(tiny, tmp_path):
    record = converge.run("tiny-lstm", 1, tiny, tmp_path / "rec", tmp_path / "work", max_sentences=300, log=None)
    rows, final = record["epochs"], record["final"]
    assert 1 <= len(rows) <= 3 and final["stopped"]
    best = min(rows, key=lambda r: r["valid_ppl"])
    assert final["best_epoch"] == best["epoch"]
    assert final["valid_ppl"] == pytest.approx(best["valid_ppl"], rel=1e-6)   # the best checkpoint was scored
    assert len(final["pairs"]) == 300 and set(final["pairs"]) <= set("10=")
    for before, after in zip(rows, rows[1:]):          # halved exactly after the epochs without a gain
        assert after["lr"] == before["lr_next"] == pytest.approx(before["lr"] * (1.0 if before["improved"] else 0.5))
    saved = json.loads((tmp_path / "rec" / "tiny-lstm-s1.json").read_text())
    assert saved["final"] == json.loads(json.dumps(final))
    again = converge.run("tiny-lstm", 1, tiny, tmp_path / "rec", tmp_path / "work", max_sentences=300,
                         log=None, after_epoch=lambda row: pytest.fail("trained again"))
    assert again["final"] == saved["final"]


def test_a_run_trains_through_the_engine_with_the_plateau_schedule(tiny, tmp_path, monkeypatch):
    """converge has no loop of its own: course.training.train with its settings and a Plateau schedule."""
    calls = []
    train = training.train
    monkeypatch.setattr(training, "train", lambda *a, **k: calls.append((a[0], a[3])) or train(*a, **k))
    record = converge.run("tiny-lstm", 1, tiny, tmp_path / "rec", tmp_path / "work", max_sentences=300, log=None)
    model, settings = calls[0]
    assert len(calls) == 1 and (model.config.embed, settings.batch_size, settings.epochs) == (8, 32, 3)
    assert schedules.of(settings) == schedules.Plateau(0.5, 0.001, 3)
    rows = record["epochs"]
    assert [r["lr"] for r in rows[1:]] == [r["lr_next"] for r in rows[:-1]]
    assert all(r["train_seconds"] <= r["seconds"] for r in rows)


def test_an_interrupted_run_continues_after_its_last_epoch(tiny, tmp_path):
    class Stop(Exception):
        pass

    def stop_after_two(row):
        if row["epoch"] == 2:
            raise Stop

    args = ("tiny-srnn", 2, tiny, tmp_path / "rec", tmp_path / "work")
    with pytest.raises(Stop):
        converge.run(*args, max_sentences=300, log=None, after_epoch=stop_after_two)
    partial = json.loads((tmp_path / "rec" / "tiny-srnn-s2.json").read_text())
    assert len(partial["epochs"]) == 2 and "final" not in partial
    record = converge.run(*args, max_sentences=300, log=None)
    assert [r["epoch"] for r in record["epochs"]][:3] == [1, 2, 3][:len(record["epochs"])]
    assert record["epochs"][:2] == partial["epochs"]
    assert record["epochs"][2]["resumed"] and record["epochs"][2]["lr"] == partial["epochs"][1]["lr_next"]
    assert "final" in record


def test_a_run_is_a_course_run_and_one_half_done_in_the_old_layout_is_refused(tiny, tmp_path):
    """The run's folder is a course.runs.Run (checkpoint/, resume/, the lock given back); a run
    left half-done by the bench before it (latest.dy, best.dy) is refused, saying what to do."""
    record = converge.run("tiny-lstm", 1, tiny, tmp_path / "rec", tmp_path / "work", max_sentences=300, log=None)
    folder = tmp_path / "work" / "tiny-lstm-s1"
    assert sorted(p.name for p in folder.iterdir()) == ["checkpoint", "resume"]
    assert record["checkpoint"]["epoch"] == record["final"]["best_epoch"]
    assert converge.best_parameters("tiny-lstm", 1, tmp_path / "work") == folder / "checkpoint" / "params.dy"
    old = tmp_path / "old" / "tiny-srnn-s1"
    old.mkdir(parents=True)
    (old / "latest.dy").write_text("")
    (old / "best.dy").write_text("")
    with pytest.raises(ValueError, match=r"older layout \(best.dy, latest.dy\).*move the folder away"):
        converge.run("tiny-srnn", 1, tiny, tmp_path / "rec", tmp_path / "old", max_sentences=300, log=None)
    assert converge.best_parameters("tiny-srnn", 1, tmp_path / "old") == old / "best.dy"   # a finished old run is read


def test_a_record_of_other_settings_is_not_continued(tiny, tmp_path):
    converge.run("tiny-lstm", 1, tiny, tmp_path / "rec", tmp_path / "work", max_sentences=300, log=None)
    converge.MODELS["tiny-lstm"] = ("tiny LSTM", "lstm", {**TINY, "hidden": 9})
    with pytest.raises(ValueError, match="move it away"):
        converge.run("tiny-lstm", 1, tiny, tmp_path / "rec", tmp_path / "work", max_sentences=300, log=None)


def test_an_ngram_baseline_is_scored_like_a_run(tiny, tmp_path):
    record = converge.run("kn-bigram", 1, tiny, tmp_path, tmp_path, max_sentences=300, log=None)
    assert record["epochs"] == [] and len(record["final"]["pairs"]) == 300
    assert 1 < record["final"]["valid_ppl"] < 1000
    again = converge.run("kn-bigram", 1, tiny, tmp_path, tmp_path, max_sentences=300, log=None)
    assert again == json.loads(json.dumps(record))


def test_stopping_rule():
    settings = converge.TRAINING
    good, bad = {"valid_ppl": 30.0, "improved": True}, {"valid_ppl": 31.0, "improved": False}
    bad_epochs = settings.patience
    assert converge._stopped([good] + [bad, good] * (bad_epochs - 1), settings) is None
    assert "without a gain" in converge._stopped([good] + [bad, good] * (bad_epochs - 1) + [bad], settings)
    assert converge._stopped([good, {"valid_ppl": float("inf"), "improved": False}], settings) == "diverged"
    assert converge._stopped([good] * settings.epochs, settings) == f"{settings.epochs} epochs"


def test_pair_outcomes_count_as_course_agreement_does(tiny):
    pairs = [p for p in load_pairs() if p.distance >= 11][:120]
    model = lm.RNNLM(Vocab.build(converge.load_splits()["train"]), "lstm", 8, 8)
    training.train(model, tiny["train"], epochs=1, progress=False, log=None)
    outcome = converge.pair_outcomes(model, pairs)
    score = {"1": 1.0, "0": 0.0, "=": 0.5}
    for task, result in agreement_accuracy(model, pairs).items():
        mine = [score[c] for c, p in zip(outcome, pairs) if p.task == task]
        assert result["all"]["accuracy"] == pytest.approx(np.mean(mine))


def test_bootstrap_intervals():
    rng = np.random.default_rng(0)
    classes = np.array(["sg", "pl"] * 100)
    constant = np.ones((3, 200), dtype=np.float32)
    assert converge_tables.bootstrap(constant, classes, rng) == (1.0, 1.0, 1.0)
    one_class_right = np.tile((classes == "sg").astype(np.float32), (2, 1))   # always the singular form
    point, low, high = converge_tables.bootstrap(one_class_right, classes, rng)
    assert point == low == high == 0.5                                       # balanced: chance
    noisy = (rng.random((1, 200)) < 0.8).astype(np.float32)
    point, low, high = converge_tables.bootstrap(noisy, classes, rng)
    assert low < point < high and 0.05 < high - low < 0.2                   # about ±1.96 * 0.028
    spread = np.vstack([noisy, np.ones((1, 200), dtype=np.float32)])          # two seeds that disagree
    _, low2, high2 = converge_tables.bootstrap(spread, classes, rng)
    assert high2 - low2 > high - low                                         # the seeds' spread widens it
    assert converge_tables.mean_interval([1.0]) == (1.0, None, None)
    mean, low, high = converge_tables.mean_interval([1.0, 2.0, 3.0])
    assert mean == 2.0 and high - mean == pytest.approx(4.303 / 3 ** 0.5)


def fake_record(model, seed, accuracy, ppl, rng, epochs=3):
    pairs = "".join("1" if x < accuracy else "0" for x in rng.random(5000))
    rows = [{"epoch": k, "train_ppl": ppl + 2 - k, "valid_ppl": ppl + 3 - k, "improved": True, "seconds": 60.0, "cpu_seconds": 50.0,
             "finished_at": f"2026-01-01 00:0{k}:00"} for k in range(1, epochs + 1)]
    return {"model": model, "seed": seed, "params": 1000, "epochs": rows,
            "final": {"best_epoch": epochs, "stopped": "test", "valid_ppl": ppl, "test_ppl": ppl + 0.1,
                      "pairs": pairs, "cpu_seconds": 10.0, "seconds": 12.0, "finished_at": "2026-01-01 00:09:00"}}


def test_tables_state_goals_claims_and_which_runs_are_complete(tmp_path):
    rng = np.random.default_rng(5)
    records = tmp_path / "records"
    records.mkdir()
    runs = [("lstm", 1, 0.97, 22.0), ("lstm", 2, 0.96, 22.1), ("srnn", 1, 0.7, 26.0)]
    for model, seed, accuracy, ppl in runs:
        (records / f"{model}-s{seed}.json").write_text(json.dumps(fake_record(model, seed, accuracy, ppl, rng)))
    unfinished = fake_record("gru", 1, 0.9, 23.0, rng)
    del unfinished["final"]
    (records / "gru-s1.json").write_text(json.dumps(unfinished))
    (records / "arrows.json").write_text(json.dumps({"lstm-srnn-out": {"chance": 0.04}}))   # not a run record
    (records / "train_fit.json").write_text(json.dumps({                                   # nor this
        "lstm": {"seed": 1, "train_ppl": 21.0, "train_floor": 21.7}, "srnn": {"seed": 1, "train_ppl": 23.0, "train_floor": 21.7},
        "gru": {"seed": 1, "train_ppl": 20.0, "train_floor": 21.7}}))                             # gru: unfinished, left out
    summary = converge_tables.write(records, tmp_path / "out", quiet=True)
    text = (tmp_path / "out" / "converge.md").read_text()
    lstm = summary["models"]["lstm"]
    assert lstm["seeds_complete"] == [1, 2] and summary["models"]["gru"]["seeds_running"] == [1]
    assert "| LSTM | 1,000 | 2 of 3 |" in text and "0 of 3, seed 1 training" in text
    far = lstm["agreement"]["number"]["distance"]["21+"]
    assert far["count"] == 500 and far["low"] < far["balanced_accuracy"] < far["high"]
    assert 0.94 < far["balanced_accuracy"] < 0.98
    assert lstm["test_ppl"]["mean"] == pytest.approx(22.15)
    assert "LSTM ≥ 0.95 on number agreement at 21+ words" in text and "**met**" in text
    assert "The S-RNN's long-distance deficit" in text and "**shown** (the interval stays above 0)" in text
    assert "S-RNN (= LSTM - GATES): test perplexity +17.8%" in text
    # what limits the best model: below the floor on its training sentences, above it on valid
    assert "has perplexity 21.00 on its training sentences, 0.968 × their floor (21.70), against 22.00 on valid" in text
    assert "It has fitted the training split" in text
    assert "(seed 1, best epoch): S-RNN (= LSTM - GATES) 23.00 / 26.00." in text and "GRU 20.00" not in text
    assert (tmp_path / "out" / "converge_ppl.png").exists() and (tmp_path / "out" / "converge_agreement.png").exists()
    assert json.loads((tmp_path / "out" / "converge.json").read_text())["models"]["srnn"]["seeds_complete"] == [1]


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_exported_weights_run_as_dynets_builder(tiny, tmp_path, monkeypatch, cell):
    monkeypatch.setitem(converge.MODELS, "tiny", ("tiny", cell, {**TINY, "forget_bias": 0.0} if cell == "lstm" else TINY))
    converge.run("tiny", 1, tiny, tmp_path, tmp_path, max_sentences=300, log=None)
    path = converge_inside.export_weights("tiny", 1, tiny, records=tmp_path, work=tmp_path)
    assert path.stat().st_size < 50_000
    vocab = Vocab.build(tiny["train"])
    hand = lm.RNNLM(vocab, converge.make_cell(cell, 0.0 if cell == "lstm" else None), 8, 8)
    hand.pc.populate(str(converge.best_parameters("tiny", 1, tmp_path)))
    builder = bench.load_weights(vocab, "tiny", folder=path.parent)      # as the lectures load them
    ids = [[vocab.index(w)] for w in tiny["valid"][0]]
    dy = converge.runtime.dynet()
    dy.renew_cg()
    expected = np.array([h.npvalue() for h in hand.hidden_states(ids)])
    dy.renew_cg()
    got = np.array([h.npvalue() for h in builder.hidden_states(ids)])
    assert np.abs(expected).max() > 0.05
    np.testing.assert_allclose(got, expected, atol=0.01)    # float16 weights


def test_arrows_and_recorded_gates_of_a_weighted_sum(tiny, tmp_path, monkeypatch):
    monkeypatch.setitem(converge.MODELS, "tiny", ("tiny", "lstm-srnn-out", TINY))
    converge.run("tiny", 1, tiny, tmp_path, tmp_path, max_sentences=300, log=None)
    model = converge_inside.load_best("tiny", 1, tiny, work=tmp_path)
    pairs = converge_inside.far_number_pairs()[:30]
    assert min(p.distance for p in pairs) >= converge_inside.FAR
    found = converge_inside.arrows(model, pairs)
    for score in ("max", "l2", "readout"):
        counts = found[score]
        assert 0 <= counts["cue"] + counts["previous"] <= 30      # the cue is never the word just before
        assert counts["cue"] <= counts["cue_or_before"]
        assert counts["low"] <= counts["cue_share"] <= counts["high"]
    assert 0 < found["chance"] < 1 / converge_inside.FAR
    path = converge_inside.record_gates(model, pairs[:2], tmp_path / "gates.npz")
    saved = np.load(path)
    meta = json.loads(str(saved["sentences"]))
    assert [len(m["words"]) for m in meta] == [p.target_index + 1 for p in pairs[:2]]
    assert saved["i0"].shape == saved["f0"].shape == saved["content0"].shape == (pairs[0].target_index + 2, 8)
    assert saved["readout0"].shape == (8,)
    assert 0 <= saved["f1"].min() and saved["f1"].max() <= 1


def test_chapter_11s_attention_rows_train_resume_and_record_their_weights(tiny, tmp_path, monkeypatch):
    """Attention alone (its unused LSTM not counted) and attention on top of an LSTM: trained like any
    row, rebuilt from the checkpoint with the same scores, their weights recorded for lecture 11."""
    size = {**TINY, "heads": 2, "positions": 128}
    monkeypatch.setitem(converge.MODELS, "tiny-attn", ("tiny attention", "attention", size))
    monkeypatch.setitem(converge.MODELS, "tiny-lstm-attn", ("tiny LSTM + attention", "lstm+attention", size))
    pairs = converge_inside.far_number_pairs()[:20]
    for name, kinds in (("tiny-attn", ["CausalAttention"]), ("tiny-lstm-attn", ["CellLayer", "CausalAttention"])):
        record = converge.run(name, 1, tiny, tmp_path, tmp_path, max_sentences=300, log=None)
        model = converge_inside.load_best(name, 1, tiny, work=tmp_path)
        assert [type(layer).__name__ for layer in model.layers] == kinds
        assert evaluation.evaluate(model, tiny["valid"]) == pytest.approx(record["final"]["valid_ppl"], rel=1e-6)
        unused = model.param_count() - record["params"]
        assert unused == (4 * 8 * (8 + 8 + 1) if name == "tiny-attn" else 0)     # the replaced LSTM's W_x, W_h, b per gate
        saved = np.load(converge_inside.record_attention(model, pairs[:2], pairs, tmp_path / f"{name}.npz"))
        T = pairs[0].target_index + 1                                             # <s> and the words before the verb
        assert saved["a0"].shape == (2, T, T)
        rows = saved["a1"].astype(float).sum(axis=2)
        np.testing.assert_allclose(rows, 1.0, atol=2e-3)                          # each row a distribution
        assert np.all(np.triu(saved["a1"].astype(float), k=1) == 0)               # no weight on a later word
        fall = json.loads(str(saved["weights"]))
        assert fall["pairs"] == 2 and len(fall["by_distance"]) > 1 and 0 < fall["cue"] < 1


def test_train_fit_scores_the_best_epoch_on_the_training_split(tiny, tmp_path, monkeypatch):
    monkeypatch.setitem(converge.MODELS, "tiny", ("tiny", "lstm", TINY))
    record = converge.run("tiny", 1, tiny, tmp_path, tmp_path, max_sentences=300, log=None)
    fit = converge_inside.train_fit("tiny", 1, tiny, work=tmp_path)
    model = converge_inside.load_best("tiny", 1, tiny, work=tmp_path)
    assert evaluation.evaluate(model, tiny["valid"]) == pytest.approx(record["final"]["valid_ppl"], rel=1e-6)
    assert fit["train_ppl"] == pytest.approx(evaluation.evaluate(model, tiny["train"]), rel=1e-6)
    assert fit["train_ppl"] < record["final"]["valid_ppl"]          # 300 sentences, 3 epochs: it fits them better
    assert 20 < fit["train_floor"] < 23 and converge_inside.finished("tiny", 1, tmp_path)


def test_wilson_interval():
    low, high = converge_inside.wilson(50, 100)
    assert low == pytest.approx(0.404, abs=1e-3) and high == pytest.approx(0.596, abs=1e-3)
    assert converge_inside.wilson(0, 20)[0] == pytest.approx(0.0, abs=1e-12)


def test_more_training_sentences_begin_with_the_shipped_split():
    splits = converge.load_splits()
    assert converge.training_sentences(splits, None) is splits["train"]
    more = converge.training_sentences(splits, 1_100_000)
    assert more[:len(splits["train"])] == [list(s) for s in splits["train"]]
    assert len(more) > len(splits["train"]) and sum(len(s) + 1 for s in more) >= 1_100_000


def test_an_ensemble_averages_probabilities_with_weights_fitted_on_valid():
    a, b = np.log(np.array([0.5, 0.1, 0.4])), np.log(np.array([0.1, 0.5, 0.4]))
    np.testing.assert_allclose(converge_ensemble.mix([a, b], np.array([1.0, 1.0])), np.log([0.3, 0.3, 0.4]))
    np.testing.assert_allclose(converge_ensemble.mix([a, b], np.array([1.0, 0.0])), a)   # a zero weight: left out
    np.testing.assert_allclose(converge_ensemble.mix([a, b], np.array([0.75, 0.25])), np.log([0.4, 0.2, 0.4]))
    # c is the best alone; a and b each know what the other does not, so together they beat c
    a, b = np.log(np.array([0.9, 0.05, 0.5] * 10)), np.log(np.array([0.05, 0.9, 0.5] * 10))
    c = np.log(np.array([0.3, 0.3, 0.55] * 10))
    weights, history = converge_ensemble.fit_weights([a, b, c])
    assert weights.sum() == pytest.approx(1.0) and weights[0] == pytest.approx(weights[1], abs=1e-6)
    assert weights[0] + weights[1] > 0.5                                   # a and b carry the mixture
    assert all(later <= earlier + 1e-12 for earlier, later in zip(history, history[1:]))   # EM never worsens
    best = converge_ensemble.ppl(converge_ensemble.mix([a, b, c], weights))
    assert best < min(map(converge_ensemble.ppl, (a, b, c)))
    for other in ([1, 1, 1], [1, 1, 0], [0, 0, 1], [2, 2, 1]):               # no other weighting does better
        assert converge_ensemble.ppl(converge_ensemble.mix([a, b, c], np.array(other, float))) >= best * (1 - 1e-6)
    same, _ = converge_ensemble.fit_weights([c, c])                          # a copy of itself: no gain
    assert converge_ensemble.ppl(converge_ensemble.mix([c, c], same)) == pytest.approx(converge_ensemble.ppl(c))


def test_ensemble_word_scores_are_the_models_own_and_cached(tiny, tmp_path, monkeypatch):
    record = converge.run("tiny-lstm", 1, tiny, tmp_path, tmp_path, max_sentences=300, log=None)
    sentences = {"valid": tiny["valid"][:40], "test": tiny["test"][:40]}
    scored = converge_ensemble.logprobs("tiny-lstm", 1, record, tiny, sentences, work=tmp_path)
    model = converge_inside.load_best("tiny-lstm", 1, tiny, tmp_path)
    lp, lengths = scored["valid"]
    np.testing.assert_allclose(converge_ensemble.sentence_sums(lp, lengths),
                               model.sentence_logprobs(sentences["valid"]), rtol=1e-5)
    monkeypatch.setattr(converge_ensemble, "load_best", lambda *a: pytest.fail("scored again"))
    again = converge_ensemble.logprobs("tiny-lstm", 1, record, tiny, sentences, work=tmp_path)
    np.testing.assert_array_equal(again["test"][0], scored["test"][0])


def test_tables_state_the_ensemble_with_the_3_percent_goal(tmp_path):
    rng = np.random.default_rng(6)
    records = tmp_path / "records"
    records.mkdir()
    (records / "lstm-s1.json").write_text(json.dumps(fake_record("lstm", 1, 0.97, 24.0, rng)))
    (records / "lstm-4x-s1.json").write_text(json.dumps(fake_record("lstm-4x", 1, 0.97, 22.5, rng)))
    pairs = "".join("1" if x < 0.9 else "0" for x in rng.random(5000))
    (records / "ensemble.json").write_text(json.dumps({
        "weights": {"lstm-s1": 0.7, "gru-s1": 0.295, "srnn-s1": 0.005}, "valid_ppl": 22.2,
        "test_ppl": 22.3, "test_ratio": 22.3 / 21.68, "best_single": ["lstm-s1", 24.0, 24.1], "pairs": pairs,
        "finished_at": "2026-11-24 08:45:33"}))
    converge_tables.write(records, tmp_path / "out", quiet=True)
    text = (tmp_path / "out" / "converge.md").read_text()
    assert "An ensemble of 3 finished runs** (bench/converge_ensemble.py, 2026-11-24:" in text and "lstm-s1 0.70, gru-s1 0.29, 1 more below 0.01)" in text
    assert "1.029 × the floor: **within 3%**" in text
    assert "4 times as many sentences" in text and "1.043 × the floor against 1.112 on the shipped split" in text
    assert 0.85 < float(re.search(r"Its number agreement at 21\+ words: ([0-9.]+) \[", text).group(1)) < 0.95
