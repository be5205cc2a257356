"""Command line: ``python -m course {train,evaluate,data} ...`` (``--help`` on each)."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def _add_corpus(parser):
    parser.add_argument("--corpus", default="course",
                        help="course (the shipped grammar corpus), ptb, wikitext-2, or a directory "
                             "holding train/valid/test files (default: course)")
    parser.add_argument("--max-sentences", type=int, default=None,
                        help="use only the first N sentences of each split (quick runs)")


def _read(corpus: str, split: str, limit: int | None):
    from course.corpora import read_corpus
    sentences = read_corpus(corpus, split)
    return sentences[:limit] if limit else sentences


def cmd_train(args):
    from course import runtime
    runtime.init(seed=args.seed, mem=args.mem, gpu=args.gpu or None)
    print(runtime.describe())
    from course import lm
    from course.data import Vocab
    train = _read(args.corpus, "train", args.max_sentences)
    valid = _read(args.corpus, "valid", args.max_sentences)
    test = _read(args.corpus, "test", args.max_sentences)
    vocab = Vocab.build(train, max_size=args.vocab_size)
    cell = lm.resolve_cell(args.cell)
    model = lm.RNNLM(vocab, cell, args.embed, args.hidden, args.layers, args.residual)
    print(f"corpus {args.corpus}: {len(train)} / {len(valid)} / {len(test)} sentences, "
          f"vocabulary {len(vocab)}; model {args.cell}, {args.layers} x {args.hidden} "
          f"(embed {args.embed}), {model.param_count():,} parameters")
    out = Path(args.out) if args.out else None
    start = time.perf_counter()
    history = lm.train(model, train, valid, epochs=args.epochs, batch_size=args.batch_size,
                       optimizer=args.optimizer, lr=args.lr, clip=args.clip, seed=args.seed,
                       dropout=args.dropout,
                       decay_after=args.decay_after, checkpoint=out / "checkpoint" if out else None)
    if out:   # evaluate the best epoch's parameters, which the checkpoint holds
        model = lm.RNNLM.load(out / "checkpoint", cell if not isinstance(cell, str) else None)
    metrics = {
        "valid_ppl": lm.evaluate(model, valid), "test_ppl": lm.evaluate(model, test),
        "tokens_per_s": sum(r["tokens_per_s"] for r in history) / len(history),
        "train_seconds": time.perf_counter() - start, "params": model.param_count(),
        "settings": {k: v for k, v in vars(args).items() if k != "func"},
        "runtime": runtime.describe(), "device": runtime.device(), "history": history,
    }
    print(f"held-out perplexity: valid {metrics['valid_ppl']:.2f}  test {metrics['test_ppl']:.2f}")
    if args.corpus == "course":
        from course.grammar import floor_perplexity
        print(f"the grammar's floor (no model can beat it in expectation): "
              f"test {floor_perplexity('test'):.2f}")
    if out:
        out.mkdir(parents=True, exist_ok=True)
        (out / "metrics.json").write_text(json.dumps(metrics, indent=1) + "\n")
        print(f"wrote {out / 'metrics.json'} and {out / 'checkpoint'}")
    return 0


def cmd_evaluate(args):
    from course import runtime
    runtime.init(seed=1, gpu=args.gpu or None)
    from course import lm
    model = lm.RNNLM.load(args.checkpoint)
    sentences = _read(args.corpus, args.split, args.max_sentences)
    print(f"{args.corpus} {args.split}: perplexity {lm.evaluate(model, sentences):.2f}")
    return 0


def cmd_make_corpus(args):
    from course.grammar import write_corpus
    write_corpus()
    return 0


def cmd_fetch(args):
    from course.corpora import fetch
    path = fetch(args.name, args.source)
    print(f"{args.name} verified and placed in {path}")
    return 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m course", description=__doc__)
    sub = top.add_subparsers(dest="command", required=True)

    p = sub.add_parser("train", help="train a language model, print its log, write metrics.json")
    p.add_argument("--cell", default="lstm",
                   help="srnn, lstm, gru (DyNet builders) or a hand-written cell name "
                        "(instructor checkout only)")
    _add_corpus(p)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--embed", type=int, default=64)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--layers", type=int, default=1)
    p.add_argument("--residual", choices=["vertical", "lateral"], default=None)
    p.add_argument("--optimizer", choices=["sgd", "adam"], default="adam")
    p.add_argument("--lr", type=float, default=None, help="default: 1.0 for sgd, 0.002 for adam")
    p.add_argument("--clip", type=float, default=5.0)
    p.add_argument("--dropout", type=float, default=0.0,
                   help="variational dropout on embeddings and layer outputs (training only)")
    p.add_argument("--decay-after", type=int, default=None,
                   help="halve the learning rate after every epoch past this one "
                        "(default: halve when held-out perplexity stops improving)")
    p.add_argument("--vocab-size", type=int, default=None)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--mem", type=int, default=512, help="MB of memory for DyNet")
    p.add_argument("--gpu", action="store_true", help="run on the GPU (needs a CUDA DyNet)")
    p.add_argument("--out", default=None, help="directory for metrics.json and the checkpoint")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("evaluate", help="perplexity of a checkpoint on a corpus split")
    p.add_argument("checkpoint")
    _add_corpus(p)
    p.add_argument("--split", default="test", choices=["train", "valid", "test"])
    p.add_argument("--gpu", action="store_true")
    p.set_defaults(func=cmd_evaluate)

    data = sub.add_parser("data", help="make the course corpus or fetch a real one")
    dsub = data.add_subparsers(dest="data_command", required=True)
    p = dsub.add_parser("make-corpus", help="regenerate data/course (byte for byte) from the grammar")
    p.set_defaults(func=cmd_make_corpus)
    p = dsub.add_parser("fetch", help="download or copy in a real corpus, verify it")
    p.add_argument("name", choices=["ptb", "wikitext-2"])
    p.add_argument("--from", dest="source", default=None,
                   help="a local directory or archive holding the files (no download)")
    p.set_defaults(func=cmd_fetch)
    return top


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except (FileNotFoundError, ValueError, RuntimeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
