"""The capstone's held-out sentences, drawn with a seed only the instructors hold.

    python -m autograder.make_heldout --out autograder/heldout      # (make heldout) writes course_hidden.*

The released ``course/grammar.py`` draws train, valid and test from public seeds,
so anyone with the release can draw them again. The held-out split is drawn
from ``seed`` in the folder given: 128 random bits made there the first time, never
part of the release. Keep the seed and the files it makes out of any copy that
students can read; to draw a new held-out set, delete the seed and run this again.
The grader reads the split from :data:`HELDOUT` (``autograder/reference/ch10_capstone.py``).
"""
from __future__ import annotations

import argparse
import json
import secrets
from pathlib import Path

from course import paths
from course.corpus_files import split_sizes, write_split
from course.files import read_text
from course.grammar import Grammar, sample_split

# where the grader reads the held-out split: beside this module, wherever the course (its data) is found;
# tests/test_student_release.py runs the hidden tests with the release's course and this grader
HELDOUT = Path(__file__).resolve().parent / "heldout"
NAME = "course_hidden"                               # its files: course_hidden.txt, .logprob, .stats.json


def seed(folder: Path) -> str:
    """The secret seed in ``folder``, made (randomly) when there is none."""
    path = Path(folder) / "seed"
    if not path.is_file():
        path.write_text(secrets.token_hex(16) + "\n")
    return path.read_text().strip()


def write(folder: Path) -> dict:
    """course_hidden.txt, .logprob and .stats.json in ``folder``, as large as the test split;
    the statistics."""
    folder = Path(folder)
    derivations = sample_split(Grammar(), seed(folder), "hidden", split_sizes()["test"])
    train = {w for line in read_text(paths.COURSE_DATA / "train.txt").splitlines() for w in line.split()}
    stats = write_split(folder, NAME, derivations, train)
    record = {"made_by": "make heldout (python -m autograder.make_heldout)", "split": stats}
    (folder / f"{NAME}.stats.json").write_text(json.dumps(record, indent=2) + "\n")
    return stats


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True,
                        help="the folder of the seed and the held-out files (the grader reads autograder/heldout)")
    out = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    stats = write(out)
    print(f"wrote {stats['sentences']} held-out sentences to {out} (floor perplexity {stats['floor_perplexity']})")
