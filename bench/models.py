"""The course corpus benchmark and the ablation table (issues: corpus, cells).

Trains every model on the course corpus and reports held-out perplexity beside the
grammar's floor, the agreement accuracy by cue-target distance, the parameter count
and training speed. Resumable: each (model, seed) run is stored in
bench/results/models/*.json and skipped when present; the tables are rebuilt from
whatever runs exist.

    .venv/bin/python bench/models.py                      # everything (about an hour per epoch setting)
    .venv/bin/python bench/models.py --models lstm,srnn --seeds 1 --epochs 1
    .venv/bin/python bench/models.py --tables-only
"""
import argparse
import json
import statistics
import time

from common import RESULTS, report, table

from course import runtime

NGRAMS = ["unigram", "kn-bigram", "kn-trigram"]
BUILDERS = ["srnn", "lstm", "gru"]
CELLS = ["srnn", "lstm-noforget", "lstm", "gru", "lstm-srnn", "lstm-srnn-out", "lstm-srnn-hidden",
         "lstm-gates", "ran-identity", "ran-tanh"]
RUNS = RESULTS / "models"
BUCKETS = {"1-5": ["1-5"], "6-10": ["6-10"], "11+": ["11-15", "16-20", "21+"]}


def agreement_by_range(results: dict) -> dict:
    """Accuracy over both tasks for distance ranges 1-5 / 6-10 / 11+."""
    out = {}
    for name, buckets in BUCKETS.items():
        correct = count = 0.0
        for task in results.values():
            for b in buckets:
                cell = task["distance"].get(b)
                if cell:
                    correct += cell["correct"] + 0.5 * cell["ties"]
                    count += cell["count"]
        out[name] = correct / count if count else float("nan")
    return out


def run_one(kind: str, name: str, seed: int, args) -> dict:
    from course import lm, ngram
    from course.agreement import agreement_accuracy, load_pairs
    from course.corpora import read_corpus
    from course.data import Vocab
    train, valid, test = (read_corpus("course", s) for s in ("train", "valid", "test"))
    if args.max_sentences:
        train = train[:args.max_sentences]
    pairs = load_pairs()
    start = time.perf_counter()
    if kind == "ngram":
        model = ngram.fit(train, valid, *{"unigram": ("unigram", 1), "kn-bigram": ("kn", 2),
                                          "kn-trigram": ("kn", 3)}[name])
        params, speed = None, None
        ppl = {"valid": model.perplexity(valid), "test": model.perplexity(test)}
    else:
        runtime.init(seed=seed)
        from autograder.reference.cells import make_cell
        cell = name if kind == "builder" else make_cell(name)
        model = lm.RNNLM(Vocab.build(train), cell, args.embed, args.hidden)
        history = lm.train(model, train, valid, epochs=args.epochs, batch_size=32, seed=seed,
                           progress=False, log=None)
        params, speed = model.param_count(), statistics.mean(r["tokens_per_s"] for r in history)
        ppl = {"valid": lm.evaluate(model, valid), "test": lm.evaluate(model, test)}
    return {"kind": kind, "name": name, "seed": seed, "epochs": args.epochs, "embed": args.embed,
            "hidden": args.hidden, "train_sentences": len(train), **ppl, "params": params,
            "tokens_per_s": speed, "seconds": time.perf_counter() - start,
            "agreement": agreement_by_range(agreement_accuracy(model, pairs))}


def tables(args) -> str:
    from course.grammar import floor_perplexity
    floor = floor_perplexity("test")
    runs = [json.loads(p.read_text()) for p in sorted(RUNS.glob("*.json"))]
    runs = [r for r in runs if r.get("epochs") in (None, args.epochs) or r["kind"] == "ngram"]

    def rows(kind, names):
        out = []
        for name in names:
            mine = [r for r in runs if r["kind"] == kind and r["name"] == name]
            if not mine:
                continue
            tests = [r["test"] for r in mine]
            mean = statistics.mean(tests)
            spread = f" ± {statistics.stdev(tests):.2f}" if len(tests) > 1 else ""
            agree = {b: statistics.mean(r["agreement"][b] for r in mine) for b in BUCKETS}
            out.append([name, f"{mean:.2f}{spread}", f"{mean / floor:.3f}",
                        *(f"{agree[b]:.3f}" for b in BUCKETS),
                        f"{mine[0]['params']:,}" if mine[0]["params"] else "",
                        f"{statistics.mean(r['tokens_per_s'] for r in mine):,.0f}" if mine[0]["tokens_per_s"] else "",
                        len(mine)])
        return out

    header = ["model", "test ppl (mean ± sd)", "÷ floor", "agree 1-5", "agree 6-10", "agree 11+",
              "params", "train tok/s", "seeds"]
    return (f"Floor (the grammar's own test perplexity): **{floor:.2f}**. Neural models: embed "
            f"{args.embed}, hidden {args.hidden}, 1 layer, Adam (lr 0.002), batch 32, {args.epochs} "
            f"epoch(s) over the course training set. Agreement: accuracy on minimal pairs (both tasks), "
            "ties count half, chance = 0.5.\n\n"
            "## Baselines and DyNet's builders\n\n" + table(header, rows("ngram", NGRAMS) + rows("builder", BUILDERS)) +
            "\n\n## Hand-written cells (the ablation table)\n\n" + table(header, rows("cell", CELLS)))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=None, help="comma-separated names (default: all)")
    parser.add_argument("--kinds", default="ngram,builder,cell")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--embed", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--max-sentences", type=int, default=None)
    parser.add_argument("--tables-only", action="store_true")
    args = parser.parse_args()
    runtime.init(seed=1, mem=1024)
    RUNS.mkdir(parents=True, exist_ok=True)
    wanted = set(args.models.split(",")) if args.models else None
    plan = [("ngram", n, 1) for n in NGRAMS] + \
           [(k, n, int(s)) for s in args.seeds.split(",") for k, names in (("builder", BUILDERS), ("cell", CELLS))
            for n in names]
    for kind, name, seed in plan:
        if args.tables_only or kind not in args.kinds.split(",") or (wanted and name not in wanted):
            continue
        path = RUNS / f"{kind}-{name}-e{args.epochs}-s{seed}.json"
        if kind == "ngram":
            path = RUNS / f"ngram-{name}.json"
        if path.exists():
            continue
        print(f"training {kind} {name} seed {seed} ...", flush=True)
        result = run_one(kind, name, seed, args)
        path.write_text(json.dumps(result, indent=1) + "\n")
        print(f"  test ppl {result['test']:.2f} in {result['seconds']:.0f} s", flush=True)
    report("models", "Course corpus: perplexity, floor, agreement, ablations", tables(args),
           f"python bench/models.py --epochs {args.epochs} --seeds {args.seeds}")


if __name__ == "__main__":
    main()
