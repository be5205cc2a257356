"""The capstone's one-minute recipes (lecture 10, section 4), measured.

Each recipe trains a builder language model on the whole course training split with
course.budget.train_for (course.training.train, Adam on shuffled, length-sorted batches,
gradient clipping at 5, until a budget of CPU time is spent: time.process_time(), one
core, the whole training loop, building the batches included), then scores the first 600
validation sentences. A recipe may lower its learning rate for the last part of the
budget ("anneal"): the run stops there and continues at the lower rate. The
table and bench/results/capstone_budget.json (what lecture 10 reads) are rewritten after
every recipe; recipes already measured are kept unless --again.

    .venv/bin/python bench/capstone_budget.py
"""
from __future__ import annotations

import argparse
import json

import numpy as np

from common import RESULTS, report, table

from course import budget, runtime
from course.settings import ModelSettings, Settings

OUT = RESULTS / "capstone_budget.json"
HELD_OUT = 600      # the first 600 validation sentences
#: label -> (the model, how it trains, CPU seconds, (anneal fraction, factor) or None); Adam, clipping at 5, seed 1
RECIPES = {
    "LSTM 64/128, batch 32, lr 0.002 (lm.train's defaults)":
        (ModelSettings("lstm", 64, 128), Settings(batch_size=32, lr=0.002), 60, None),
    "LSTM 64/128, batch 32, lr 0.005":
        (ModelSettings("lstm", 64, 128), Settings(batch_size=32, lr=0.005), 60, None),
    "LSTM 64/128, batch 64, lr 0.005":
        (ModelSettings("lstm", 64, 128), Settings(batch_size=64, lr=0.005), 60, None),
    "LSTM 128/128, batch 64, lr 0.005":
        (ModelSettings("lstm", 128, 128), Settings(batch_size=64, lr=0.005), 60, None),
    "LSTM 64/256, batch 64, lr 0.004":
        (ModelSettings("lstm", 64, 256), Settings(batch_size=64, lr=0.004), 60, None),
    "LSTM 64/128, 2 layers, batch 32, lr 0.005":
        (ModelSettings("lstm", 64, 128, 2), Settings(batch_size=32, lr=0.005), 60, None),
    "S-RNN 64/128, batch 32, lr 0.005":
        (ModelSettings("srnn", 64, 128), Settings(batch_size=32, lr=0.005), 60, None),
    "GRU 64/128, batch 64, lr 0.005":
        (ModelSettings("gru", 64, 128), Settings(batch_size=64, lr=0.005), 60, None),
    "GRU 64/128, batch 32, lr 0.005":
        (ModelSettings("gru", 64, 128), Settings(batch_size=32, lr=0.005), 60, None),
    "GRU 64/128, batch 16, lr 0.005":
        (ModelSettings("gru", 64, 128), Settings(batch_size=16, lr=0.005), 60, None),
    "GRU 64/128, batch 32, lr 0.01":
        (ModelSettings("gru", 64, 128), Settings(batch_size=32, lr=0.01), 60, None),
    "GRU 64/128, batch 32, lr 0.005, dropout 0.3":
        (ModelSettings("gru", 64, 128), Settings(batch_size=32, lr=0.005, dropout=0.3), 60, None),
    "GRU 64/128, batch 32, lr 0.005, lr ÷ 4 for the last fifth":
        (ModelSettings("gru", 64, 128), Settings(batch_size=32, lr=0.005), 60, (0.2, 0.25)),
    "LSTM 64/128, batch 32, lr 0.002, four minutes (4 × the budget)":
        (ModelSettings("lstm", 64, 128), Settings(batch_size=32, lr=0.002), 240, None),
}


def measure(label: str, train, held_out, vocab) -> dict:
    from course import evaluation, lm
    model_s, train_s, seconds, anneal = RECIPES[label]
    runtime.init(seed=1)
    model = lm.RNNLM.from_settings(vocab, model_s)
    tokens = budget.train_for(model, train, seconds, train_s, anneal=anneal).tokens
    return {"cell": model_s.cell, "embed": model_s.embed, "hidden": model_s.hidden, "layers": model_s.layers,
            "batch": train_s.batch_size, "lr": train_s.lr, "dropout": train_s.dropout, "cpu_seconds": seconds,
            "anneal": anneal, "params": model.param_count(), "tokens": tokens, "perplexity": evaluation.evaluate(model, held_out)}


def held_out_floor(held_out) -> float:
    from course.files import read_text
    from course.paths import COURSE_DATA
    logprobs = [float(x) for x in read_text(COURSE_DATA / "valid.logprob").split()[:len(held_out)]]
    return float(np.exp(-sum(logprobs) / sum(len(s) + 1 for s in held_out)))


def tables(results: dict) -> str:
    floor = results["floor"]
    rows = [[label, f"{r['params']:,}", f"{r['cpu_seconds']} s", f"{r['tokens'] / 1e6:.2f} M", f"{r['perplexity']:.2f}",
             f"{r['perplexity'] / floor:.2f}"] for label, r in results["recipes"].items()]
    return (f"Builder models of `course.lm` trained on the whole course training split for a budget of CPU "
            f"time (one core), then scored on the first {HELD_OUT} validation sentences (their floor: "
            f"{floor:.2f}). Adam, gradient clipping at 5, seed 1, through `course.training.train`, stopped by the "
            "clock. The budget counts the whole training loop's CPU time, building each padded batch "
            "included (before the engine ran these recipes, only the forward and backward passes and the "
            "updates counted). Annealing stops the run at its last fraction and resumes it at the lower "
            "rate: Adam's moment estimates start again from zero there (DyNet cannot carry them over), "
            "unlike a rate changed inside one run. The machine's 2 cores were shared with other work; "
            "CPU time is the process's own.\n\n"
            + table(["recipe", "parameters", "CPU budget", "tokens trained", "perplexity", "× floor"], rows))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--again", action="store_true", help="measure every recipe again")
    args = parser.parse_args(argv)
    runtime.init(seed=1, mem=1024)
    from course.corpora import read_corpus
    from course.data import Vocab
    train, held_out = read_corpus("course", "train"), read_corpus("course", "valid")[:HELD_OUT]
    vocab = Vocab.build(train)
    results = json.loads(OUT.read_text()) if OUT.exists() and not args.again else {"recipes": {}}
    results["floor"] = held_out_floor(held_out)
    for label in RECIPES:
        if label not in results["recipes"]:
            results["recipes"][label] = measure(label, train, held_out, vocab)
            results["recipes"] = {k: results["recipes"][k] for k in RECIPES if k in results["recipes"]}
            OUT.write_text(json.dumps(results, indent=1) + "\n")
            print(f"{label}: {results['recipes'][label]['perplexity']:.2f}", flush=True)
    report("capstone_budget", "The capstone's one-minute recipes", tables(results), "python bench/capstone_budget.py")


if __name__ == "__main__":
    main()
