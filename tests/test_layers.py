"""course.layers: step layers and sequence layers behind one RNNLM.

A sequence layer (course.layers.CausalAttention) plugs into a model without any change
to hidden_states: it trains, in sentences and in a stream, evaluates and samples. A
model of step layers computes the same whether its batch runs in time order or layer by
layer, and the sampler that reads the whole prefix again draws what the stepwise one does.
"""
import numpy as np
import pytest

from course import evaluation, lm, runtime, sampling, training
from course.cell import Cell
from course.data import Vocab
from course.layers import CausalAttention

dy = runtime.dynet()

SENTENCES = [s.split() for s in ["the cat sat on the mat", "a dog ran", "the dog sat by the cat",
                                  "a cat ran on the rug", "the bird sang", "a dog sat on a mat"] * 12]
VOCAB = Vocab.build(SENTENCES)


def srnn_step(p, x, state):
    (h,) = state
    return (dy.tanh(p["W"] * x + p["U"] * h + p["b"]),)


SRNN = Cell("srnn_step", srnn_step, lambda d_in, d_h: {"W": (d_h, d_in), "U": (d_h, d_h), "b": (d_h,)})


def attention_model(d=12):
    model = lm.RNNLM(VOCAB, "lstm", d, d, 1)
    model.layers.append(CausalAttention(model.pc, d, d))
    return model


def batch_inputs(sentences):
    ids = [[VOCAB.bos] + [VOCAB.index(w) for w in s] for s in sentences]
    T = max(map(len, ids))
    return [[s[t] if t < len(s) else VOCAB.eos for s in ids] for t in range(T)]


def forward(model, inputs, masks):
    """The top states (T x d x B) and every parameter's gradient of their sum; ``masks()``
    gives the dropout masks in the new graph."""
    dy.renew_cg()
    hs = model.hidden_states(inputs, masks=masks())
    dy.sum_batches(dy.sum_elems(dy.esum(hs))).backward()
    values = np.stack([np.reshape(h.npvalue(), (model.config.hidden, -1)) for h in hs])
    grads = [p.grad_as_array() for p in model.pc.parameters_list()]
    grads += [p.grad_as_array() for p in model.pc.lookup_parameters_list()]
    dy.SimpleSGDTrainer(model.pc, 0.0).update()           # clears the gradients, changes nothing
    return values, grads


@pytest.mark.parametrize("cell, residual", [("lstm", "vertical"), ("gru", None), (SRNN, "lateral")])
def test_step_layers_compute_the_same_in_time_order_and_layer_by_layer(cell, residual):
    runtime.init(seed=5)
    model = lm.RNNLM(VOCAB, cell, 10, 10, 3, residual)
    inputs = batch_inputs(SENTENCES[:5])
    dy.renew_cg()
    masks = [None if m is None else np.reshape(m.npvalue(), (10, 5)) for m in model.dropout_masks(5, 0.3)]

    def expressions():
        return [None if m is None else dy.inputTensor(m, batched=True) for m in masks]
    timewise, timewise_grads = forward(model, inputs, expressions)
    assert model.stepwise()
    model.stepwise = lambda: False
    layerwise, layerwise_grads = forward(model, inputs, expressions)
    assert np.array_equal(timewise, layerwise)
    for a, b in zip(timewise_grads, layerwise_grads):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9)


def test_attention_is_the_formula_and_reads_no_later_word():
    runtime.init(seed=2)
    pc = dy.ParameterCollection()
    layer = CausalAttention(pc, 4, 3)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4, 6, 2))                         # d_in x T x batch
    dy.renew_cg()
    _, hs = layer.run(layer.start(2), [dy.inputTensor(X[:, t, :], batched=True) for t in range(6)])
    got = np.stack([h.npvalue() for h in hs], axis=1)      # d x T x batch
    Wq, Wk, Wv = (layer.W[name].as_array() for name in ("Wq", "Wk", "Wv"))
    for b in range(2):
        for t in range(6):
            q, K, V = Wq @ X[:, t, b], Wk @ X[:, :t + 1, b], Wv @ X[:, :t + 1, b]
            a = np.exp(q @ K / np.sqrt(3))
            np.testing.assert_allclose(got[:, t, b], np.tanh(V @ (a / a.sum())), rtol=1e-5, atol=1e-6)
    X2 = X.copy()
    X2[:, 4, :] += 1.0                                     # change position 4 only
    dy.renew_cg()
    _, hs2 = layer.run(layer.start(2), [dy.inputTensor(X2[:, t, :], batched=True) for t in range(6)])
    changed = np.stack([h.npvalue() for h in hs2], axis=1)
    assert np.array_equal(changed[:, :4], got[:, :4])
    assert not np.allclose(changed[:, 4:], got[:, 4:])


def test_a_sequence_layer_trains_evaluates_and_ignores_padding():
    runtime.init(seed=3)
    model = attention_model()
    assert not model.stepwise()
    before = evaluation.evaluate(model, SENTENCES[:12])
    rows = training.train(model, SENTENCES, SENTENCES[:12], epochs=4, batch_size=8, lr=0.01, progress=False, log=None)
    assert rows[-1]["valid_ppl"] < 0.6 * before
    short, longer = SENTENCES[1], SENTENCES[2]                 # "a dog ran", padded beside 6 words
    alone = model.token_logprobs([short], batch_size=1)[0]
    padded = model.token_logprobs([short, longer], batch_size=2)[0]
    np.testing.assert_allclose(alone, padded, rtol=1e-6)


def test_a_sequence_layer_trains_in_a_stream_carries_nothing_and_resumes():
    runtime.init(seed=4)
    model = attention_model()
    asked, saved = iter(range(1000)), []
    options = dict(epochs=1, batch_size=4, bptt=5, stream=True, lr=0.01, progress=False, log=None,
                   on_save=lambda state, improved: saved.append(state))
    training.train(model, SENTENCES, None, stop=lambda: next(asked) == 3, **options)
    state = saved[-1]
    assert state.batch == 3
    assert len(state.carried[0]) == 2 and state.carried[1] == []   # the LSTM's (h, c); attention: nothing
    rows = training.train(model, SENTENCES, SENTENCES[:12], resume=state, **options)
    assert [r["epoch"] for r in rows] == [1] and np.isfinite(rows[0]["valid_ppl"])


def test_sampling_reads_the_prefix_again_where_a_layer_has_no_step():
    runtime.init(seed=6)
    model = lm.RNNLM(VOCAB, "gru", 8, 8, 2)
    training.train(model, SENTENCES, None, epochs=2, batch_size=8, lr=0.01, progress=False, log=None)
    stepwise = sampling.sample(model, 5, seed=9, prompt=["the"], max_length=12)
    model.stepwise = lambda: False
    again = sampling.sample(model, 5, seed=9, prompt=["the"], max_length=12)
    assert [s.tokens for s in again] == [s.tokens for s in stepwise]
    np.testing.assert_allclose([s.logprob for s in again], [s.logprob for s in stepwise], rtol=1e-6)
    drawn = sampling.sample(attention_model(), 4, seed=1, max_length=8)
    assert len(drawn) == 4 and all(len(s.tokens) <= 8 for s in drawn)


def test_a_model_with_a_layer_of_ones_own_is_refused_where_it_cannot_work(tmp_path):
    runtime.init(seed=7)
    with pytest.raises(ValueError, match=r"model\.pc\.save"):
        attention_model().save(tmp_path / "model")
    assert not (tmp_path / "model").exists()
    model = lm.RNNLM(VOCAB, SRNN, 12, 12, 1, "lateral")
    model.layers.append(CausalAttention(model.pc, 12, 12))
    with pytest.raises(ValueError, match="lateral"):
        evaluation.evaluate(model, SENTENCES[:2])


def test_attention_with_heads_and_positions_is_the_formula_and_records_its_weights():
    """Lecture 11's options: n heads, each on its own d / n rows and scaled by sqrt(d / n); learned
    positions added to the inputs (a sentence longer than the table is refused); the weights kept
    on request, a distribution over j <= t at every position; ``normalise`` replaced by a subclass."""
    runtime.init(seed=8)
    pc = dy.ParameterCollection()
    layer = CausalAttention(pc, 4, 6, heads=2, positions=5)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(4, 5, 3))                         # d_in x T x batch
    layer.record = True
    dy.renew_cg()
    _, hs = layer.run(layer.start(3), [dy.inputTensor(X[:, t, :], batched=True) for t in range(5)])
    got = np.stack([h.npvalue() for h in hs], axis=1)
    Wq, Wk, Wv = (layer.W[name].as_array() for name in ("Wq", "Wk", "Wv"))
    Xp = X + layer.P.as_array()[:, :, None]
    for b in range(3):
        for t in range(5):
            parts = []
            for rows in (slice(0, 3), slice(3, 6)):
                q, K, V = Wq[rows] @ Xp[:, t, b], Wk[rows] @ Xp[:, :t + 1, b], Wv[rows] @ Xp[:, :t + 1, b]
                a = np.exp(q @ K / np.sqrt(3))
                parts.append(V @ (a / a.sum()))
                np.testing.assert_allclose(layer.recorded[len(parts) - 1][t, :t + 1, b], a / a.sum(), rtol=1e-4)
            np.testing.assert_allclose(got[:, t, b], np.tanh(np.concatenate(parts)), rtol=1e-4, atol=1e-6)
    assert all(np.all(A[np.triu_indices(5, 1)] == 0) for A in layer.recorded)      # no later word
    with pytest.raises(ValueError, match="longer than the 5 positions"):
        layer.run(layer.start(1), [dy.inputTensor(X[:, 0, 0])] * 6)
    with pytest.raises(ValueError, match="must divide"):
        CausalAttention(pc, 4, 6, heads=4)

    class Halved(CausalAttention):
        @staticmethod
        def normalise(scores):
            return dy.softmax(scores, d=0) * 0.5
    halved = Halved(pc, 4, 6, heads=2, positions=5)
    halved.record = True
    dy.renew_cg()
    halved.run(halved.start(3), [dy.inputTensor(X[:, t, :], batched=True) for t in range(5)])
    np.testing.assert_allclose(halved.recorded[0].sum(axis=1), 0.5, rtol=1e-5)
