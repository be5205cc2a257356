"""Count-based baselines: unigram, interpolated bigram and Kneser-Ney n-gram models.

They follow the course's conventions (see :mod:`course.data`): a sentence
``w_1 ... w_n`` is scored as ``<s> w_1 ... w_n </s>``; every word and one
``</s>`` are predicted, ``<s>`` is only ever context. Words outside the model's
vocabulary are read as ``<unk>``. Each model implements the scorer protocol
of :mod:`course.lm`::

    model.sentence_logprobs(sentences) -> np.ndarray   # natural log, </s> included
    model.perplexity(sentences)        -> float

and can be tuned on held-out text with :func:`fit`::

    model = fit(train, valid, kind="kn", order=3)
    model.perplexity(test), model.params

The models:

* :class:`Unigram`: add-alpha smoothed relative frequencies,
  ``P(w) = (c(w) + alpha) / (N + alpha V)``.
* :class:`InterpolatedBigram`: Jelinek-Mercer interpolation of the maximum
  likelihood bigram with that unigram,
  ``P(w | v) = lam c(v w) / c(v .) + (1 - lam) P_uni(w)``.
* :class:`KneserNey`: interpolated Kneser-Ney of order 2 or 3 with one absolute
  discount ``D_k`` per order (Chen & Goodman, 1998):
  ``P_k(w | h) = max(a(h w) - D_k, 0) / a(h .) + D_k T(h) / a(h .) P_{k-1}(w | h')``
  where ``h'`` is ``h`` without its first word, ``T(h)`` the number of distinct
  words seen after ``h``, and ``a`` the raw count at the highest order and the
  continuation count (number of distinct words seen before) at lower orders,
  except for n-grams starting with ``<s>``, which nothing can precede, whose raw
  count is kept. The lowest order is interpolated with the uniform distribution.
  A context never seen in training backs off to the next order entirely.

Everything is counted and looked up with NumPy (n-grams encoded as integers,
sorted, found with ``searchsorted``), so a 1M-token corpus trains in a second
or two, and tuning on held-out text reuses the lookups for every grid point.
"""
from __future__ import annotations

import json
import math
import os
from collections import Counter
from pathlib import Path

import numpy as np

from course.files import write_atomic

UNK, BOS, EOS = "<unk>", "<s>", "</s>"


def _vocab_tokens(vocab) -> list[str]:
    """Token strings of a :class:`course.data.Vocab` or of any iterable of tokens."""
    if hasattr(vocab, "tokens"):
        return list(vocab.tokens)
    if isinstance(vocab, str):
        raise TypeError("vocab must be an iterable of tokens or a course.data.Vocab, not a string")
    return list(vocab)


class _Table:
    """Sorted integer keys with a value each; ``get`` returns 0 for absent keys."""

    def __init__(self, keys: np.ndarray, values: np.ndarray):
        order = np.argsort(keys, kind="stable")
        self.keys = keys[order]
        self.values = values[order].astype(np.float64)

    @classmethod
    def count(cls, keys: np.ndarray) -> "_Table":
        unique, counts = np.unique(keys, return_counts=True)
        return cls(unique, counts)

    def get(self, queries: np.ndarray) -> np.ndarray:
        if len(self.keys) == 0:
            return np.zeros(len(queries))
        pos = np.searchsorted(self.keys, queries).clip(max=len(self.keys) - 1)
        return np.where(self.keys[pos] == queries, self.values[pos], 0.0)


class NgramLM:
    """Shared machinery: vocabulary, encoding of sentences as prediction events.

    train:     list of token lists (no ``<s>``/``</s>``; they are implicit).
    vocab:     the words the model predicts: a :class:`course.data.Vocab` or an
               iterable of tokens; ``<s>`` is dropped, ``<unk>`` and ``</s>`` added.
               None builds it from the training words seen ``min_count`` times or
               more; the rarer ones are counted as ``<unk>``.
    """

    order = 1
    param_grid: dict = {}

    def __init__(self, train, vocab=None, min_count: int = 1):
        train = list(train)
        if not train:
            raise ValueError("an n-gram model needs at least one training sentence")
        if vocab is None:
            counts = Counter(t for s in train for t in s)
            words = sorted((w for w, c in counts.items() if c >= min_count and w not in (UNK, EOS)),
                           key=lambda w: (-counts[w], w))
        else:
            words = [w for w in dict.fromkeys(_vocab_tokens(vocab)) if w not in (UNK, BOS, EOS)]
        self.words = [UNK, EOS] + [w for w in words if w != BOS]
        self.index = {w: i for i, w in enumerate(self.words)}
        self.unk, self.eos = 0, 1
        self.V = len(self.words)
        self.bos = self.V            # context only: outside the predicted ids
        self.none = self.V + 1       # "no word here" (before the sentence start)
        self.base = self.V + 2       # radix for encoding n-grams as integers
        self.params: dict = {}
        self.tuning: dict = {}
        self._build(self._events(train))

    # ---- encoding -----------------------------------------------------------
    def _events(self, sentences):
        """One row per prediction: target ids and the two previous ids.

        Returns (w, h1, h2, sentence_index) arrays; h1 is ``<s>`` at a sentence's
        first word, h2 is ``<s>`` at its second and ``none`` at its first.
        """
        ids, lengths = [], []
        get = self.index.get
        for s in sentences:
            if BOS in s or EOS in s:
                raise ValueError(f"sentences must not contain {BOS} or {EOS} (they are implicit); "
                                 f"got {' '.join(s[:12])} ...")
            ids.extend(get(t, self.unk) for t in s)
            ids.append(self.eos)
            lengths.append(len(s) + 1)
        w = np.asarray(ids, dtype=np.int64)
        lengths = np.asarray(lengths, dtype=np.int64)
        if len(lengths) == 0:
            return w, w.copy(), w.copy(), w.copy()
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        h1 = np.roll(w, 1)
        h1[starts] = self.bos
        h2 = np.roll(w, 2)
        second = starts + 1
        h2[second[second < len(w)]] = self.bos
        h2[starts] = self.none
        sentence = np.repeat(np.arange(len(lengths)), lengths)
        return w, h1, h2, sentence

    def _key(self, *ids):
        key = np.zeros_like(ids[-1])
        for part in ids:
            key = key * self.base + part
        return key

    # ---- to be provided by each model ---------------------------------------
    def _build(self, events):
        raise NotImplementedError

    def _prepare(self, events):
        """Everything the scoring needs that does not depend on the parameters."""
        raise NotImplementedError

    def _logprobs(self, prepared, params) -> np.ndarray:
        raise NotImplementedError

    # ---- scorer protocol ----------------------------------------------------
    def token_logprobs(self, sentences) -> np.ndarray:
        """Natural-log probability of every prediction, sentence after sentence."""
        return self._logprobs(self._prepare(self._events(sentences)), self.params)

    def sentence_logprobs(self, sentences) -> np.ndarray:
        sentences = list(sentences)
        events = self._events(sentences)
        logp = self._logprobs(self._prepare(events), self.params)
        return np.bincount(events[3], weights=logp, minlength=len(sentences))

    def perplexity(self, sentences) -> float:
        sentences = list(sentences)
        if not sentences:
            raise ValueError("perplexity of an empty set of sentences is undefined")
        total = float(self.sentence_logprobs(sentences).sum())
        return math.exp(-total / sum(len(s) + 1 for s in sentences))

    def distribution(self, context=()) -> np.ndarray:
        """``P(w | context)`` for every ``w`` in :attr:`words` (sums to 1).

        context: the preceding tokens, most recent last; ``"<s>"`` marks the
        sentence start. Only the last ``order - 1`` tokens matter; a shorter
        context means less history (as at the start of a sentence).
        """
        context = [self.bos if t == BOS else self.index.get(t, self.unk) for t in context]
        context = ([self.none, self.none] + context)[-2:]
        w = np.arange(self.V, dtype=np.int64)
        h2 = np.full(self.V, context[0], dtype=np.int64)
        h1 = np.full(self.V, context[1], dtype=np.int64)
        events = (w, h1, h2, np.zeros(self.V, dtype=np.int64))
        return np.exp(self._logprobs(self._prepare(events), self.params))

    def prob(self, word: str, context=()) -> float:
        return float(self.distribution(context)[self.index.get(word, self.unk)])

    # ---- tuning ---------------------------------------------------------------
    def tune(self, valid, grid: dict | None = None, sweeps: int = 4) -> "NgramLM":
        """Set :attr:`params` to the grid values with the lowest perplexity on ``valid``.

        grid: ``{param_name: [values]}``; default :attr:`param_grid`. The search
        goes one parameter at a time (the best value of each with the others
        held), sweeping until nothing changes, at most ``sweeps`` times; with one
        parameter that is the exhaustive search. The count lookups are done once.
        """
        grid = {k: list(v) for k, v in (self.param_grid if grid is None else grid).items()}
        valid = list(valid)
        prepared = self._prepare(self._events(valid))
        n = sum(len(s) + 1 for s in valid)
        cache = {}

        def nll(params):
            key = tuple(sorted(params.items()))
            if key not in cache:
                with np.errstate(divide="ignore"):
                    cache[key] = -float(self._logprobs(prepared, params).sum())
            return cache[key]

        params = dict(self.params)
        for _ in range(sweeps):
            before = dict(params)
            for name, values in grid.items():
                params[name] = min(values, key=lambda v: (nll({**params, name: v}), v))
            if params == before:
                break
        self.params = params
        self.tuning = {"valid_perplexity": math.exp(nll(params) / n), "grid": grid,
                       "evaluated": len(cache)}
        return self

    def __repr__(self):
        shown = ", ".join(f"{k}={v}" for k, v in self.params.items())
        return f"{type(self).__name__}(order={self.order}, V={self.V}, {shown})"


class Unigram(NgramLM):
    """``P(w) = (c(w) + alpha) / (N + alpha V)``; alpha = 0 is the maximum-likelihood estimate."""

    order = 1
    param_grid = {"alpha": [0.0, 0.01, 0.1, 0.3, 1.0, 3.0, 10.0]}

    def __init__(self, train, vocab=None, min_count: int = 1, alpha: float = 0.1):
        super().__init__(train, vocab, min_count)
        self.params = {"alpha": alpha}

    def _build(self, events):
        self.counts = np.bincount(events[0], minlength=self.V).astype(np.float64)
        self.n = float(self.counts.sum())

    def _prepare(self, events):
        return self.counts[events[0]]

    def _logprobs(self, prepared, params):
        alpha = params["alpha"]
        if alpha < 0:
            raise ValueError(f"alpha must be >= 0, got {alpha}")
        with np.errstate(divide="ignore"):
            return np.log(prepared + alpha) - math.log(self.n + alpha * self.V)


class InterpolatedBigram(Unigram):
    """``P(w | v) = lam c(v w) / c(v .) + (1 - lam) P_uni(w)``;
    a context ``v`` never seen in training gives ``P_uni(w)``."""

    order = 2
    param_grid = {"lam": [0.3, 0.5, 0.6, 0.7, 0.8, 0.9], "alpha": [0.01, 0.1, 1.0]}

    def __init__(self, train, vocab=None, min_count: int = 1, lam: float = 0.7,
                 alpha: float = 0.1):
        super().__init__(train, vocab, min_count, alpha)
        self.params = {"lam": lam, "alpha": alpha}

    def _build(self, events):
        super()._build(events)
        w, h1 = events[0], events[1]
        self.bigrams = _Table.count(self._key(h1, w))
        self.contexts = _Table.count(h1)

    def _prepare(self, events):
        w, h1 = events[0], events[1]
        return super()._prepare(events), self.bigrams.get(self._key(h1, w)), self.contexts.get(h1)

    def _logprobs(self, prepared, params):
        unigram_counts, pair, context = prepared
        if not 0 <= params["lam"] <= 1:
            raise ValueError(f"lam must lie in [0, 1], got {params['lam']}")
        p_uni = np.exp(super()._logprobs(unigram_counts, params))
        p_bi = np.divide(pair, context, out=np.zeros_like(pair), where=context > 0)
        lam = np.where(context > 0, params["lam"], 0.0)
        with np.errstate(divide="ignore"):
            return np.log(lam * p_bi + (1 - lam) * p_uni)


class KneserNey(NgramLM):
    """Interpolated Kneser-Ney, order 2 (bigram) or 3 (trigram); see the module docstring.

    Parameters ``D1`` ... ``D<order>``: the absolute discount of each order, in (0, 1].
    """

    _steps = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0]

    def __init__(self, train, vocab=None, min_count: int = 1, order: int = 2,
                 discounts=None):
        if order not in (2, 3):
            raise ValueError(f"KneserNey supports order 2 or 3, got {order}")
        self.order = order
        super().__init__(train, vocab, min_count)
        discounts = discounts or [0.75] * order
        if len(discounts) != order:
            raise ValueError(f"a KneserNey model of order {order} needs {order} discounts, "
                             f"got {list(discounts)}")
        self.params = {f"D{k + 1}": float(d) for k, d in enumerate(discounts)}
        self.param_grid = {f"D{k + 1}": self._steps for k in range(order)}

    # Level k holds (context of k-1 words, word) -> adjusted count, and per
    # context the total adjusted count and the number of distinct words.
    def _build(self, events):
        w, h1, h2, _ = events
        bigram = self._key(h1, w)
        levels = {}
        if self.order == 3:
            has_h2 = h2 != self.none
            levels[3] = _Table.count(self._key(h2[has_h2], h1[has_h2], w[has_h2]))
            trigram_types = levels[3].keys
            # continuation counts: distinct words before (v, w) ...
            continuation = _Table.count(trigram_types % (self.base * self.base))
            # ... except after <s>, where the raw count stays
            from_bos = _Table.count(bigram[h1 == self.bos])
            levels[2] = _Table(np.concatenate([continuation.keys, from_bos.keys]),
                               np.concatenate([continuation.values, from_bos.values]))
        else:
            levels[2] = _Table.count(bigram)
        bigram_types = np.unique(bigram)
        levels[1] = _Table(*np.unique(bigram_types % self.base, return_counts=True))
        self.levels = levels
        self.context_totals, self.context_types = {}, {}
        for k, table in levels.items():
            context = table.keys // self.base
            unique, inverse = np.unique(context, return_inverse=True)
            self.context_totals[k] = _Table(unique, np.bincount(inverse, weights=table.values))
            self.context_types[k] = _Table(unique, np.bincount(inverse))

    def _prepare(self, events):
        w, h1, h2, _ = events
        contexts = {1: np.zeros_like(w), 2: h1, 3: self._key(h2, h1)}
        prepared = {}
        for k in range(1, self.order + 1):
            key = contexts[k] * self.base + w
            prepared[k] = (self.levels[k].get(key), self.context_totals[k].get(contexts[k]),
                           self.context_types[k].get(contexts[k]))
        return prepared

    def _logprobs(self, prepared, params):
        p = np.full(len(prepared[1][0]), 1.0 / self.V)
        for k in range(1, self.order + 1):
            count, total, types = prepared[k]
            d = params[f"D{k}"]
            if not 0 < d <= 1:     # beyond 1, max(count - d, 0) breaks the normalisation
                raise ValueError(f"discount D{k} must lie in (0, 1], got {d}")
            seen = total > 0
            safe_total = np.where(seen, total, 1.0)
            mixed = (np.maximum(count - d, 0.0) + d * types * p) / safe_total
            p = np.where(seen, mixed, p)
        return np.log(p)


KINDS = {"unigram": Unigram, "interpolated": InterpolatedBigram, "kn": KneserNey}


def fit(train, valid, kind: str = "kn", order: int = 2, vocab=None, min_count: int = 1,
        grid: dict | None = None) -> NgramLM:
    """Train a model of ``kind`` ("unigram", "interpolated" bigram, or "kn" of
    ``order`` 2 or 3) on ``train`` and tune its smoothing on ``valid`` by grid search.
    The chosen values are in ``model.params``, the held-out perplexity they reach
    in ``model.tuning``."""
    if kind not in KINDS:
        raise ValueError(f"unknown n-gram kind {kind!r}; choose from {', '.join(KINDS)}")
    if kind == "kn":
        model = KneserNey(train, vocab, min_count, order=order)
    else:
        model = KINDS[kind](train, vocab, min_count)
    return model.tune(valid, grid)


YARDSTICK = {"unigram": ("unigram", 1), "Kneser-Ney trigram": ("kn", 3)}


def cache_dir() -> Path:
    """Where computed yardsticks are kept: $COURSE_CACHE, else ~/.cache/course."""
    return Path(os.environ.get("COURSE_CACHE") or Path.home() / ".cache" / "course")


def yardstick(train, valid, vocab, scored: dict) -> dict:
    """The perplexities a neural model should beat: the unigram and the Kneser-Ney
    trigram, trained on ``train`` with the model's ``vocab`` (so that the same words are
    ``<unk>``), tuned on ``valid``, and scored on each split of ``scored``
    (``{name: sentences}``). Returns ``{model: {name: perplexity}}``.

    Kept in :func:`cache_dir` under a hash of everything the numbers depend on
    (vocabulary, training, tuning and scored sentences), so each is computed once.
    """
    from course.data import tokens_sha256
    names = sorted(scored)
    key = tokens_sha256([_vocab_tokens(vocab)], train, valid, [names], *(scored[n] for n in names))
    path = cache_dir() / "yardstick" / f"{key}.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        pass
    result = {}
    for label, (kind, order) in YARDSTICK.items():
        model = fit(train, valid, kind, order, vocab=vocab)
        result[label] = {name: model.perplexity(sentences) for name, sentences in scored.items()}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(result) + "\n")
    except OSError:
        pass                      # an unwritable cache only costs the time to compute again
    return result


def main(argv=None) -> int:
    """``python -m course.ngram [--corpus ptb]``: n-gram baselines, valid and test perplexity."""
    import argparse
    import time

    from course.corpora import read_corpus

    parser = argparse.ArgumentParser(prog="python -m course.ngram", description=main.__doc__)
    parser.add_argument("--corpus", default="course",
                        help="course, ptb, wikitext-2, or a folder with train/valid/test files")
    parser.add_argument("--min-count", type=int, default=1)
    args = parser.parse_args(argv)
    train, valid, test = (read_corpus(args.corpus, s) for s in ("train", "valid", "test"))
    print(f"corpus {args.corpus}: {sum(map(len, train)):,} training tokens, "
          f"{len(train):,} sentences")
    print(f"{'model':<22} {'valid':>9} {'test':>9} {'seconds':>8}  parameters")
    models = [("unigram", "unigram", 1), ("interpolated bigram", "interpolated", 2),
              ("Kneser-Ney bigram", "kn", 2), ("Kneser-Ney trigram", "kn", 3)]
    for label, kind, order in models:
        start = time.perf_counter()
        model = fit(train, valid, kind, order, min_count=args.min_count)
        valid_ppl, test_ppl = model.perplexity(valid), model.perplexity(test)
        seconds = time.perf_counter() - start
        shown = ", ".join(f"{k}={v:g}" for k, v in model.params.items())
        print(f"{label:<22} {valid_ppl:9.2f} {test_ppl:9.2f} {seconds:8.1f}  {shown} (V={model.V})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
