"""Sentences written by the S-RNN, the LSTM and the GRU, judged by the course grammar.

Each model is trained by the real command line (`python -m course train`) on the course
corpus, small and briefly (the converged checkpoints of bench/converge.py are not kept),
then draws --n sentences at each temperature, which `course.judge` scores: the share
the grammar derives, their log-probability under the grammar against the grammar's own
sentences, number agreement kept at long subject-verb distances (in derivable sentences
and in those that one verb form away from derivable), and the divergence of the model,
restricted to the language, from the grammar. The runs stay in runs/samples/ (not
committed) and are reused when finished with the same settings.

    .venv/bin/python bench/samples.py [--cells srnn,lstm,gru] [--epochs 1] [--hidden 64] [--n 1000]
"""
import argparse
import json
import subprocess
import sys
from pathlib import Path

from common import RESULTS, ROOT, report, table

TEMPERATURES = (0.7, 1.0, 1.3)
#: the converged models sampled with --converged: runs of bench/converge.py (seed 1)
CONVERGED = ("srnn", "lstm", "gru", "lstm-srnn", "ran-identity")


def train_converged(name: str, folder: Path):
    """Seed 1 of bench/converge.py's run NAME again, exactly as its main() trains it, but with
    its record and checkpoints in FOLDER (bench/converge.py keeps only its best epoch's
    parameters there, as NAME-s1/best.dy). Resumable per epoch like any converge run."""
    import converge
    from course import runtime
    runtime.init(seed=1, mem=1536)
    converge.run(name, 1, converge.load_splits(), records=folder, work=folder,
                 log=lambda line: print(line, flush=True))


def train(cell: str, args) -> dict:
    out = ROOT / "runs" / "samples" / cell
    metrics = out / "metrics.json"
    wanted = {"cell": cell, "epochs": args.epochs, "hidden": args.hidden, "embed": args.hidden}
    done = json.loads(metrics.read_text()) if metrics.is_file() else {}
    if done.get("status") != "finished" or any(done["settings"][k] != v for k, v in wanted.items()):
        size = ["--hidden", str(args.hidden), "--embed", str(args.hidden)]
        command = [sys.executable, "-m", "course", "train", "--cell", cell, "--corpus", "course", *size,
                   "--epochs", str(args.epochs), "--no-progress", "--out", str(out), "--overwrite"]
        subprocess.run(command, cwd=ROOT, check=True)
    return json.loads(metrics.read_text())


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cells", default="srnn,lstm,gru")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--long", type=int, default=6)
    parser.add_argument("--converged", type=Path, metavar="DIR",
                        help="sample the converged models of bench/converge.py whose records and checkpoints "
                             "are in DIR (see --train) instead of training small ones")
    parser.add_argument("--train", choices=CONVERGED, metavar="NAME",
                        help=f"with --converged DIR: train seed 1 of NAME ({', '.join(CONVERGED)}) into DIR "
                             "and stop; one run per process, as bench/converge.py's main runs them")
    args = parser.parse_args()
    if args.train:
        if not args.converged:
            parser.error("--train NAME needs --converged DIR, the folder its record and checkpoints go to")
        train_converged(args.train, args.converged)
        return
    from course import runtime
    runtime.init(seed=1)
    from course import judge, lm
    from course.grammar import Grammar, floor_perplexity
    grammar = Grammar()
    seconds = {}
    rows, records = [], []
    for cell in args.cells.split(","):
        metrics = train(cell, args)
        seconds[cell] = metrics["train_seconds"]
        model = lm.RNNLM.load(ROOT / "runs" / "samples" / cell / "checkpoint")
        for temperature in TEMPERATURES:
            samples = lm.sample(model, args.n, temperature, seed=1)
            v = judge.judge(grammar, samples, args.long, seed=1)
            records.append({"cell": cell, "temperature": temperature, "test_ppl": metrics["test_ppl"],
                            "epochs": len(metrics["history"]), **v})
            a = v["agreement"]["long"]
            counted = a["kept"] + a["lost"]
            rows.append([cell, f"{metrics['test_ppl']:.2f}", f"{temperature:g}",
                         judge.interval((v["derivable_share"], *v["derivable_interval"]), ".1%"),
                         judge.interval(v["logprob"], ".1f"),
                         f"{a['kept']} / {counted}" + (f" = {judge.interval((a['share'], *a['interval']), '.1%')}"
                                                       if counted else ""),
                         judge.interval(v["kl"])])
            print(" | ".join(rows[-1]), flush=True)
    own = records[0]["grammar_logprob"]
    body = (f"Each model: 1 layer, embed = hidden = {args.hidden}, Adam at its default rate, batch 32, "
            f"{args.epochs} epoch(s) over the course corpus's training split (`python -m course train`). "
            "These models are small and trained briefly: they are NOT the converged models of "
            "`bench/converge.md` (whose checkpoints are gone), and their numbers say what a few minutes of "
            f"training give, not what the cells can reach. {args.n} sentences per row, seed 1, no top-k.\n\n"
            + table(["cell", "test perplexity", "temperature", "derivable (95%)",
                     "log p_grammar of derivable (nats/sentence)",
                     f"agreement kept, distance >= {args.long}", "KL(model in the language || grammar), nats"],
                    rows)
            + f"\n\nThe grammar's own sentences: log p_grammar {own[0]:.1f} [{own[1]:.1f}, {own[2]:.1f}] nats per "
              f"sentence (1,000 drawn with seed 1); its test floor perplexity is {floor_perplexity('test'):.2f}. "
              f"Training took {', '.join(f'{r}: {s:.0f} s' for r, s in seconds.items())} of wall time.\n\n"
              "Derivable: the grammar's parser derives the sentence (Wilson interval). Agreement: subject-verb "
              "number and subject-reflexive gender, counted in derivable sentences (kept) and in sentences that one "
              "verb or reflexive in its other form makes derivable (lost there, kept elsewhere). KL: the model's "
              "distribution at that temperature restricted to the language and renormalised, against the grammar: "
              "mean(log p_model - log p_grammar) over derivable samples - log(share derivable), with a bootstrap "
              "interval; over all sentences it is infinite, as every row has samples outside the language.")
    report("samples", "Generated sentences judged by the grammar", body,
           f"python bench/samples.py --epochs {args.epochs} --hidden {args.hidden} --n {args.n}")
    (RESULTS / "samples.json").write_text(json.dumps(records, indent=1) + "\n")


if __name__ == "__main__":
    main()
