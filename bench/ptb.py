"""Penn Treebank: the course's models beside the papers' published tables (issue 9).

Every model trains with the budget of Zaremba et al. (2014), "Recurrent Neural
Network Regularization", the non-regularised "small" configuration (their
Table 1: valid 120.7, test 114.5):

* 2 layers of 200 units, embeddings of 200, untied softmax over the 10k words;
* the training text read as one stream: the sentences joined, each followed by
  ``</s>``, the stream cut into 20 columns, and trained in segments of 20 steps
  (truncated backpropagation through time) whose final state starts the next
  segment (it is reset at the start of each epoch, as theirs is). 20 steps, not
  the 35 of their medium and large configurations: the small configuration's
  ``seq_length``/``num_steps`` is 20 in both of their published programs (the
  authors' Torch ``main.lua``, "Trains 1h and gives test 115 perplexity", and
  TensorFlow's PTB tutorial ``SmallConfig``);
* SGD, learning rate 1 for 4 epochs, then halved after every epoch, 13 epochs
  (the TensorFlow tutorial's schedule, also ``course.training.train(decay_after=4)``);
  gradient norm clipped to 5 (the loss: summed over the steps, averaged over
  the 20 columns); every parameter drawn uniformly from [-0.1, 0.1], so no
  forget-gate bias (theirs has none); no dropout.

Valid and test perplexity are measured on each split read as one stream (batch
1, the state carried from the first word to the last), so every word sees its
whole history, as in their test evaluation. Every word and every ``</s>`` is predicted.

Resumable: after each epoch the parameters go to ``runs/ptb/MODEL/`` (ignored by
git: tens of MB per model, nothing to commit) and the numbers to
``bench/results/ptb/MODEL.json``; a run that stops continues from its last
finished epoch. The tables are rebuilt from whatever runs exist, with a figure of
the valid perplexity per epoch (``bench/results/ptb.png``). Every run follows the
same schedule, so while some runs are short of 13 epochs the models are also
compared at the epoch they have all reached: the same budget for each.

Some runs change the budget and say so: ``srnn-lr0.1``, ``gru-lr0.5``, ``ran-tanh-lr0.1``, ...
train a cell that does not train at Zaremba's learning rate of 1 at a lower one (see ``LOWER_LR``).

    .venv/bin/python bench/ptb.py                          # all models (hours each)
    .venv/bin/python bench/ptb.py --models lstm            # Zaremba's LSTM alone
    .venv/bin/python bench/ptb.py --models gru,ran-tanh --epochs 3   # the first 3 epochs (resumable to 13)
    .venv/bin/python bench/ptb.py --models lstm,srnn --epochs 1 --max-sentences 500   # smoke test
    .venv/bin/python bench/ptb.py --speed                  # what makes training faster
    .venv/bin/python bench/ptb.py --state-growth           # why the RANs fail: their memory cell grows
    .venv/bin/python bench/ptb.py --tables-only

The code lives in the package bench/penn/ (one module for each part: corpus, models,
training, growth, speed, papers, tables, figure); this file is its command line.
"""
from __future__ import annotations

import argparse

from common import machines_of, report
from penn.corpus import load_corpus
from penn.figure import plot_curves
from penn.growth import GROWTH_EPOCHS, GROWTH_MODELS, measure_growth
from penn.models import MODELS, SMALL, config_of
from penn.speed import SPEED_DEFAULTS, speed, speed_table, speed_worker
from penn.tables import tables
from penn.training import RUNS, load_records, runs_dir, train_model

from course import runtime
from course.files import write_json


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, from {', '.join(MODELS)}")
    parser.add_argument("--epochs", type=int, default=SMALL.training.epochs)
    parser.add_argument("--max-sentences", type=int, default=None, help="cap every split (smoke tests)")
    parser.add_argument("--tables-only", action="store_true")
    parser.add_argument("--speed", action="store_true", help="time the speed variants, then write the tables")
    parser.add_argument("--state-growth", action="store_true",
                        help=f"train {', '.join(GROWTH_MODELS)} {GROWTH_EPOCHS} epoch(s) apart and measure how "
                             "large their memory cells grow on the valid stream, then write the tables")
    parser.add_argument("--speed-rounds", type=int, default=3)
    parser.add_argument("--speed-segments", type=int, default=8)
    parser.add_argument("--speed-worker", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--corpus", default="ptb", help="corpus name or folder (default: ptb)")
    args = parser.parse_args(argv)
    if args.speed_worker is not None:
        return speed_worker(args.speed_worker, args.speed_segments, args.corpus)
    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        parser.error(f"unknown model(s) {unknown}: choose from {', '.join(MODELS)}")
    runtime.init(seed=SMALL.training.seed, mem=SPEED_DEFAULTS["mem"])
    if args.speed:
        result = speed(args.speed_rounds, args.speed_segments, args.corpus)
        RUNS.mkdir(parents=True, exist_ok=True)
        write_json(RUNS / "speed.json", result)
        print(speed_table(result))
    elif args.state_growth:
        vocab, splits = load_corpus(args.corpus)
        result = measure_growth(GROWTH_MODELS, vocab, splits, log=lambda line: print(line, flush=True))
        RUNS.mkdir(parents=True, exist_ok=True)
        write_json(RUNS / "state-growth.json", result)
    elif not args.tables_only:
        vocab, splits = load_corpus(args.corpus, args.max_sentences)
        for name in names:
            train_model(name, vocab, splits, args.epochs, config_of(name), runs=runs_dir(args.max_sentences),
                        max_sentences=args.max_sentences, log=lambda line: print(line, flush=True))
    command = "python bench/ptb.py" + (f" --epochs {args.epochs}" if args.epochs != SMALL.training.epochs else "")
    if args.max_sentences:
        command += f" --max-sentences {args.max_sentences}"
    command += "` (the runs, resumable) and `python bench/ptb.py --speed"
    name = "ptb" if not args.max_sentences else f"ptb-n{args.max_sentences}"
    if args.max_sentences:      # smoke-test tables are printed, not kept
        print(tables(args.epochs, runs_dir(args.max_sentences), args.max_sentences))
    else:
        records = load_records()
        plot_curves(records, RUNS.with_suffix(".png"))
        report(name, "Penn Treebank: the course's models beside the papers", tables(args.epochs), command,
               machines=machines_of(records.values()))


if __name__ == "__main__":
    main()
