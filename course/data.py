"""Corpora, vocabularies and minibatches.

A corpus file holds one sentence per line, tokens separated by whitespace
(``.txt``, or ``.txt.gz`` for the larger shipped files). A language model sees
each sentence as ``<s> w_1 ... w_n </s>``: it reads ``<s> w_1 ... w_n`` and
predicts ``w_1 ... w_n </s>``, so a sentence of n words has n + 1 predictions.
Minibatches hold sentences of similar length (sorted), padded with ``</s>``;
a float mask (1 = real word, 0 = padding) keeps the padding out of the loss.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import random
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from course.files import write_atomic

UNK, BOS, EOS = "<unk>", "<s>", "</s>"


class DataError(ValueError):
    """Input data the course cannot use; the message says what to do."""


def read_sentences(path) -> list[list[str]]:
    """Read one sentence per line (blank lines skipped) from a .txt or .txt.gz file."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"corpus file {path} does not exist; check the path, or run "
                                "`python -m course data make-corpus` / `python -m course data fetch NAME`.")
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[:err.start].count(b"\n") + 1
        raise DataError(f"{path} is not UTF-8 text (byte {err.start}, line {line}): re-encode it, "
                        "e.g. `iconv -f latin1 -t utf-8`.") from None
    del raw
    words: dict = {}           # one string object per distinct token: a large corpus fits in less memory
    sentences = [[words.setdefault(t, t) for t in line.split()] for line in text.splitlines()]
    sentences = [s for s in sentences if s]
    if not sentences:
        raise DataError(f"{path} holds no sentences (it is empty or blank); expected one "
                        "sentence per line, tokens separated by spaces.")
    return sentences


class Vocab:
    """Maps tokens to ids and back. Ids 0, 1, 2 are ``<unk>``, ``<s>``, ``</s>``."""

    def __init__(self, tokens):
        self.tokens = list(tokens)
        if self.tokens[:3] != [UNK, BOS, EOS]:
            raise DataError(f"a vocabulary must start with {UNK}, {BOS}, {EOS}; got {self.tokens[:3]}")
        self.ids = {t: i for i, t in enumerate(self.tokens)}
        if len(self.ids) != len(self.tokens):
            raise DataError("the vocabulary lists a token twice")
        self.unk, self.bos, self.eos = 0, 1, 2

    @classmethod
    def build(cls, sentences, max_size: int | None = None, min_count: int = 1) -> "Vocab":
        """The most frequent training words (ties broken alphabetically, so the result
        does not depend on corpus order), at most ``max_size`` entries in all."""
        counts = Counter(t for s in sentences for t in s if t not in (UNK, BOS, EOS))
        words = sorted((w for w, c in counts.items() if c >= min_count),
                       key=lambda w: (-counts[w], w))
        if max_size is not None:
            if max_size < 4:
                raise DataError(f"max_size={max_size} leaves no room for words (3 ids are special)")
            words = words[:max_size - 3]
        return cls([UNK, BOS, EOS] + words)

    def __len__(self):
        return len(self.tokens)

    def __contains__(self, token):
        return token in self.ids

    def index(self, token: str) -> int:
        return self.ids.get(token, self.unk)

    def token(self, i: int) -> str:
        return self.tokens[i]

    def save(self, path):
        write_atomic(path, json.dumps(self.tokens, ensure_ascii=False) + "\n")

    @classmethod
    def load(cls, path) -> "Vocab":
        return cls(json.loads(Path(path).read_text(encoding="utf-8")))

    def sha256(self) -> str:
        """A fingerprint of the token list (order included): two vocabularies with the
        same fingerprint map every token to the same id."""
        return hashlib.sha256(json.dumps(self.tokens, ensure_ascii=False).encode("utf-8")).hexdigest()


def tokens_sha256(*groups) -> str:
    """sha256 of lists of token lists (their order and every token): equal hashes,
    equal text."""
    digest = hashlib.sha256()
    for sentences in groups:
        digest.update(b"\x1e")
        for s in sentences:
            digest.update(("\x1f".join(s) + "\n").encode("utf-8"))
    return digest.hexdigest()



def as_characters(sentences) -> list[list[str]]:
    """Each sentence as its characters, one space between its words (``--unit char``)."""
    return [list(" ".join(s)) for s in sentences]


def split_long(sentences, max_length: int):
    """Sentences longer than ``max_length`` tokens cut into consecutive pieces of at most
    ``max_length`` (each piece is then a sentence of its own, with its own ``</s>``).
    Returns the new list and how many sentences were cut."""
    if not isinstance(max_length, int) or max_length < 1:
        raise DataError(f"max_length must be a positive integer, got {max_length!r}")
    result, n_cut = [], 0
    for s in sentences:
        if len(s) <= max_length:
            result.append(s)
        else:
            n_cut += 1
            result.extend(s[k:k + max_length] for k in range(0, len(s), max_length))
    return result, n_cut


def first_tokens(sentences, max_tokens: int):
    """The first sentences of a corpus, as many as hold ``max_tokens`` tokens in all
    (at least one)."""
    kept, total = [], 0
    for s in sentences:
        if kept and total + len(s) > max_tokens:
            break
        kept.append(s)
        total += len(s)
    return kept


def encode(sentences, vocab: Vocab, max_unknown: float = 0.5):
    """Token lists -> id lists, and how many tokens were unknown.

    More than ``max_unknown`` of the tokens unknown almost always means the
    vocabulary belongs to another corpus, so that is refused rather than scored.
    """
    ids = [[vocab.index(t) for t in s] for s in sentences]
    n_tokens = sum(len(s) for s in ids)
    n_unknown = sum(1 for s, ws in zip(sentences, ids) for t, i in zip(s, ws)
                    if i == vocab.unk and t != UNK)
    if n_tokens and n_unknown / n_tokens > max_unknown:
        raise DataError(f"{n_unknown} of {n_tokens} tokens ({n_unknown / n_tokens:.0%}) are not in "
                        f"the vocabulary of {len(vocab)} words: the vocabulary was built from a "
                        "different corpus. Use the vocabulary saved with this model's checkpoint "
                        "and the corpus it was trained on.")
    return ids, n_unknown


@dataclass
class Batch:
    """A padded minibatch, time-major: ``inputs[t][b]`` is the word sentence b reads
    at step t, ``targets[t][b]`` the word it must predict, ``masks[t][b]`` 1.0 for a
    real prediction and 0.0 for padding. ``order`` gives each column's index in the
    list of sentences the batch was made from."""

    inputs: list
    targets: list
    masks: list
    order: list

    @property
    def size(self) -> int:
        return len(self.order)

    @property
    def n_predictions(self) -> int:
        return int(sum(sum(m) for m in self.masks))


@dataclass
class Segment(Batch):
    """``bptt`` steps of a stream's rows (a :class:`Batch` without padding): ``start`` is
    each layer's state it begins with (numbers, or None for zeros), ``end`` the state it
    ended with, set when the model has read it."""
    start: list | None = None
    end: list | None = None

    @property
    def n_predictions(self) -> int:
        return len(self.targets) * len(self.order)


def make_batch(sentences, vocab: Vocab, order=None) -> Batch:
    """Pad id sentences with ``</s>`` to one length and build their masks."""
    if not sentences:
        raise DataError("a batch needs at least one sentence")
    length = max(len(s) for s in sentences) + 1           # + the final </s>
    inputs, targets, masks = [], [], []
    for t in range(length):
        inputs.append([vocab.bos if t == 0 else (s[t - 1] if t - 1 < len(s) else vocab.eos)
                       for s in sentences])
        targets.append([s[t] if t < len(s) else vocab.eos for s in sentences])
        masks.append([1.0 if t <= len(s) else 0.0 for s in sentences])
    return Batch(inputs, targets, masks, list(order) if order is not None else list(range(len(sentences))))


def make_batches(sentences, vocab: Vocab, batch_size: int, sort: bool = True,
                 max_positions: int | None = None) -> list[Batch]:
    """Cut id sentences into batches; sorted by length, padding stays small (see
    :func:`batch_orders`)."""
    return [make_batch([sentences[i] for i in chunk], vocab, chunk)
            for chunk in batch_orders(sentences, batch_size, sort, max_positions)]


def batch_orders(sentences, batch_size: int, sort: bool = True,
                 max_positions: int | None = None) -> list[list[int]]:
    """The indices of the sentences of each batch: ``batch_size`` at a time, in order of
    length with ``sort``. ``max_positions`` bounds steps x sentences of a batch (its
    memory); a batch of long sentences then holds fewer (at least one)."""
    if not isinstance(batch_size, int) or batch_size < 1:
        raise DataError(f"batch_size must be a positive integer, got {batch_size!r}")
    order = list(range(len(sentences)))
    if sort:
        order.sort(key=lambda i: (len(sentences[i]), i))
    chunks, chunk, longest = [], [], 0
    for i in order:
        longest_with_i = max(longest, len(sentences[i]) + 1)
        if chunk and (len(chunk) == batch_size or (
                max_positions is not None and (len(chunk) + 1) * longest_with_i > max_positions)):
            chunks.append(chunk)
            chunk, longest_with_i = [], len(sentences[i]) + 1
        chunk.append(i)
        longest = longest_with_i
    if chunk:
        chunks.append(chunk)
    return chunks


def shuffled(batches, seed: int, epoch: int):
    """The batches in an order fixed by (seed, epoch): reproducible shuffling."""
    order = list(range(len(batches)))
    random.Random(seed * 100003 + epoch).shuffle(order)
    return [batches[i] for i in order]
