"""Peak memory of `python -m course train` on a corpus of WikiText-2's size: LSTM 2 x 200, batch 20.

WikiText-2 cannot be downloaded on the machines this was written on, so a corpus of its
size is generated: 33,278 word types with Zipf frequencies, 2,088,628 training tokens
(217,646 valid, 245,569 test) in paragraph-long lines: a quarter of them headings of 3-9
tokens, the rest lognormal (median 100, mean about 128 tokens; about 1% longer than 500,
the longest near 1,500), which the command line cuts at --max-length 500.

Each variant runs the real command line in a child process: the vocabulary of the whole
training split, the yardstick, one epoch over the first --max-tokens training tokens (the
longest batch 501 steps x 20 lines, the most any batch of 20 can hold at --max-length 500),
then the held-out evaluation. The figure is the child's peak resident memory (ru_maxrss
from wait4). "before": each batch's softmax computed whole, T x B x V numbers at once, as
the course did before; "after": in chunks (course.lm.SOFTMAX_BUDGET). Evaluation batches
are capped at course.lm.EVAL_POSITIONS in both.

    .venv/bin/python bench/lm_memory.py [--max-tokens 300000] [--variants before,after]
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from common import ROOT, report, table

SHAPE = {"types": 33278, "train": 2088628, "valid": 217646, "test": 245569}
VARIANTS = {       # name: (softmax, whether training stops at --max-tokens)
    "before": ("whole: T x B x V at once", True),
    "after": ("in chunks (course.lm.SOFTMAX_BUDGET)", True),
    "after-all": ("in chunks (course.lm.SOFTMAX_BUDGET)", False),
}
CHILD = """
import sys
from course import runtime
runtime.init(seed=1, mem=512)
from course import lm
from course.__main__ import main
if sys.argv[1] == "before":
    lm.SOFTMAX_BUDGET = 2**62
sys.exit(main(sys.argv[2:]))
"""


def generate(folder: Path, seed: int = 1) -> None:
    """train/valid/test.txt of WikiText-2's shape (see the module docstring)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, SHAPE["types"] + 1)
    p = 1.0 / ranks
    p /= p.sum()
    for split in ("train", "valid", "test"):
        budget, lines = SHAPE[split], []
        words = rng.choice(SHAPE["types"], size=budget, p=p)
        used = 0
        while used < budget:
            if rng.random() < 0.25:
                n = int(rng.integers(3, 10))
            else:
                n = int(np.clip(rng.lognormal(math.log(100), 0.7), 10, 1500))
            n = min(n, budget - used)
            lines.append(" ".join(f"w{w}" for w in words[used:used + n]))
            used += n
        (folder / f"{split}.txt").write_text("\n".join(lines) + "\n")


def largest_batch(sentences) -> tuple[int, int]:
    """(steps, sentences) of the training batch of 20 with the most positions."""
    from course.data import batch_orders
    return max(((max(len(sentences[i]) for i in chunk) + 1, len(chunk))
                for chunk in batch_orders(sentences, 20)), key=lambda b: b[0] * b[1])


def run(variant: str, corpus: Path, out: Path, args) -> dict:
    cap = ["--max-tokens", str(args.max_tokens)] if VARIANTS[variant][1] else []
    command = [sys.executable, "-c", CHILD, variant, "train", "--corpus", str(corpus),
               "--cell", "lstm", "--layers", "2", "--embed", "200", "--hidden", "200",
               "--batch-size", "20", *cap, "--max-length", "500", "--epochs", "1", "--no-progress",
               "--out", str(out)]
    env = {**os.environ, "COURSE_CACHE": str(out.parent / "cache"), "PYTHONPATH": str(ROOT)}
    log = (out.parent / f"{variant}.log").open("w")
    child = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)
    _, status, usage = os.wait4(child.pid, 0)
    log.close()
    row = {"variant": variant, "status": os.waitstatus_to_exitcode(status),
           "peak_gib": usage.ru_maxrss / 2**20, "log": (out.parent / f"{variant}.log").read_text()}
    if row["status"] == 0:
        metrics = json.loads((out / "metrics.json").read_text())
        row.update(tokens_per_s=metrics["tokens_per_s"], valid_ppl=metrics["valid_ppl"],
                   seconds=metrics["train_seconds"])
    row["tokens"] = int(re.search(r"([\d,]+) training tokens", row["log"]).group(1).replace(",", ""))
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-tokens", type=int, default=300000)
    parser.add_argument("--variants", default="before,after,after-all")
    args = parser.parse_args()
    from course import runtime
    runtime.init(seed=1)
    from course.corpora import read_corpus
    from course.data import Vocab, first_tokens, split_long
    with tempfile.TemporaryDirectory(prefix="lm-memory-") as work:
        work = Path(work)
        corpus = work / "corpus"
        corpus.mkdir()
        generate(corpus)
        train, _ = split_long(read_corpus(corpus, "train"), 500)
        vocab = Vocab.build(train)
        rows = []
        for variant in args.variants.split(","):
            row = run(variant, corpus, work / variant, args)
            print(f"{variant}: exit {row['status']}, peak {row['peak_gib']:.2f} GiB", flush=True)
            if row["status"] != 0:
                print(row["log"][-3000:])
            rows.append(row)
    used = first_tokens(train, args.max_tokens)
    steps, size = largest_batch(used)
    shown = [[r["variant"], VARIANTS[r["variant"]][0], f"{r['tokens']:,}", f"{r['peak_gib']:.2f}",
              f"{r['tokens_per_s']:,.0f}" if r["status"] == 0 else f"failed (exit {r['status']})",
              f"{r['valid_ppl']:,.0f}" if r["status"] == 0 else ""] for r in rows]
    body = (f"LSTM 2 x 200 (embed 200), batch 20, Adam, one epoch; the generated corpus has "
            f"{sum(map(len, train)):,} training tokens and a vocabulary of {len(vocab):,} (all of the "
            f"training split); in the first {sum(map(len, used)):,} tokens the largest batch is {steps} "
            f"steps x {size} lines, as large as a batch can be at --max-length 500. Each run: the "
            "yardstick before training, "
            "evaluation on the valid and test splits after. Peak resident memory of the whole child "
            "process, read with wait4; the variants run one after the other in one invocation.\n\n"
            + table(["variant", "softmax", "training tokens", "peak memory (GiB)", "training tokens/s",
                     "valid perplexity"], shown)
            + "\n\nThe goal (issue 21): at most 1.5 GiB for this model at batch 20 on WikiText-2's size "
              "(the after-all row). The valid perplexity is that of a model trained briefly on random "
              "Zipf text: before and after train the same way, nothing more. Training tokens/s come "
              "from one run of each on a shared machine: indicative only.")
    report("lm_memory", "Memory of command-line training on a WikiText-2-sized corpus", body,
           f".venv/bin/python bench/lm_memory.py --max-tokens {args.max_tokens} --variants {args.variants}")


if __name__ == "__main__":
    main()
