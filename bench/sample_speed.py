"""What ``sampling.sample`` spends on sentences that have already ended: it draws all ``n`` sentences
in one batch, and each new graph (every ``SAMPLE_GRAPH_STEPS`` steps) now holds only the sentences
still going. Against one graph for the whole draw (``SAMPLE_GRAPH_STEPS`` beyond the longest
sentence: every column to the end, the work of a batch that keeps its ended sentences), in turn, on
lecture 03's models (embeddings 32, hidden 64, two epochs of 3,000 sentences); the draws must be the
same sentences.

    python bench/sample_speed.py [--rounds 3]
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from common import report, table

from course import runtime

dy = runtime.init(seed=1)
from course import lm, sampling, training  # noqa: E402
from course.corpora import read_corpus  # noqa: E402
from course.data import Vocab  # noqa: E402

KEEPS_ALL = 10**9          # one graph for the whole draw: no sentence ever dropped from the batch


def own_distribution(scores):
    """A sampler written as exercise 03 asks (one sentence's scores in, probabilities out)."""
    p = np.exp((scores - scores.max()) / 0.7)
    return p / p.sum()


CASES = {"temperature 0.7, 500 sentences": dict(n=500, temperature=0.7, seed=2),
         "top-p 0.8, 500 sentences": dict(n=500, top_p=0.8, seed=2),
         "a distribution of one's own, 200 sentences": dict(n=200, distribution=own_distribution, seed=2)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    train = read_corpus("course", "train")
    vocab = Vocab.build(train)
    rows, same = [], True
    for cell in ("srnn", "lstm"):
        runtime.init(seed=1)
        model = lm.RNNLM(vocab, cell, embed=32, hidden=64)
        training.train(model, train[:3000], None, epochs=2, lr=0.01, progress=False, log=None)
        for case, knobs in CASES.items():
            seconds, drawn = {10: [], KEEPS_ALL: []}, {}
            for _ in range(args.rounds):
                for steps in seconds:                   # in turn, so that the machine's load falls on each alike
                    sampling.SAMPLE_GRAPH_STEPS = steps
                    start = time.process_time()
                    drawn[steps] = [s.tokens for s in sampling.sample(model, **knobs)]
                    seconds[steps].append(time.process_time() - start)
            sampling.SAMPLE_GRAPH_STEPS = 10
            same &= drawn[10] == drawn[KEEPS_ALL]
            new, old = (statistics.median(seconds[s]) for s in (10, KEEPS_ALL))
            lengths = [len(t) + 1 for t in drawn[10]]
            rows.append([cell, case, f"{np.mean(lengths):.1f} / {max(lengths)}", f"{old:.2f}", f"{new:.2f}",
                         f"{new / old:.2f}x", "yes" if drawn[10] == drawn[KEEPS_ALL] else "NO"])
    body = table(["model", "draw", "tokens per sentence (mean / longest)", "CPU s, all sentences to the end",
                  "CPU s, ended ones dropped", "ratio", "same sentences"], rows)
    body += f"\n\nMedians of {args.rounds} rounds, the two ways in turn in each."
    report("sample_speed", "Sampling: the sentences that have ended leave the batch", body,
           f"python bench/sample_speed.py --rounds {args.rounds}")
    if not same:
        raise SystemExit("the two ways drew different sentences")


if __name__ == "__main__":
    main()
