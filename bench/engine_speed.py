"""The one engine against the loops it replaced: the same runs, side by side.

Two runs, each trained by the old loop (the code at commit c5fa832, read from git) and
by ``course.training.train`` (today's bench/converge.py and bench/ptb.py), every repeat in a
fresh process, old and new taking turns so that the machine's other work hits both
alike:

* converge: the course corpus, the hand-written LSTM 128/256 of bench/converge.py, Adam,
  2 epochs (seed 1) on the first ``--max-sentences`` sentences of each split;
* ptb: Penn Treebank as Zaremba's stream (2 x 200 hand-written LSTM, 20 rows, segments of
  20 steps, SGD at rate 1), the first ``--segments`` segments of the first epoch.

It prints, and writes to bench/results/engine_speed.md, the perplexities of each run
(which must agree) and the median training tokens per second of each.

    python bench/engine_speed.py                  # 5 repeats
    python bench/engine_speed.py --repeats 3 --max-sentences 2000 --segments 100
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, report, table
from penn.corpus import find_source, load_corpus

OLD = "c5fa832"          # the last commit with the old loops
BENCH = Path(__file__).resolve().parent
MEMORY = {"converge": 1536, "ptb": 1024}      # DyNet's memory (MB) for each run


def old_module(name: str, folder: Path):
    """bench/NAME.py as it was at OLD, imported from ``folder`` as NAME_old."""
    text = subprocess.run(["git", "show", f"{OLD}:bench/{name}.py"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout
    path = folder / f"{name}_old.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(f"{name}_old", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def converge_worker(which: str, max_sentences: int, folder: Path) -> dict:
    """One converge run of 2 epochs; its per-epoch perplexities and tokens/s."""
    converge = old_module("converge", folder) if which == "old" else __import__("converge")
    if which == "old":          # the old bench's schedule was a dict
        converge.SCHEDULE["max_epochs"] = 2
    else:
        converge.TRAINING = converge.TRAINING.but(epochs=2)
    splits = converge.load_splits(max_sentences)
    record = converge.run("lstm", 1, splits, folder / "records", folder / "work", max_sentences=max_sentences,
                          log=None)
    rows = record["epochs"]
    return {"train_ppl": [r["train_ppl"] for r in rows], "valid_ppl": [r["valid_ppl"] for r in rows],
            "tokens_per_s": statistics.mean(r["tokens_per_s"] for r in rows),
            "tokens_per_cpu_s": statistics.mean(r["tokens_per_s"] * r["train_seconds"] / r["train_cpu_seconds"]
                                                for r in rows),
            "train_cpu_seconds": sum(r["train_cpu_seconds"] for r in rows)}


def ptb_worker(which: str, segments: int, folder: Path) -> dict:
    """The first ``segments`` segments of Zaremba's first PTB epoch; the training perplexity
    over them and tokens/s."""
    from penn.models import SMALL, build_model

    from course import evaluation, runtime, training
    vocab, splits = load_corpus(find_source())
    if which == "old":
        old = old_module("ptb", folder)
        model = old.build_model("lstm", vocab, old.SMALL)
        dy = runtime.dynet()
        trainer = dy.SimpleSGDTrainer(model.pc, old.SMALL["lr"])
        trainer.set_clip_threshold(old.SMALL["clip"])
        data = old.columns(old.stream(splits["train"], vocab), old.SMALL["batch"])
        nll, count, seconds, cpu = old.train_epoch(model, trainer, data, old.SMALL["steps"], max_segments=segments)
        return {"train_ppl": [evaluation.perplexity(nll, count)], "tokens_per_s": count / seconds,
                "tokens_per_cpu_s": count / cpu}
    model = build_model("lstm", vocab, SMALL)
    row = training.train(model, splits["train"], None, SMALL.training.but(epochs=1, max_batches=segments),
                         progress=False, log=None)[0]
    return {"train_ppl": [row["train_ppl"]], "tokens_per_s": row["tokens_per_s"],
            "tokens_per_cpu_s": row["tokens"] / row["cpu_seconds"], "train_cpu_seconds": row["cpu_seconds"]}


def count_work() -> dict:
    """Count the CPU seconds of what the old loops did too: each batch's forward and backward pass
    (``RNNLM.train_step``) and the trainer's update. The rest of the engine's training time is its
    own bookkeeping (building each batch when it is used, the hooks, the progress bar)."""
    from course import lm
    spent = {"work": 0.0}

    def timed(function):
        def run(*args, **options):
            start = time.process_time()
            try:
                return function(*args, **options)
            finally:
                spent["work"] += time.process_time() - start
        return run

    class Trainer:                      # DyNet's trainers cannot be subclassed from Python
        def __init__(self, real, *args):
            object.__setattr__(self, "real", real(*args))
            object.__setattr__(self, "update", timed(self.real.update))

        def __getattr__(self, name):
            return getattr(self.real, name)

        def __setattr__(self, name, value):
            setattr(self.real, name, value)
    for name in ("AdamTrainer", "SimpleSGDTrainer"):
        real = getattr(lm.dy, name)
        setattr(lm.dy, name, lambda *args, real=real: Trainer(real, *args))
    lm.RNNLM.train_step = timed(lm.RNNLM.train_step)
    return spent


def worker(args) -> None:
    from course import runtime
    runtime.init(seed=1, mem=MEMORY[args.worker])            # before course.lm, which starts DyNet
    spent = count_work() if args.which == "new" else None
    with tempfile.TemporaryDirectory() as folder:
        result = (converge_worker(args.which, args.max_sentences, Path(folder)) if args.worker == "converge"
                  else ptb_worker(args.which, args.segments, Path(folder)))
    if spent:
        result["engine_share"] = 1 - spent["work"] / result["train_cpu_seconds"]
    print(json.dumps(result))


def measure(run: str, repeats: int, extra: list) -> dict:
    results = {"old": [], "new": []}
    for r in range(repeats):
        for which in ("old", "new"):
            done = subprocess.run([sys.executable, __file__, "--worker", run, "--which", which, *extra],
                                  cwd=BENCH, capture_output=True, text=True)
            if done.returncode:
                raise RuntimeError(f"{run} {which} failed:\n{done.stderr[-3000:]}")
            results[which].append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(f"{run} {which} repeat {r + 1}: {results[which][-1]}", flush=True)
    return results


def summary(name: str, results: dict) -> list:
    speed = {(w, clock): statistics.median(x[clock] for x in results[w])
             for w in ("old", "new") for clock in ("tokens_per_s", "tokens_per_cpu_s")}
    ppl = {w: results[w][0] for w in ("old", "new")}
    keys = [k for k in ("train_ppl", "valid_ppl") if k in ppl["old"]]
    same = all(x[k] == ppl[w][k] for w in ("old", "new") for x in results[w] for k in keys)   # every repeat
    shown = "; ".join(f"{k.split('_')[0]} " + " / ".join(f"{a:.4f}" for a in ppl["old"][k]) for k in keys)
    differs = max(abs(a - b) / a for k in keys for a, b in zip(ppl["old"][k], ppl["new"][k]))
    return [name, shown, "identical" if differs == 0 else f"differs by {differs:.1e} (relative)",
            "yes" if same else "no"] + [
        f"{speed['old', clock]:,.0f} / {speed['new', clock]:,.0f} = {speed['new', clock] / speed['old', clock]:.2f}x"
        for clock in ("tokens_per_cpu_s", "tokens_per_s")] + [
        f"{statistics.median(x['engine_share'] for x in results['new']):.2%}"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--max-sentences", type=int, default=2000)
    parser.add_argument("--segments", type=int, default=100)
    parser.add_argument("--runs", default="converge,ptb")
    parser.add_argument("--worker", choices=["converge", "ptb"], help=argparse.SUPPRESS)
    parser.add_argument("--which", choices=["old", "new"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args)
    extra = ["--max-sentences", str(args.max_sentences), "--segments", str(args.segments)]
    rows = []
    for run in args.runs.split(","):
        if run == "ptb" and find_source() is None:
            print("no Penn Treebank copy: the ptb run is left out (python -m course data fetch ptb --from DIR)")
            continue
        label = (f"converge: LSTM 128/256, Adam, 2 epochs, {args.max_sentences:,} sentences" if run == "converge"
                 else f"ptb: Zaremba's small LSTM, SGD, stream, first {args.segments} segments")
        rows.append(summary(label, measure(run, args.repeats, extra)))
    body = (f"Each run trained by the old loop (bench/*.py at commit {OLD}) and by `course.training.train`, "
            f"{args.repeats} repeats each in a fresh process, old and new in turn. Perplexities: the old "
            "loop's, per epoch (train; valid), and how far the engine's are from them. Speed: training "
            "tokens (evaluation excluded) per second of this process's CPU time, and per wall second, "
            "old / engine, the medians. The machine's 2 cores are shared with other work, so the wall "
            "clock counts the time others held the core: the CPU column is the comparison. The engine's "
            "own share: its training CPU time outside what the old loops did too (each batch's forward "
            "and backward pass, `RNNLM.train_step`, and the trainer's update), counted in the same runs: "
            "building each batch when it is used (the old converge loop built them all before its clock "
            "started), the hooks and the bookkeeping.\n\n"
            + table(["run", "perplexities (old loop)", "engine's", "same in every repeat",
                     "tokens per CPU s: old / engine", "tokens per wall s: old / engine",
                     "engine's own share of its training CPU"], rows))
    command = f"python bench/engine_speed.py --repeats {args.repeats} --max-sentences {args.max_sentences} " \
              f"--segments {args.segments}"
    report("engine_speed", "One engine against the loops it replaced", body, command)


if __name__ == "__main__":
    main()
