"""The command line's stream mode against the Penn Treebank bench: the same first epoch.

Zaremba's small configuration (2 x 200 LSTM, batch 20, segments of 20 steps, SGD at 1, the
gradient clipped at 5) trained twice on PTB, each in a fresh process: once by ``python -m
course train --stream`` with the bench's hand-written LSTM as a ``--cell`` file, once by the
bench's own code (bench/penn, as ``bench/ptb.py`` runs it). Both go through the one engine,
``course.training.train``, resumably; their train, valid and test perplexities must agree to the
last digit. It writes bench/results/stream_cli.md.

    python bench/stream_cli.py                   # the whole first epoch: about 12 minutes
    python bench/stream_cli.py --segments 100    # its first 100 segments
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from common import report, table
from penn.corpus import find_source

# The PTB bench's hand-written LSTM (autograder.reference.cells "lstm"), as a --cell file.
HAND_LSTM = """from autograder.reference.cells import make_cell

_cell = make_cell("lstm")
lstm_step = _cell.step


def lstm_shapes(d_in, d_h):
    return _cell.shapes(d_in, d_h)
"""


def command_line_args(source: str, segments: int | None) -> list[str]:
    """``python -m course train`` arguments for Zaremba's small configuration (penn.models.SMALL),
    one epoch, with the hand-written LSTM of ``hand_lstm.py``."""
    from penn.models import SMALL

    from course.settings import to_options
    model = SMALL.model.but(cell="hand_lstm.py:lstm_step")
    run = SMALL.training.but(corpus=source, epochs=1, max_batches=segments)
    return [*to_options(model), *to_options(run), "--no-progress", "--out", "run"]


def by_the_command_line(source: str, segments: int | None) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "hand_lstm.py").write_text(HAND_LSTM)
        done = subprocess.run([sys.executable, "-m", "course", "train", *command_line_args(source, segments)],
                              cwd=folder, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"python -m course train failed:\n{done.stderr[-3000:]}")
        metrics = json.loads((Path(folder) / "run" / "metrics.json").read_text())
    row = metrics["history"][0]
    return {"train_ppl": row["train_ppl"], "valid_ppl": row["valid_ppl"], "test_ppl": metrics["test_ppl"],
            "tokens": row["tokens"]}


def bench_worker(source: str, segments: int | None) -> dict:
    """The bench's training of one epoch (bench/penn/training.py's train_model, without its records)."""
    from course import runtime
    runtime.init(seed=1, mem=1024)
    from penn.corpus import load_corpus
    from penn.models import SMALL, build_model

    from course import evaluation, sources, training
    vocab, splits = load_corpus(source)
    model = build_model("lstm", vocab, SMALL)
    row = training.train(model, splits["train"], splits["valid"], SMALL.training.but(epochs=1, max_batches=segments),
                         progress=False, log=None, resumable=True)[0]
    return {"train_ppl": row["train_ppl"], "valid_ppl": row["valid_ppl"],
            "test_ppl": evaluation.stream_perplexity(model, sources.stream_ids(splits["test"], vocab)),
            "tokens": row["tokens"]}


def by_the_bench(source: str, segments: int | None) -> dict:
    done = subprocess.run([sys.executable, __file__, "--worker", "--corpus", source,
                           *(["--segments", str(segments)] if segments else [])],
                          cwd=Path(__file__).parent, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"the bench's worker failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--segments", type=int, help="train on the first N segments only (default: the whole epoch)")
    parser.add_argument("--corpus", help=argparse.SUPPRESS)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return print(json.dumps(bench_worker(args.corpus, args.segments)))
    source = find_source()
    if source is None:
        raise SystemExit("no Penn Treebank copy: python -m course data fetch ptb --from DIR")
    rows = {"python -m course train --stream": by_the_command_line(source, args.segments),
            "bench/ptb.py's training code": by_the_bench(source, args.segments)}
    keys = ("train_ppl", "valid_ppl", "test_ppl")
    same = all(rows["python -m course train --stream"][k] == rows["bench/ptb.py's training code"][k] for k in keys)
    what = f"the first {args.segments} segments" if args.segments else "the whole first epoch"
    body = (f"Zaremba's small configuration on Penn Treebank, {what}, trained by each in a fresh process "
            "(both through course.training.train, resumably). Valid and test: the stream read as one row.\n\n"
            + table(["trained by", "training tokens", "train ppl", "valid ppl", "test ppl"],
                    [[name, f"{r['tokens']:,}", *(f"{r[k]:.4f}" for k in keys)] for name, r in rows.items()])
            + f"\n\nThe same to the last digit: {'yes' if same else 'no'}.")
    command = "python bench/stream_cli.py" + (f" --segments {args.segments}" if args.segments else "")
    report("stream_cli", "The command line's stream mode against the PTB bench", body, command)
    if not same:
        raise SystemExit("the perplexities differ")


if __name__ == "__main__":
    main()
