"""Every cell of the ablation table trained to convergence on the course corpus.

Each (model, seed) run trains with Adam, halves the learning rate after every epoch
that does not lower the valid perplexity by at least 0.1%, and stops at the third
such epoch (or after MAX_EPOCHS). The best epoch on the valid split is the model
that is reported: its valid and test perplexity (beside the grammar's floor) and
its choice on each of the 5,000 agreement minimal pairs. The test split is read
once, at the end, and decides nothing.

Every run trains through the course's one engine, ``course.training.train``, with a
``course.schedules.Plateau`` schedule, and is kept by ``course.runs.Run``, as the command
line's runs are: resumable per epoch, after every epoch the parameters go to
``runs/converge/NAME-sSEED/`` (checkpoint/ the best epoch, resume/ the last; not committed)
and the record, one row per epoch, to ``bench/results/converge/NAME-sSEED.json``
(committed). Adam's moment estimates are not saved by DyNet, so a run continued after an
interruption starts them afresh; its row says ``"resumed": true``. Two processes may share
the plan: each run is claimed by the Run's lock file beside its checkpoints. A run left
half-done by an older bench (latest.dy, best.dy) is refused, saying so.

    .venv/bin/python bench/converge.py                     # the whole plan (PLAN below), resumable
    .venv/bin/python bench/converge.py --models lstm,srnn --seeds 1
    .venv/bin/python bench/converge.py --tables-only       # tables and figures from the records so far

The tables, figures and bench/results/converge.json (what the lectures read) are
written by bench/converge_tables.py, run after every finished run.
"""
from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path

from common import RESULTS, ROOT, machine

from course import runtime
from course.files import write_json
from course.settings import ModelSettings, Settings

RECORDS = RESULTS / "converge"
WORK = ROOT / "runs" / "converge"

#: how every run trains (course.settings.Settings): Adam, the rate halved after an epoch that gains
#: less than 0.1% on valid, stopped at the third such epoch or after 30
TRAINING = Settings(optimizer="adam", lr=0.002, batch_size=32, clip=5.0, lr_decay=0.5, min_gain=0.001, patience=3,
                    epochs=30)
#: the records' names for the fields of TRAINING they hold (as they have always been written)
RECORDED = {"optimizer": "optimizer", "lr": "lr", "batch": "batch_size", "clip": "clip", "lr_decay": "lr_decay",
            "min_improvement": "min_gain", "stop_at_bad_epoch": "patience", "max_epochs": "epochs"}
#: a size's keys that are fields of ModelSettings (its keys of SCHEDULE and dropout set Settings; the
#: others, forget_bias, heads, positions and train_tokens, are read by build_model and training_sentences)
MODEL_KEYS = ("embed", "hidden", "layers", "residual")


def schedule(train_s: Settings = None) -> dict:
    """The training settings as the records and tables name them."""
    train_s = train_s or TRAINING
    return {name: getattr(train_s, field) for name, field in RECORDED.items()}


SCHEDULE = schedule()
BASE = {"embed": 128, "hidden": 256, "dropout": 0.0}

#: name -> (label, cell, size). cell: a key of autograder.reference.cells.CELLS,
#: "builder:NAME" for DyNet's own builder, or "ngram:KIND:ORDER" for a baseline of course.ngram. size sets embed, hidden, dropout and may set
#: layers and residual (course.lm.RNNLM), forget_bias (the start of b_f of a forget-gate
#: cell; default 1) and any key of SCHEDULE. LSTM - GATES is the S-RNN's very cell and
#: step ([WS2] section 3.1): its row is the S-RNN's runs, not trained twice.
MODELS = {
    "unigram": ("unigram", "ngram:unigram:1", {}),
    "kn-bigram": ("Kneser-Ney bigram", "ngram:kn:2", {}),
    "kn-trigram": ("Kneser-Ney trigram", "ngram:kn:3", {}),
    "srnn": ("S-RNN (= LSTM - GATES)", "srnn", BASE),
    "lstm": ("LSTM", "lstm", BASE),
    "lstm-noforget": ("LSTM without forget gate", "lstm-noforget", BASE),
    "lstm-fb0": ("LSTM, forget bias 0", "lstm", {**BASE, "forget_bias": 0.0}),
    "gru": ("GRU", "gru", BASE),
    "lstm-srnn": ("LSTM - S-RNN", "lstm-srnn", BASE),
    "lstm-srnn-out": ("LSTM - S-RNN - OUT", "lstm-srnn-out", BASE),
    "lstm-srnn-hidden": ("LSTM - S-RNN - HIDDEN", "lstm-srnn-hidden", BASE),
    "ran-identity": ("RAN (identity)", "ran-identity", BASE),
    "ran-tanh": ("RAN (tanh)", "ran-tanh", BASE),
    "builder-srnn": ("DyNet SimpleRNNBuilder", "builder:srnn", BASE),
    "builder-lstm": ("DyNet VanillaLSTMBuilder", "builder:lstm", BASE),
    "builder-gru": ("DyNet GRUBuilder", "builder:gru", BASE),
    "lstm-dropout": ("LSTM, dropout 0.3", "lstm", {**BASE, "dropout": 0.3}),
    "lstm-large": ("LSTM, embed 256, hidden 512, dropout 0.3", "lstm",
                   {"embed": 256, "hidden": 512, "dropout": 0.3}),
    # the shipped training split is the first quarter of this one (see `training_sentences`)
    "lstm-4x": ("LSTM, 4x the training sentences (4.0M tokens)", "lstm",
                {**BASE, "train_tokens": 4_000_000, "max_epochs": 6}),
    # chapter 11: course.layers.CausalAttention in place of the recurrent layer (learned positions,
    # up to 128 tokens: the longest sentence has 81 words) or on top of an LSTM
    "attn": ("self-attention alone (4 heads, learned positions)", "attention",
             {**BASE, "heads": 4, "positions": 128}),
    "lstm-attn": ("LSTM + self-attention (4 heads)", "lstm+attention", {**BASE, "heads": 4}),
}
#: chapter 07: stacks of 1-8 LSTM layers of 128 units, without residuals, ResV and ResV + ResL
#: (one seed, at most 5 epochs: the deep stacks cost up to 2.5 CPU minutes an epoch)
DEPTHS, RESIDUALS = (1, 2, 4, 8), {"plain": None, "resv": "vertical", "resvl": "lateral"}
RESIDUAL_LABELS = {"plain": "no residual", "resv": "ResV", "resvl": "ResV + ResL"}
for _layers in DEPTHS:
    for _key, _residual in RESIDUALS.items():
        MODELS[f"depth{_layers}-{_key}"] = (
            f"LSTM 128/128, {_layers} layer(s), {RESIDUAL_LABELS[_key]}", "lstm",
            {"embed": 128, "hidden": 128, "dropout": 0.0, "layers": _layers, "residual": _residual,
             "max_epochs": 5})
DEPTH = [f"depth{n}-{k}" for n in DEPTHS for k in RESIDUALS]
ABLATION = ["srnn", "lstm-noforget", "lstm", "lstm-fb0", "gru", "lstm-srnn", "lstm-srnn-out", "lstm-srnn-hidden",
            "ran-identity", "ran-tanh"]
EXTRA = ["lstm-dropout", "lstm-large", "lstm-4x"]
BUILDERS = ["builder-srnn", "builder-lstm", "builder-gru"]
ATTENTION = ["attn", "lstm-attn"]
NGRAMS = ["unigram", "kn-bigram", "kn-trigram"]
ORDER = NGRAMS + ABLATION + EXTRA + BUILDERS + ATTENTION + DEPTH          # the order of the tables
SEEDS = (1, 2, 3)
#: the order of the runs: seed 1 of what the lectures draw first, the builders (the hand-written
#: cells' twins), the other seeds of the ablation table and the builders (the issue's 3 seeds),
#: then the depth study (one seed each). The extras, which measure what it takes to near the
#: floor (the large model and the 4x LSTM cost four LSTM runs each), have one seed; the 4x LSTM
#: two, for the ensemble of bench/converge_ensemble.py.
FIRST = ["lstm", "srnn", "lstm-srnn-out", "lstm-large", "gru", "lstm-fb0", "lstm-noforget", "lstm-srnn",
         "lstm-srnn-hidden", "ran-identity", "ran-tanh"]
PLAN = ([(n, 1) for n in NGRAMS + FIRST + BUILDERS] + [(n, s) for s in (2, 3) for n in ABLATION + BUILDERS]
        + [("lstm-dropout", 1), ("lstm-4x", 1), ("lstm-4x", 2)] + [(n, 1) for n in DEPTH]
        + [(n, s) for s in SEEDS for n in ATTENTION])


def make_cell(cell: str, forget_bias=None):
    if cell.startswith("builder:"):
        return cell.split(":", 1)[1]
    from autograder.reference.cells import make_cell as reference_cell
    return reference_cell(cell, forget_bias)


def build_model(vocab, cell_name: str, size: dict):
    """The run's model: an RNNLM of the cell, or for chapter 11's rows one whose recurrent layer
    is replaced by causal self-attention ("attention") or topped by it ("lstm+attention")."""
    from course import lm
    from course.layers import CausalAttention
    recurrent = {"attention": "lstm", "lstm+attention": "lstm"}.get(cell_name)
    settings = ModelSettings(cell=cell_name, **{k: size[k] for k in MODEL_KEYS if k in size})
    model = lm.RNNLM.from_settings(vocab, settings, cell=make_cell(recurrent or cell_name, size.get("forget_bias")))
    if cell_name == "attention":        # the LSTM made above stays in the collection, unused (zero gradients)
        model.layers[0] = CausalAttention(model.pc, size["embed"], size["hidden"], heads=size["heads"],
                                          positions=size["positions"])
    elif cell_name == "lstm+attention":
        model.layers.append(CausalAttention(model.pc, size["hidden"], size["hidden"], heads=size["heads"]))
    return model


def used_params(model, cell_name: str, size: dict) -> int:
    """The parameters the model computes with (the attention-only model's unused LSTM left out)."""
    if cell_name != "attention":
        return model.param_count()
    return model.param_count() - make_cell("lstm").param_count(size["embed"], size["hidden"])


def load_splits(max_sentences=None) -> dict:
    from course.corpora import read_corpus
    splits = {s: read_corpus("course", s) for s in ("train", "valid", "test")}
    if max_sentences:
        splits = {s: sentences[:max_sentences] for s, sentences in splits.items()}
    return splits


def training_sentences(splits: dict, tokens: int | None) -> list:
    """The training split, or more sentences of the grammar's training stream: the shipped split
    (1.0M tokens) is the first part of any larger one, since each split is its own random stream
    (course.grammar.sample_split)."""
    if not tokens:
        return splits["train"]
    from course import grammar
    sentences = [list(d.words) for d in grammar.sample_split(grammar.Grammar(), grammar.DEFAULT_SEED, "train", tokens)]
    if sentences[:len(splits["train"])] != [list(s) for s in splits["train"]]:
        raise RuntimeError("the grammar's training stream no longer starts with data/course/train.txt.gz: "
                           "regenerate the corpus (python -m course data make-corpus)")
    return sentences


def pair_outcomes(model, pairs) -> str:
    """One character per minimal pair: "1" the right sentence scores higher, "0" the
    wrong one does, "=" a tie (counted half, as course.agreement does)."""
    right = model.sentence_logprobs([p.right_sentence for p in pairs])
    wrong = model.sentence_logprobs([p.wrong_sentence for p in pairs])
    return "".join("1" if r > w else "0" if r < w else "=" for r, w in zip(right, wrong))


def best_parameters(name: str, seed: int, work=WORK) -> Path:
    """The parameters of a run's best epoch: its course.runs.Run's checkpoint/, or best.dy
    where the run was finished by the bench before Run."""
    folder = Path(work) / f"{name}-s{seed}"
    new = folder / "checkpoint" / "params.dy"
    return new if new.exists() or not (folder / "best.dy").exists() else folder / "best.dy"


def settings_of(name: str, seed: int = 1) -> tuple[ModelSettings, Settings]:
    """The model and training settings of a run of ``name`` (its size over TRAINING)."""
    _, cell_name, size = MODELS[name]
    model = ModelSettings(cell=cell_name, **{k: size[k] for k in MODEL_KEYS if k in size})
    changes = {RECORDED.get(k, k): v for k, v in size.items() if k in RECORDED or k == "dropout"}
    return model, TRAINING.but(seed=seed, **changes)


def run(name: str, seed: int, splits: dict, records=RECORDS, work=WORK, max_sentences=None,
        log=print, after_epoch=None) -> dict | None:
    """Train (or continue) one run to its stopping point through course.training.train, then evaluate
    its best epoch. Returns the record, or None when another process holds the run."""
    from course import evaluation, training
    from course.agreement import load_pairs
    from course.data import Vocab
    from course.runs import Run
    log = log or (lambda line: None)
    label, cell_name, size = MODELS[name]
    train_s = settings_of(name, seed)[1]
    key = f"{name}-s{seed}"
    record_path = Path(records) / f"{key}.json"
    settings = {**({} if cell_name.startswith("ngram:") else {**schedule(train_s), **size}), "cell": cell_name,
                "max_sentences": max_sentences}
    record = {"model": name, "label": label, "seed": seed, "settings": settings, "epochs": []}
    if cell_name.startswith("ngram:") and not record_path.exists():
        return baseline(name, splits, record_path, settings, max_sentences)
    if record_path.exists():
        saved = json.loads(record_path.read_text())
        if saved["settings"] != settings:
            raise ValueError(f"{record_path} was trained with {saved['settings']}, not {settings}: "
                             "move it away to train this run again")
        if "final" in saved:
            return saved
        record = saved
    run_dir = Run(Path(work) / key, record=record_path, built_in_code=True)
    run_dir.refuse_old_layout()
    if not run_dir.claim():
        log(f"{key}: another process is training it")
        return None
    runtime.init(seed=seed)
    vocab = Vocab.build(splits["train"])
    model = build_model(vocab, cell_name, size)
    record.update(params=used_params(model, cell_name, size), machine=machine())
    rows = record["epochs"]
    if rows and not run_dir.last.is_dir():
        log(f"{key}: no checkpoint in {run_dir.folder}; training again from the start")
        rows.clear()
    if rows:
        run_dir.load()                  # resume/ and checkpoint/ are the ones the record names
        model.restore(run_dir.last)
        log(f"{key}: continuing after epoch {len(rows)}")
    # the engine's history is the record's rows: each epoch's row is rewritten by save below
    state = training.TrainState(len(rows) + 1, 0, rows[-1]["lr_next"] if rows else train_s.lr,
                          min((r["valid_ppl"] for r in rows), default=math.inf), rows)
    Path(records).mkdir(parents=True, exist_ok=True)
    clock = {"start": time.perf_counter(), "cpu": time.process_time(), "resumed": bool(rows)}

    def save(state, improved):
        """The engine's row as the records have always held it; then the run is saved."""
        row = rows[-1]
        lr = rows[-2]["lr_next"] if len(rows) > 1 else train_s.lr     # as set, not as DyNet's float32 reads
        rows[-1] = {"epoch": row["epoch"], "lr": lr, "lr_next": state.lr, "train_ppl": row["train_ppl"],
                    "valid_ppl": row["valid_ppl"], "improved": row["improved"], "tokens_per_s": row["tokens_per_s"],
                    "train_seconds": row["seconds"], "train_cpu_seconds": row["cpu_seconds"],
                    "seconds": time.perf_counter() - clock["start"], "cpu_seconds": time.process_time() - clock["cpu"],
                    "resumed": clock["resumed"], "finished_at": time.strftime("%Y-%m-%d %H:%M:%S")}
        run_dir.save(model, state, improved, record)

    def record_epoch(_, state):
        row = rows[-1]
        log(f"{key}: epoch {row['epoch']}  lr {row['lr']:.3g}  train {row['train_ppl']:.2f}  valid "
            f"{row['valid_ppl']:.2f}{'' if row['improved'] else '  (no gain: lr halved)'}  "
            f"{row['train_seconds'] / 60:.1f} min")
        clock.update(start=time.perf_counter(), cpu=time.process_time(), resumed=False)
        if after_epoch:
            after_epoch(row)

    if not _stopped(rows, train_s):
        try:
            training.train(model, training_sentences(splits, size.get("train_tokens")), splits["valid"],
                     train_s, progress=False, log=None,
                     resume=state, on_save=save, on_epoch=record_epoch)
        except training.TrainingDiverged as err:         # recorded as a last epoch of infinite perplexity
            lr = rows[-1]["lr_next"] if rows else train_s.lr
            rows.append({"epoch": len(rows) + 1, "lr": lr, "lr_next": lr * train_s.lr_decay,
                         "train_ppl": math.inf, "valid_ppl": math.inf, "improved": False, "diverged": str(err),
                         "seconds": time.perf_counter() - clock["start"],
                         "cpu_seconds": time.process_time() - clock["cpu"], "resumed": clock["resumed"], "finished_at": time.strftime("%Y-%m-%d %H:%M:%S")})
            run_dir.write(record)
            log(f"{key}: {err}")
    start, cpu = time.perf_counter(), time.process_time()
    best = min(rows, key=lambda r: r["valid_ppl"])
    record["final"] = {"best_epoch": best["epoch"], "stopped": _stopped(rows, train_s),
                       "valid_ppl": math.inf, "test_ppl": math.inf, "pairs": ""}
    if math.isfinite(best["valid_ppl"]):          # a run that diverged in its first epoch has no model
        model.restore(run_dir.best)
        record["final"].update(valid_ppl=evaluation.evaluate(model, splits["valid"]),
                               test_ppl=evaluation.evaluate(model, splits["test"]),
                               pairs=pair_outcomes(model, load_pairs()[:max_sentences] if max_sentences
                                                   else load_pairs()))
    record["final"].update(seconds=time.perf_counter() - start, cpu_seconds=time.process_time() - cpu,
                           finished_at=time.strftime("%Y-%m-%d %H:%M:%S"))
    run_dir.write(record)
    run_dir.release()
    log(f"{key}: best epoch {best['epoch']} of {len(rows)}: valid {record['final']['valid_ppl']:.2f}, "
        f"test {record['final']['test_ppl']:.2f}")
    return record


def baseline(name: str, splits: dict, record_path: Path, settings: dict, max_sentences=None) -> dict:
    """An n-gram baseline (course.ngram, smoothing tuned on valid) scored like a run."""
    from course import ngram
    from course.agreement import load_pairs
    _, kind, order = MODELS[name][1].split(":")
    start, cpu = time.perf_counter(), time.process_time()
    model = ngram.fit(splits["train"], splits["valid"], kind=kind, order=int(order))
    pairs = load_pairs()[:max_sentences] if max_sentences else load_pairs()
    record = {"model": name, "label": MODELS[name][0], "seed": 1, "settings": settings, "epochs": [],
              "final": {"best_epoch": None, "stopped": "counted once", "valid_ppl": model.perplexity(splits["valid"]),
                        "test_ppl": model.perplexity(splits["test"]), "pairs": pair_outcomes(model, pairs),
                        "seconds": time.perf_counter() - start, "cpu_seconds": time.process_time() - cpu,
                        "finished_at": time.strftime("%Y-%m-%d %H:%M:%S")}}
    record_path.parent.mkdir(parents=True, exist_ok=True)
    write_json(record_path, record)
    return record


def _stopped(rows, train_s: Settings) -> str | None:
    """Why the run stops after these epochs, or None while it goes on."""
    from course import schedules
    if rows and not math.isfinite(rows[-1]["valid_ppl"]):
        return "diverged"
    reason = schedules.of(train_s).stop(rows)
    if reason:
        return reason
    if len(rows) >= train_s.epochs:
        return f"{train_s.epochs} epochs"
    return None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(ORDER), help=f"comma-separated, from {', '.join(ORDER)}")
    parser.add_argument("--seeds", default=",".join(map(str, SEEDS)))
    parser.add_argument("--tables-only", action="store_true")
    args = parser.parse_args(argv)
    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        parser.error(f"unknown model(s) {unknown}: choose from {', '.join(ORDER)}")
    if not args.tables_only:
        runtime.init(seed=1, mem=1536)
        splits = load_splits()
        seeds = {int(s) for s in args.seeds.split(",")}
        for name, seed in PLAN:
            if name not in names or seed not in seeds:
                continue
            record = RECORDS / f"{name}-s{seed}.json"
            finished_before = record.exists() and "final" in json.loads(record.read_text())
            if run(name, seed, splits, log=lambda line: print(line, flush=True)) is not None and not finished_before:
                write_tables()
    write_tables()


def write_tables():
    """bench/converge_tables.py in its own process: it reads the records as they are now
    (and its code as it is now, so the tables can change while a long run goes on)."""
    done = subprocess.run([sys.executable, str(Path(__file__).with_name("converge_tables.py"))],
                          stdout=subprocess.DEVNULL)          # the tables are in bench/results/converge.md
    if done.returncode:
        print(f"converge_tables.py failed (exit {done.returncode}); the records are kept", flush=True)
    else:
        print(f"wrote {(RESULTS / 'converge.md').relative_to(ROOT)} and its figures", flush=True)


if __name__ == "__main__":
    main()
