"""The course corpus's files: ``python -m course data make-corpus`` calls :func:`write_corpus`.

``data/course/`` holds train, valid and test drawn from the grammar (``course/grammar.py``) with
public seeds, each sentence's exact log-probability beside it, the agreement pairs
(``course/agreement.py``) and ``stats.json``. A file over 2 MiB is written gzipped, without a name
or a time in it, so the shipped files are made again byte for byte.
"""
from __future__ import annotations

import gzip
import io
import json
import math
from pathlib import Path

import numpy as np

from course import paths
from course.agreement import bucket_counts, sample_pairs, write_pairs
from course.corpora import SPLITS
from course.grammar import DEFAULT_SEED, Grammar, sample_split


TRAIN_TOKENS = 1_000_000      # words + one </s> per sentence
HELDOUT_FRACTION = 0.05       # valid and test: 5% of train each
PAIRS_PER_BUCKET = 500        # agreement pairs per (task, distance bucket)
MAX_PLAIN_BYTES = 2 * 1024 * 1024  # larger files are written gzipped


def split_sizes(train_tokens: int = TRAIN_TOKENS, heldout_fraction: float = HELDOUT_FRACTION) -> dict:
    heldout = int(round(train_tokens * heldout_fraction))
    return {"train": train_tokens, "valid": heldout, "test": heldout}


def corpus_text(derivations) -> tuple[str, str]:
    """The sentence file and the log-probability file (one line per sentence)."""
    text = "".join(" ".join(d.words) + "\n" for d in derivations)
    logprobs = "".join(f"{d.logprob:.6f}\n" for d in derivations)
    return text, logprobs


def write_file(path: Path, text: str) -> Path:
    """Write text, gzipped (deterministically: no name, no time) if over 2 MiB.

    Returns the path written: `path` or `path` + ".gz"; the other one is removed.
    """
    path = Path(path)
    data = text.encode("utf-8")
    packed = path.with_name(path.name + ".gz")
    if len(data) <= MAX_PLAIN_BYTES:
        path.write_bytes(data)
        packed.unlink(missing_ok=True)
        return path
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as f:
        f.write(data)
    if buffer.tell() > MAX_PLAIN_BYTES:
        raise ValueError(f"{packed.name} would be {buffer.tell()} bytes, over the 2 MiB limit "
                         "of committed files: lower train_tokens")
    packed.write_bytes(buffer.getvalue())
    path.unlink(missing_ok=True)
    return packed


def split_statistics(derivations) -> dict:
    """Counts, lengths and the floor: the per-token cross-entropy under the grammar."""
    lengths = np.array([len(d.words) for d in derivations])
    tokens = int(lengths.sum()) + len(lengths)
    total = math.fsum(float(f"{d.logprob:.6f}") for d in derivations)  # as stored
    entropy = -total / tokens
    return {
        "sentences": len(lengths), "words": int(lengths.sum()), "tokens": tokens,
        "types": len({w for d in derivations for w in d.words}),
        "mean_length": round(float(lengths.mean()), 3), "max_length": int(lengths.max()),
        "length_p50_p90_p99": [int(np.percentile(lengths, q)) for q in (50, 90, 99)],
        "sentences_50_plus": int((lengths >= 50).sum()),
        "cross_entropy": round(entropy, 6), "floor_perplexity": round(math.exp(entropy), 4),
    }


def zipf_slope(derivations, top: int = 1000) -> float:
    """Least-squares slope of log frequency against log rank (Zipf: about -1)."""
    counts: dict[str, int] = {}
    for d in derivations:
        for w in d.words:
            counts[w] = counts.get(w, 0) + 1
    freq = np.array(sorted(counts.values(), reverse=True)[:top], dtype=float)
    ranks = np.arange(1, len(freq) + 1)
    return round(float(np.polyfit(np.log(ranks), np.log(freq), 1)[0]), 3)


def write_split(directory: Path, name: str, derivations, train_words=None) -> dict:
    """``name``.txt and ``name``.logprob in ``directory``; the split's statistics
    (with the words unseen in ``train_words``, when given)."""
    text, logprobs = corpus_text(derivations)
    write_file(Path(directory) / f"{name}.txt", text)
    write_file(Path(directory) / f"{name}.logprob", logprobs)
    split_stats = split_statistics(derivations)
    if train_words is not None:
        split_stats["words_unseen_in_train"] = sum(1 for d in derivations for w in d.words if w not in train_words)
    return split_stats


def write_corpus(out_dir=None, seed: int = DEFAULT_SEED,
                 train_tokens: int = TRAIN_TOKENS, heldout_fraction: float = HELDOUT_FRACTION,
                 pairs_per_bucket: int = PAIRS_PER_BUCKET) -> dict:
    """Generate the course corpus; with no arguments, the shipped files byte for byte.

    Writes to out_dir (default data/course): {train,valid,test}.txt and
    .logprob (one natural-log probability per sentence, </s> included;
    gzipped as .txt.gz / .logprob.gz when over 2 MiB), agreement.tsv (the
    minimal pairs) and stats.json. Returns the statistics.
    """
    out_dir = Path(out_dir) if out_dir is not None else paths.COURSE_DATA
    out_dir.mkdir(parents=True, exist_ok=True)
    grammar = Grammar()
    sizes = split_sizes(train_tokens, heldout_fraction)
    exact = grammar.entropy()
    stats = {
        "made_by": "python -m course data make-corpus",
        "settings": {"seed": seed, "train_tokens": train_tokens, "heldout_fraction": heldout_fraction,
                     "pairs_per_bucket": pairs_per_bucket},
        "grammar": {"rules": sum(len(r) for r in grammar.rules.values()),
                    "vocabulary": len(grammar.vocabulary),
                    "expected_words": round(exact["expected_words"], 4),
                    "token_entropy": round(exact["token_entropy"], 6),
                    "floor_perplexity": round(exact["perplexity"], 4)},
        "splits": {},
    }
    train_words = None
    for split in SPLITS:
        derivations = sample_split(grammar, seed, split, sizes[split])
        split_stats = write_split(out_dir, split, derivations, train_words)
        if split == "train":
            train_words = {w for d in derivations for w in d.words}
            stats["train_zipf_slope"] = zipf_slope(derivations)
        stats["splits"][split] = split_stats
    pairs = sample_pairs(grammar, seed, pairs_per_bucket)
    write_pairs(pairs, out_dir / "agreement.tsv")
    stats["agreement"] = bucket_counts(pairs)
    (out_dir / "stats.json").write_text(json.dumps(stats, indent=2) + "\n")
    return stats
