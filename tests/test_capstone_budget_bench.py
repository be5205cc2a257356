"""bench/capstone_budget.py: a recipe trains through course.lm.train until its CPU budget is spent."""
import time

import capstone_budget  # bench/capstone_budget.py (pytest puts bench/ on the path)

from course import lm, runtime
from course.data import Vocab


def test_a_recipe_trains_through_the_engine_until_its_budget_and_anneals_by_resuming(tiny_corpus, monkeypatch):
    rates = []
    train = lm.train
    monkeypatch.setattr(lm, "train", lambda *a, **k: rates.append(k["resume"].lr) or train(*a, **k))
    runtime.init(seed=1)
    model = lm.RNNLM(Vocab.build(tiny_corpus), "srnn", embed=4, hidden=4)
    start = time.process_time()
    tokens = capstone_budget.train_for(model, tiny_corpus, 0.5, 8, 0.01, 0.0, anneal=(0.2, 0.25))
    assert time.process_time() - start >= 0.5
    assert rates == [0.01, 0.0025]             # the last fifth continues at a quarter of the rate
    assert tokens > 2 * sum(len(s) + 1 for s in tiny_corpus)    # epochs follow one another until the clock stops
