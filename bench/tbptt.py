"""Truncated backpropagation over a stream, on the course corpus: what carrying the state changes.

Small LSTMs trained by the command line, ``python -m course train``, each in a fresh process,
on the first --max-tokens tokens of the course corpus (one epoch, Adam), read three ways:

* as sentences (the course's default: each sentence from a fresh state, padded and masked);
* as one stream in segments of --bptt steps, the state carried from each segment to the next
  (truncated backpropagation through time: the values cross the cut, the gradient does not);
* as the same stream with ``--reset-state``: every segment starts from zeros, nothing crosses.

Each is scored as the command line scores it (held-out text as sentences, or as one stream
with the state carried), against the grammar's exact floor, and on the agreement pairs
(``course.agreement``, class-balanced accuracy by cue-target distance; a stream never reads
``<s>``, so its models score a pair from ``</s>``'s embedding). It writes bench/results/tbptt.md
and bench/results/tbptt.json, which lecture 06 reads.

    python bench/tbptt.py                           # about 5 minutes (10 runs, one at a time)
    python bench/tbptt.py --max-tokens 20000 --seeds 1 --out /tmp/tbptt   # a quick look
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from common import RESULTS, ROOT, report, table

MODEL = ["--cell", "lstm", "--embed", "32", "--hidden", "64", "--batch-size", "32", "--epochs", "1",
         "--optimizer", "adam"]
#: label: the options that make the run what it is
WAYS = {
    "sentences (nothing carried)": [],
    "stream, bptt 5, state carried": ["--stream", "--bptt", "5"],
    "stream, bptt 5, state reset": ["--stream", "--bptt", "5", "--reset-state"],
    "stream, bptt 35, state carried": ["--stream", "--bptt", "35"],
    "stream, bptt 35, state reset": ["--stream", "--bptt", "35", "--reset-state"],
}


def train(way: list, seed: int, max_tokens: int, out: Path) -> dict:
    """One run of ``python -m course train``: its metrics.json."""
    args = [*MODEL, *way, "--max-tokens", str(max_tokens), "--seed", str(seed), "--no-progress", "--out", str(out)]
    done = subprocess.run([sys.executable, "-m", "course", "train", *args], cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"python -m course train {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return json.loads((out / "metrics.json").read_text())


def agreement(checkpoint: Path, stream: bool) -> dict:
    """Class-balanced agreement accuracy by distance bucket, the two tasks averaged."""
    from course import agreement as ag
    from course import lm
    model = lm.RNNLM.load(checkpoint)
    if stream:      # a stream's sentences start after </s>; its <s> row was never trained
        model.embeddings.init_row(model.vocab.bos, model.embeddings.row_as_array(model.vocab.eos))
    result = ag.agreement_accuracy(model, ag.load_pairs())
    return {bucket: statistics.mean(result[task]["distance"][bucket]["balanced_accuracy"] for task in ag.TASKS)
            for bucket, _, _ in ag.DISTANCE_BUCKETS}


def updates(settings: dict) -> int:
    """Updates in an epoch of a run (its batches), counted as the command line cuts its data."""
    from course import sources
    from course.__main__ import read_splits
    from course.data import Vocab
    from course.settings import Settings
    training = Settings.from_dict(settings)
    splits, full_train, _ = read_splits(training)
    vocab = Vocab.build(full_train, max_size=training.vocab_size)
    return len(sources.of(training, splits["train"], vocab))


def run_all(seeds: int, max_tokens: int, folder: Path) -> dict:
    from course import runtime
    runtime.init(seed=1, mem=512)
    runs = {}
    for label, way in WAYS.items():
        for seed in range(1, seeds + 1):
            out = folder / f"{len(runs)}"
            m = train(way, seed, max_tokens, out)
            runs[len(runs)] = {"way": label, "seed": seed, "options": way, "valid_ppl": m["valid_ppl"],
                               "test_ppl": m["test_ppl"], "tokens_per_s": m["tokens_per_s"],
                               "tokens": m["history"][0]["tokens"], "updates": updates(m["settings"]),
                               "agreement": agreement(out / "checkpoint", "--stream" in way)}
            print(f"{label}, seed {seed}: test {m['test_ppl']:.2f}, {m['tokens_per_s']:,.0f} tokens/s", flush=True)
    return runs


def summary(runs: dict) -> dict:
    """The seeds' mean of each way."""
    out = {}
    for label in WAYS:
        mine = [r for r in runs.values() if r["way"] == label]
        out[label] = {k: statistics.mean(r[k] for r in mine)
                      for k in ("valid_ppl", "test_ppl", "tokens_per_s", "updates", "tokens")}
        out[label]["test_ppl_seeds"] = [r["test_ppl"] for r in mine]
        out[label]["agreement"] = {b: statistics.mean(r["agreement"][b] for r in mine) for b in mine[0]["agreement"]}
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-tokens", type=int, default=500_000, help="training tokens of each run")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS, help="where tbptt.md and tbptt.json go")
    args = parser.parse_args(argv)
    from course.grammar import floor_perplexity
    with tempfile.TemporaryDirectory() as folder:
        runs = run_all(args.seeds, args.max_tokens, Path(folder))
    means = summary(runs)
    floor = floor_perplexity("test")
    buckets = list(next(iter(means.values()))["agreement"])
    ppl = table(["trained as", "updates", "test ppl (mean)", "per seed", "/ floor", "valid ppl", "training tokens/s"],
                [[label, f"{r['updates']:,.0f}", f"{r['test_ppl']:.2f}", " / ".join(f"{p:.2f}" for p in r["test_ppl_seeds"]),
                  f"{r['test_ppl'] / floor:.3f}", f"{r['valid_ppl']:.2f}", f"{r['tokens_per_s']:,.0f}"]
                 for label, r in means.items()])
    agree = table(["trained as", *(f"agreement {b}" for b in buckets)],
                  [[label, *(f"{r['agreement'][b]:.3f}" for b in buckets)] for label, r in means.items()])
    body = (f"An LSTM (embed 32, hidden 64), batch 32 (a stream's rows), Adam, one epoch of the first "
            f"{args.max_tokens:,} training tokens of the course corpus, {args.seeds} seed(s) each, every run a fresh "
            "`python -m course train` process (`" + " ".join(MODEL) + "` plus the way's options). Test "
            "perplexity as the command line scores it (a stream's model reads the test split as one stream, "
            f"the state carried); the grammar's floor on test is {floor:.2f}.\n\n{ppl}\n\n"
            "Agreement: class-balanced accuracy on the minimal pairs (`course.agreement`), the number and "
            "gender tasks averaged, by distance from cue to target in tokens (chance 0.5), mean of the seeds.\n\n"
            + agree)
    command = "python bench/tbptt.py" + (f" --max-tokens {args.max_tokens}" if args.max_tokens != 500_000 else "") \
        + (f" --seeds {args.seeds}" if args.seeds != 2 else "")
    report("tbptt", "Truncated backpropagation over a stream on the course corpus", body, command, results=args.out)
    (args.out / "tbptt.json").write_text(json.dumps({"floor_test": floor, "max_tokens": args.max_tokens,
                                                     "seeds": args.seeds, "ways": WAYS, "means": means,
                                                     "runs": list(runs.values())}, indent=1) + "\n")


if __name__ == "__main__":
    main()
