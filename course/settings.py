"""The settings of a training run, in one place: their defaults are the only ones.

``python -m course train`` reads its options' defaults from :class:`Settings` (so
``--help`` shows them), :func:`course.training.train` takes a ``Settings``, and a run's
``metrics.json`` records them whole. A field is a command-line option of the same
name (``batch_size`` is ``--batch-size``).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

OPTIMIZERS = {"sgd": "SimpleSGDTrainer", "adam": "AdamTrainer"}
DEFAULT_LR = {"sgd": 1.0, "adam": 0.002}


@dataclass
class Settings:
    """Everything a training run is made of: the model, the data, the training rule."""
    # the model
    cell: str = "lstm"              # srnn, lstm, gru (DyNet's builders) or path/to/file.py:lstm_step
    embed: int = 64                 # size of the word embeddings
    hidden: int = 128               # units of each recurrent layer
    layers: int = 1                 # recurrent layers, stacked
    residual: str | None = None     # None, "vertical" or "lateral"
    init_scale: float | None = None  # every parameter from U(-s, s) (Zaremba: 0.1); None: DyNet's initialisers
    # the data
    corpus: str = "course"
    unit: str = "word"              # "word" or "char"
    max_sentences: int | None = None
    max_tokens: int | None = None
    max_length: int = 500           # tokens; longer lines are cut (memory grows with the longest line)
    vocab_size: int | None = None
    stream: bool = False            # read the training text as one stream cut into segments of bptt steps
    bptt: int = 35                  # steps of a stream segment (truncated backpropagation through time)
    reset_state: bool = False       # with stream: every segment starts from zeros, nothing carried over
    # the training rule
    epochs: int = 1
    batch_size: int = 32            # sentences per batch, or a stream's columns
    optimizer: str = "adam"         # a key of OPTIMIZERS
    lr: float | None = None         # None: DEFAULT_LR of the optimizer
    clip: float = 5.0               # gradient norm clipped to this (0: no clipping)
    dropout: float = 0.0            # variational dropout on embeddings and layer outputs
    lr_decay: float = 0.5           # the learning rate's factor when the schedule lowers it
    decay_after: int | None = None  # lower it after every epoch past this one (None: on a plateau)
    seed: int = 1                   # the initial weights, the batch order and the dropout masks
    max_batches: int | None = None  # end each epoch after this many batches (quick runs)

    def __post_init__(self):
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {sorted(OPTIMIZERS)}, got {self.optimizer!r}")

    @property
    def learning_rate(self) -> float:
        """The learning rate to start with."""
        return self.lr if self.lr is not None else DEFAULT_LR[self.optimizer]

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, saved: dict) -> "Settings":
        """Settings as a run recorded them; fields it predates take today's defaults."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in saved.items() if k in names})

    def but(self, **changes) -> "Settings":
        """A copy with ``changes`` (unknown names are refused, naming them)."""
        names = {f.name for f in fields(self)}
        unknown = sorted(set(changes) - names)
        if unknown:
            raise TypeError(f"unknown training setting(s) {unknown}: the settings are {sorted(names)}")
        return replace(self, **changes)


DEFAULTS = Settings()
