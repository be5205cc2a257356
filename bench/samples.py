"""Sentences written by the converged S-RNN, LSTM, GRU and LSTM - S-RNN, judged by the grammar.

The models are runs of bench/converge.py (seed 1: S-RNN, LSTM, GRU and the ablation LSTM -
S-RNN of chapter 08), trained again exactly as bench/converge.py trains them, since its checkpoints
are not committed: each run goes to --converged DIR (default runs/converge-samples/, not
committed), one process per run, one run at a time, resumable per epoch; a run whose record
there is finished is reused. The best epoch on valid (as in bench/converge.md) draws --n
sentences at each temperature, which `course.judge` scores: the share the grammar derives,
their log-probability under the grammar against the grammar's own sentences, number agreement
kept at long subject-verb distances (in derivable sentences and in those that one verb form
away from derivable), and the divergence of the model, restricted to the language, from the
grammar.

    .venv/bin/python bench/samples.py [--models srnn,lstm,...] [--n 2000] [--converged DIR]
    .venv/bin/python bench/samples.py --train lstm     # only train (or continue) one run
"""
import argparse
import json
import subprocess
import sys
from pathlib import Path

from common import RESULTS, ROOT, report, table

TEMPERATURES = (0.7, 1.0, 1.3)
#: the converged models sampled: runs of bench/converge.py (seed 1)
CONVERGED = ("srnn", "lstm", "gru", "lstm-srnn", "ran-identity")
SEED = 1


def record_of(name: str, folder: Path) -> dict:
    path = folder / f"{name}-s{SEED}.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def train_converged(name: str, folder: Path):
    """Seed 1 of bench/converge.py's run NAME again, exactly as its main() trains it, but with
    its record and checkpoints in FOLDER (bench/converge.py keeps only its best epoch's
    parameters there, in NAME-s1/checkpoint/). Resumable per epoch like any converge run."""
    import converge
    from course import runtime
    runtime.init(seed=SEED, mem=1536)
    converge.run(name, SEED, converge.load_splits(), records=folder, work=folder,
                 log=lambda line: print(line, flush=True))


def committed_match(name: str, folder: Path) -> str:
    """How close the retrained run is to the committed record of bench/converge.py."""
    ours, committed = record_of(name, folder), json.loads((RESULTS / "converge" / f"{name}-s{SEED}.json").read_text())
    pairs = list(zip(ours["epochs"], committed["epochs"]))
    first = next((i for i, (a, b) in enumerate(pairs) if a["valid_ppl"] != b["valid_ppl"]), None)
    gaps = ", ".join(f"{abs(a['valid_ppl'] / b['valid_ppl'] - 1):.2%}" for a, b in pairs)
    resumed = [r["epoch"] for r in committed["epochs"] if r["resumed"]]
    return (f"on {ours['machine'].split(',')[0]} (committed: {committed['machine'].split(',')[0]}): "
            f"{len(ours['epochs'])} epochs (committed: {len(committed['epochs'])}), best {ours['final']['best_epoch']} "
            f"(committed: {committed['final']['best_epoch']}); valid perplexity per epoch "
            + ("identical" if first is None else f"differs from epoch {first + 1} on, by {gaps}")
            + f"; test {ours['final']['test_ppl']:.2f} (committed: {committed['final']['test_ppl']:.2f})"
            + (f"; the committed run was resumed at epoch(s) {resumed} (Adam restarted)" if resumed else ""))


def judged_samples(name: str, run: dict, folder: Path, args, splits) -> list:
    """The grammar's verdict on --n sentences of the run's best epoch at each temperature, one
    record each; kept in FOLDER/NAME-s1-samples.json and reused for the same run and settings."""
    import converge
    from converge_inside import load_best
    from course import judge, sampling
    from course.grammar import Grammar
    cache = folder / f"{name}-s{SEED}-samples.json"
    key = {"n": args.n, "long": args.long, "temperatures": TEMPERATURES, "run": run["final"]["finished_at"]}
    saved = json.loads(cache.read_text()) if cache.is_file() else {}
    if saved.get("key") == json.loads(json.dumps(key)):
        return saved["records"]
    model, grammar, final, records = load_best(name, SEED, splits, work=folder), Grammar(), run["final"], []
    for temperature in TEMPERATURES:
        verdict = judge.judge(grammar, sampling.sample(model, args.n, temperature, seed=SEED), args.long, seed=SEED)
        records.append({"cell": name, "label": converge.MODELS[name][0], "converged": True,
                        "temperature": temperature, "test_ppl": final["test_ppl"], "valid_ppl": final["valid_ppl"],
                        "epochs": len(run["epochs"]), "best_epoch": final["best_epoch"], **verdict})
    cache.write_text(json.dumps({"key": key, "records": records}) + "\n")
    return records


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(CONVERGED), help=f"comma-separated, from {', '.join(CONVERGED)}")
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--long", type=int, default=6)
    parser.add_argument("--converged", type=Path, metavar="DIR", default=ROOT / "runs" / "converge-samples",
                        help="the folder of the runs' records and checkpoints (default runs/converge-samples)")
    parser.add_argument("--train", choices=CONVERGED, metavar="NAME",
                        help=f"only train (or continue) seed 1 of NAME ({', '.join(CONVERGED)}) into --converged, "
                             "in this process")
    args = parser.parse_args()
    folder = args.converged.resolve()
    if args.train:
        train_converged(args.train, folder)
        return
    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in CONVERGED]
    if unknown:
        parser.error(f"unknown model(s) {unknown}: choose from {', '.join(CONVERGED)}")
    for name in names:            # one process per run, one at a time, as bench/converge.py runs them
        if "final" not in record_of(name, folder):
            subprocess.run([sys.executable, __file__, "--converged", str(folder), "--train", name], check=True)
    from course import runtime
    runtime.init(seed=SEED)
    import converge
    from course import judge
    from course.grammar import floor_perplexity
    splits = converge.load_splits()
    rows, records, trained = [], [], []
    for name in names:
        run = record_of(name, folder)
        trained.append(f"{converge.MODELS[name][0]}: {committed_match(name, folder)}")
        print(trained[-1], flush=True)
        judged = judged_samples(name, run, folder, args, splits)
        records += judged
        for r in judged:
            kept = []
            for key in ("long", "long number", "long gender"):
                a = r["agreement"][key]
                counted = a["kept"] + a["lost"]
                kept.append(f"{a['kept']} / {counted}" + (f" = {judge.interval((a['share'], *a['interval']), '.1%')}"
                                                          if counted else ""))
            rows.append([r["label"], f"{r['test_ppl']:.2f}", f"{r['temperature']:g}",
                         judge.interval((r["derivable_share"], *r["derivable_interval"]), ".1%"),
                         judge.interval(r["logprob"], ".1f"), *kept, judge.interval(r["kl"])])
            print(" | ".join(rows[-1]), flush=True)
    own = records[0]["grammar_logprob"]
    size = converge.BASE
    body = (f"Every model here is CONVERGED: seed 1 of the runs of `bench/converge.py` (`bench/results/converge.md`), "
            f"1 layer, embed {size['embed']}, hidden {size['hidden']}, the course's hand-written cells, Adam at "
            f"{converge.SCHEDULE['lr']} halved after every epoch without a gain on valid, stopped at the third; "
            "the best epoch on valid samples. Its checkpoints are not committed, so each run was trained again "
            "the same way (`python bench/samples.py --train NAME`); the test perplexity below is the retrained "
            f"run's. {args.n} sentences per row, seed 1, no top-k.\n\n"
            + table(["model (converged)", "test perplexity", "temperature", "derivable (95%)",
                     "log p_grammar of derivable (nats/sentence)",
                     f"agreement kept, distance >= {args.long}, both tasks", "of which number (subject-verb)",
                     "of which reflexive gender", "KL(model in the language || grammar), nats"],
                    rows)
            + f"\n\nThe grammar's own sentences: log p_grammar {own[0]:.1f} [{own[1]:.1f}, {own[2]:.1f}] nats per "
              f"sentence (1,000 drawn with seed 1); its test floor perplexity is {floor_perplexity('test'):.2f}.\n\n"
              "The retrained runs against the committed records of `bench/converge.py` (`bench/results/converge/`): "
              "the same seed, code and schedule, but floating-point sums that differ between processors, so the "
              "valid perplexities differ slightly from the first epoch on:\n\n"
            + "\n".join(f"* {line}" for line in trained)
            + "\n\nDerivable: the grammar's parser derives the sentence (Wilson interval). Agreement: subject-verb "
              "number and subject-reflexive gender, counted in derivable sentences (kept) and in sentences that one "
              "verb or reflexive in its other form makes derivable (lost there, kept elsewhere), every agreement "
              f"at {args.long} or more words in those sentences (a sentence may hold several); then each task on its "
              "own. KL: the model's "
              "distribution at that temperature restricted to the language and renormalised, against the grammar: "
              "mean(log p_model - log p_grammar) over derivable samples - log(share derivable), with a bootstrap "
              "interval; over all sentences it is infinite, as every row has samples outside the language.")
    report("samples", "Generated sentences judged by the grammar", body, f"python bench/samples.py --n {args.n}")
    (RESULTS / "samples.json").write_text(json.dumps(records, indent=1) + "\n")


if __name__ == "__main__":
    main()
