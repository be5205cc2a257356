"""Learning-rate schedules: after each epoch, :func:`course.training.train` asks its schedule
whether the held-out perplexity counts as a gain, what the learning rate becomes,
and whether to stop.

* :class:`Plateau` (the course's default): multiply the rate by ``decay`` after each
  epoch whose held-out perplexity is not below the best so far by at least
  ``min_gain`` (a fraction); with ``patience``, stop at the ``patience``-th such epoch
  (bench/converge.py: 0.1%, 3). Its parameters are fields of :class:`course.settings.Settings`
  (``lr_decay``, ``min_gain``, ``patience``), which :func:`of` reads.
* :class:`FixedDecay` (Zaremba et al. 2014): the rate stays for ``after`` epochs, then is
  multiplied by ``decay`` after every further epoch, whatever the held-out perplexity;
  ``after=None`` keeps it fixed.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Plateau:
    decay: float = 0.5
    min_gain: float = 0.0
    patience: int | None = None

    def gained(self, valid: float, best: float) -> bool:
        return valid < best * (1 - self.min_gain)

    def next_lr(self, lr: float, epoch: int, gained: bool | None) -> float:
        """``gained`` is None without a held-out split: the rate then stays."""
        return lr * self.decay if gained is False else lr

    def stop(self, history: list) -> str | None:
        bad = sum(row.get("improved") is False for row in history)
        if self.patience is not None and bad >= self.patience:
            return f"{self.patience} epochs without a gain on valid"
        return None


@dataclass
class FixedDecay:
    decay: float = 0.5
    after: int | None = None

    @staticmethod
    def gained(valid: float, best: float) -> bool:
        return valid < best

    def next_lr(self, lr: float, epoch: int, gained: bool | None) -> float:
        return lr * self.decay if self.after is not None and epoch >= self.after else lr

    @staticmethod
    def stop(history: list) -> None:
        return None


def of(settings) -> Plateau | FixedDecay:
    """The schedule that :class:`course.settings.Settings` names: fixed-then-decay with
    ``decay_after``, else lowering on a plateau (``min_gain``, ``patience``)."""
    if settings.decay_after is not None:
        return FixedDecay(settings.lr_decay, settings.decay_after)
    return Plateau(settings.lr_decay, settings.min_gain, settings.patience)
