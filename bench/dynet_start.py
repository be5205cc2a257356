"""What DyNet's starting memory costs each process that starts DyNet (every notebook, command,
grading sandbox and test run): the CPU seconds of ``runtime.init`` and the process's peak memory,
for a few values of ``mem``, in fresh processes taken in turn; and a training step that needs more
than the smallest start, whose losses must be the same at every start (the pools grow as needed).

    python bench/dynet_start.py [--mems 512,64,16] [--rounds 5]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

from common import ROOT, report, table

PROBE = r"""
import json, resource, sys, time
from course import runtime
t = time.process_time()
dy = runtime.init(seed=1, mem=int(sys.argv[1]))
start = time.process_time() - t
rss_start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
# an LSTM step whose graph needs well over 16 MB: 35 steps of a batch of 32, hidden 256, 5,000 words
import numpy as np
m = dy.ParameterCollection()
lstm = dy.VanillaLSTMBuilder(1, 64, 256, m)
E, W = m.add_lookup_parameters((5000, 64)), m.add_parameters((5000, 256))
trainer, rng, losses = dy.AdamTrainer(m), np.random.default_rng(1), []
for _ in range(3):
    dy.renew_cg()
    s, ids, step = lstm.initial_state(), rng.integers(0, 5000, size=(35, 32)), []
    for k in range(34):
        s = s.add_input(dy.lookup_batch(E, list(ids[k])))
        step.append(dy.pickneglogsoftmax_batch(W * s.output(), list(ids[k + 1])))
    loss = dy.sum_batches(dy.esum(step))
    losses.append(loss.value())
    loss.backward()
    trainer.update()
print(json.dumps({"start_cpu_s": start, "rss_start_mb": rss_start, "losses": losses,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mems", default="512,64,16", help="comma-separated MB to start DyNet with")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    mems = [int(m) for m in args.mems.split(",")]
    runs = {m: [] for m in mems}
    for _ in range(args.rounds):
        for m in mems:                       # in turn, so that the machine's load falls on each alike
            done = subprocess.run([sys.executable, "-c", PROBE, str(m)], cwd=ROOT, capture_output=True,
                                  text=True, check=True)
            runs[m].append(json.loads(done.stdout.splitlines()[-1]))
    first = runs[mems[0]][0]["losses"]
    matches = {m: all(r["losses"] == first for r in runs[m]) for m in mems}
    same = all(matches.values())
    rows = [[f"{m:,}", f"{statistics.median(r['start_cpu_s'] for r in runs[m]):.2f}",
             f"{statistics.median(r['rss_start_mb'] for r in runs[m]):,}",
             f"{statistics.median(r['rss_mb'] for r in runs[m]):,}", "yes" if matches[m] else "NO"] for m in mems]
    body = (table(["mem (MB)", "CPU s to start DyNet (median)", "peak MB after the start",
                   "peak MB after 3 training steps", f"losses as with {mems[0]:,} MB"], rows)
            + f"\n\n{args.rounds} rounds, the values in turn in each; losses of the 3 steps at {mems[0]:,} MB: "
            + ", ".join(f"{x:.3f}" for x in first) + "."
            + ("" if same else "\n\n**The losses differ between starts.**"))
    report("dynet_start", "What DyNet's starting memory costs a process", body,
           f"python bench/dynet_start.py --mems {args.mems} --rounds {args.rounds}")
    if not same:
        sys.exit("the losses differ between starting sizes")


if __name__ == "__main__":
    main()
