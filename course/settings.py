"""The configuration of a training run, in two typed parts, each field's default and help in one place.

* :class:`ModelSettings`: what the model is (cell, sizes, residuals, initial weights);
  :meth:`course.lm.RNNLM.from_settings` builds the model from it.
* :class:`Settings`: how it is trained: the data, the training rule and the schedule's
  parameters (:func:`course.schedules.of`). :func:`course.training.train` takes only these, so a
  model's sizes cannot disagree with a second copy of them.

``python -m course train`` makes one option per field (``batch_size`` is ``--batch-size``)
with :func:`add_options`, from the field's ``metadata`` (help, type, choices) and default, so
``--help`` shows the defaults used; :func:`to_options` writes a part back as those options. A
run's ``metrics.json`` records both parts in one flat dict (:func:`record`); :func:`from_record`
reads it back, fields a run predates taking today's defaults.
"""
from __future__ import annotations

import argparse
import math
from dataclasses import MISSING, asdict, dataclass, field, fields, replace

OPTIMIZERS = {"sgd": "SimpleSGDTrainer", "adam": "AdamTrainer"}
DEFAULT_LR = {"sgd": 1.0, "adam": 0.002}
RESIDUAL = (None, "vertical", "lateral")   # none, ResV, ResV + ResL (Odyssey section 5)


def number(kind, low=None, high=None, low_open=False, example=""):
    """An argparse type: ``kind`` within bounds, else a message naming the value and a fix."""
    def convert(text):
        try:
            value = kind(text)
        except ValueError:
            value = math.nan
        above = low is None or value > low or (value == low and not low_open)
        if not (math.isfinite(value) and above and (high is None or value <= high)):
            bounds = [f"> {low:g}" if low_open else f">= {low:g}"] if low is not None else []
            bounds += [f"<= {high:g}"] if high is not None else []
            bounds = " and ".join(bounds)
            raise argparse.ArgumentTypeError(
                f"got {text!r}; give {'an integer' if kind is int else 'a number'} {bounds}{example}")
        return value
    return convert


POSITIVE = number(int, 1)


def option(default, help: str, type=None, choices=None):
    """A field that is also a command-line option: its default, its --help text, and how
    the option's text is read (``type``) or which values it takes (``choices``); a bool
    field is a flag."""
    return field(default=default, metadata={"help": help, "type": type, "choices": choices})


class _Fields:
    """What both parts share: read from a record, copied with changes."""

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, saved: dict):
        """The fields of ``saved`` that are ours (a record holds both parts; names it no
        longer knows are left out); fields it predates take today's defaults."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in saved.items() if k in names})

    @classmethod
    def from_args(cls, args):
        """The parsed options (:func:`add_options`) of this part."""
        return cls(**{f.name: getattr(args, f.name) for f in fields(cls)})

    def but(self, **changes):
        """A copy with ``changes`` (unknown names are refused, naming them)."""
        names = {f.name for f in fields(self)}
        unknown = sorted(set(changes) - names)
        if unknown:
            raise TypeError(f"unknown {self.KIND} setting(s) {unknown}: the {self.KIND} settings are "
                            f"{sorted(names)}" + (self.ELSEWHERE if set(unknown) & self.OTHER else ""))
        return replace(self, **changes)


@dataclass
class ModelSettings(_Fields):
    """What the model is; :meth:`course.lm.RNNLM.from_settings` builds it."""
    cell: str = option("lstm", "srnn, lstm, gru (DyNet's builders), or a step function of your own: "
                               "path/to/file.py:lstm_step (with lstm_shapes, and optionally lstm_init, beside it)")
    embed: int = option(64, "size of the word embeddings", POSITIVE)
    hidden: int = option(128, "units of each recurrent layer", POSITIVE)
    layers: int = option(1, "recurrent layers, stacked", POSITIVE)
    residual: str | None = option(None, "residual connections between layers (default: none)",
                                  choices=["vertical", "lateral"])
    init_scale: float | None = option(None, "draw every parameter from U(-s, s) (Zaremba et al. use 0.1; default: "
                                            "DyNet's initialisers, Glorot and a forget bias of 1)",
                                      number(float, 0.0, low_open=True))
    KIND, OTHER = "model", set()
    ELSEWHERE = ""

    def __post_init__(self):
        if self.residual not in RESIDUAL:
            raise ValueError(f"residual must be one of {RESIDUAL}, got {self.residual!r}")
        if self.residual and self.embed != self.hidden:
            raise ValueError(f"residual connections add a layer's input to its output, so embed "
                             f"({self.embed}) must equal hidden ({self.hidden}) (--embed, --hidden)")
        if self.layers < 1:
            raise ValueError(f"layers must be >= 1, got {self.layers}")


@dataclass
class Settings(_Fields):
    """How a model is trained: the data, the training rule, the schedule."""
    # the data
    corpus: str = option("course", "course (the shipped grammar corpus), ptb, wikitext-2, a folder holding "
                                   "train/valid/test files, or a text file of your own (split in order: "
                                   "first 80%% of its lines train, next 10%% valid, last 10%% test)")
    max_sentences: int | None = option(None, "use only the first N sentences of each split (quick runs)", POSITIVE)
    unit: str = option("word", "model words or characters (each line's characters, spaces included)",
                       choices=["word", "char"])
    max_tokens: int | None = option(None, "train on the first N tokens of the training split only; the vocabulary "
                                          "is still built from all of it", POSITIVE)
    max_length: int = option(500, "cut lines longer than this many tokens into pieces (memory grows with the "
                                  "longest line)", POSITIVE)
    vocab_size: int | None = option(None, "keep only the most frequent words (default: every word of the training "
                                          "split)", number(int, 4, example=" (3 ids are <unk>, <s>, </s>)"))
    stream: bool = option(False, "read the training text as one stream in --batch-size rows, in segments of --bptt "
                                 "steps, the state carried from segment to segment (Zaremba et al. 2014, char-rnn); "
                                 "held-out text is scored as one stream too. Default: each sentence from a fresh state")
    bptt: int = option(35, "steps of a stream's segment (with --stream)", POSITIVE)
    reset_state: bool = option(False, "with --stream: start every segment from zeros, carrying nothing across the "
                                      "cut (to measure what the carried state adds); held-out text is still one stream")
    # the training rule
    epochs: int = option(1, "passes over the training split", POSITIVE)
    max_batches: int | None = option(None, "end each epoch after this many batches (quick runs)", POSITIVE)
    batch_size: int = option(32, "sentences per batch (with --stream: rows of the stream)", POSITIVE)
    optimizer: str = option("adam", "the training rule", choices=sorted(OPTIMIZERS))
    lr: float | None = option(None, "learning rate; default: " + ", ".join(
                                  f"{rate:g} for {name}" for name, rate in sorted(DEFAULT_LR.items())),
                              number(float, 0.0, low_open=True, example=", e.g. 0.002 for adam, 1 for sgd"))
    clip: float = option(5.0, "clip the gradient to this norm (0: no clipping)", number(float, 0.0))
    dropout: float = option(0.0, "variational dropout on embeddings and layer outputs (training only)",
                            number(float, 0.0, 0.95))
    seed: int = option(1, "fixes the initial weights, batch order and dropout", POSITIVE)
    # the schedule (course.schedules)
    lr_decay: float = option(0.5, "what the learning rate is multiplied by when the schedule lowers it",
                             number(float, 0.0, 1.0, low_open=True))
    decay_after: int | None = option(None, "lower the learning rate after every epoch past this one (default: "
                                           "lower it when held-out perplexity stops improving)", POSITIVE)
    min_gain: float = option(0.0, "without --decay-after: an epoch counts as a gain when it lowers the held-out "
                                  "perplexity by at least this fraction (bench/converge.py: 0.001)",
                             number(float, 0.0, 1.0))
    patience: int | None = option(None, "without --decay-after: stop at the Nth epoch without a gain (default: "
                                        "train every --epochs)", POSITIVE)
    KIND, OTHER = "training", {f for f in ModelSettings.__dataclass_fields__}
    ELSEWHERE = ": the model's own (cell, sizes, init_scale) are ModelSettings, given to RNNLM.from_settings"

    def __post_init__(self):
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {sorted(OPTIMIZERS)}, got {self.optimizer!r}")

    @property
    def learning_rate(self) -> float:
        """The learning rate to start with."""
        return self.lr if self.lr is not None else DEFAULT_LR[self.optimizer]


MODEL_DEFAULTS, DEFAULTS = ModelSettings(), Settings()


def record(model: ModelSettings, training: Settings) -> dict:
    """Both parts as one flat dict, as a run's metrics.json records them."""
    return {**model.to_dict(), **training.to_dict()}


def from_record(saved: dict) -> tuple[ModelSettings, Settings]:
    """The two parts of a recorded run (:func:`record`)."""
    return ModelSettings.from_dict(saved), Settings.from_dict(saved)


def add_options(parser, cls, only=None, notes=None, **defaults) -> None:
    """One option per field of ``cls`` (or of the fields named in ``only``), ``--batch-size``
    for ``batch_size``: its help, type, choices and default from the field. ``defaults``
    replaces a field's default by name, ``notes`` adds to its help."""
    for f in fields(cls):
        if only is not None and f.name not in only:
            continue
        meta, default = f.metadata, defaults.get(f.name, f.default)
        assert f.default is not MISSING and "help" in meta, f"{cls.__name__}.{f.name} needs option()"
        flag, help_ = "--" + f.name.replace("_", "-"), meta["help"] + (notes or {}).get(f.name, "")
        if f.type in ("bool", bool):
            parser.add_argument(flag, action="store_true", default=default, help=help_)
        else:
            parser.add_argument(flag, default=default, help=help_,
                                **{k: meta[k] for k in ("type", "choices") if meta[k] is not None})


def to_options(part) -> list[str]:
    """The options that :func:`add_options` reads back as ``part``: one for each field that
    differs from its default (a flag for a bool field that is set)."""
    args = []
    for f in fields(part):
        value = getattr(part, f.name)
        if value == f.default:
            continue
        flag = "--" + f.name.replace("_", "-")
        if f.type in ("bool", bool) and value is True:
            args.append(flag)
        elif f.type in ("bool", bool) or value is None:     # a flag cannot be unset, nor a value made None
            raise ValueError(f"{flag}: the command line cannot give {f.name} = {value!r}")
        else:
            args += [flag, str(value)]
    return args
