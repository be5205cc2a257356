"""Penn Treebank as the bench reads it: the three splits and the training split's vocabulary."""
from __future__ import annotations

from common import ROOT

BESIDE = ROOT.parent / "shared" / "data" / "ptb"     # a copy beside the repository, on the development machines


def load_corpus(corpus="ptb", max_sentences=None):
    """(vocab, {split: sentences}); the vocabulary always comes from the whole
    training split (PTB's 10k words plus the course's <s> and </s>), and
    ``max_sentences`` caps every split (smoke tests)."""
    from course.corpora import read_corpus
    from course.data import Vocab
    splits = {s: read_corpus(corpus, s) for s in ("train", "valid", "test")}
    vocab = Vocab.build(splits["train"])
    if max_sentences:
        splits = {s: sents[:max_sentences] for s, sents in splits.items()}
    return vocab, splits


def find_source() -> str | None:
    """What to read PTB as (``load_corpus``, ``--corpus``): "ptb" where the course keeps a copy
    (``python -m course data fetch ptb --from DIR``), else the copy beside the repository, else None."""
    from course.corpora import CorpusError, corpus_files
    try:
        corpus_files("ptb")
        return "ptb"
    except CorpusError:
        return str(BESIDE) if (BESIDE / "train.txt").is_file() else None
