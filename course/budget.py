"""Training for a budget of CPU time, as the capstone (chapter 10) asks.

:func:`train_for` trains through the course's one loop, :func:`course.training.train`, whose
``stop`` hook watches the clock: ``time.process_time()``, this process's own CPU time, so
a busy machine slows a run down but does not shrink its budget. Lecture 10 and
``bench/capstone_budget.py`` both train with it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from course import evaluation, lm, sources, training
from course.settings import Settings

EPOCHS = 10_000      # more than any budget here allows: the clock ends training


@dataclass
class Spent:
    """What a budget bought: ``tokens`` predicted in training, and the ``curve`` of
    (CPU seconds of training so far, held-out perplexity) when one was asked for."""
    tokens: int
    curve: list = field(default_factory=list)


def train_for(model: lm.RNNLM, sentences, seconds: float, settings: Settings | None = None, *,
              anneal: tuple | None = None, evaluate_on=None, every: float | None = None, **changes) -> Spent:
    """Train ``model`` on ``sentences`` until ``seconds`` of CPU time are spent.

    ``settings`` (and ``changes``, its fields by name: ``lr=0.005, batch_size=64``) say how,
    as for :func:`course.training.train`; epochs follow one another until the clock stops them.
    The clock starts once the sentences are grouped into batches and counts the whole
    training loop: building each batch, the forward and backward passes, the updates.

    ``anneal = (fraction, factor)``: the learning rate times ``factor`` for the last
    ``fraction`` of the budget. The run stops there and continues from where it stood
    at the lower rate; Adam's moment estimates then start again from zero, as at any
    resume (DyNet cannot carry them over).

    ``evaluate_on``: held-out sentences scored at the start, every ``every`` CPU seconds of
    training and at the end (the evaluation's own time is not counted).
    """
    every = every or seconds
    s = (settings or Settings()).but(epochs=EPOCHS, **changes)
    batches = sources.of(s, sentences, model.vocab)
    curve, state = [], training.TrainState(lr=s.learning_rate)
    start, not_training = time.process_time(), 0.0

    def spent() -> float:
        return time.process_time() - start - not_training

    def out_of_time(part: float) -> bool:
        nonlocal not_training
        used = spent()
        if evaluate_on is not None and (used >= every * len(curve) or (part == 1.0 and used >= seconds)):
            before = time.process_time()
            curve.append((used, evaluation.evaluate(model, evaluate_on)))
            not_training += time.process_time() - before
        return used >= part * seconds

    def keep(saved, improved):
        nonlocal state
        state = saved
    phases = [(1.0, 1.0)] if anneal is None else [(1 - anneal[0], 1.0), (1.0, anneal[1])]
    for part, factor in phases:
        state.lr = s.learning_rate * factor
        training.train(model, batches, None, s, progress=False, log=None, resume=state, on_save=keep,
                 stop=lambda: out_of_time(part))
    return Spent(sum(row["tokens"] for row in state.history) + state.predictions, curve)
