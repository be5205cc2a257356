"""Where the batches of training come from: sentences, or one continuous stream.

:class:`Sentences` (the course's way): each sentence is a sequence of its own, read
from ``<s>`` with a fresh state; sentences of like length are batched together
(padded and masked) and the batches shuffled per epoch.

:class:`Stream` (Zaremba et al. 2014, char-rnn): the training text is one stream of
ids, ``</s> w w w </s> w w </s> ...``, cut into ``batch_size`` rows read side by side;
an epoch reads them in segments of ``bptt`` steps, in order, and each segment starts
from the state the previous one ended with (its values, not its graph: the gradient
stops at the segment's start, truncated backpropagation through time). The state is
reset at the start of each epoch; with ``reset_state`` at the start of every segment
too (nothing carried: what the carried state adds, measured by bench/tbptt.py).
Held-out text is scored the same way, as one stream of one row, so every word sees
its whole history (:func:`course.evaluation.stream_perplexity`).

Both give :func:`course.training.train` what it needs: ``len(source)`` batches an epoch,
``source.batch(seed, epoch, index, carried)`` and ``source.carry(batch)`` (the state a
stream's next segment starts from; None for sentences). This module cuts text and
imports no model code; :mod:`course.evaluation` scores it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from course.data import Batch, DataError, Segment, Vocab, batch_orders, encode, make_batch, shuffled


class Sentences:
    """Minibatches of sentences sorted by length, ``batch_size`` at a time, shuffled per epoch
    (fixed by seed and epoch); each padded batch is built when it is used."""

    def __init__(self, sentences, vocab: Vocab, batch_size: int):
        self.vocab = vocab
        self.ids, self.n_unknown = encode(sentences, vocab)
        self.orders = batch_orders(self.ids, batch_size)
        self._epoch = None

    def __len__(self) -> int:
        return len(self.orders)

    def batch(self, seed: int, epoch: int, index: int, carried=None) -> Batch:
        if self._epoch != (seed, epoch):
            self._epoch, self._order = (seed, epoch), shuffled(self.orders, seed, epoch)
        order = self._order[index]
        return make_batch([self.ids[i] for i in order], self.vocab, order)

    @staticmethod
    def carry(batch):
        return None


def stream_ids(sentences, vocab: Vocab) -> list[int]:
    """One id stream: ``</s> w w w </s> w w </s> ...``. The leading ``</s>`` lets the
    first word be predicted too, so every word and every ``</s>`` is scored once."""
    ids = [vocab.eos]
    for sentence in encode(sentences, vocab)[0]:
        ids.extend(sentence)
        ids.append(vocab.eos)
    return ids


def columns(ids, rows: int) -> np.ndarray:
    """The stream cut into ``rows`` rows read side by side (Zaremba's reader): row b
    holds tokens [b*n, (b+1)*n); the last len(ids) % rows tokens are dropped."""
    n = len(ids) // rows
    if n < 2:
        raise DataError(f"a stream of {len(ids):,} tokens is too short for {rows} rows (--batch-size): "
                        "give more text or a smaller --batch-size")
    return np.asarray(ids[:n * rows], dtype=np.int64).reshape(rows, n)


def segment(data: np.ndarray, start: int, end: int, carried=None) -> Segment:
    """Steps [start, end) of the rows of ``data``: inputs, and targets one step ahead."""
    inputs = data[:, start:end].T.tolist()
    targets = data[:, start + 1:end + 1].T.tolist()
    return Segment(inputs, targets, [[1.0] * data.shape[0]] * len(inputs), list(range(data.shape[0])),
                   start=carried)


class Stream:
    """A training text as one stream in ``batch_size`` rows, read ``bptt`` steps at a time
    with the state carried from segment to segment. An epoch is (n - 1) // bptt full
    segments (Zaremba's epoch_size); the last few tokens of each row are not read.
    ``reset_state``: every segment starts from zeros instead (held-out text is still
    scored as one stream, the state carried)."""
    reset_state = False

    def __init__(self, sentences, vocab: Vocab, batch_size: int, bptt: int, reset_state: bool = False):
        if bptt < 1:
            raise ValueError(f"bptt must be at least 1, got {bptt}")
        self.n_unknown = encode(sentences, vocab)[1]
        self.data = columns(stream_ids(sentences, vocab), batch_size)
        self.bptt, self.reset_state = bptt, reset_state
        if len(self) < 1:
            raise DataError(f"rows of {self.data.shape[1]:,} tokens hold no segment of --bptt {bptt} steps: "
                            "give more text, or a smaller --bptt or --batch-size")

    @classmethod
    def of_rows(cls, data: np.ndarray, bptt: int) -> "Stream":
        """A stream already cut into rows (``columns``' result), e.g. generated ids."""
        stream = cls.__new__(cls)
        stream.data, stream.bptt, stream.n_unknown = data, bptt, 0
        return stream

    def __len__(self) -> int:
        return (self.data.shape[1] - 1) // self.bptt

    def batch(self, seed: int, epoch: int, index: int, carried=None) -> Segment:
        start = index * self.bptt
        return segment(self.data, start, start + self.bptt, carried if index else None)

    def carry(self, batch: Segment):
        return None if self.reset_state else batch.end


def of(settings, sentences=None, vocab: Vocab | None = None):
    """The source that ``settings`` (:class:`course.settings.Settings`) names, over
    ``sentences`` (or ``sentences`` itself where it is a source already); without them,
    the class."""
    if sentences is None:
        return Stream if settings.stream else Sentences
    if isinstance(sentences, (Sentences, Stream)):
        return sentences
    if settings.stream:
        return Stream(sentences, vocab, settings.batch_size, settings.bptt, settings.reset_state)
    return Sentences(sentences, vocab, settings.batch_size)


