"""The capstone's held-out sentences, drawn with a seed only the instructors hold.

    python -m autograder.make_heldout       # (make heldout) writes autograder/heldout/course_hidden.*

The released ``course/grammar.py`` draws train, valid and test from public seeds,
so anyone with the release can draw them again. The held-out split is drawn
from ``autograder/heldout/seed``: 128 random bits made here the first time, never
part of the release. Keep the seed and the files it makes out of any copy that
students can read; to draw a new held-out set, delete the seed and run this again.
"""
from __future__ import annotations

import json
import secrets
from pathlib import Path

from course import grammar, paths

HELDOUT = paths.ROOT / "autograder" / "heldout"


def seed(folder: Path = HELDOUT) -> str:
    """The secret seed in ``folder``, made (randomly) when there is none."""
    path = Path(folder) / "seed"
    if not path.is_file():
        path.write_text(secrets.token_hex(16) + "\n")
    return path.read_text().strip()


def write(folder: Path = HELDOUT) -> dict:
    """course_hidden.txt, .logprob and .stats.json in ``folder``; the statistics."""
    folder = Path(folder)
    derivations = grammar.sample_split(grammar.Grammar(), seed(folder), "hidden",
                                       grammar.split_sizes()["hidden"])
    train = {w for line in grammar.read_text(paths.COURSE_DATA / "train.txt").splitlines() for w in line.split()}
    stats = grammar.write_split(folder, grammar.HIDDEN_NAME, derivations, train)
    record = {"made_by": "make heldout (python -m autograder.make_heldout)", "split": stats}
    (folder / f"{grammar.HIDDEN_NAME}.stats.json").write_text(json.dumps(record, indent=2) + "\n")
    return stats


if __name__ == "__main__":
    stats = write()
    print(f"wrote {stats['sentences']} held-out sentences to {HELDOUT} (floor perplexity {stats['floor_perplexity']})")
