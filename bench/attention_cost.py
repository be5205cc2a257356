"""The cost per token of a recurrent layer and of causal self-attention against the sentence's length.

An LSTM reads a sentence in T steps of the same work: its time and memory per token should stay
flat as T grows. Self-attention scores every position against every earlier one, T^2 scores per
head: its time and memory per token should grow with T (seed 002, section 4: "linear" against
"quadratic"). Measured here on one layer of width 128 and a batch of 8 sentences of random inputs,
forward and backward (the loss is the sum of the outputs):

* "lstm": DyNet's VanillaLSTMBuilder, one step per position;
* "attention": course.layers.CausalAttention with 4 heads, the whole sentence at once.

Time: the median of --repeats runs, the two layers run side by side (one after the other at
each length and repeat, in this process). Memory: DyNet computes in a memory pool it allocated
at the start, and a page of it counts in the process's resident memory once it is written; so
each (layer, length) runs once in a child process of its own, and the figure is that child's
peak resident memory (VmHWM, Linux) after the run less its peak after a run at length 2: what the
graph of that length wrote.

    .venv/bin/python bench/attention_cost.py [--lengths 16,32,64,128,256,512] [--repeats 5]

Writes bench/results/attention_cost.md and .json (the lecture reads the JSON).
"""
import argparse
import json
import statistics
import subprocess
import sys
import time

from common import RESULTS, ROOT, report, table

D, HEADS, BATCH = 128, 4, 8
# The peak is the process's own (VmHWM, reset by exec): getrusage's ru_maxrss keeps the parent's
# peak across fork and exec, which hid every child's figure behind this process's.
CHILD = """
import json, sys
from course import runtime
dy = runtime.init(seed=1, mem=2048)
sys.path.insert(0, "bench")
from attention_cost import make_layers, one_pass, peak_kib
layers = make_layers()
one_pass(layers[sys.argv[1]], 2)
before = peak_kib()
one_pass(layers[sys.argv[1]], int(sys.argv[2]))
print(json.dumps({"kib": peak_kib() - before}))
"""


def peak_kib() -> int:
    """This process's peak resident memory so far, KiB (Linux: VmHWM in /proc/self/status)."""
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status: the memory column needs Linux")


def make_layers():
    from course import runtime
    from course.layers import CausalAttention
    dy = runtime.dynet()
    pc = dy.ParameterCollection()
    return {"lstm": ("lstm", dy.VanillaLSTMBuilder(1, D, D, pc), pc),
            "attention": ("attention", CausalAttention(pc, D, D, heads=HEADS), pc)}


def one_pass(layer, T: int, rng=None):
    """Forward and backward of one layer over a batch of sentences of T random inputs."""
    import numpy as np
    from course import runtime
    dy = runtime.dynet()
    kind, model, _ = layer
    rng = rng or np.random.default_rng(T)
    dy.renew_cg()
    xs = [dy.inputTensor(x, batched=True) for x in rng.normal(size=(T, D, BATCH))]
    if kind == "lstm":
        hs = model.initial_state().transduce(xs)
    else:
        _, hs = model.run(model.start(BATCH), xs)
    loss = dy.sum_batches(dy.sum_elems(dy.esum(hs)))
    loss.forward()
    loss.backward()


def child_memory(kind: str, T: int) -> float:
    run = subprocess.run([sys.executable, "-c", CHILD, kind, str(T)], cwd=ROOT, capture_output=True, text=True,
                         timeout=600)
    if run.returncode != 0:
        raise RuntimeError(run.stderr[-2000:])
    return json.loads(run.stdout.strip().splitlines()[-1])["kib"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default="16,32,64,128,256,512")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    lengths = [int(n) for n in args.lengths.split(",")]
    from course import runtime
    runtime.init(seed=1, mem=2048)
    layers = make_layers()
    times = {(kind, T): [] for kind in layers for T in lengths}
    for layer in layers.values():
        one_pass(layer, 8)                                   # warm up
    for T in lengths:
        for _ in range(args.repeats):
            for kind, layer in layers.items():               # side by side
                start = time.perf_counter()
                one_pass(layer, T)
                times[kind, T].append(time.perf_counter() - start)
    rows, records = [], []
    for T in lengths:
        record = {"length": T}
        for kind in layers:
            seconds = statistics.median(times[kind, T])
            kib = child_memory(kind, T)
            record[kind] = {"us_per_token": 1e6 * seconds / (T * BATCH), "kib_per_token": kib / (T * BATCH),
                            "seconds": seconds, "kib": kib}
        records.append(record)
        rows.append([T] + [f"{record[k]['us_per_token']:.1f}" for k in layers]
                    + [f"{record[k]['kib_per_token']:.2f}" for k in layers])
    first, last = records[0], records[-1]
    growth = {k: last[k]["us_per_token"] / first[k]["us_per_token"] for k in layers}
    body = (f"One layer of width {D} (attention: {HEADS} heads), a batch of {BATCH} sentences of random inputs, "
            f"forward and backward. Time: median of {args.repeats} runs, both layers side by side at each length. "
            "Memory: the peak resident memory a child process gained running one pass at that length, beyond "
            "a pass at length 2 (DyNet's pool counts once written).\n\n"
            + table(["length T", "LSTM µs/token", "attention µs/token", "LSTM KiB/token", "attention KiB/token"],
                    rows)
            + f"\n\nFrom T = {lengths[0]} to T = {lengths[-1]} the time per token changed by "
              f"{growth['lstm']:.2f}x for the LSTM and {growth['attention']:.2f}x for attention.")
    report("attention_cost", "The cost per token against length: LSTM and causal self-attention", body,
           "python bench/attention_cost.py " + " ".join(sys.argv[1:]))
    (RESULTS / "attention_cost.json").write_text(json.dumps(
        {"d": D, "heads": HEADS, "batch": BATCH, "repeats": args.repeats, "rows": records}, indent=1) + "\n")


if __name__ == "__main__":
    main()
