"""Minimal pairs for long-distance agreement, and the accuracy that uses them."""
import json
import math

import numpy as np
import pytest

from course import agreement as ag
from course import ngram, paths
from course.data import read_sentences
from course.grammar import Grammar


@pytest.fixture(scope="module")
def g():
    return Grammar()


@pytest.fixture(scope="module")
def pairs():
    return ag.load_pairs()


def subset(pairs, per_bucket):
    """The first `per_bucket` pairs of every (task, distance bucket)."""
    out, seen = [], {}
    for p in pairs:
        key = (p.task, p.bucket)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] <= per_bucket:
            out.append(p)
    return out


class Uniform:
    """Every word equally likely: scores depend on sentence length only."""

    def sentence_logprobs(self, sentences):
        return np.array([-(len(s) + 1) * math.log(1000.0) for s in sentences])


class PrefersOneClass:
    """Prefers the singular verb form and himself wherever they occur: the
    choice a model makes from word frequencies alone, with no memory."""

    def __init__(self, grammar):
        self.preferred = {f["3sg"] for forms in grammar.lexicon.verbs.values() for f in forms}
        self.preferred |= {"is", "was", "himself"}

    def sentence_logprobs(self, sentences):
        return np.array([-30.0 + sum(w in self.preferred for w in s) for s in sentences])


class Table:
    def __init__(self, scores):
        self.scores = scores

    def sentence_logprobs(self, sentences):
        return np.array([self.scores[" ".join(s)] for s in sentences], dtype=float)


def test_shipped_pairs_fill_every_bucket(pairs):
    stats = json.loads((paths.COURSE_DATA / "stats.json").read_text())
    per_bucket = stats["settings"]["pairs_per_bucket"]
    counts = ag.bucket_counts(pairs)
    assert counts == stats["agreement"]
    for task in ag.TASKS:
        assert counts[task]["distance"] == {name: per_bucket for name, _, _ in ag.DISTANCE_BUCKETS}
        assert sum(counts[task]["attractors"].values()) == 5 * per_bucket
        assert counts[task]["attractors"]["3+"] > 0  # attractors really occur


def test_every_bucket_is_balanced_between_the_two_classes(pairs):
    """Half singular / half plural subjects (number), half himself / herself
    (gender), listed alternately so that every even prefix is balanced too."""
    per_bucket = json.loads((paths.COURSE_DATA / "stats.json").read_text())["settings"]["pairs_per_bucket"]
    for task in ag.TASKS:
        first, second = ag.CLASSES[task]
        for name, _, _ in ag.DISTANCE_BUCKETS:
            classes = [p.cue_class for p in pairs if (p.task, p.bucket) == (task, name)]
            assert classes == [first, second] * (per_bucket // 2), (task, name)
        assert ag.bucket_counts(pairs)[task]["distance_classes"] == {
            name: {first: per_bucket // 2, second: per_bucket // 2} for name, _, _ in ag.DISTANCE_BUCKETS}


def test_the_class_is_the_cue_words_number_or_gender(g, pairs):
    for p in pairs:
        feature = g.number_of if p.task == "number" else g.gender_of
        assert p.cue_class == feature[p.words[p.cue_index]], p
    assert [ag.pair_class("number", r, w) for r, w in (("is", "are"), ("were", "was"), ("cries", "cry"),
                                                        ("watch", "watches"))] == ["sg", "pl", "sg", "pl"]
    assert ag.pair_class("gender", "herself", "himself") == "f"
    for task, right, wrong in (("number", "eats", "ate"), ("gender", "himself", "themselves"),
                               ("colour", "is", "are")):
        with pytest.raises(ValueError, match="cannot tell the class"):
            ag.pair_class(task, right, wrong)


def test_pairs_differ_in_exactly_the_target_token(pairs):
    for p in pairs:
        right, wrong = p.right_sentence, p.wrong_sentence
        differ = [i for i, (a, b) in enumerate(zip(right, wrong)) if a != b]
        assert len(right) == len(wrong) and differ == [p.target_index]
        assert p.distance == p.target_index - p.cue_index >= 1
        if p.task == "gender":
            assert {p.right, p.wrong} == {"himself", "herself"}
        else:
            assert p.words[p.cue_index] != p.right


def test_pairs_match_the_agreements_the_grammar_finds(g, pairs):
    for p in subset(pairs, 20):
        found = g.agreements(g.parse(p.words))
        assert any((a.task, a.cue_index, a.target_index, a.right, a.wrong, a.attractors) ==
                   (p.task, p.cue_index, p.target_index, p.right, p.wrong, p.attractors) for a in found)


def test_the_grammar_prefers_the_right_form(g, pairs):
    chosen = subset(pairs, 40)
    right = g.sentence_logprobs([p.right_sentence for p in chosen])
    wrong = g.sentence_logprobs([p.wrong_sentence for p in chosen])
    assert np.isfinite(right).all()
    assert (right > wrong).all()


def test_oracle_scores_one_and_uniform_scores_chance_in_every_bucket(g, pairs):
    chosen = subset(pairs, 25)
    oracle = ag.agreement_accuracy(g, chosen)
    uniform = ag.agreement_accuracy(Uniform(), chosen)
    for task in ag.TASKS:
        assert set(oracle[task]["distance"]) == {name for name, _, _ in ag.DISTANCE_BUCKETS}
        for bucket in list(oracle[task]["distance"].values()) + list(oracle[task]["attractors"].values()):
            assert bucket["accuracy"] == 1.0 and bucket["ties"] == 0
        first, second = ag.CLASSES[task]
        for bucket in uniform[task]["distance"].values():
            assert bucket == {"accuracy": 0.5, "correct": 0, "ties": 25, "count": 25,  # ties count half
                              "balanced_accuracy": 0.5, "classes": {first: {"accuracy": 0.5, "count": 13},
                                                                    second: {"accuracy": 0.5, "count": 12}}}
        assert oracle[task]["all"]["count"] == 5 * 25


def test_accuracy_counts_wins_ties_and_losses():
    def pair(task, distance, attractors, words, target, wrong):
        words = tuple(words.split())
        return ag.Pair(task=task, cue_index=target - distance, target_index=target, right=words[target], wrong=wrong,
                       attractors=attractors, words=words)
    items = [pair("number", 2, 0, "the dog barks", 2, "bark"),
             pair("number", 2, 0, "the dogs bark", 2, "barks"),
             pair("number", 7, 3, "a b c d e f g dog barks", 8, "bark"),
             pair("gender", 22, 1, " ".join(["x"] * 22) + " she praised herself", 24, "himself")]
    scores = {"the dog barks": -1, "the dog bark": -2,            # right
              "the dogs bark": -3, "the dogs barks": -3,          # tie
              "a b c d e f g dog barks": -9, "a b c d e f g dog bark": -5}  # wrong
    scores[" ".join(items[3].right_sentence)] = -4
    scores[" ".join(items[3].wrong_sentence)] = -math.inf
    r = ag.agreement_accuracy(Table(scores), items)
    assert r["number"]["distance"]["1-5"] == {
        "accuracy": 0.75, "correct": 1, "ties": 1, "count": 2, "balanced_accuracy": 0.75,
        "classes": {"sg": {"accuracy": 1.0, "count": 1}, "pl": {"accuracy": 0.5, "count": 1}}}
    assert r["number"]["distance"]["6-10"]["accuracy"] == 0.0
    assert r["number"]["distance"]["6-10"]["balanced_accuracy"] == 0.0  # one class: the plain accuracy
    assert set(r["number"]["distance"]) == {"1-5", "6-10"}  # empty buckets are left out
    assert r["number"]["attractors"]["3+"]["count"] == 1
    assert r["number"]["all"]["accuracy"] == pytest.approx(0.5)
    assert r["gender"]["distance"]["21+"]["accuracy"] == 1.0


def test_a_model_without_memory_scores_half_whatever_the_class_frequencies(g, pairs):
    """Always preferring the singular form is right on every singular pair and
    wrong on every plural one: class-balanced accuracy 0.5 in every bucket,
    even the attractor buckets, whose classes are not balanced."""
    r = ag.agreement_accuracy(PrefersOneClass(g), subset(pairs, 100))
    for task in ag.TASKS:
        first, second = ag.CLASSES[task]
        buckets = [r[task]["all"], *r[task]["distance"].values(), *r[task]["attractors"].values()]
        for bucket in buckets:
            assert bucket["classes"][first]["accuracy"] == 1.0 and bucket["classes"][second]["accuracy"] == 0.0
            assert bucket["balanced_accuracy"] == 0.5
        for bucket in [r[task]["all"], *r[task]["distance"].values()]:  # balanced: plain accuracy too
            assert bucket["accuracy"] == 0.5
    # most pairs with 3+ attractors have a plural subject: there the plain accuracy is far from chance
    assert r["number"]["attractors"]["3+"]["accuracy"] < 0.4


def test_a_unigram_model_scores_chance_on_agreement(pairs):
    """A unigram model sees no context; on balanced pairs it is at chance.
    Before the buckets were balanced (58-61% singular subjects) it scored
    0.55-0.61 on number agreement."""
    train = read_sentences(paths.COURSE_DATA / "train.txt.gz")[:10_000]
    valid = read_sentences(paths.COURSE_DATA / "valid.txt")[:1000]
    unigram = ngram.fit(train, valid, "unigram", 1)
    chosen = subset(pairs, 200)
    r = ag.agreement_accuracy(unigram, chosen)
    n = r["number"]["all"]["count"]
    assert n == 1000
    # a fair coin's accuracy on n pairs has standard error 0.5 / sqrt(n); allow 3 of them
    assert abs(r["number"]["all"]["accuracy"] - 0.5) < 3 * 0.5 / math.sqrt(n)
    assert abs(r["number"]["all"]["balanced_accuracy"] - 0.5) < 3 * 0.5 / math.sqrt(n)
    # the reflexive is the only word that differs: one fixed preference, exactly half right
    for bucket in r["gender"]["distance"].values():
        assert bucket["accuracy"] == 0.5 and bucket["ties"] == 0


def test_accuracy_rejects_broken_scores(pairs):
    class Broken:
        def __init__(self, out):
            self.out = out

        def sentence_logprobs(self, sentences):
            return self.out(len(sentences))
    few = pairs[:3]
    with pytest.raises(ValueError, match="NaN"):
        ag.agreement_accuracy(Broken(lambda n: np.full(n, np.nan)), few)
    with pytest.raises(ValueError, match="one log-probability per sentence"):
        ag.agreement_accuracy(Broken(lambda n: np.zeros(n + 1)), few)
    with pytest.raises(ValueError, match="no pairs"):
        ag.agreement_accuracy(Uniform(), [])


def test_sampling_pairs_is_deterministic_and_a_prefix_of_the_shipped_set(g, pairs):
    stats = json.loads((paths.COURSE_DATA / "stats.json").read_text())
    small = ag.sample_pairs(g, stats["settings"]["seed"], per_bucket=8)
    assert small == ag.sample_pairs(g, stats["settings"]["seed"], per_bucket=8)
    assert small == subset(pairs, 8)  # the shipped file's first pairs, regenerated
    assert small != ag.sample_pairs(g, stats["settings"]["seed"] + 1, per_bucket=8)
    odd = ag.sample_pairs(g, stats["settings"]["seed"], per_bucket=5)  # 3 of the first class, 2 of the second
    assert odd == subset(pairs, 5)
    counts = ag.bucket_counts(odd)
    for task in ag.TASKS:
        first, second = ag.CLASSES[task]
        assert counts[task]["distance_classes"] == {name: {first: 3, second: 2} for name, _, _ in ag.DISTANCE_BUCKETS}


def test_write_and_load_round_trip(tmp_path, pairs):
    path = tmp_path / "pairs.tsv"
    ag.write_pairs(pairs[:50], path)
    assert ag.load_pairs(path) == pairs[:50]
    assert path.read_text().splitlines()[0].split("\t") == list(ag.COLUMNS)
    path.write_text("bad header\n")
    with pytest.raises(ValueError, match="header"):
        ag.load_pairs(path)
    with pytest.raises(FileNotFoundError, match="make-corpus"):
        ag.load_pairs(tmp_path / "missing.tsv")


def test_buckets():
    assert [ag.distance_bucket(d) for d in (1, 5, 6, 10, 11, 16, 20, 21, 60)] == \
        ["1-5", "1-5", "6-10", "6-10", "11-15", "16-20", "16-20", "21+", "21+"]
    assert [ag.attractor_bucket(n) for n in (0, 1, 2, 3, 7)] == ["0", "1", "2", "3+", "3+"]
    with pytest.raises(ValueError):
        ag.distance_bucket(0)


def test_plot_agreement_draws_accuracy_against_distance(g, pairs):
    import matplotlib
    matplotlib.use("Agg")
    chosen = subset(pairs, 5)
    ax = ag.plot_agreement(ag.agreement_accuracy(g, chosen), label="grammar")
    ax = ag.plot_agreement(ag.agreement_accuracy(Uniform(), chosen), ax=ax, label="uniform")
    lines = [line for line in ax.get_lines() if line.get_label().startswith(("grammar", "uniform"))]
    assert len(lines) == 4  # two models x two tasks
    assert [t.get_text() for t in ax.get_xticklabels()] == [n for n, _, _ in ag.DISTANCE_BUCKETS]
    low, high = ax.get_ylim()
    assert low == 0 and 1 <= high <= 1.05
    grammar_number = next(line for line in lines if line.get_label() == "grammar: number")
    assert list(grammar_number.get_ydata()) == [1.0] * 5
    import matplotlib.pyplot as plt
    plt.close(ax.figure)
