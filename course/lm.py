"""Recurrent language models, their training loop, evaluation and checkpoints.

The model (tutorial eq 45/46, stacked eq 60, residual eq 61)::

    m_t = M[e_{t-1}]                          embedding lookup
    h_{l,t} = RNN_l(h_{l-1,t}, h_{l,t-1})     one recurrent layer per level l
    p_t = softmax(W_hs h_{L,t} + b_s)

Each recurrent layer is either a :class:`course.cell.Cell` (a step function,
e.g. the ``lstm_step`` a student writes) or one of DyNet's own builders
(``"lstm"``, ``"gru"``, ``"srnn"`` below): both run behind one small interface,
so everything else (batching, masking, training, evaluation) is shared.
"""
from __future__ import annotations

import json
import math
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from course import runtime
from course.cell import Cell
from course.data import Vocab, encode, make_batch, make_batches, shuffled

dy = runtime.dynet()

# DyNet's builders, usable wherever a Cell is: name -> builder class.
BUILDERS = {"srnn": "SimpleRNNBuilder", "lstm": "VanillaLSTMBuilder", "gru": "GRUBuilder"}
RESIDUAL = (None, "vertical", "lateral")   # none, ResV, ResV + ResL (Odyssey section 5)


class CellLayer:
    """Runs a step function over time: creates its parameters and a zero state."""

    def __init__(self, cell: Cell, pc, d_in: int, d_h: int):
        self.cell, self.d_h = cell, d_h
        self.params = {}
        for name, shape in cell.shapes(d_in, d_h).items():
            value = cell.init(name, tuple(shape)) if cell.init else None
            init = dy.NumpyInitializer(np.asarray(value, dtype=float)) if value is not None else (
                dy.ConstInitializer(0.0) if len(shape) == 1 else None)
            self.params[name] = pc.add_parameters(shape, init=init, name=name.replace("_", ""))  # None: Glorot

    def start(self, batch_size: int):
        self.p = {name: P.expr(True) for name, P in self.params.items()}   # True: trainable (expr() alone is a constant)
        zero = dy.zeros((self.d_h,), batch_size=batch_size)
        return (zero,) * self.cell.n_state

    def step(self, state, x):
        new_state = self.cell.step(self.p, x, state)
        if not isinstance(new_state, tuple) or len(new_state) != self.cell.n_state:
            raise TypeError(f"{self.cell.name}: a step function must return a tuple of "
                            f"{self.cell.n_state} expression(s) (the new state), got {type(new_state).__name__}")
        return new_state

    @staticmethod
    def output(state):
        return state[0]

    @staticmethod
    def with_output(state, h):
        return (h,) + tuple(state[1:])


class BuilderLayer:
    """One layer of DyNet's own SimpleRNN/VanillaLSTM/GRU builder."""

    def __init__(self, name: str, pc, d_in: int, d_h: int, forget_bias: float = 1.0):
        options = {"forget_bias": forget_bias} if name == "lstm" else {}
        self.builder = getattr(dy, BUILDERS[name])(1, d_in, d_h, pc, **options)

    def start(self, batch_size: int):
        return self.builder.initial_state()

    @staticmethod
    def step(state, x):
        return state.add_input(x)

    @staticmethod
    def output(state):
        return state.output()

    @staticmethod
    def with_output(state, h):
        raise ValueError("lateral residual connections rewrite the recurrent state h_t, which "
                         "DyNet's builders keep to themselves: use a Cell, or residual='vertical'.")


@dataclass
class Config:
    """Everything needed to rebuild a model (saved in checkpoints)."""
    cell: str = "lstm"
    vocab_size: int = 0
    embed: int = 64
    hidden: int = 128
    layers: int = 1
    residual: str | None = None
    extra: dict = field(default_factory=dict)   # e.g. the cell factory's arguments


class RNNLM:
    """A recurrent language model over a :class:`Vocab`.

    cell: a :class:`Cell` (hand-written step function) or a builder name from
    :data:`BUILDERS`; ``extra={"forget_bias": b}`` sets the builder LSTM's forget
    bias (DyNet adds it inside the forget gate's sigmoid; default 1). ``residual`` is None, "vertical" (ResV: layer input added
    to the output passed up, eq 61) or "lateral" (ResV + ResL: the sum also
    becomes the recurrent h_t); residuals need ``embed == hidden``.
    """

    def __init__(self, vocab: Vocab, cell: Cell | str = "lstm", embed: int = 64,
                 hidden: int = 128, layers: int = 1, residual: str | None = None,
                 pc=None, extra: dict | None = None):
        if residual not in RESIDUAL:
            raise ValueError(f"residual must be one of {RESIDUAL}, got {residual!r}")
        if residual and embed != hidden:
            raise ValueError(f"residual connections add a layer's input to its output, so embed "
                             f"({embed}) must equal hidden ({hidden})")
        if layers < 1:
            raise ValueError(f"layers must be >= 1, got {layers}")
        if isinstance(cell, str) and cell not in BUILDERS:
            raise ValueError(f"unknown builder {cell!r}: use one of {sorted(BUILDERS)} or pass a Cell")
        self.vocab = vocab
        self.cell = cell
        self.config = Config(cell if isinstance(cell, str) else cell.name, len(vocab), embed,
                             hidden, layers, residual, dict(extra or {}))
        self.pc = pc if pc is not None else dy.ParameterCollection()
        self.embeddings = self.pc.add_lookup_parameters((len(vocab), embed), name="M")
        forget_bias = float(self.config.extra.get("forget_bias", 1.0))
        self.layers = [(BuilderLayer(cell, self.pc, d_in, hidden, forget_bias) if isinstance(cell, str)
                        else CellLayer(cell, self.pc, d_in, hidden))
                       for d_in in [embed] + [hidden] * (layers - 1)]
        self.W_hs = self.pc.add_parameters((len(vocab), hidden), name="Whs")
        self.b_s = self.pc.add_parameters((len(vocab),), init=dy.ConstInitializer(0.0), name="bs")

    def param_count(self) -> int:
        return sum(p.as_array().size for p in self.pc.parameters_list()) + \
            sum(p.as_array().size for p in self.pc.lookup_parameters_list())

    # -- the forward pass -------------------------------------------------
    def hidden_states(self, inputs, dropout: float = 0.0):
        """The top layer's h_t for each step of a time-major batch of word ids.

        With ``dropout`` > 0, the embeddings and each layer's output are multiplied
        by a random mask that is drawn once per batch and kept for every time step
        (variational dropout on the non-recurrent connections; Odyssey section 6.2).
        """
        batch_size = len(inputs[0])
        states = [layer.start(batch_size) for layer in self.layers]
        masks = [None] * (len(self.layers) + 1)
        if dropout:
            if not 0.0 < dropout < 1.0:
                raise ValueError(f"dropout must be in [0, 1), got {dropout}")
            sizes = [self.config.embed] + [self.config.hidden] * len(self.layers)
            masks = [dy.random_bernoulli((d,), 1.0 - dropout, 1.0 / (1.0 - dropout),
                                         batch_size=batch_size) for d in sizes]
        outputs = []
        for words in inputs:
            x = dy.lookup_batch(self.embeddings, words)
            if masks[0] is not None:
                x = dy.cmult(x, masks[0])
            for k, layer in enumerate(self.layers):
                states[k] = layer.step(states[k], x)
                h = layer.output(states[k])
                if self.config.residual:
                    h = h + x                                     # ResV (eq 61)
                    if self.config.residual == "lateral":
                        states[k] = layer.with_output(states[k], h)   # ResL
                x = h if masks[k + 1] is None else dy.cmult(h, masks[k + 1])
            outputs.append(x)
        return outputs

    def batch_losses(self, batch, dropout: float = 0.0):
        """Masked negative log-likelihood of every prediction in a batch, as one
        batched expression of T*B elements (time-major), and the mask values.

        The softmax runs once over all steps: the T hidden states are joined into
        one batch of T*B columns, which is much faster than T separate softmaxes.
        """
        hs = dy.concatenate_to_batch(self.hidden_states(batch.inputs, dropout))
        scores = dy.affine_transform([self.b_s.expr(True), self.W_hs.expr(True), hs])
        targets = [w for step in batch.targets for w in step]
        masks = np.array([m for step in batch.masks for m in step])
        losses = dy.pickneglogsoftmax_batch(scores, targets)
        if masks.min() < 1.0:
            losses = dy.cmult(losses, dy.inputTensor(masks, batched=True))
        return losses, masks

    def token_logprobs(self, sentences, batch_size: int = 64, dropout: float = 0.0) -> list:
        """Log-probability of each prediction: one array of len(s) + 1 per sentence."""
        ids, _ = encode(sentences, self.vocab)
        result = [None] * len(ids)
        for batch in make_batches(ids, self.vocab, batch_size):
            dy.renew_cg()
            losses, _ = self.batch_losses(batch, dropout)
            per_step = -losses.npvalue().reshape(len(batch.targets), batch.size)
            for column, index in enumerate(batch.order):
                result[index] = per_step[:len(ids[index]) + 1, column]
        return result

    def sentence_logprobs(self, sentences, batch_size: int = 64) -> np.ndarray:
        """Natural-log probability of each sentence (token lists), ``</s>`` included."""
        return np.array([lp.sum() for lp in self.token_logprobs(sentences, batch_size)])

    # -- checkpoints ----------------------------------------------------------
    def save(self, directory):
        """Parameters, vocabulary and config in one directory."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.pc.save(str(directory / "params.dy"))
        self.vocab.save(directory / "vocab.json")
        (directory / "config.json").write_text(json.dumps(asdict(self.config), indent=1) + "\n")

    @classmethod
    def load(cls, directory, cell: Cell | None = None) -> "RNNLM":
        """Rebuild a saved model. A hand-written cell must be passed in (or be a
        reference cell the instructor's checkout has); builders rebuild by name."""
        directory = Path(directory)
        for name in ("params.dy", "vocab.json", "config.json"):
            if not (directory / name).exists():
                raise FileNotFoundError(f"{directory} is not a checkpoint: {name} is missing "
                                        "(save one with RNNLM.save or `python -m course train --out DIR`).")
        config = Config(**json.loads((directory / "config.json").read_text()))
        if cell is None:
            cell = config.cell if config.cell in BUILDERS else resolve_cell(config.cell, config.extra)
        model = cls(Vocab.load(directory / "vocab.json"), cell, config.embed, config.hidden,
                    config.layers, config.residual, extra=config.extra)
        model.pc.populate(str(directory / "params.dy"))
        return model


def resolve_cell(name: str, extra: dict | None = None):
    """A builder name (``srnn``, ``lstm``, ``gru``), or a hand-written reference cell
    (instructor checkout only): ``hand-lstm``, ``hand-gru``, ``lstm-srnn``, ``ran-tanh``..."""
    if name in BUILDERS:
        return name
    try:
        from autograder.reference.cells import CELLS, make_cell
    except ImportError:
        raise ValueError(f"cell {name!r} is hand-written, and its code is a graded exercise: it is "
                         f"not part of the student release. Builders available: {sorted(BUILDERS)}; "
                         "or pass your own Cell.") from None
    key = name.removeprefix("hand-")
    if key not in CELLS or (key in BUILDERS and not name.startswith("hand-")):
        choices = sorted(BUILDERS) + sorted(f"hand-{k}" if k in BUILDERS else k for k in CELLS)
        raise ValueError(f"unknown cell {name!r}: choose from {choices}")
    return make_cell(key, **(extra or {}))


def gradient_profile(model: RNNLM, sentences, K: int = 25, n: int = 64) -> np.ndarray:
    """Typical ||d loss / d h|| at each of the K steps before a prediction
    (vanishing and exploding gradients, tutorial section 6.3).

    The loss is the model's prediction of word K of the first n sentences longer
    than K words; entry k of the result belongs to the state k steps before it.
    "Typical" is the geometric mean over the sentences (the norms span decades).
    """
    ids, _ = encode([s[:K] for s in sentences if len(s) > K][:n], model.vocab)
    if not ids:
        raise ValueError(f"no sentence is longer than K={K} words: lower K")
    batch = make_batch(ids, model.vocab)
    dy.renew_cg()
    hs = model.hidden_states(batch.inputs[:K])     # the states after <s>, w_1, ..., w_{K-1}
    scores = dy.affine_transform([model.b_s.expr(True), model.W_hs.expr(True), hs[-1]])
    loss = dy.sum_batches(dy.pickneglogsoftmax_batch(scores, batch.targets[K - 1]))
    loss.backward(full=True)                       # full=True: gradients of every node, h included
    norms = np.array([np.linalg.norm(h.gradient(), axis=0) for h in reversed(hs)])
    return np.exp(np.log(np.maximum(norms, 1e-30)).mean(axis=1))


def perplexity(total_nll: float, n_predictions: int) -> float:
    """exp(total negative log-likelihood / number of predicted tokens)."""
    if n_predictions <= 0:
        raise ValueError("perplexity of no predictions is undefined: the evaluation set is empty")
    return math.exp(total_nll / n_predictions)


def evaluate(model: RNNLM, sentences, batch_size: int = 64) -> float:
    """Perplexity of token-list sentences: every word and one ``</s>`` per sentence
    are predicted; padding is never counted."""
    logprobs = model.sentence_logprobs(sentences, batch_size)
    return perplexity(-float(logprobs.sum()), sum(len(s) + 1 for s in sentences))


OPTIMIZERS = {"sgd": "SimpleSGDTrainer", "adam": "AdamTrainer"}


def train(model: RNNLM, train_sentences, valid_sentences=None, epochs: int = 1,
          batch_size: int = 32, optimizer: str = "adam", lr: float | None = None, dropout: float = 0.0,
          clip: float = 5.0, lr_decay: float = 0.5, decay_after: int | None = None,
          seed: int = 1, progress: bool = True, checkpoint: str | Path | None = None,
          log=print) -> list[dict]:
    """Train with minibatches sorted by length and shuffled per epoch.

    The loss of a batch is summed over time and averaged over its sentences.
    Gradients are clipped to norm ``clip``. ``dropout`` is applied in training only
    (see :meth:`RNNLM.hidden_states`); evaluation is deterministic. The learning rate is multiplied by
    ``lr_decay`` after each epoch whose held-out perplexity did not improve, or,
    with ``decay_after=k``, after every epoch past the k-th (the fixed schedule of
    Zaremba et al., 2014). With ``checkpoint``, the best model (by held-out
    perplexity) is saved there. Returns one dict per epoch.
    """
    from tqdm import tqdm
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {sorted(OPTIMIZERS)}, got {optimizer!r}")
    lr = lr if lr is not None else (1.0 if optimizer == "sgd" else 0.002)
    trainer = getattr(dy, OPTIMIZERS[optimizer])(model.pc, lr)
    trainer.set_clip_threshold(clip if clip else -1)
    ids, n_unknown = encode(train_sentences, model.vocab)
    batches = make_batches(ids, model.vocab, batch_size)
    history, best = [], math.inf
    for epoch in range(1, epochs + 1):
        start, total_nll, n_pred = time.perf_counter(), 0.0, 0
        bar = tqdm(shuffled(batches, seed, epoch), desc=f"epoch {epoch}/{epochs}", unit="batch",
                   file=sys.stdout, disable=not progress, mininterval=1.0, dynamic_ncols=True)
        for batch in bar:
            dy.renew_cg()
            losses, masks = model.batch_losses(batch, dropout)
            loss = dy.sum_batches(losses)
            total_nll += loss.value()
            n_pred += batch.n_predictions
            (loss * (1.0 / batch.size)).backward()
            trainer.update()
            bar.set_postfix(ppl=f"{math.exp(min(total_nll / n_pred, 50)):.1f}",
                            tok_s=f"{n_pred / (time.perf_counter() - start):.0f}", refresh=False)
        seconds = time.perf_counter() - start
        row = {"epoch": epoch, "train_ppl": perplexity(total_nll, n_pred), "lr": trainer.learning_rate,
               "tokens_per_s": n_pred / seconds, "seconds": seconds}
        if valid_sentences is not None:
            row["valid_ppl"] = evaluate(model, valid_sentences)
            if row["valid_ppl"] < best:
                best = row["valid_ppl"]
                if checkpoint:
                    model.save(checkpoint)
            elif decay_after is None:
                trainer.learning_rate *= lr_decay
        if decay_after is not None and epoch >= decay_after:
            trainer.learning_rate *= lr_decay
        history.append(row)
        if log:
            log("  ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()))
    return history
