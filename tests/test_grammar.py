"""The course grammar: exact probabilities, unambiguity, determinism, shipped files."""
import gzip
import json
import math
import random
import re
import shutil

import numpy as np
import pytest

from course import grammar as gm
from course import grammar_lexicon, grammar_rules, paths
from autograder.make_heldout import HELDOUT as HIDDEN, NAME
from course.corpus_files import MAX_PLAIN_BYTES, write_corpus, write_file
from course.files import read_text
from course.grammar import Grammar, sample_split, tiny_grammar

COURSE = paths.COURSE_DATA


@pytest.fixture(scope="module")
def g():
    return Grammar()


def lines(path):
    return read_text(path).splitlines()


_TABLES = {}


def rule_logprob_sum(grammar, derivation):
    """Sum of rule log-probabilities, looked up afresh in the rule table."""
    if id(grammar) not in _TABLES:
        _TABLES[id(grammar)] = {(r.lhs, r.rhs): r.prob for rules in grammar.rules.values() for r in rules}
    table = _TABLES[id(grammar)]
    return math.fsum(math.log(table[(r.lhs, r.rhs)]) for r in derivation.rules)


# -- determinism --------------------------------------------------------------

def test_same_seed_same_corpus_other_seed_other_corpus(g):
    a = sample_split(g, 7, "valid", 3000)
    b = sample_split(g, 7, "valid", 3000)
    c = sample_split(g, 8, "valid", 3000)
    assert [d.words for d in a] == [d.words for d in b]
    assert [d.logprob for d in a] == [d.logprob for d in b]
    assert [d.words for d in a] != [d.words for d in c]
    assert sum(len(d.words) + 1 for d in a) >= 3000


def test_write_corpus_is_byte_for_byte_deterministic(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    for out in (first, second):
        write_corpus(out / "course", seed=3, train_tokens=4000, pairs_per_bucket=2)
    names = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert [str(n) for n in names] == [
        "course/agreement.tsv", "course/stats.json", "course/test.logprob", "course/test.txt",
        "course/train.logprob", "course/train.txt", "course/valid.logprob", "course/valid.txt"]
    for name in names:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


def test_large_files_are_gzipped_deterministically(tmp_path):
    text = "".join(f"line {i} of a long file\n" for i in range(120_000))  # > 2 MiB
    a = write_file(tmp_path / "a.txt", text)
    b = write_file(tmp_path / "b.txt", text)
    assert a.name == "a.txt.gz" and not (tmp_path / "a.txt").exists()
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes()[4:8] == b"\0\0\0\0"  # mtime 0 in the gzip header
    assert gzip.decompress(a.read_bytes()).decode() == text
    small = write_file(tmp_path / "a.txt", "short\n")  # replaces the .gz
    assert small.name == "a.txt" and not a.exists()


# -- exact probabilities ------------------------------------------------------------

def test_logprob_is_the_sum_of_the_rule_logprobs_and_parsing_recovers_the_derivation(g):
    rng = random.Random(11)
    for _ in range(200):
        d = g.sample(rng)
        assert d.logprob == pytest.approx(rule_logprob_sum(g, d), abs=1e-9)
        parsed = g.parse(d.words)
        assert parsed.rules == d.rules  # the one derivation is the sampled one
        assert g.logprob(d.words) == d.logprob


def test_stored_logprobs_equal_the_rule_sums_of_the_parsed_sentences(g):
    for split in ("valid", "test"):
        sentences = [s.split() for s in lines(COURSE / f"{split}.txt")][:400]
        stored = [float(x) for x in lines(COURSE / f"{split}.logprob")][:400]
        for words, value in zip(sentences, stored):
            derivation = g.parse(words)
            assert derivation is not None, " ".join(words)
            assert rule_logprob_sum(g, derivation) == pytest.approx(value, abs=1e-6)


@pytest.mark.parametrize("tiny", [
    lambda: tiny_grammar(),  # coordination, adjuncts, time adverbs, names, pronouns
    lambda: tiny_grammar(1, ("judge", "be"), ("hum_m", "hum_f"), coordination=0, time=0, adverb=0,
                         adjunct=0, adjective=0, name=0, pronoun=0),  # PPs and relative clauses
], ids=["flat", "nested"])
def test_tiny_grammar_probabilities_sum_to_one_and_every_string_is_distinct(tiny):
    small = tiny()
    derivations = small.derivations(limit=60_000)
    assert len(derivations) > 1000
    assert len({d.words for d in derivations}) == len(derivations)  # unambiguous
    probs = [math.exp(d.logprob) for d in derivations]
    assert math.fsum(probs) == pytest.approx(1.0, abs=1e-9)
    # the closed-form entropy and length agree with the enumeration
    exact = small.entropy()
    assert exact["sentence_entropy"] == pytest.approx(
        -math.fsum(p * d.logprob for p, d in zip(probs, derivations)), rel=1e-9)
    assert exact["expected_words"] == pytest.approx(
        math.fsum(p * len(d.words) for p, d in zip(probs, derivations)), rel=1e-9)
    for d in derivations[::97]:
        assert small.parse(d.words).rules == d.rules


def test_sampled_cross_entropy_matches_the_exact_rate(g):
    rng = random.Random(5)
    sample = [g.sample(rng) for _ in range(3000)]
    nll = np.array([-d.logprob for d in sample])
    tokens = np.array([len(d.words) + 1 for d in sample], dtype=float)
    estimate = nll.sum() / tokens.sum()
    # standard error of a ratio estimator (delta method)
    residual = nll - estimate * tokens
    stderr = math.sqrt(np.var(residual, ddof=1) / len(sample)) / tokens.mean()
    assert abs(estimate - g.entropy()["token_entropy"]) < 4 * stderr


def test_sentences_outside_the_language_get_minus_infinity(g):
    good = "the king eats an apple with the fork".split()
    assert math.isfinite(g.logprob(good))
    for bad in ("the king eat an apple with the fork",    # agreement
                "the king eats a apple with the fork",    # spelling of the article
                "the king eats an apple with the ball",   # selectional preference of "with"
                "the king eats an apple with",            # incomplete
                "the king eats an apple zzz",             # unknown word
                ""):
        assert g.logprob(bad.split()) == -math.inf, bad
    assert np.array_equal(g.sentence_logprobs([good, "the king".split()]),
                          np.array([g.logprob(good), -math.inf]))


def test_selectional_preferences_of_eat_and_with(g):
    assert math.isfinite(g.logprob("he eats the salad with a fork".split()))  # the tutorial's example
    for company in ("with the fork", "with a spoon", "with the queen"):
        assert math.isfinite(g.logprob(f"she ate the cake {company}".split())), company
    for nonsense in ("with a backpack", "with the hammer", "with the cake"):
        assert g.logprob(f"she ate the cake {nonsense}".split()) == -math.inf, nonsense
    assert g.logprob("the cake ate the apple".split()) == -math.inf  # cakes do not eat


def test_two_derivations_raise_ambiguity_error():
    small = tiny_grammar()
    rule = small.rules["S"][0]
    small.rules["S"].append(grammar_rules.Rule("S", ("X",), 0.0 + 1e-3))
    small.rules["X"] = [grammar_rules.Rule("X", rule.rhs, 1.0)]
    small._build_parser_tables()
    # any sentence whose derivation starts with `rule` now has a second derivation via X
    rng = random.Random(2)
    for _ in range(200):
        d = small.sample(rng)
        if d.rules[0] is rule:
            with pytest.raises(gm.AmbiguityError):
                small.parse(d.words)
            return
    pytest.fail("no sentence started with the duplicated rule")


def test_a_word_in_two_categories_is_rejected():
    nouns = dict(grammar_lexicon.NOUNS, tool=grammar_lexicon.NOUNS["tool"] + " saw")  # "saw" is also the past of "see"
    with pytest.raises(ValueError, match="saw"):
        grammar_lexicon.Lexicon(nouns=nouns)


def test_morphology():
    assert [grammar_lexicon.plural(w) for w in ("box", "cherry", "key", "cake", "bush")] == \
        ["boxes", "cherries", "keys", "cakes", "bushes"]
    assert grammar_lexicon.verb_forms("cry") == {"base": "cry", "3sg": "cries", "past": "cried"}
    assert grammar_lexicon.verb_forms("eat/ate") == {"base": "eat", "3sg": "eats", "past": "ate"}
    assert gm.spell("he ate a apple and a pear".split()) == "he ate an apple and a pear".split()
    assert gm.unspell("he ate a apple".split()) is None


# -- the shipped files --------------------------------------------------------------

def test_make_corpus_regenerates_every_shipped_file_byte_for_byte(tmp_path):
    """`python -m course data make-corpus` with its defaults, into a scratch folder."""
    write_corpus(out_dir=tmp_path / "course")
    names = sorted(p.name for p in COURSE.iterdir() if p.is_file())
    assert names == sorted(p.name for p in (tmp_path / "course").iterdir())
    for name in names:
        assert (COURSE / name).read_bytes() == (tmp_path / "course" / name).read_bytes(), name


def test_make_heldout_regenerates_the_held_out_split_from_its_seed(tmp_path):
    from autograder import make_heldout
    shutil.copyfile(HIDDEN / "seed", tmp_path / "seed")
    make_heldout.write(tmp_path)
    for name in ("course_hidden.txt", "course_hidden.logprob", "course_hidden.stats.json"):
        assert (HIDDEN / name).read_bytes() == (tmp_path / name).read_bytes(), name


def test_the_released_sampler_cannot_draw_the_held_out_sentences():
    """The release holds course/grammar.py: its sampler, with the seeds and stream
    names anyone would try, never draws the held-out split's sentences."""
    held_out = lines(HIDDEN / "course_hidden.txt")
    first, everything = held_out[:5], set(held_out)
    grammar = gm.Grammar()
    streams = ["hidden", NAME, "heldout", "held_out", "capstone", "test", "valid", "train", ""]
    for seed in [*range(0, 101), 2024, 2025, 2026, 20261125, "hidden", NAME, ""]:
        for stream in streams:
            drawn = [" ".join(d.words) for d in gm.sample_split(grammar, seed, stream, 10 ** 9, sentences=5)]
            assert drawn != first, (seed, stream)
            assert len(set(drawn) & everything) < 3, (seed, stream)    # short sentences recur by chance


def test_stats_json_describes_the_shipped_files(g):
    stats = json.loads((COURSE / "stats.json").read_text())
    for split in ("train", "valid", "test"):
        s = stats["splits"][split]
        sentences = lines(COURSE / f"{split}.txt")
        logprobs = [float(x) for x in lines(COURSE / f"{split}.logprob")]
        tokens = sum(len(x.split()) + 1 for x in sentences)
        assert (s["sentences"], s["tokens"]) == (len(sentences), tokens) == (len(logprobs), tokens)
        floor = math.exp(-math.fsum(logprobs) / tokens)
        assert s["floor_perplexity"] == pytest.approx(floor, abs=1e-3)
        assert gm.floor_perplexity(split) == pytest.approx(floor, rel=1e-12)
    exact = g.entropy()
    assert stats["grammar"]["floor_perplexity"] == pytest.approx(exact["perplexity"], abs=1e-3)
    assert stats["grammar"]["vocabulary"] == len(g.vocabulary)


def test_corpus_has_the_promised_shape():
    stats = json.loads((COURSE / "stats.json").read_text())
    train = stats["splits"]["train"]
    assert 1000 <= train["types"] <= 5000
    assert 15 <= train["mean_length"] + 1 <= 25 and train["max_length"] >= 50
    assert train["sentences_50_plus"] > 50
    assert -1.4 < stats["train_zipf_slope"] < -0.8
    for split in ("valid", "test"):
        assert stats["splits"][split]["words_unseen_in_train"] == 0
    for path in list(COURSE.iterdir()) + list(HIDDEN.iterdir()):
        assert path.stat().st_size <= MAX_PLAIN_BYTES, path.name


def test_readme_reports_the_floor_perplexities():
    stats = json.loads((COURSE / "stats.json").read_text())
    readme = (paths.DATA / "README.md").read_text()
    for split in ("train", "valid", "test"):
        value = f"{stats['splits'][split]['floor_perplexity']:.2f}"
        assert re.search(rf"\b{split}\b.*{re.escape(value)}", readme), f"{split} floor {value} not in README"
    assert f"{stats['grammar']['floor_perplexity']:.2f}" in readme
