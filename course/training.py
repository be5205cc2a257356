"""The course's one training loop, :func:`train`: the command line, the lectures and every
benchmark train through it. :class:`TrainState` is where a run stands (enough to continue it in
another process); :class:`TrainingDiverged` is raised, with that state, when the loss becomes
infinite or NaN.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from course import runtime, schedules, sources
from course.cell import Cell
from course.evaluation import held_out, perplexity
from course.lm import RNNLM, progress_bar
from course.settings import OPTIMIZERS, Settings

dy = runtime.dynet()


LOGGED = ("epoch", "train_ppl", "lr", "tokens_per_s", "seconds", "valid_ppl")   # an epoch's log line


class TrainingDiverged(ValueError):
    """The loss became infinite or NaN; the parameters are left as before that batch."""


@dataclass
class TrainState:
    """Where a training run stands: enough for :func:`train` to continue it.

    epoch, batch: the epoch under way and how many of its batches are done (batch 0
    of epoch k + 1 once epoch k is finished). lr: the learning rate now. best: the best
    held-out perplexity so far. history: one row per finished epoch. nll, predictions,
    seconds: the sums of the epoch under way, so that its row comes out as if it had
    never stopped.
    """
    epoch: int = 1
    batch: int = 0
    lr: float = 0.0
    best: float = math.inf
    history: list = field(default_factory=list)
    nll: float = 0.0
    predictions: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    carried: list | None = None     # a stream's state after batch ``batch`` (numbers, one list per layer)


def settle_sparse_gradients(model: RNNLM) -> None:
    """Give DyNet's sparse-gradient bookkeeping a state that does not depend on the process's past.

    For gradient clipping, DyNet adds up the squared gradient of a lookup table row by
    row, in the order of a hash set of the rows used, and that order depends on how
    large the set has ever grown in this process. A run continued in a new process
    would clip by a norm that differs in its last bits, and drift. Using every row once
    (a backward pass applied with learning rate 0, which changes no parameter) grows
    the set to its largest size in any process, so the order then depends only on
    the batch."""
    dy.renew_cg()
    for table in model.pc.lookup_parameters_list():
        rows = dy.lookup_batch(table, list(range(table.shape()[0])))
        dy.sum_batches(dy.sum_elems(rows)).backward()
    dy.SimpleSGDTrainer(model.pc, 0.0).update()


def batch_seed(seed: int, epoch: int, index: int) -> int:
    """DyNet's seed for batch ``index`` of ``epoch`` (never 0, which DyNet reads as 'random')."""
    return 1 + (seed * 1_000_003 + epoch * 100_003 + index) % (2**31 - 2)


def train(model: RNNLM, train_sentences, valid_sentences=None, settings: Settings | None = None, *,
          schedule=None, progress: bool = True, checkpoint: str | Path | None = None, log=print,
          resume: TrainState | None = None, stop=None, on_save=None, on_epoch=None,
          resumable: bool = False, **changes) -> list[dict]:
    """Train ``model``: the one training loop of the course, its command line and its benchmarks.

    ``settings`` (:class:`course.settings.Settings`; ``changes`` are its fields by name, e.g.
    ``epochs=3, lr=0.01``) says how. Batches come from a source (:mod:`course.sources`;
    ``train_sentences`` may be one already):
    minibatches of sentences sorted by length and shuffled per epoch, or with
    ``stream=True`` one continuous stream read in segments of ``bptt`` steps, the state
    carried from each segment to the next. The loss of a batch is summed over time and
    averaged over its sentences (a stream's rows). Gradients are clipped to norm
    ``clip``. ``dropout`` is applied in training only (see :meth:`course.lm.RNNLM.hidden_states`);
    evaluation is deterministic. ``max_batches`` ends each epoch early (quick runs).

    After each epoch the ``schedule`` (:mod:`course.schedules`; by default the one the
    settings name: halve the rate when held-out perplexity does not improve, or with
    ``decay_after=k`` after every epoch past the k-th, as Zaremba et al. 2014) sets the
    learning rate and may stop training. With ``checkpoint``, the best model (by held-out
    perplexity) is saved there. Returns one dict per epoch.

    Hooks: ``stop()`` is asked before every batch; when it says True, training ends
    there. ``on_save(state, improved)`` is called with a :class:`TrainState` after every
    epoch (``improved``: its held-out perplexity is the best so far) and at such a stop;
    ``train(..., resume=state)`` continues from it, with the same batch order (fixed by
    seed and epoch) and, in a stream, the same carried state. ``on_epoch(row, state)``
    is called after ``on_save`` with the epoch's row (which it may add to). ``resumable``
    makes a run that stops and continues in another process compute what one that never
    stopped does: DyNet's random generator is re-seeded before every batch from (seed,
    epoch, batch), so the dropout masks are the same, and
    :func:`settle_sparse_gradients` runs first. A new trainer starts at ``resume``: SGD
    has no other state, but Adam's moment estimates start again from zero (DyNet cannot
    save them).

    Raises :class:`TrainingDiverged` when a batch's loss is infinite or NaN.
    """
    s = (settings or Settings()).but(**changes)
    schedule = schedule or schedules.of(s)
    state = resume if resume is not None else TrainState(lr=s.learning_rate)
    trainer = getattr(dy, OPTIMIZERS[s.optimizer])(model.pc, state.lr)
    trainer.set_clip_threshold(s.clip if s.clip else -1)
    source = sources.of(s, train_sentences, model.vocab)
    n_batches = len(source) if s.max_batches is None else min(len(source), s.max_batches)
    if resumable:
        settle_sparse_gradients(model)
    history = state.history
    carried = None if state.carried is None else [[np.asarray(v) for v in layer] for layer in state.carried]
    for epoch in range(state.epoch, s.epochs + 1):
        bar = progress_bar(total=n_batches, initial=state.batch, desc=f"epoch {epoch}/{s.epochs}",
                           disable=not progress)
        start = time.perf_counter() - state.seconds
        cpu_start = time.process_time() - state.cpu_seconds

        def keep_place():
            state.seconds = time.perf_counter() - start
            state.cpu_seconds = time.process_time() - cpu_start
            state.carried = None if carried is None else [[v.tolist() for v in layer] for layer in carried]
        for index in range(state.batch, n_batches):
            if stop is not None and stop():
                bar.close()
                keep_place()
                if on_save:
                    on_save(state, False)
                return history
            batch = source.batch(s.seed, epoch, index, carried)
            if resumable and s.dropout:
                dy.reset_random_seed(batch_seed(s.seed, epoch, index))
            nll = model.train_step(batch, s.dropout, 1.0 / batch.size)
            if not math.isfinite(nll):
                bar.close()
                keep_place()
                _diverged(model, nll, epoch, index, trainer, state)
            trainer.update()
            carried = source.carry(batch)
            state.batch, state.nll = index + 1, state.nll + nll
            state.predictions += batch.n_predictions
            if progress:
                bar.update()
                bar.set_postfix(ppl=f"{math.exp(min(state.nll / state.predictions, 50)):.1f}",
                                tok_s=f"{state.predictions / (time.perf_counter() - start):.0f}", refresh=False)
        bar.close()
        seconds = time.perf_counter() - start
        row = {"epoch": epoch, "train_ppl": perplexity(state.nll, state.predictions),
               "lr": trainer.learning_rate, "tokens_per_s": state.predictions / seconds, "seconds": seconds,
               "cpu_seconds": time.process_time() - cpu_start, "tokens": state.predictions}
        best, improved, gained = state.best, False, None
        if valid_sentences is not None:
            row["valid_ppl"] = held_out(model, valid_sentences, isinstance(source, sources.Stream),
                                        progress=f"epoch {epoch}: held-out" if progress else None)
            gained = row["improved"] = schedule.gained(row["valid_ppl"], best)
            if row["valid_ppl"] < best:
                best, improved = row["valid_ppl"], True
                if checkpoint:
                    model.save(checkpoint)
        trainer.learning_rate = schedule.next_lr(trainer.learning_rate, epoch, gained)
        history.append(row)
        if log:
            log("  ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()
                          if k in LOGGED))
        state = TrainState(epoch + 1, 0, trainer.learning_rate, best, history)
        carried = None
        if on_save:
            on_save(state, improved)
        if on_epoch:
            on_epoch(row, state)
        if schedule.stop(history) or (stop is not None and stop() and epoch < s.epochs):
            return history
    return history


def _diverged(model: RNNLM, nll: float, epoch: int, index: int, trainer, state: TrainState):
    """Raise :class:`TrainingDiverged`, its ``state`` where training stood before the batch."""
    runtime.clear_memory()            # the NaN or inf must not come back in the next graphs' W * x
    if isinstance(model.cell, Cell) and epoch == 1 and index == 0:
        err = TrainingDiverged(
            f"the loss of the very first batch is {nll}, before any update: the step function "
            f"{model.cell.name} returns nan or inf on its fresh parameters (not a learning-rate "
            "problem). Run it on a small batch and look for a division by zero, the log or "
            "square root of a negative number, or an exp that overflows.")
    else:
        err = TrainingDiverged(f"the training loss became {nll} at batch {index + 1} of epoch "
                               f"{epoch} (learning rate {trainer.learning_rate:g}): the model "
                               "diverged; lower the learning rate or the gradient clipping threshold")
    err.state = state
    raise err
