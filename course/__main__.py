"""Command line: ``python -m course {train,evaluate,sample,judge-samples,data} ...`` (``--help`` on each)."""
from __future__ import annotations

import argparse
import math
import os
import signal
import sys
from pathlib import Path
from shlex import quote

from course import runtime
from course.settings import (POSITIVE, ModelSettings, Settings, add_options, from_record, number,
                             record)

INTERRUPTED = 130            # the shell's exit status for a run stopped by Ctrl-C
TERMINATED = 143             # ... and by SIGTERM
ERROR = 2
DEFAULT_MAX_UNKNOWN = 0.05
DEFAULT_SAMPLE_LENGTH = 100  # tokens of a sampled sentence (5 times as many for a character model)


# --------------------------------------------------------------------------- option types



def _memory_mb() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20


# --------------------------------------------------------------------------- corpus

def read_splits(data: Settings) -> tuple[dict, list, list]:
    """The train/valid/test sentences a run uses, as ``data`` describes them (corpus,
    unit, max_sentences, max_length, max_tokens); the training split before
    ``max_tokens`` (the vocabulary's source); and notes for the user."""
    from course.corpora import FILE_SPLIT, SPLITS, is_text_file, read_corpus
    from course.data import first_tokens, split_long
    splits = {s: read_corpus(data.corpus, s, data.unit) for s in SPLITS}
    notes = []
    if is_text_file(data.corpus):
        notes.append(f"{data.corpus} is one file, split in order: {FILE_SPLIT}")
    if data.max_sentences:
        splits = {s: v[:data.max_sentences] for s, v in splits.items()}
    for split in SPLITS:
        splits[split], n_cut = split_long(splits[split], data.max_length)
        if n_cut:
            notes.append(f"{n_cut:,} {split} line(s) longer than {data.max_length:,} tokens were cut "
                         f"into pieces of {data.max_length:,} (--max-length)")
    full_train = splits["train"]
    if data.max_tokens:
        splits["train"] = first_tokens(full_train, data.max_tokens)
        notes.append(f"training on the first {sum(map(len, splits['train'])):,} of "
                     f"{sum(map(len, full_train)):,} tokens (--max-tokens); the vocabulary comes from all")
    return splits, full_train, notes


def _unknown(sentences, vocab) -> tuple[int, int, int]:
    """Tokens not in the vocabulary, all tokens, and literal ``<unk>`` tokens (a corpus
    such as WikiText-2 has already replaced its rare words by them)."""
    from course.data import UNK, encode
    _, n_unknown = encode(sentences, vocab, max_unknown=1.0)
    return n_unknown, sum(map(len, sentences)), sum(t == UNK for s in sentences for t in s)


def _yardstick(splits: dict, vocab, scored) -> dict:
    """Unigram and Kneser-Ney trigram perplexities of the ``scored`` splits, trained on the
    training split with ``vocab`` (cached: see :func:`course.ngram.yardstick`)."""
    from course.ngram import yardstick
    return yardstick(splits["train"], splits["valid"], vocab, {name: splits[name] for name in scored})


def _print_table(model_ppl: dict, yardstick: dict, label: str) -> None:
    """The model's perplexities beside the yardstick's, and a note if the unigram wins."""
    names = list(model_ppl)
    print(f"{'held-out perplexity':<34}" + "".join(f"{n:>10}" for n in names))
    print(f"  {label:<32}" + "".join(f"{model_ppl[n]:10.2f}" for n in names))
    for baseline, ppl in yardstick.items():
        print(f"  {baseline:<32}" + "".join(f"{ppl[n]:10.2f}" for n in names))
    worse = [n for n in names if model_ppl[n] > yardstick["unigram"][n]]
    if worse:
        print(f"note: the model is worse than the unigram on {' and '.join(worse)}: it needs more "
              "training (--epochs, --max-tokens) or another learning rate.")


# --------------------------------------------------------------------------- train

DATA = ("corpus", "unit", "max_sentences", "max_tokens", "max_length", "stream")   # what a checkpoint records
SETTINGS = tuple(record(ModelSettings(), Settings()))   # every option that is a setting of the model or training
MAY_CHANGE_ON_RESUME = {"epochs", "mem", "gpu", "progress"}


class Interrupts:
    """Ctrl-C (or SIGTERM, a scheduler's or a hub's stop) while training: the first
    signal lets the batch under way finish, then the run is saved and stops; a second
    stops at once (losing what came after the last save). While a save is being
    written, a signal only asks to stop after it. ``status``: the exit status, 130
    after Ctrl-C, 143 after SIGTERM."""
    SIGNALS = {signal.SIGINT: ("Ctrl-C", INTERRUPTED), signal.SIGTERM: ("SIGTERM", TERMINATED)}

    def __init__(self):
        self.requested = self.saving = False
        self.status = INTERRUPTED

    def __enter__(self):
        self.previous = {sig: signal.signal(sig, self.handle) for sig in self.SIGNALS}
        return self

    def __exit__(self, *exc):
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)

    def handle(self, signum, frame):
        if self.requested and not self.saving:
            raise KeyboardInterrupt
        self.requested = True
        name, self.status = self.SIGNALS[signum]
        print(f"\n{name}: stopping after this batch, then saving the run (Ctrl-C again stops at "
              "once, losing the batches since the last save).", flush=True)


def _corpus_name(corpus: str) -> str:
    """A corpus as recorded: its name, or the absolute path of a folder or file."""
    from course.corpora import KNOWN
    return corpus if corpus == "course" or corpus in KNOWN else str(Path(corpus).expanduser().resolve())


def _settings(args) -> tuple[ModelSettings, Settings]:
    """The options' settings, with the corpus and a cell's file as a run records them."""
    model = ModelSettings.from_args(args)
    if ":" in model.cell:
        path, _, function = model.cell.rpartition(":")
        model = model.but(cell=f"{Path(path).expanduser().resolve()}:{function}")
    return model, Settings.from_args(args).but(corpus=_corpus_name(args.corpus))


def _check_settings(model: ModelSettings, train_s: Settings) -> None:
    """Checks across options, before anything is read or trained (ModelSettings checks its sizes)."""
    from course import corpora, lm
    corpora.corpus_sha256(train_s.corpus)          # the corpus is there
    if train_s.reset_state and not train_s.stream:
        raise ValueError("--reset-state starts every segment of a stream from zeros: it needs --stream "
                         "(sentences always start from zeros)")
    if model.residual == "lateral" and model.cell in lm.BUILDERS:
        raise ValueError("--residual lateral rewrites the recurrent state, which DyNet's builders keep "
                         "to themselves: use --residual vertical, or a --cell file.py:step of your own")


# floats a recurrent layer keeps per unit and position for the backward pass (values and their
# gradients, measured on DyNet 2.1's builders; a cell from a file is taken to be like the LSTM)
STATE_FLOATS = {"srnn": 10, "gru": 24, "lstm": 40}


def _available_mb() -> int:
    """Memory the machine can give now (MemAvailable on Linux), else all of it."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    except OSError:
        pass
    return _memory_mb()


def _memory_needed_mb(m: ModelSettings, vocab_size: int, batch: int, steps: int) -> tuple[float, float]:
    """(parameters, parameters and the largest batch's graph) in MB, estimated: the
    parameters with gradients and Adam's two moments; per position of a batch the
    recurrent layers' values and gradients, and the softmax whole or in chunks
    (course.lm.SOFTMAX_BUDGET)."""
    from course import lm
    d, h, layers = m.embed, m.hidden, m.layers
    params = vocab_size * (d + h + 1) + layers * 4 * h * (max(d, h) + h + 1)
    positions = batch * steps
    recurrent = positions * (STATE_FLOATS.get(m.cell, STATE_FLOATS["lstm"]) * h * layers + 2 * d)
    softmax = positions * vocab_size
    softmax = 3 * softmax if softmax <= lm.SOFTMAX_BUDGET else 3 * lm.SOFTMAX_CHUNK + 2 * positions * h
    return params * 16 / 2**20, params * 16 / 2**20 + (recurrent + softmax) * 4 / 2**20


def _check_memory(m: ModelSettings, s: Settings, vocab_size: int, train, mem: int | None) -> None:
    """Refuse, before training, a run whose parameters or largest batch cannot fit in the
    memory available now (or in --mem, where it is given), naming the numbers and the fix."""
    limit = min(_available_mb(), mem or math.inf)
    where = f"--mem {mem:,} MB" if mem and mem <= _available_mb() else f"the {limit:,} MB this machine has free"
    d, h = m.embed, m.hidden
    steps = s.bptt if s.stream else max(map(len, train)) + 1
    batch = s.batch_size if s.stream else min(s.batch_size, len(train))
    params_mb, need_mb = _memory_needed_mb(m, vocab_size, batch, steps)
    if params_mb > limit:
        raise ValueError(f"a model of --embed {d}, --hidden {h}, --layers {m.layers} on a vocabulary of "
                         f"{vocab_size:,} needs about {params_mb:,.0f} MB for its parameters alone, more than "
                         f"{where}: make it smaller (or --vocab-size).")
    if need_mb > limit:
        fits = next((b for b in (2 ** k for k in range(20, -1, -1)) if b < batch
                     and _memory_needed_mb(m, vocab_size, b, steps)[1] <= limit / 2), None)
        raise ValueError(f"training needs about {need_mb:,.0f} MB, more than {where}: its largest batch holds "
                         f"{batch:,} sentences of up to {steps - 1:,} tokens (--batch-size {s.batch_size:,}, "
                         f"--max-length {s.max_length:,}), a model of --hidden {h} x --layers {m.layers} "
                         f"on a vocabulary of {vocab_size:,}. "
                         + (f"Lower --batch-size (--batch-size {fits} needs about "
                            f"{_memory_needed_mb(m, vocab_size, fits, steps)[1]:,.0f} MB)" if fits
                            else "Make the model smaller") + " or --max-length.")


def cmd_train(args, given: set) -> int:
    from course import runs
    out = Path(args.resume or args.out) if (args.resume or args.out) else None
    run = runs.Run(out) if out else None
    metrics = {"history": []}
    if args.resume:
        metrics = run.load()
        model_s, train_s = _resumed(metrics, args, given, out)
    else:
        model_s, train_s = _settings(args)
    metrics["settings"] = record(model_s, train_s)
    runtime.init(seed=train_s.seed, mem=args.mem, gpu=args.gpu or None)
    if not args.resume:
        _check_settings(model_s, train_s)
        if out:
            run.check_new(args.overwrite)
    print(runtime.describe())
    try:
        return _train(model_s, train_s, metrics, args, run, given)
    finally:
        if run:
            run.release()


def _resumed(metrics: dict, args, given: set, out: Path) -> tuple[ModelSettings, Settings]:
    """The settings a run continues with: its own (a run older than a setting: today's
    default), --epochs if given; any other setting given that differs is refused."""
    saved = metrics["settings"]
    ours = record(*_settings(args))
    changed = sorted(k for k in given - MAY_CHANGE_ON_RESUME if k in ours and ours[k] != saved.get(k))
    if changed:
        shown = ", ".join(f"--{k.replace('_', '-')} {ours[k]} (the run's: {saved.get(k)})" for k in changed)
        raise ValueError(f"--resume continues {out} with its own settings; {shown} differ: leave them "
                         "out, or start a new run with --out.")
    model_s, train_s = from_record(saved)
    train_s = train_s.but(epochs=args.epochs if "epochs" in given else saved["epochs"])
    if metrics.get("status") == "finished" and train_s.epochs <= len(metrics["history"]):
        raise ValueError(f"{out} has finished its {len(metrics['history'])} epoch(s): to train it further, "
                         f"pass --epochs N with N > {len(metrics['history'])}.")
    return model_s, train_s


def _train(model_s: ModelSettings, train_s: Settings, metrics: dict, args, run, given: set) -> int:
    from course import cell_files, corpora, lm, runs, sources, training
    from course.data import Vocab, tokens_sha256
    out = run and run.folder
    splits, full_train, notes = read_splits(train_s)
    data_sha = tokens_sha256(splits["train"])
    if args.resume:
        state, record_ = run.resume_state()
        if record_["data"]["train_sha256"] != data_sha:
            raise ValueError(f"the training data of {out} have changed since the run started (corpus "
                             f"{train_s.corpus}): restore them, or start a new run with --out.")
        cell = cell_files.resolve_cell(model_s.cell)
        model = lm.RNNLM.load(out / "resume", None if isinstance(cell, str) else cell)
        vocab = model.vocab
        print(f"continuing {out} at epoch {state.epoch}, batch {state.batch}"
              + (" (Adam's moment estimates start again from zero: see the README)"
                 if train_s.optimizer == "adam" and (state.batch or state.epoch > 1) else ""))
    else:
        state, model = None, None
        vocab = Vocab.build(full_train, max_size=train_s.vocab_size)
    unknown = _unknown_rates(splits, vocab, notes)
    if not args.resume:
        _check_corpus(splits, unknown, len(vocab), train_s)
    _check_memory(model_s, train_s, len(vocab), splits["train"], args.mem if "mem" in given else None)
    if model is None:
        model = lm.RNNLM.from_settings(vocab, model_s, train_s.seed)
    sizes = " / ".join(f"{len(splits[s]):,}" for s in corpora.SPLITS)
    print(f"corpus {train_s.corpus} ({train_s.unit}s): {sizes} sentences, "
          f"{sum(map(len, splits['train'])):,} training tokens, vocabulary {len(vocab):,}; model "
          f"{model.config.cell}, {model_s.layers} x {model_s.hidden} (embed {model_s.embed}), "
          f"{model.param_count():,} parameters")
    for note in notes:
        print(f"  {note}")
    # computed before training, while DyNet's memory is small: its counts never add to training's peak
    yardstick = _yardstick(splits, vocab, ("valid", "test"))
    print("yardstick (perplexity to beat): " + "; ".join(
        f"{name} valid {ppl['valid']:.2f}, test {ppl['test']:.2f}" for name, ppl in yardstick.items()))
    info = {"data": {**{k: getattr(train_s, k) for k in DATA}, "train_sha256": data_sha,
                     "corpus_sha256": corpora.corpus_sha256(train_s.corpus)},
            "unknown": unknown}
    metrics["status"] = "training"
    saved = {}

    def on_save(state, improved):
        interrupts.saving = True
        try:
            metrics["status"] = "interrupted" if interrupts.requested else "training"
            metrics["history"] = state.history
            run.save(model, state, improved, metrics, info)
            saved["state"] = state
        finally:
            interrupts.saving = False

    if out and not args.resume:
        run.start()
    if out and not run.claim():
        raise runs.RunError(f"{out} is being trained by another process (its pid is in {run.lock}): wait for "
                            "it, or stop it.")
    if out:
        print(f"training; every epoch is saved in {out}, and Ctrl-C saves and stops "
              f"(`python -m course train --resume {quote(str(out))}` continues)", flush=True)
    with Interrupts() if out else _NoInterrupts() as interrupts:
        metrics["history"] = training.train(
            model, splits["train"], splits["valid"], train_s, progress=args.progress,
            resume=state, stop=lambda: interrupts.requested, on_save=on_save if out else None, resumable=True)
    stopped = saved.get("state")
    if interrupts.requested and stopped is not None and stopped.epoch <= train_s.epochs:
        n_batches = min(len(sources.of(train_s, splits["train"], model.vocab)), train_s.max_batches or math.inf)
        where = (f"after batch {stopped.batch:,} of {n_batches:,} in epoch {stopped.epoch}" if stopped.batch
                 else f"before epoch {stopped.epoch}")
        print(f"stopped {where}; saved in {out / 'resume'}. Continue with:\n"
              f"  python -m course train --resume {quote(str(out))}")
        return interrupts.status
    return _finish(model, splits, train_s, metrics, run, yardstick, args)


def _unknown_rates(splits: dict, vocab, notes: list) -> dict:
    """Each split's share of tokens not in the vocabulary; ``notes`` says it (and the share
    that is ``<unk>`` in the corpus itself, where there is one)."""
    from course.corpora import SPLITS
    unknown, literal = {}, {}
    for split in SPLITS:
        n_unknown, n_tokens, n_literal = _unknown(splits[split], vocab)
        unknown[split], literal[split] = n_unknown / max(n_tokens, 1), n_literal / max(n_tokens, 1)
    notes.append("tokens not in the vocabulary (read as <unk>): "
                 + ", ".join(f"{split} {rate:.1%}" for split, rate in unknown.items()))
    if any(literal.values()):
        notes.append("tokens that are <unk> in the corpus itself (its own unknown words): "
                     + ", ".join(f"{split} {rate:.1%}" for split, rate in literal.items()))
    return unknown


def _check_corpus(splits: dict, unknown: dict, vocab_size: int, s: Settings) -> None:
    """Refuse, before anything is written, a corpus too small for its splits: an empty
    split, or one whose tokens are mostly outside the vocabulary (which then could not
    be scored: see course.data.encode)."""
    from course.data import DataError
    sizes = " / ".join(f"{len(v):,}" for v in splits.values())
    fix = ("give more sentences (a larger --max-sentences, or a longer corpus" if s.max_sentences
           else "give more text (") + "; one file is split 80/10/10% by lines)"
    empty = [split for split, sentences in splits.items() if not sentences]
    if empty:
        raise DataError(f"the {' and '.join(empty)} split of {s.corpus} holds no sentences (train / valid / "
                        f"test: {sizes}): {fix}.")
    worst = max(unknown, key=unknown.get)
    if unknown[worst] > 0.5:
        cause = (f"--vocab-size {s.vocab_size} keeps too few words: raise it" if s.vocab_size
                 else f"The training split is too small to hold their words: {fix}")
        raise DataError(f"{unknown[worst]:.0%} of the {worst} tokens are not in the vocabulary of {vocab_size:,} words "
                        f"(train / valid / test: {sizes} sentences); a model could only learn to say <unk>. "
                        f"{cause[0].upper()}{cause[1:]}.")


class _NoInterrupts:
    """Without --out there is nothing to save: Ctrl-C stops at once."""
    requested = saving = False
    status = INTERRUPTED

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _finish(model, splits, train_s: Settings, metrics, run, yardstick, args) -> int:
    from course import evaluation
    history = metrics["history"]
    best, out = len(history), run and run.folder
    if out:        # score the best epoch's parameters, which the checkpoint holds
        if "checkpoint" not in metrics:
            raise ValueError("no epoch reached a finite held-out perplexity (the model diverged): "
                             "lower the learning rate (--lr).")
        best = metrics["checkpoint"]["epoch"]
        if best != len(history):
            model.restore(out / "checkpoint")
    print(f"scoring the test split ({len(splits['test']):,} sentences) with epoch {best}'s model", flush=True)
    ppl = {"valid": history[best - 1]["valid_ppl"],
           "test": evaluation.held_out(model, splits["test"], train_s.stream,
                                       progress="test" if args.progress else None)}
    _print_table(ppl, yardstick, f"this model (epoch {best})")
    bits = {split: math.log2(value) for split, value in ppl.items()}   # per predicted character, </s> counted
    if train_s.unit == "char":
        print("bits per character: " + ", ".join(f"{split} {value:.3f}" for split, value in bits.items()))
    if train_s.corpus == "course" and train_s.unit == "word":
        from course.grammar import floor_perplexity
        print(f"the grammar's floor (no model can beat it in expectation): test {floor_perplexity('test'):.2f}")
    if not out:
        return 0
    metrics.update({
        "status": "finished", "valid_ppl": ppl["valid"], "test_ppl": ppl["test"], "yardstick": yardstick,
        **({"bits_per_char": bits} if train_s.unit == "char" else {}),
        "tokens_per_s": sum(r["tokens_per_s"] for r in history) / len(history),
        "train_seconds": sum(r["seconds"] for r in history), "params": model.param_count(),
        "runtime": runtime.describe(), "device": runtime.device()})
    run.write(metrics)
    print(f"wrote {out / 'metrics.json'} and {out / 'checkpoint'}")
    return 0


# --------------------------------------------------------------------------- evaluate

def _checkpoint_of(path: Path) -> tuple[Path, Path | None]:
    """(checkpoint folder, run folder or None) for a run's --out folder or a checkpoint."""
    from course import runs
    if runs.is_run(path) and (path / "checkpoint").is_dir():
        return path / "checkpoint", path
    if runs.is_run(path):
        raise ValueError(f"{path} holds a run that has not finished an epoch yet: continue it with "
                         f"`python -m course train --resume {quote(str(path))}`.")
    return path, (path.parent if runs.is_run(path.parent) and path.name == "checkpoint" else None)


def _load(path: str, gpu: bool, seed: int = 1):
    """(checkpoint folder, model, checkpoint record) of a run folder or a checkpoint, checked."""
    from course import runs
    checkpoint, run = _checkpoint_of(Path(path))
    if run is not None:
        runs.Run(run).load()
    runtime.init(seed=seed, gpu=gpu or None)
    from course import lm
    record = lm.read_record(checkpoint)
    return checkpoint, lm.RNNLM.load(checkpoint), record


def cmd_evaluate(args, given: set) -> int:
    checkpoint, model, record = _load(args.checkpoint, args.gpu)
    from course import corpora, evaluation
    trained_on = record.get("data")
    if args.corpus is None and trained_on is None:
        raise ValueError(f"{checkpoint} does not record the corpus it was trained on (it was saved by "
                         "RNNLM.save): name it with --corpus.")
    corpus = _corpus_name(args.corpus) if args.corpus else trained_on["corpus"]
    own = trained_on is not None and corpus == trained_on["corpus"]
    if own and corpora.corpus_sha256(corpus) != trained_on["corpus_sha256"]:
        print(f"note: {corpus} has changed since the model was trained on it")
    limit = args.max_sentences or (trained_on.get("max_sentences") if own else None)
    if limit and not args.max_sentences:
        print(f"scoring the first {limit:,} sentences of {args.split}, as the model was trained "
              f"(--max-sentences {limit}); pass --max-sentences to change it")
    data = Settings.from_dict({**(trained_on or {}), "corpus": corpus, "max_sentences": limit, "max_tokens": None})
    sentences = read_splits(data)[0][args.split]
    n_unknown, n_tokens, n_literal = _unknown(sentences, model.vocab)
    rate = n_unknown / max(n_tokens, 1)
    print(f"{corpus} {args.split}: {n_unknown:,} of {n_tokens:,} tokens ({rate:.1%}) are not in the "
          f"model's vocabulary of {len(model.vocab):,} and are scored as <unk>"
          + (f"; {n_literal:,} ({n_literal / n_tokens:.1%}) are <unk> in the corpus itself" if n_literal else ""))
    if rate > args.max_unknown and not own:
        trained = f" (it was trained on {trained_on['corpus']})" if trained_on else ""
        raise ValueError(f"{rate:.1%} of the tokens are unknown to the model{trained}, more than "
                         f"--max-unknown {args.max_unknown:g}: its perplexity would mostly measure how "
                         "well it predicts <unk>. Score it on its own corpus (leave out --corpus), or pass "
                         f"--max-unknown {min(1.0, math.ceil(rate * 100) / 100):g} to score it anyway.")
    from course.data import UNK
    known = [[t if t in model.vocab else UNK for t in s] for s in sentences]   # the same ids, as allowed
    stream = bool((trained_on or {}).get("stream"))
    ppl = evaluation.held_out(model, known, stream)
    print(f"{corpus} {args.split}: perplexity {ppl:.2f}"
          + (" (read as one stream, as the model was trained)" if stream else ""))
    if own:
        splits = read_splits(Settings.from_dict(trained_on))[0]
        yardstick = _yardstick({**splits, args.split: sentences}, model.vocab, (args.split,))
        _print_table({args.split: ppl}, yardstick, "this model")
    else:
        print("(the yardstick, unigram and Kneser-Ney trigram, is trained on the model's own corpus: "
              "leave out --corpus to see it)")
    return 0


# --------------------------------------------------------------------------- sample

def _unit(record: dict) -> str:
    return (record.get("data") or {}).get("unit", "word")


def cmd_sample(args, given: set) -> int:
    _, model, record = _load(args.run, args.gpu, args.seed)
    from course import sampling
    char = _unit(record) == "char"
    prompt = list(args.prompt or "") if char else (args.prompt or "").split()
    max_length = args.max_length or (DEFAULT_SAMPLE_LENGTH * 5 if char else DEFAULT_SAMPLE_LENGTH)
    samples = sampling.sample(model, args.n, args.temperature, args.top_k, prompt, args.seed, max_length,
                        top_p=args.top_p)
    for s in samples:
        print(("" if char else " ").join(s.tokens) + ("" if s.finished else " [cut at --max-length]"))
    return 0


def cmd_judge_samples(args, given: set) -> int:
    _, model, record = _load(args.run, args.gpu, args.seed)
    data = record.get("data") or {}
    if data.get("corpus") != "course" or _unit(record) != "word":
        raise ValueError(f"{args.run} was trained on {data.get('corpus', 'an unrecorded corpus')} in "
                         f"{_unit(record)}s: the grammar judges only models of the course corpus in words "
                         "(train one with --corpus course --unit word).")
    from course import judge, sampling
    from course.grammar import Grammar
    samples = sampling.sample(model, args.n, args.temperature, args.top_k, None, args.seed,
                        args.max_length or DEFAULT_SAMPLE_LENGTH, top_p=args.top_p)
    print(f"{args.n} samples at temperature {args.temperature:g}"
          + (f", top-k {args.top_k}" if args.top_k else "") + (f", top-p {args.top_p:g}" if args.top_p else "")
          + f", seed {args.seed} (95% intervals in brackets):")
    for line in judge.report(judge.judge(Grammar(), samples, args.long, seed=args.seed)):
        print(f"  {line}")
    return 0


# --------------------------------------------------------------------------- data

def cmd_make_corpus(args, given: set) -> int:
    from course.corpus_files import write_corpus
    write_corpus()
    return 0


def cmd_fetch(args, given: set) -> int:
    from course.corpora import fetch
    path = fetch(args.name, args.source)
    print(f"{args.name} verified and placed in {path}")
    return 0


# --------------------------------------------------------------------------- parser

class _Help(argparse.ArgumentDefaultsHelpFormatter):
    """--help shows each option's default, unless it has none or its help already says it."""

    def _get_help_string(self, action):
        if action.default is None or action.nargs == 0 or "default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


def _add_sampling(p, n=10) -> None:
    p.add_argument("--n", type=POSITIVE, default=n, help="how many sentences")
    p.add_argument("--temperature", type=number(float, 0.0, low_open=True, example=", e.g. 0.7 or 1"),
                   default=1.0, help="divides the scores before the softmax: below 1 is more conservative, "
                                     "above 1 more adventurous")
    p.add_argument("--top-k", type=POSITIVE, default=None, help="draw only from the k most probable tokens")
    p.add_argument("--top-p", type=number(float, 0.0, 1.0, low_open=True, example=", e.g. 0.9"), default=None,
                   help="then only from the nucleus: the fewest most probable tokens whose probability "
                        "reaches p (Holtzman et al. 2020)")
    p.add_argument("--seed", type=POSITIVE, default=1, help="fixes the draws: the same seed, the same sentences")
    p.add_argument("--max-length", type=POSITIVE, default=None,
                   help=f"cut a sentence at this many tokens (default {DEFAULT_SAMPLE_LENGTH} words, "
                        f"{DEFAULT_SAMPLE_LENGTH * 5} characters)")



def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m course", description=__doc__)
    sub = top.add_subparsers(dest="command", required=True)

    p = sub.add_parser("train", help="train a language model, print its log, write metrics.json",
                       allow_abbrev=False, formatter_class=_Help,
                       description="Train a language model. With --out, every epoch is saved; Ctrl-C "
                                   "saves and stops, and --resume continues the run.")
    add_options(p.add_argument_group("the model (course.settings.ModelSettings)"), ModelSettings)
    add_options(p.add_argument_group("the data, the training rule and the schedule (course.settings.Settings)"),
                Settings)
    run = p.add_argument_group("the run")
    run.add_argument("--mem", type=number(int, 1, _memory_mb(), example=" (MB of memory for DyNet)"),
                   default=runtime.DEFAULT_MEM, help="MB of memory DyNet starts with (it takes more as needed); when given, "
                                     "also the most the run may need (estimated and checked before training)")
    run.add_argument("--gpu", action="store_true", help="run on the GPU (needs a CUDA DyNet)")
    run.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    where = run.add_mutually_exclusive_group()
    where.add_argument("--out", default=None,
                       help="a new folder for the run: metrics.json, checkpoint/ (best epoch), resume/")
    where.add_argument("--resume", metavar="OUT", default=None,
                       help="continue the run in OUT where it stopped, with its settings (--epochs may grow)")
    run.add_argument("--overwrite", action="store_true", help="replace the run already in --out")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("evaluate", help="perplexity of a checkpoint on a corpus split", formatter_class=_Help)
    p.add_argument("checkpoint", help="a run's --out folder, or a checkpoint folder")
    add_options(p, Settings, only=("corpus", "max_sentences"), corpus=None,
                notes={"corpus": "; default: the corpus the model was trained on"})
    p.add_argument("--split", default="test", choices=["train", "valid", "test"])
    p.add_argument("--max-unknown", type=number(float, 0.0, 1.0), default=DEFAULT_MAX_UNKNOWN,
                   help="refuse to score when more of the tokens than this are not in the model's "
                        f"vocabulary (default {DEFAULT_MAX_UNKNOWN}, or the model's own rate on its corpus)")
    p.add_argument("--gpu", action="store_true")
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("sample", help="sentences (or characters) generated by a trained model",
                       formatter_class=_Help,
                       description="Generate sentences from a trained run, one a line; the same --seed "
                                   "gives the same sentences.")
    p.add_argument("run", help="a run's --out folder, or a checkpoint folder")
    _add_sampling(p)
    p.add_argument("--prompt", default=None,
                   help="text every sentence starts with (words of the model's vocabulary, or characters)")
    p.add_argument("--gpu", action="store_true")
    p.set_defaults(func=cmd_sample)

    p = sub.add_parser("judge-samples", help="sentences of a course-corpus model judged by the grammar",
                       formatter_class=_Help,
                       description="Draw sentences from a model of the course corpus and let the grammar "
                                   "judge them: the share it derives, their log-probability, agreement kept "
                                   "at long distances, and the model's divergence from the grammar.")
    p.add_argument("run", help="a run's --out folder, or a checkpoint folder (course corpus, words)")
    _add_sampling(p, n=1000)
    p.add_argument("--long", type=POSITIVE, default=6,
                   help="subject-verb distance (tokens) from which an agreement counts as long")
    p.add_argument("--gpu", action="store_true")
    p.set_defaults(func=cmd_judge_samples)

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


def given_options(argv) -> set:
    """The settings written on the command line (rather than left at their defaults)."""
    names = SETTINGS + tuple(MAY_CHANGE_ON_RESUME)
    flags = {"--" + name.replace("_", "-"): name for name in names}
    flags["--no-progress"] = "progress"
    return {name for flag, name in flags.items()
            if any(arg == flag or arg.startswith(flag + "=") for arg in argv)}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser().parse_args(argv)
    try:
        return args.func(args, given_options(argv))
    except (OSError, ValueError, RuntimeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return ERROR
    except KeyboardInterrupt:
        print("\ninterrupted; nothing more was saved (a run's --out keeps its last save).", file=sys.stderr)
        return INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
