"""What makes training faster without changing the model: the speed variants, each timed in a
fresh process (``bench/ptb.py --speed-worker``), the two LSTM layouts and the per-step softmax
that only this table uses, and the table with what it means for the runs."""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from common import machine, table
from penn.corpus import load_corpus
from penn.models import SMALL, Budget, build_model

from course import runtime
from course.sources import columns, stream_ids

SCRIPT = Path(__file__).resolve().parents[1] / "ptb.py"     # the command line that runs a worker

# Variants of one training segment, each timed on the same PTB segments. They compute
# the same model (except "batch", which changes the training itself, and is listed
# for information). Settings that DyNet reads at import (mem, autobatch) need a
# fresh process, so every variant runs in its own worker process.
SPEED_VARIANTS = [
    {"label": "builder LSTM (DyNet's VanillaLSTMBuilder: one stacked gate matrix, in C++)", "cell": "lstm"},
    {"label": "hand LSTM, one matrix per gate, affine_transform (the course's cell)", "cell": "hand-lstm"},
    {"label": "hand LSTM, one matrix per gate, W*x + U*h + b (no affine_transform)", "cell": "plain-lstm"},
    {"label": "hand LSTM, one stacked gate matrix, one affine_transform", "cell": "stacked-lstm"},
    {"label": "builder LSTM, one softmax per time step (20 softmaxes of 20 columns)", "cell": "lstm",
     "softmax": "step"},
    {"label": "builder LSTM, DyNet autobatch on", "cell": "lstm", "autobatch": 1},
    {"label": "builder LSTM, DyNet memory 256 MB (default 1024)", "cell": "lstm", "mem": 256},
    {"label": "builder LSTM, DyNet memory 4096 MB", "cell": "lstm", "mem": 4096},
    {"label": "builder LSTM, batch 40 (changes the training)", "cell": "lstm", "batch": 40},
    {"label": "builder LSTM, batch 80 (changes the training)", "cell": "lstm", "batch": 80},
    {"label": "the output layer alone (10k softmax of fixed inputs, no recurrent layer): the floor",
     "cell": "softmax-only"},
]
SPEED_DEFAULTS = {"softmax": "segment", "autobatch": 0, "mem": 1024, "batch": 20}


def _lstm_plain_step(p, x, state):
    """LSTM of tutorial eqs 54-55 with W*x + U*h + b instead of affine_transform (speed only)."""
    dy = runtime.dynet()
    h_prev, c_prev = state
    gate = {g: p["W_x" + g] * x + p["W_h" + g] * h_prev + p["b_" + g] for g in "uifo"}
    c = dy.cmult(dy.logistic(gate["i"]), dy.tanh(gate["u"])) + dy.cmult(dy.logistic(gate["f"]), c_prev)
    return (dy.cmult(dy.logistic(gate["o"]), dy.tanh(c)), c)


def _lstm_stacked_step(p, x, state):
    """LSTM of tutorial eqs 54-55 with the four gates in one (4 d_h, .) matrix (speed only)."""
    dy = runtime.dynet()
    h_prev, c_prev = state
    d = c_prev.dim()[0][0]
    z = dy.affine_transform([p["b"], p["W_x"], x, p["W_h"], h_prev])
    ifo = dy.logistic(dy.pickrange(z, 0, 3 * d))
    i, f, o = (dy.pickrange(ifo, k * d, (k + 1) * d) for k in range(3))
    c = dy.cmult(i, dy.tanh(dy.pickrange(z, 3 * d, 4 * d))) + dy.cmult(f, c_prev)
    return (dy.cmult(o, dy.tanh(c)), c)


def speed_cell(name: str):
    """A cell for the speed table: the two bench-only LSTM layouts, or a course cell."""
    from course import lm
    from course.cell import Cell
    if name == "plain-lstm":
        return Cell("plain-lstm", _lstm_plain_step,
                    lambda d_in, d_h: {k: v for g in "uifo" for k, v in
                                       {"W_x" + g: (d_h, d_in), "W_h" + g: (d_h, d_h), "b_" + g: (d_h,)}.items()},
                    n_state=2)
    if name == "stacked-lstm":
        return Cell("stacked-lstm", _lstm_stacked_step,
                    lambda d_in, d_h: {"W_x": (4 * d_h, d_in), "W_h": (4 * d_h, d_h), "b": (4 * d_h,)},
                    n_state=2)
    from autograder.reference.cells import make_cell
    return name if name in lm.BUILDERS else make_cell(name.removeprefix("hand-"))


def measure(variant: dict, vocab, train_sentences, segments_timed: int, config: Budget = SMALL) -> dict:
    """Training tokens per wall second and per CPU second of one variant on the first
    segments of the training stream, trained by course.training.train (one untimed segment
    first, to warm DyNet up)."""
    from course import lm, training
    variant = {**SPEED_DEFAULTS, **variant}
    config = config.but(batch_size=variant["batch"])
    if variant["cell"] == "softmax-only":
        return _measure_softmax(vocab, train_sentences, segments_timed, config)
    model = build_model("lstm", vocab, config, cell=speed_cell(variant["cell"]),
                        kind=step_softmax_class() if variant["softmax"] == "step" else lm.RNNLM)
    training.train(model, train_sentences, None, config.training.but(epochs=1, max_batches=1), progress=False,
                   log=None)
    row = training.train(model, train_sentences, None, config.training.but(epochs=1, max_batches=segments_timed),
                         progress=False, log=None)[0]
    return {"wall": row["tokens"] / row["seconds"], "cpu": row["tokens"] / row["cpu_seconds"]}


def step_softmax_class():
    from course import lm

    class StepSoftmax(lm.RNNLM):
        """The course's model with one softmax per time step instead of one per segment
        (the speed table's comparison; the same numbers)."""

        def batch_losses(self, batch, dropout: float = 0.0, final=None):
            dy = runtime.dynet()
            hs = self.hidden_states(batch.inputs, dropout, start=getattr(batch, "start", None), final=final)
            W, b = self.W_hs.expr(True), self.b_s.expr(True)
            losses = [dy.pickneglogsoftmax_batch(dy.affine_transform([b, W, h]), targets)
                      for h, targets in zip(hs, batch.targets)]
            return dy.concatenate_to_batch(losses), np.ones(len(hs) * batch.size)

        def _fits(self, batch) -> bool:
            return True
    return StepSoftmax


def _measure_softmax(vocab, train_sentences, segments_timed: int, config: Budget) -> dict:
    """Tokens/s of the softmax layer alone (forward, backward, SGD update) on fixed
    hidden vectors: what the output layer costs whatever the recurrent cell."""
    dy = runtime.dynet()
    model = build_model("lstm", vocab, config.but(layers=1), cell="srnn")
    batch, steps = config.training.batch_size, config.training.bptt
    trainer = dy.SimpleSGDTrainer(model.pc, config.training.lr)
    data = columns(stream_ids(train_sentences, vocab), batch)
    hidden = np.random.default_rng(1).uniform(-1, 1, (config.model.hidden, batch * steps))
    count, start, cpu_start = 0, None, None
    for k in range((data.shape[1] - 1) // steps):
        targets = data[:, k * steps + 1:(k + 1) * steps + 1]
        if k == 1:
            start, cpu_start = time.perf_counter(), time.process_time()
        if k > segments_timed:
            break
        dy.renew_cg()
        scores = dy.affine_transform([model.b_s.expr(True), model.W_hs.expr(True),
                                      dy.inputTensor(hidden, batched=True)])
        loss = dy.sum_batches(dy.pickneglogsoftmax_batch(scores, targets.T.reshape(-1).tolist()))
        loss.value()
        (loss * (1.0 / batch)).backward()
        trainer.update()
        count += targets.size if k >= 1 else 0
    return {"wall": count / (time.perf_counter() - start), "cpu": count / (time.process_time() - cpu_start)}


def speed_worker(index: int, segments_timed: int, corpus: str):
    variant = {**SPEED_DEFAULTS, **SPEED_VARIANTS[index]}
    runtime.init(seed=1, mem=variant["mem"], autobatch=bool(variant["autobatch"]))
    vocab, splits = load_corpus(corpus)
    # enough sentences for the timed segments at the largest batch
    need = (segments_timed + 2) * SMALL.training.bptt * variant["batch"]
    sentences, total = [], 0
    for s in splits["train"]:
        sentences.append(s)
        total += len(s) + 1
        if total > need:
            break
    print(json.dumps(measure(variant, vocab, sentences, segments_timed)))


def speed(rounds: int, segments_timed: int, corpus: str) -> dict:
    """Every variant, timed in its own process, ``rounds`` interleaved rounds (so
    background load hits all alike); returns the median tokens/s of each, per wall
    second and per CPU second."""
    results = {v["label"]: {"wall": [], "cpu": []} for v in SPEED_VARIANTS}
    for r in range(rounds):
        for index, variant in enumerate(SPEED_VARIANTS):
            out = subprocess.run([sys.executable, str(SCRIPT), "--speed-worker", str(index),
                                  "--speed-segments", str(segments_timed), "--corpus", corpus],
                                 capture_output=True, text=True, check=False)
            if out.returncode != 0:
                raise RuntimeError(f"speed worker for {variant['label']!r} failed:\n{out.stderr[-2000:]}")
            value = json.loads(out.stdout.strip().splitlines()[-1])
            for clock in ("wall", "cpu"):
                results[variant["label"]][clock].append(value[clock])
            print(f"round {r + 1}/{rounds}: {value['cpu']:7.0f} tokens per CPU s, {value['wall']:7.0f} "
                  f"per wall s  {variant['label']}", flush=True)
    return {"rounds": rounds, "segments": segments_timed, "machine": machine(),
            "load_average": os.getloadavg(),
            "tokens_per_cpu_s": {k: statistics.median(v["cpu"]) for k, v in results.items()},
            "tokens_per_s": {k: statistics.median(v["wall"]) for k, v in results.items()},
            "all": results}



def speed_table(result: dict) -> str:
    cpu, wall = result["tokens_per_cpu_s"], result["tokens_per_s"]
    base = cpu[SPEED_VARIANTS[0]["label"]]
    spread = {label: "{:,.0f} to {:,.0f}".format(min(v["cpu"]), max(v["cpu"]))
              for label, v in result.get("all", {}).items()}
    rows = [[label, f"{cpu[label]:,.0f}", spread.get(label, ""), f"{cpu[label] / base:.2f}x",
             f"{wall[label]:,.0f}"] for label in cpu]
    load = ", ".join(f"{x:.1f}" for x in result.get("load_average", []))
    return (f"Training tokens per second on the first {result['segments']} segments of the PTB training "
            f"stream (2 layers of 200, batch 20 unless stated, {SMALL.training.bptt} steps, 10k softmax, SGD); "
            f"each variant in a fresh process, median of {result['rounds']} interleaved rounds. The machine is shared "
            f"(load average {load} on 2 cores at the end), so the wall clock mostly measures the other "
            "programs: compare the tokens per CPU second (this process's own CPU time).\n\n"
            + table(["variant", "tokens / CPU s", "rounds' range", "vs the first row", "tokens / wall s"], rows)
            + "\n\n" + speed_notes(cpu))


def speed_notes(cpu: dict) -> str:
    """What the speed table means for the runs (the share of the softmax from the numbers)."""
    labels = [v["label"] for v in SPEED_VARIANTS]
    base, floor = cpu[labels[0]], cpu[labels[-1]]
    return ("What the runs keep: one softmax over the whole segment (course.lm's way; one softmax per "
            f"step runs at {cpu[labels[4]] / base:.2f}x), DyNet's defaults otherwise (autobatch off: "
            "it finds nothing to batch in a graph that is batched already; memory 1024 MB) and the "
            "course's own reference cells. How the LSTM's gates are laid out (DyNet's builder, one "
            "matrix per gate, one stacked matrix, with or without affine_transform) changes little "
            "next to the spread between rounds on this shared machine. Larger batches change the "
            "training (Zaremba's is 20), so they are listed, not used. What remains is the 10k-word "
            f"softmax: the output layer alone runs at {floor:,.0f} tokens per CPU second, about "
            f"{base / floor:.0%} of the cost of a whole training step; only a faster matrix product "
            "(DyNet built with a BLAS, or a GPU) would shorten it.")
