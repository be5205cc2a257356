import json
import math

import numpy as np
import pytest

from course import lm, runtime
from course.data import Vocab, encode, make_batch

dy = runtime.dynet()


def one_at_a_time_nll(model, sentences):
    ids, _ = encode(sentences, model.vocab)
    total = 0.0
    for s in ids:
        dy.renew_cg()
        losses, _ = model.batch_losses(make_batch([s], model.vocab))
        total += dy.sum_batches(losses).value()
    return total


@pytest.mark.parametrize("cell", ["lstm", "gru", "srnn"])
def test_padded_masked_batch_scores_like_its_sentences_one_at_a_time(tiny_corpus, cell):
    v = Vocab.build(tiny_corpus)
    model = lm.RNNLM(v, cell, embed=12, hidden=10, layers=2)
    sentences = tiny_corpus[:9]
    assert len({len(s) for s in sentences}) > 3            # mixed lengths, so padding happens
    ids, _ = encode(sentences, v)
    dy.renew_cg()
    losses, masks = model.batch_losses(make_batch(ids, v))
    batched = dy.sum_batches(losses).value()
    assert masks.min() == 0.0
    assert batched == pytest.approx(one_at_a_time_nll(model, sentences), abs=1e-4)
    # and sentence_logprobs (length-sorted batches, reordered back) agrees per sentence
    singles = [-one_at_a_time_nll(model, [s]) for s in sentences]
    np.testing.assert_allclose(model.sentence_logprobs(sentences, batch_size=4), singles, atol=1e-4)


def test_uniform_model_perplexity_is_the_vocabulary_size(tiny_corpus):
    v = Vocab.build(tiny_corpus)
    model = lm.RNNLM(v, "lstm", embed=8, hidden=8)
    model.W_hs.set_value(np.zeros((len(v), 8)))
    assert lm.evaluate(model, tiny_corpus) == pytest.approx(len(v), rel=1e-5)


def test_checkpoint_reloads_to_the_same_perplexity(tiny_corpus, tmp_path):
    v = Vocab.build(tiny_corpus)
    model = lm.RNNLM(v, "gru", embed=8, hidden=12, layers=2, residual=None)
    lm.train(model, tiny_corpus, epochs=1, batch_size=8, progress=False, log=None)
    model.save(tmp_path / "ckpt")
    again = lm.RNNLM.load(tmp_path / "ckpt")
    assert json.loads((tmp_path / "ckpt" / "config.json").read_text())["cell"] == "gru"
    assert lm.evaluate(again, tiny_corpus) == pytest.approx(lm.evaluate(model, tiny_corpus), rel=1e-6)


def test_loading_a_directory_that_is_not_a_checkpoint_says_so(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a checkpoint.*params.dy"):
        lm.RNNLM.load(tmp_path)


def test_a_small_lstm_overfits_a_tiny_corpus(tiny_corpus):
    runtime.init(seed=11)
    sentences = tiny_corpus[:12]
    v = Vocab.build(sentences)
    model = lm.RNNLM(v, "lstm", embed=16, hidden=32)
    before = lm.evaluate(model, sentences)
    history = lm.train(model, sentences, epochs=80, batch_size=4, lr=0.02, progress=False, log=None)
    after = lm.evaluate(model, sentences)
    assert before > 0.8 * len(v)                 # starts near uniform
    # learns the 12 sentences by heart: what is left is mostly the choice of the
    # first word (12 sentences share the context <s>)
    assert after < 3.0 and after < before / 4
    assert history[-1]["train_ppl"] < history[0]["train_ppl"] / 4


def test_same_seed_same_training_run(tiny_corpus):
    def run():
        runtime.init(seed=5)
        model = lm.RNNLM(Vocab.build(tiny_corpus), "lstm", embed=8, hidden=8)
        lm.train(model, tiny_corpus, epochs=2, batch_size=8, progress=False, log=None)
        return lm.evaluate(model, tiny_corpus)
    assert run() == run()


def test_learning_rate_halves_when_held_out_perplexity_stops_improving(tiny_corpus, monkeypatch):
    model = lm.RNNLM(Vocab.build(tiny_corpus), "srnn", embed=4, hidden=4)
    held_out = iter([10.0, 12.0, 9.0, 9.5])       # better, worse, best, worse
    monkeypatch.setattr(lm, "evaluate", lambda *a, **k: next(held_out))
    history = lm.train(model, tiny_corpus, tiny_corpus[:5], epochs=4, optimizer="sgd", lr=0.8,
                       progress=False, log=None)
    assert [round(r["lr"], 4) for r in history] == [0.8, 0.8, 0.4, 0.4]


def test_fixed_schedule_halves_after_the_given_epoch(tiny_corpus):
    model = lm.RNNLM(Vocab.build(tiny_corpus), "srnn", embed=4, hidden=4)
    history = lm.train(model, tiny_corpus, epochs=4, optimizer="sgd", lr=0.8, decay_after=2,
                       progress=False, log=None)
    assert [round(r["lr"], 4) for r in history] == [0.8, 0.8, 0.4, 0.2]


def test_residual_needs_matching_sizes_and_lateral_needs_a_cell(tiny_corpus):
    v = Vocab.build(tiny_corpus)
    with pytest.raises(ValueError, match="embed .* must equal hidden"):
        lm.RNNLM(v, "lstm", embed=8, hidden=16, residual="vertical")
    model = lm.RNNLM(v, "lstm", embed=8, hidden=8, layers=2, residual="vertical")
    assert math.isfinite(lm.evaluate(model, tiny_corpus[:5]))
    with pytest.raises(ValueError, match="lateral residual"):
        lm.evaluate(lm.RNNLM(v, "lstm", embed=8, hidden=8, residual="lateral"), tiny_corpus[:5])


def test_unknown_cell_and_optimizer_are_refused(tiny_corpus):
    v = Vocab.build(tiny_corpus)
    with pytest.raises(ValueError, match="unknown builder"):
        lm.RNNLM(v, "transformer")
    with pytest.raises(ValueError, match="optimizer must be one of"):
        lm.train(lm.RNNLM(v, "srnn", embed=4, hidden=4), tiny_corpus, optimizer="rmsprop")


def test_training_updates_every_parameter_of_a_hand_written_cell(tiny_corpus):
    """Guards against a DyNet trap: ``Parameters.expr()`` without True is a constant."""
    from autograder.reference.cells import make_cell
    model = lm.RNNLM(Vocab.build(tiny_corpus), make_cell("gru"), embed=6, hidden=5)
    before = {p.name(): p.as_array().copy() for p in model.pc.parameters_list()}
    lm.train(model, tiny_corpus[:8], epochs=1, batch_size=4, progress=False, log=None)
    unchanged = [p.name() for p in model.pc.parameters_list()
                 if np.array_equal(p.as_array(), before[p.name()])]
    assert not unchanged, f"parameters never updated: {unchanged}"


def test_hand_written_cells_resolve_by_name_and_builders_keep_theirs():
    assert lm.resolve_cell("lstm") == "lstm"
    assert lm.resolve_cell("hand-lstm").name == "lstm"
    assert lm.resolve_cell("ran-tanh", {"forget_bias": 2.0}).name == "ran-tanh"
    with pytest.raises(ValueError, match="unknown cell"):
        lm.resolve_cell("lstm-typo")


def test_dropout_changes_training_scores_but_not_evaluation(tiny_corpus):
    v = Vocab.build(tiny_corpus)
    model = lm.RNNLM(v, "lstm", embed=8, hidden=8)
    plain = model.token_logprobs(tiny_corpus[:6])
    dropped = model.token_logprobs(tiny_corpus[:6], dropout=0.5)
    assert [len(a) for a in plain] == [len(s) + 1 for s in tiny_corpus[:6]]
    assert any(not np.allclose(a, b) for a, b in zip(plain, dropped))
    np.testing.assert_allclose(np.concatenate(plain), np.concatenate(model.token_logprobs(tiny_corpus[:6])))
    with pytest.raises(ValueError, match="dropout must be in"):
        model.token_logprobs(tiny_corpus[:2], dropout=1.0)


def test_gradient_profile_vanishes_with_small_recurrent_weights(tiny_corpus):
    long = [s * 3 for s in tiny_corpus if len(s) >= 4]
    model = lm.RNNLM(Vocab.build(tiny_corpus), "srnn", embed=8, hidden=8)
    W_xh, W_hh, b = model.layers[0].builder.get_parameters()[0]
    W_hh.set_value(0.1 * np.eye(8))
    profile = lm.gradient_profile(model, long, K=10, n=16)
    assert profile.shape == (10,) and np.all(profile > 0)
    assert profile[-1] < 1e-4 * profile[0]          # ten steps back, almost nothing arrives
    with pytest.raises(ValueError, match="lower K"):
        lm.gradient_profile(model, tiny_corpus, K=500)


def test_builder_lstm_forget_bias_is_a_setting_and_survives_a_checkpoint(tiny_corpus, tmp_path):
    v = Vocab.build(tiny_corpus)
    runtime.init(seed=3)
    one = lm.RNNLM(v, "lstm", embed=6, hidden=6)
    runtime.init(seed=3)
    zero = lm.RNNLM(v, "lstm", embed=6, hidden=6, extra={"forget_bias": 0.0})
    assert lm.evaluate(one, tiny_corpus[:5]) != lm.evaluate(zero, tiny_corpus[:5])
    zero.save(tmp_path / "z")
    assert lm.evaluate(lm.RNNLM.load(tmp_path / "z"), tiny_corpus[:5]) == \
        pytest.approx(lm.evaluate(zero, tiny_corpus[:5]))
