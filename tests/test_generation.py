"""Generation: `python -m course sample` for every kind of run, `sampling.sample`'s contract,
and the grammar's judgement of generated sentences (`python -m course judge-samples`)."""
import random

import pytest

from tests.test_cli import CELL_FILE, SMALL, course, env, refused, write_text_corpus  # noqa: F401

pytestmark = pytest.mark.xdist_group("generation")   # one worker trains its five runs once (module fixture)

COURSE = ["--corpus", "course", "--max-sentences", "300"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Small finished runs: each builder and a step function from a file on the course
    corpus, and a character model of a text file."""
    root = tmp_path_factory.mktemp("runs")
    environment = {**__import__("os").environ, "COURSE_CACHE": str(root / "cache"), "PYTHONUNBUFFERED": "1"}
    (root / "cells.py").write_text(CELL_FILE)
    write_text_corpus(root / "mine.txt")
    made = {}
    for name, args in {"srnn": ["--cell", "srnn", *COURSE], "lstm": ["--cell", "lstm", *COURSE],
                       "gru": ["--cell", "gru", *COURSE],
                       "file": ["--cell", root / "cells.py:pair_step", *COURSE],
                       "char": ["--corpus", root / "mine.txt", "--unit", "char"]}.items():
        run = course(environment, "train", *args, *SMALL, "--out", root / name)
        assert run.returncode == 0, run.stderr
        made[name] = root / name
    return made


@pytest.mark.parametrize("kind", ["srnn", "lstm", "gru", "file", "char"])
def test_sample_is_the_same_for_a_seed_and_differs_for_another(runs, env, kind):
    first = course(env, "sample", runs[kind], "--n", "4", "--seed", "3", "--max-length", "30")
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert len(lines) == 4 and any(lines)
    assert course(env, "sample", runs[kind], "--n", "4", "--seed", "3", "--max-length", "30").stdout == first.stdout
    assert course(env, "sample", runs[kind], "--n", "4", "--seed", "4", "--max-length", "30").stdout != first.stdout


def test_sample_options_prompt_top_k_and_length(runs, env):
    run = course(env, "sample", runs["lstm"], "--n", "5", "--prompt", "the king", "--top-k", "1",
                 "--max-length", "12")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert len(set(lines)) == 1 and lines[0].startswith("the king ")        # top-k 1: the most probable path
    nucleus = course(env, "sample", runs["lstm"], "--n", "5", "--prompt", "the king", "--top-p", "1e-9",
                     "--max-length", "12")
    assert nucleus.stdout == run.stdout, nucleus.stderr          # a nucleus that the first token fills
    refused(course(env, "sample", runs["lstm"], "--top-p", "1.5"), "--top-p", "<= 1")
    short = course(env, "sample", runs["lstm"], "--n", "20", "--max-length", "3", "--temperature", "1.3")
    assert all(len(line.replace(" [cut at --max-length]", "").split()) <= 3 for line in short.stdout.splitlines())
    assert "[cut at --max-length]" in short.stdout
    chars = course(env, "sample", runs["char"], "--n", "3", "--prompt", "the c", "--max-length", "40")
    assert chars.returncode == 0, chars.stderr
    assert all(line.startswith("the c") for line in chars.stdout.splitlines())
    refused(course(env, "sample", runs["lstm"], "--prompt", "the zyzzyva"), "zyzzyva", "vocabulary")
    refused(course(env, "sample", runs["lstm"], "--temperature", "0"), "--temperature", "give a number > 0")


def test_judge_samples_on_the_command_line(runs, env):
    run = course(env, "judge-samples", runs["gru"], "--n", "200", "--temperature", "0.7")
    assert run.returncode == 0, run.stderr
    for words in ("200 samples at temperature 0.7", "derivable by the grammar:", "the grammar's own samples",
                  "agreement kept (distance >= 6)", "KL(model || grammar)"):
        assert words in run.stdout, (words, run.stdout)
    refused(course(env, "judge-samples", runs["char"]), "only models of the course corpus in words")


# ---------------------------------------------------------------- in the API

def test_lm_sample_contract(tiny_corpus):
    from course import lm, sampling
    from course.data import Vocab
    model = lm.RNNLM(Vocab.build(tiny_corpus), "lstm", 8, 8)
    greedy = sampling.sample(model, n=3, top_k=1, max_length=5)
    assert len({tuple(s.tokens) for s in greedy}) == 1 and all(s.logprob == 0.0 for s in greedy)
    drawn = sampling.sample(model, n=50, seed=2, max_length=6, prompt=["the"])
    assert [s.tokens for s in drawn] == [s.tokens for s in sampling.sample(model, n=50, seed=2, max_length=6, prompt=["the"])]
    assert all(s.tokens[0] == "the" and len(s.tokens) <= 6 and s.logprob < 0 for s in drawn)
    assert all("<s>" not in s.tokens for s in drawn)
    assert any(not s.finished for s in drawn) and any(s.finished for s in drawn)
    # the recorded log-probability is the model's own at temperature 1 (once <s>, never drawn, has none)
    bias = model.b_s.as_array()
    bias[model.vocab.bos] = -1e4
    model.b_s.set_value(bias)
    drawn = sampling.sample(model, n=50, seed=2, max_length=6, prompt=["the"])
    done = [s for s in drawn if s.finished]
    scored = model.token_logprobs([s.tokens for s in done])
    assert [sum(lp[1:]) for lp in scored] == pytest.approx([s.logprob for s in done], abs=1e-4)
    with pytest.raises(ValueError, match="temperature must be a positive number"):
        sampling.sample(model, temperature=0)


@pytest.mark.parametrize("cell", ["lstm", "gru", "gru, reading the prefix again"])
def test_sample_starts_new_graphs_without_changing_a_draw(tiny_corpus, monkeypatch, cell):
    """sample() rebuilds its graph from the state's numbers every SAMPLE_GRAPH_STEPS steps (so
    memory does not grow with the sentence), for the sentences still going only (no softmax
    for one that has ended): the sentences and log-probabilities stay the same."""
    from course import lm, sampling
    from course.data import Vocab
    model = lm.RNNLM(Vocab.build(tiny_corpus), cell.split(",")[0], 8, 8, 2)
    if "prefix" in cell:
        model.stepwise = lambda: False
    tempered = sampling._tempered
    drawn, widths = {}, {}
    for steps in (1, 3, 10_000):
        monkeypatch.setattr(sampling, "SAMPLE_GRAPH_STEPS", steps)
        widths[steps] = []
        monkeypatch.setattr(sampling, "_tempered", lambda scores, *rest: widths[steps].append(scores.shape[1])
                            or tempered(scores, *rest))
        drawn[steps] = [(s.tokens, s.logprob) for s in sampling.sample(model, n=40, seed=3, max_length=12, temperature=1.5)]
    assert [t for t, _ in drawn[1]] == [t for t, _ in drawn[3]] == [t for t, _ in drawn[10_000]]
    for steps in (1, 3):
        assert [lp for _, lp in drawn[steps]] == pytest.approx([lp for _, lp in drawn[10_000]], abs=1e-9)
    assert max(len(tokens) for tokens, _ in drawn[1]) > 3       # long enough to cross a new graph
    assert set(widths[10_000]) == {40}                                  # one graph: all 40 to the end
    for steps in (1, 3):                                                # the ended ones dropped
        assert widths[steps] == sorted(widths[steps], reverse=True) and widths[steps][-1] < 40


def test_the_grammar_judges_its_own_sentences_perfect_and_finds_lost_agreement():
    from course import judge, sampling
    from course.grammar import Grammar
    grammar = Grammar()
    rng = random.Random(5)
    own = [grammar.sample(rng) for _ in range(300)]
    samples = [sampling.Sample(list(d.words), d.logprob, True) for d in own]
    v = judge.judge(grammar, samples, reference=300, bootstrap=200)
    assert v["derivable_share"] == 1.0 and v["kl"][0] == pytest.approx(0.0, abs=1e-9)
    assert v["agreement"]["all"]["lost"] == 0 and v["agreement"]["all"]["kept"] > 300
    by_task = [v["agreement"][task]["kept"] for task in ("number", "gender")]
    assert min(by_task) > 0 and sum(by_task) == v["agreement"]["all"]["kept"]     # split by task, nothing lost
    assert sum(v["agreement"][f"long {task}"]["kept"] for task in ("number", "gender")) == v["agreement"]["long"]["kept"]
    # one verb in the wrong number: no longer derivable, and counted as a lost agreement
    d = next(d for d in own if any(a.task == "number" and a.distance >= 6 for a in grammar.agreements(d)))
    a = next(a for a in grammar.agreements(d) if a.task == "number" and a.distance >= 6)
    wrong = list(d.words)
    wrong[a.target_index] = a.wrong
    v = judge.judge(grammar, [sampling.Sample(wrong, -1.0, True)], reference=10, bootstrap=10)
    assert v["derivable"] == 0 and v["agreement"]["long"]["lost"] == 1
    assert v["agreement"]["number"]["lost"] == 1 and v["agreement"]["gender"]["lost"] == 0
    assert v["agreement"]["long number"]["lost"] == 1 and v["agreement"]["long gender"]["lost"] == 0
    assert "agreement kept (number, subject and verb)" in "\n".join(judge.report(v))
    assert v["examples"]["lost"][0]["right"] == a.right and v["examples"]["lost"][0]["target"] == a.target_index
