"""Count-based baselines: normalisation, hand-computed probabilities, tuning, PTB range."""
import itertools
import math
import random

import numpy as np
import pytest

from course import paths
from course.data import Vocab, read_sentences
from course.ngram import InterpolatedBigram, KneserNey, Unigram, fit

SHARED_PTB = paths.ROOT.parent / "shared" / "data" / "ptb"

TINY = [["a", "b"], ["a", "c"], ["b", "c"]]


def all_models(train):
    return [Unigram(train, alpha=0.5), InterpolatedBigram(train, lam=0.6, alpha=0.2),
            KneserNey(train, order=2, discounts=[0.4, 0.7]),
            KneserNey(train, order=3, discounts=[0.3, 0.8, 1.0])]


def markov_corpus(n_sentences, seed, order=1):
    """Sentences from a fixed random Markov chain over 30 words: each history of
    ``order`` words allows 4 words or the end of the sentence."""
    rng = random.Random(7)                                 # the chain: always the same
    words = [f"w{i}" for i in range(30)]
    histories = itertools.product(["<s>"] + words, repeat=order)
    table = {h: rng.sample(words, 4) + ["</s>"] for h in histories}
    draw = random.Random(seed)                             # the sample: seed
    out = []
    for _ in range(n_sentences):
        sentence, history = [], ("<s>",) * order
        while len(sentence) < 40:
            word = draw.choice(table[history])
            if word == "</s>":
                break
            sentence.append(word)
            history = history[1:] + (word,)
        out.append(sentence)
    return out


@pytest.mark.parametrize("model", all_models(TINY + [["d", "a", "b", "b"]]), ids=repr)
def test_probabilities_over_the_vocabulary_sum_to_one(model):
    for context in [(), ("<s>",), ("a",), ("b",), ("<s>", "a"), ("a", "b"), ("d", "a"),
                    ("never", "seen"), ("c", "<unk>")]:
        p = model.distribution(context)
        assert p.shape == (len(model.words),) and np.all(p > 0)
        assert p.sum() == pytest.approx(1.0, abs=1e-12), context
    assert "<s>" not in model.words and model.words[:2] == ["<unk>", "</s>"]


def test_unigram_perplexity_on_its_training_data_matches_a_hand_computation():
    train = [["a", "b", "a"], ["b", "c"]]
    # predictions: a b a </s> b c </s> -> a 2, b 2, c 1, </s> 2 of 7
    mle = Unigram(train, alpha=0.0)
    by_hand = math.exp(-(2 * math.log(2 / 7) + 2 * math.log(2 / 7) + math.log(1 / 7)
                         + 2 * math.log(2 / 7)) / 7)
    assert mle.perplexity(train) == pytest.approx(by_hand, rel=1e-12)
    # add-one over 5 words (<unk>, </s>, a, b, c): (count + 1) / (7 + 5)
    laplace = Unigram(train, alpha=1.0)
    assert laplace.prob("a") == pytest.approx(3 / 12)
    assert laplace.prob("zebra") == laplace.prob("<unk>") == pytest.approx(1 / 12)
    c_then_end = math.log(2 / 12) + math.log(3 / 12)
    assert laplace.sentence_logprobs([["c"]])[0] == pytest.approx(c_then_end)


def test_kneser_ney_bigram_matches_a_hand_computation():
    model = KneserNey(TINY, order=2, discounts=[0.5, 0.5])
    # continuation counts: a 1 (<s>), b 2 (<s>, a), c 2 (a, b), </s> 2 (b, c); 7 bigram types,
    # 4 words with a continuation; the rest of the mass goes to the uniform over 5 words
    p1_c = (2 - 0.5) / 7 + 0.5 * 4 / 7 / 5
    # after b: "b </s>" once, "b c" once
    assert model.prob("c", ["b"]) == pytest.approx((1 - 0.5) / 2 + 0.5 * 2 / 2 * p1_c)
    assert model.prob("<unk>", ["b"]) == pytest.approx(0.5 * 2 / 2 * (0.5 * 4 / 7 / 5))
    assert model.prob("c", ["never-seen"]) == pytest.approx(model.prob("c", []))


def test_kneser_ney_trigram_keeps_raw_counts_after_sentence_start():
    model = KneserNey(TINY, order=3, discounts=[0.5, 0.5, 0.5])
    p1 = (2 - 0.5) / 7 + 0.5 * 4 / 7 / 5                   # b and </s> alike: continuation 2
    # first word: "<s> a" twice, "<s> b" once (raw counts: nothing precedes <s>)
    p_b_first = (1 - 0.5) / 3 + 0.5 * 2 / 3 * p1
    assert model.prob("b", ["<s>"]) == pytest.approx(p_b_first)
    # "</s>" after "<s> b": trigram unseen (only "<s> b c"); middle order after b uses
    # continuation counts: "a b </s>" and "<s> b c" give 1 each
    p2_eos_after_b = (1 - 0.5) / 2 + 0.5 * 2 / 2 * p1
    p3 = 0 + 0.5 * 1 / 1 * p2_eos_after_b
    assert model.prob("</s>", ["<s>", "b"]) == pytest.approx(p3)
    expected = math.log(p_b_first) + math.log(p3)
    assert model.sentence_logprobs([["b"]])[0] == pytest.approx(expected)
    assert model.sentence_logprobs([["c"], ["b"]])[1] == pytest.approx(expected)


def test_scorer_protocol_and_unknown_words():
    train = markov_corpus(200, seed=1)
    held = markov_corpus(30, seed=2) + [[], ["w1", "zebra", "w2"]]
    for model in all_models(train):
        per_sentence = model.sentence_logprobs(held)
        assert per_sentence.shape == (len(held),) and np.all(per_sentence < 0)
        tokens = model.token_logprobs(held)
        assert len(tokens) == sum(len(s) + 1 for s in held)
        assert per_sentence.sum() == pytest.approx(tokens.sum())
        n = sum(len(s) + 1 for s in held)
        assert model.perplexity(held) == pytest.approx(math.exp(-per_sentence.sum() / n))
        # every prediction, scored in bulk, equals P(word | <s> and the words before it)
        one_by_one = [math.log(model.prob(word, ["<s>"] + s[:i]))
                      for s in held[:5] + held[-2:] for i, word in enumerate(s + ["</s>"])]
        assert model.token_logprobs(held[:5] + held[-2:]) == pytest.approx(one_by_one)
        unknown = model.sentence_logprobs([["w1", "zebra", "w2"], ["w1", "<unk>", "w2"]])
        assert unknown[0] == pytest.approx(unknown[1])
    with pytest.raises(ValueError, match="must not contain"):
        Unigram(train).perplexity([["<s>", "w1"]])
    with pytest.raises(ValueError, match=r"D2 must lie in \(0, 1\]"):
        KneserNey(train, discounts=[0.5, 1.5]).perplexity(held)


def test_min_count_and_a_given_vocabulary():
    train = [["a", "a", "b"], ["a", "rare"]]
    model = Unigram(train, min_count=2, alpha=0.0)
    assert model.words == ["<unk>", "</s>", "a"]          # b and rare became <unk>
    assert model.prob("<unk>") == pytest.approx(2 / 7) and model.prob("b") == model.prob("<unk>")
    vocab = Vocab.build(train, max_size=4)                 # <unk> <s> </s> a
    model = KneserNey(train, vocab=vocab)
    assert model.words == ["<unk>", "</s>", "a"]
    assert model.distribution(["a"]).sum() == pytest.approx(1.0)


def test_smoothed_bigrams_beat_the_unigram_and_the_trigram_wins_on_second_order_text():
    train, held = markov_corpus(1500, seed=3), markov_corpus(200, seed=4)
    uni = fit(train, held, "unigram").perplexity(held)
    inter = fit(train, held, "interpolated").perplexity(held)
    kn2 = fit(train, held, "kn", order=2).perplexity(held)
    assert kn2 < 0.6 * uni and inter < 0.6 * uni
    # a chain with two words of history: the trigram sees it, the bigram cannot
    train, held = markov_corpus(3000, seed=5, order=2), markov_corpus(300, seed=6, order=2)
    assert (fit(train, held, "kn", order=3).perplexity(held)
            < 0.8 * fit(train, held, "kn", order=2).perplexity(held))


def test_tuning_picks_the_best_grid_value():
    train, valid = markov_corpus(300, seed=8), markov_corpus(50, seed=9)
    grid = {"alpha": [0.0, 0.1, 1.0, 10.0, 100.0]}
    model = fit(train, valid, "unigram", grid=grid)
    best = model.perplexity(valid)
    assert model.tuning["valid_perplexity"] == pytest.approx(best)
    for alpha in grid["alpha"]:
        assert best <= Unigram(train, alpha=alpha).perplexity(valid) + 1e-9
    kn = fit(train, valid, "kn", order=2)
    for d2 in (0.3, 0.6, 0.9):
        other = KneserNey(train, order=2, discounts=[kn.params["D1"], d2])
        assert kn.perplexity(valid) <= other.perplexity(valid) + 1e-9


@pytest.mark.skipif(not (SHARED_PTB / "train.txt").is_file(),
                    reason=f"no PTB copy at {SHARED_PTB} (the development machines have one)")
def test_ptb_perplexities_land_in_the_published_range():
    train, valid = (read_sentences(SHARED_PTB / f"{s}.txt") for s in ("train", "valid"))
    unigram = fit(train, valid, "unigram").perplexity(valid)
    bigram = fit(train, valid, "kn", order=2).perplexity(valid)
    trigram = fit(train, valid, "kn", order=3).perplexity(valid)
    # A unigram model of PTB sits in the high hundreds. Kneser-Ney bigram and trigram
    # models are commonly quoted between about 150 and 250, and a 5-gram Kneser-Ney
    # model at about 141 on test (Mikolov et al., 2011), so a trigram cannot go below
    # that. The bands are loose on purpose: they catch a broken model, not a detail.
    assert 550 < unigram < 800
    assert 170 < bigram < 240
    assert 141 < trigram < 185
    assert trigram < bigram < unigram


def test_the_yardstick_uses_the_models_vocabulary_and_is_computed_once(tmp_path, monkeypatch):
    from course import ngram
    monkeypatch.setenv("COURSE_CACHE", str(tmp_path))
    train, valid, test = markov_corpus(300, 1), markov_corpus(50, 2), markov_corpus(50, 3)
    vocab = Vocab.build(train, max_size=15)                     # rarer words become <unk>
    numbers = ngram.yardstick(train, valid, vocab, {"valid": valid, "test": test})
    assert set(numbers) == {"unigram", "Kneser-Ney trigram"}
    expected = fit(train, valid, "kn", 3, vocab=vocab).perplexity(test)
    assert numbers["Kneser-Ney trigram"]["test"] == pytest.approx(expected)
    assert numbers["Kneser-Ney trigram"]["test"] < numbers["unigram"]["test"]
    assert len(list((tmp_path / "yardstick").glob("*.json"))) == 1

    monkeypatch.setattr(ngram, "fit", lambda *a, **k: pytest.fail("computed again"))
    assert ngram.yardstick(train, valid, vocab, {"valid": valid, "test": test}) == numbers
    with pytest.raises(pytest.fail.Exception):                   # other data: computed
        ngram.yardstick(train[1:], valid, vocab, {"valid": valid})
