"""course.budget: training through course.training.train until a budget of CPU time is spent
(lecture 10 and bench/capstone_budget.py)."""
import time

from course import budget, evaluation, lm, runtime, training
from course.data import Vocab


def test_training_stops_on_the_clock_and_anneals_by_resuming(tiny_corpus, monkeypatch):
    rates = []
    train = training.train
    monkeypatch.setattr(training, "train", lambda *a, **k: rates.append(k["resume"].lr) or train(*a, **k))
    runtime.init(seed=1)
    model = lm.RNNLM(Vocab.build(tiny_corpus), "srnn", embed=4, hidden=4)
    start = time.process_time()
    spent = budget.train_for(model, tiny_corpus, 0.5, batch_size=8, lr=0.01, anneal=(0.2, 0.25))
    assert time.process_time() - start >= 0.5
    assert rates == [0.01, 0.0025]             # the last fifth continues at a quarter of the rate
    assert spent.tokens > 2 * sum(len(s) + 1 for s in tiny_corpus)   # epochs follow one another
    assert spent.curve == []


def test_the_curve_is_scored_along_the_way_and_its_time_is_not_counted(tiny_corpus):
    runtime.init(seed=1)
    model = lm.RNNLM(Vocab.build(tiny_corpus), "srnn", embed=4, hidden=4)
    held_out = tiny_corpus * 20
    before = time.process_time()
    evaluation.evaluate(model, held_out)
    one_scoring = time.process_time() - before
    start = time.process_time()
    spent = budget.train_for(model, tiny_corpus, 0.6, batch_size=8, lr=0.01, evaluate_on=held_out,
                             every=0.2)
    seconds = [t for t, _ in spent.curve]
    assert seconds[0] == 0.0 or seconds[0] < 0.05          # scored before training
    assert len(spent.curve) >= 4 and seconds == sorted(seconds) and 0.6 <= seconds[-1] < 0.7
    assert spent.curve[-1][1] < spent.curve[0][1]           # it learned
    # the scorings took time of their own, which the budget did not count
    assert time.process_time() - start >= seconds[-1] + 0.5 * one_scoring * len(spent.curve)
