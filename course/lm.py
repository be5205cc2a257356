"""Recurrent language models, their training loop, evaluation and checkpoints.

The model (tutorial eq 45/46, stacked eq 60, residual eq 61)::

    m_t = M[e_{t-1}]                          embedding lookup
    h_{l,t} = RNN_l(h_{l-1,t}, h_{l,t-1})     one recurrent layer per level l
    p_t = softmax(W_hs h_{L,t} + b_s)

Each recurrent layer is either a :class:`course.cell.Cell` (a step function,
e.g. the ``lstm_step`` a student writes) or one of DyNet's own builders
(``"lstm"``, ``"gru"``, ``"srnn"``): both run behind one small interface
(:mod:`course.layers`, which also lets a layer that is not a step function, such as
attention, take a place in the stack), so everything else (batching, masking,
training, evaluation) is shared.

Memory: the softmax of a batch is T x B x V numbers (steps, sentences, vocabulary).
Where that exceeds :data:`SOFTMAX_BUDGET` (a 33k vocabulary and paragraph-long
lines), it is computed in chunks of positions, each in a graph of its own, with the
same result (see :meth:`RNNLM.train_step`).
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import sys
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from course import runtime, schedules, sources
from course.cell import Cell
from course.checkpoint import DAMAGED, RECORD, CheckpointError, read_json, read_record
from course.data import Segment, Vocab, batch_orders, encode, make_batch
from course.evaluation import evaluate, held_out, perplexity  # noqa: F401  (course.lm.evaluate, .perplexity)
from course.files import save_parameters, sha256_of, write_atomic
from course.layers import BUILDERS, BuilderLayer, CellLayer, as_batch
from course.settings import MODEL_DEFAULTS, OPTIMIZERS, ModelSettings, Settings

dy = runtime.dynet()


def progress_bar(iterable=None, **options):
    """A tqdm bar on stderr, counting batches. tqdm's monitor thread is switched off: it starts
    even for a disabled bar, and a graded notebook's sandbox stops code that starts a thread."""
    from tqdm import tqdm
    tqdm.monitor_interval = 0
    return tqdm(iterable, **{"unit": "batch", "file": sys.stderr, "mininterval": 1.0, "dynamic_ncols": True,
                             **options})

SOFTMAX_BUDGET = 1 << 24      # scores (positions x vocabulary) of a batch held at once; beyond, in chunks
SOFTMAX_CHUNK = 1 << 22       # scores of one chunk
EVAL_POSITIONS = 6_000        # steps x sentences of an evaluation batch, at most (64 PTB sentences fit)


@dataclass
class Config:
    """Everything needed to rebuild a model (saved in checkpoints)."""
    cell: str = MODEL_DEFAULTS.cell
    vocab_size: int = 0
    embed: int = MODEL_DEFAULTS.embed
    hidden: int = MODEL_DEFAULTS.hidden
    layers: int = MODEL_DEFAULTS.layers
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

    def __init__(self, vocab: Vocab, cell: Cell | str = MODEL_DEFAULTS.cell, embed: int = MODEL_DEFAULTS.embed,
                 hidden: int = MODEL_DEFAULTS.hidden, layers: int = MODEL_DEFAULTS.layers,
                 residual: str | None = None, pc=None, extra: dict | None = None):
        ModelSettings("", embed, hidden, layers, residual)        # the sizes checked, as for from_settings
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

    @classmethod
    def from_settings(cls, vocab: Vocab, settings: ModelSettings, seed: int = 1, cell: Cell | None = None) -> "RNNLM":
        """The model ``settings`` describe (:class:`course.settings.ModelSettings`), over ``vocab``.
        Its cell is ``cell`` where given (a Cell built in code), else the one ``settings.cell``
        names (:func:`resolve_cell`; a step function from a file is recorded in ``extra``, so
        that :meth:`load` finds it again); with ``init_scale``, every parameter is drawn from
        U(-init_scale, init_scale) with ``seed``."""
        extra = {}
        if cell is None:
            cell = resolve_cell(settings.cell)
            if not isinstance(cell, str):
                path, _, function = settings.cell.rpartition(":")
                extra.update(cell_file=path, cell_function=function, cell_sha256=sha256_of(path))
        model = cls(vocab, cell, settings.embed, settings.hidden, settings.layers, settings.residual, extra=extra)
        if settings.init_scale:
            model.init_uniform(settings.init_scale, seed)
        return model

    def init_uniform(self, scale: float, seed: int) -> None:
        """Draw every parameter from U(-scale, scale) with NumPy's generator seeded with
        ``seed`` (Zaremba et al. 2014: 0.1 for the small model), in place of DyNet's
        initialisers; the forget-gate bias is then drawn like the rest."""
        rng = np.random.default_rng(seed)
        for p in self.pc.parameters_list():
            p.set_value(rng.uniform(-scale, scale, p.shape()))
        for p in self.pc.lookup_parameters_list():
            p.init_from_array(rng.uniform(-scale, scale, p.shape()))

    def param_count(self) -> int:
        return sum(p.as_array().size for p in self.pc.parameters_list()) + \
            sum(p.as_array().size for p in self.pc.lookup_parameters_list())

    # -- the forward pass -------------------------------------------------
    def dropout_masks(self, batch_size: int, dropout: float) -> list:
        """Variational dropout masks for the embeddings and each layer's output (None
        each without dropout): drawn once per batch, kept for every time step."""
        if not dropout:
            return [None] * (len(self.layers) + 1)
        if not 0.0 < dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        sizes = [self.config.embed] + [self.config.hidden] * len(self.layers)
        return [dy.random_bernoulli((d,), 1.0 - dropout, 1.0 / (1.0 - dropout), batch_size=batch_size)
                for d in sizes]

    def hidden_states(self, inputs, dropout: float = 0.0, masks=None, start=None, final=None):
        """The top layer's h_t for each step of a time-major batch of word ids.

        With ``dropout`` > 0, the embeddings and each layer's output are multiplied
        by a random mask that is drawn once per batch and kept for every time step
        (variational dropout on the non-recurrent connections; Odyssey section 6.2).
        ``masks`` gives those masks instead (see :meth:`dropout_masks`).

        ``start``: each layer's state to begin with, as numbers (a stream's segment
        continues where the previous one ended; see :mod:`course.sources`), else zeros.
        ``final``: a list that receives each layer's last state.

        Where every layer is a step layer (:mod:`course.layers`), the steps run in time
        order, all layers at step t before any at t + 1; where one is a sequence layer,
        layer by layer, each over the whole sequence. Both compute the same values, but
        DyNet then sums the gradients in another order (they differ in the last bits), so
        the time order is kept wherever it can be: it is what every committed number used.
        """
        batch_size = len(inputs[0])
        states = [layer.start(batch_size, None if start is None else start[k])
                  for k, layer in enumerate(self.layers)]
        if masks is None:
            masks = self.dropout_masks(batch_size, dropout)
        if self.stepwise():
            hs = [self.advance(states, words, masks) for words in inputs]
        else:
            hs = [self._embed(words, masks[0]) for words in inputs]
            for k, layer in enumerate(self.layers):
                states[k], hs = self._run_layer(layer, states[k], hs, masks[k + 1])
        if final is not None:
            final.extend(states)
        return hs

    def stepwise(self) -> bool:
        """Whether every layer reads one step at a time (has ``step``): then a batch runs in
        time order, and :func:`sample` draws a token per step from the carried state."""
        return all(hasattr(layer, "step") for layer in self.layers)

    def state_values(self, states) -> list:
        """Each layer's state as numbers (what a stream carries from one segment to the next)."""
        return [layer.values(state) for layer, state in zip(self.layers, states)]

    def advance(self, states: list, words, masks=None):
        """One time step of step layers: read ``words`` (a batch of ids), update ``states``
        (one per layer, in place) and return the top layer's output."""
        masks = masks or [None] * (len(self.layers) + 1)
        x = self._embed(words, masks[0])
        for k, layer in enumerate(self.layers):
            states[k], x = self._layer_step(layer, states[k], x, masks[k + 1])
        return x

    def _embed(self, words, mask):
        x = dy.lookup_batch(self.embeddings, words)
        return x if mask is None else dy.cmult(x, mask)

    def _layer_step(self, layer, state, x, mask):
        """One step of one layer: its new state, and what it passes up (residual and dropout applied)."""
        state = layer.step(state, x)
        h = layer.output(state)
        if self.config.residual:
            h = h + x                                     # ResV (eq 61)
            if self.config.residual == "lateral":
                state = layer.with_output(state, h)       # ResL
        return state, (h if mask is None else dy.cmult(h, mask))

    def _run_layer(self, layer, state, xs, mask):
        """One layer over the whole sequence ``xs``: its last state, and what it passes up."""
        if hasattr(layer, "step"):
            hs = []
            for x in xs:
                state, h = self._layer_step(layer, state, x, mask)
                hs.append(h)
            return state, hs
        if self.config.residual == "lateral":
            raise ValueError(f"{type(layer).__name__} is a sequence layer, with no recurrent h_t for a "
                             "lateral residual to rewrite: use residual='vertical' or None")
        state, hs = layer.run(state, xs)
        if self.config.residual:
            hs = [h + x for h, x in zip(hs, xs)]          # ResV (eq 61)
        return state, (hs if mask is None else [dy.cmult(h, mask) for h in hs])

    def batch_losses(self, batch, dropout: float = 0.0, final=None):
        """Masked negative log-likelihood of every prediction in a batch, as one
        batched expression of T*B elements (time-major), and the mask values.

        The softmax runs once over all steps: the T hidden states are joined into
        one batch of T*B columns, which is much faster than T separate softmaxes.
        A segment of a stream (:class:`course.data.Segment`) starts from its
        ``start`` state; ``final`` receives the layers' last states.
        """
        hs = dy.concatenate_to_batch(self._states(batch, final, dropout))
        scores = dy.affine_transform([self.b_s.expr(True), self.W_hs.expr(True), hs])
        targets = [w for step in batch.targets for w in step]
        masks = np.array([m for step in batch.masks for m in step])
        losses = dy.pickneglogsoftmax_batch(scores, targets)
        if masks.min() < 1.0:
            losses = dy.cmult(losses, dy.inputTensor(masks, batched=True))
        return losses, masks

    def _states(self, batch, final, *args, **options):
        """hidden_states of a batch. Only a stream's segment passes its start state and collects
        its final one: sentence batches call ``hidden_states(inputs, dropout=..., masks=...)`` as
        before streams existed, so a subclass that overrides it that way (chapter 07's
        ``StackedLM``) trains unchanged."""
        if isinstance(batch, Segment):
            return self.hidden_states(batch.inputs, *args, start=batch.start, final=final, **options)
        return self.hidden_states(batch.inputs, *args, **options)

    def segment_nll(self, segment: Segment) -> float:
        """The summed negative log-likelihood of a stream's segment, in a graph of its own; the
        segment's ``end`` gets the state it ended with, which the next segment starts from.
        A softmax too large for one graph is computed in chunks (:data:`SOFTMAX_BUDGET`)."""
        dy.renew_cg()
        if self._fits(segment):
            final = []
            losses, _ = self.batch_losses(segment, final=final)
            segment.end = self.state_values(final)
            return dy.sum_batches(losses).value()
        H = self._top_states(segment, [None] * (len(self.layers) + 1))
        return float(self._softmax_by_chunks(H, segment)[0].sum())

    def _fits(self, batch) -> bool:
        """Whether the batch's whole softmax stays within :data:`SOFTMAX_BUDGET`."""
        return len(batch.targets) * batch.size * len(self.vocab) <= SOFTMAX_BUDGET

    def _top_states(self, batch, masks):
        """The top layer's states of a batch as numbers, (hidden, T*B), time-major
        (in the current graph); a segment of a stream also gets its ``end`` state."""
        final = []
        hs = dy.concatenate_to_batch(self._states(batch, final, masks=masks))
        H = np.reshape(hs.npvalue(), (self.config.hidden, -1))
        _keep_end(self, batch, final)
        return H

    def _softmax_by_chunks(self, H, batch, scale: float | None = None):
        """Negative log-likelihood at every real (unpadded) position of a batch from its
        top states ``H``, a chunk of positions per graph. With ``scale``, also the
        backward pass of ``scale`` x the summed loss: the gradients of W_hs and b_s
        accumulate in the parameters, and dL/dH is returned (zero at padding)."""
        targets = np.array(batch.targets).reshape(-1)
        real = np.flatnonzero(np.array(batch.masks).reshape(-1))
        losses = np.zeros(targets.size)
        grad = np.zeros_like(H) if scale is not None else None
        chunk = max(1, SOFTMAX_CHUNK // len(self.vocab))
        for start in range(0, real.size, chunk):
            where = real[start:start + chunk]
            dy.renew_cg()
            h = as_batch(H[:, where])
            scores = dy.affine_transform([self.b_s.expr(True), self.W_hs.expr(True), h])
            chunk_losses = dy.pickneglogsoftmax_batch(scores, [int(t) for t in targets[where]])
            loss = dy.sum_batches(chunk_losses)
            losses[where] = np.reshape(chunk_losses.npvalue(), -1)
            if scale is not None:
                (loss * scale).backward(full=True)
                grad[:, where] = np.reshape(h.gradient(), (H.shape[0], -1))
        return losses, grad

    def train_step(self, batch, dropout: float = 0.0, scale: float = 1.0) -> float:
        """Forward and backward pass of one training batch: the gradients of ``scale`` x
        its summed loss land in the parameters (a trainer's ``update`` applies them);
        returns the summed loss.

        A batch whose softmax exceeds :data:`SOFTMAX_BUDGET` is done in three steps,
        exact all the same: the recurrent layers run forward (their top states kept as
        numbers); the softmax runs chunk by chunk, each chunk backward on its own (the
        gradients of W_hs, b_s add up in the parameters, those of the top states are
        kept); the recurrent layers run again, with the same dropout masks, and
        backward from those gradients. Memory then holds one chunk of the softmax
        rather than all T x B x V of it, for a second forward pass of the recurrent
        layers.
        """
        if self._fits(batch):
            dy.renew_cg()
            final = []
            losses, _ = self.batch_losses(batch, dropout, final)
            loss = dy.sum_batches(losses)
            value = loss.value()
            (loss * scale).backward()
            _keep_end(self, batch, final)
            return value
        dy.renew_cg()
        masks = [None if m is None else np.reshape(m.npvalue(), (m.dim()[0][0], batch.size))
                 for m in self.dropout_masks(batch.size, dropout)]

        def expressions():
            return [None if m is None else as_batch(m) for m in masks]
        H = self._top_states(batch, expressions())
        losses, grad = self._softmax_by_chunks(H, batch, scale)
        dy.renew_cg()
        hs = dy.concatenate_to_batch(self._states(batch, None, masks=expressions()))
        dy.sum_batches(dy.dot_product(hs, as_batch(grad))).backward()
        return float(losses.sum())

    def token_logprobs(self, sentences, batch_size: int = 64, dropout: float = 0.0,
                       progress: str | None = None) -> list:
        """Log-probability of each prediction: one array of len(s) + 1 per sentence.
        Batches of long sentences hold fewer than ``batch_size`` (:data:`EVAL_POSITIONS`).
        ``progress``: a label for a progress bar on stderr (none without)."""
        ids, _ = encode(sentences, self.vocab)
        result = [None] * len(ids)
        chunks = batch_orders(ids, batch_size, max_positions=EVAL_POSITIONS)
        for chunk in progress_bar(chunks, desc=progress, disable=progress is None, leave=False):
            batch = make_batch([ids[i] for i in chunk], self.vocab, chunk)
            if self._fits(batch):
                dy.renew_cg()
                losses, _ = self.batch_losses(batch, dropout)
                values = losses.npvalue()
            else:
                dy.renew_cg()
                H = self._top_states(batch, self.dropout_masks(batch.size, dropout))
                values, _ = self._softmax_by_chunks(H, batch)
            per_step = -np.reshape(values, (len(batch.targets), batch.size))
            for column, index in enumerate(batch.order):
                result[index] = per_step[:len(ids[index]) + 1, column]
        return result

    def sentence_logprobs(self, sentences, batch_size: int = 64, progress: str | None = None) -> np.ndarray:
        """Natural-log probability of each sentence (token lists), ``</s>`` included."""
        return np.array([lp.sum() for lp in self.token_logprobs(sentences, batch_size, progress=progress)])

    # -- checkpoints ----------------------------------------------------------
    def save(self, directory, info: dict | None = None) -> dict:
        """Parameters, vocabulary and config in one directory, and ``checkpoint.json``:
        the sha256 of the parameters and of the vocabulary, which :meth:`load` checks,
        plus ``info`` (e.g. the corpus the model was trained on). Each file is replaced
        whole; ``checkpoint.json`` is written last, so a save cut short is refused on load.
        Returns what ``checkpoint.json`` holds."""
        built = [type(layer) for layer in self.layers]
        if built != [BuilderLayer if isinstance(self.cell, str) else CellLayer] * self.config.layers:
            raise ValueError(f"this model's layers ({', '.join(t.__name__ for t in built)}) are not the "
                             f"{self.config.layers} {self.config.cell} layer(s) its configuration rebuilds, so "
                             "RNNLM.load could not read it back: save its parameters with model.pc.save(path) "
                             "and rebuild the model in code before model.pc.populate(path)")
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        save_parameters(self.pc, directory / "params.dy")
        self.vocab.save(directory / "vocab.json")
        write_atomic(directory / "config.json", json.dumps(asdict(self.config), indent=1) + "\n")
        record = {"params_sha256": sha256_of(directory / "params.dy"),
                  "vocab_sha256": self.vocab.sha256(), **(info or {})}
        write_atomic(directory / RECORD, json.dumps(record, indent=1) + "\n")
        return record

    @classmethod
    def load(cls, directory, cell: Cell | None = None) -> "RNNLM":
        """Rebuild a saved model, refusing a damaged one (:class:`CheckpointError` names
        the file). Builders rebuild by name, a cell loaded from a file (``--cell
        file.py:step``) from that file; any other hand-written cell must be passed in."""
        directory = Path(directory)
        for name in ("params.dy", "vocab.json", "config.json"):
            if not (directory / name).is_file():
                raise FileNotFoundError(f"{directory} is not a checkpoint: {name} is missing "
                                        "(save one with RNNLM.save or `python -m course train --out DIR`).")
        try:
            config = Config(**read_json(directory / "config.json", dict))
        except TypeError as err:
            raise CheckpointError(f"{directory / 'config.json'} is not a model configuration ({err}): "
                                  f"{DAMAGED}") from None
        vocab = Vocab(read_json(directory / "vocab.json", list))
        if cell is None:
            cell = config.cell if config.cell in BUILDERS else _saved_cell(config)
        model = cls(vocab, cell, config.embed, config.hidden, config.layers, config.residual,
                    extra=config.extra)
        model.restore(directory)
        return model

    def restore(self, directory) -> None:
        """Set this model's parameters to those saved in ``directory`` by a model of the
        same configuration and vocabulary (checked first, as in :meth:`load`)."""
        directory = Path(directory)
        record = read_record(directory)
        if record.get("vocab_sha256") not in (None, self.vocab.sha256()):
            raise CheckpointError(f"{directory / 'vocab.json'} is not this model's vocabulary (its checksum in "
                                  f"{directory / RECORD} differs): {DAMAGED}")
        try:
            self.pc.populate(str(directory / "params.dy"))
        except RuntimeError as err:
            raise CheckpointError(f"{directory / 'params.dy'} could not be read ({err}): {DAMAGED}") from None


def _keep_end(model: RNNLM, batch, final: list) -> None:
    """A segment of a stream keeps its layers' last states, as numbers, for the next segment."""
    if isinstance(batch, Segment):
        batch.end = model.state_values(final)


def _saved_cell(config: Config) -> Cell:
    """The cell of a saved model that is not a builder: from the file it was loaded from."""
    source = config.extra.get("cell_file")
    if source is None:
        raise ValueError(f"the model's cell {config.cell!r} is hand-written: pass it in, "
                         f"RNNLM.load(directory, cell=...) (DyNet's builders {sorted(BUILDERS)} "
                         "rebuild by name).")
    if not Path(source).is_file() or sha256_of(source) != config.extra.get("cell_sha256"):
        raise CheckpointError(f"{source}, the file the model's cell comes from, is missing or has changed "
                              "since the model was trained: restore it, or train again.")
    return load_cell(f"{source}:{config.extra['cell_function']}")


def resolve_cell(name: str) -> "str | Cell":
    """A cell from its command-line name: a DyNet builder (``srnn``, ``lstm``, ``gru``),
    or ``path/to/file.py:lstm_step``, a step function in a file (see :func:`load_cell`).

    The course's own hand-written cells are graded exercises and are not in this
    package: build them yourself and pass the Cell to :class:`RNNLM`."""
    if name in BUILDERS:
        return name
    if ":" in name and name.rpartition(":")[0].endswith(".py"):
        return load_cell(name)
    raise ValueError(f"unknown cell {name!r}: use one of DyNet's builders {sorted(BUILDERS)}, or "
                     "your own step function as path/to/file.py:lstm_step (with lstm_shapes beside it).")


def load_cell(spec: str) -> Cell:
    """``path/to/file.py:lstm_step``: the step function ``lstm_step`` of a Python file,
    as the exercises define it (see :mod:`course.cell`), with its parameter shapes from
    ``lstm_shapes`` in the same file and, if the file has one, initial values from
    ``lstm_init(name, shape)``. ``ran_identity_step`` may also take ``ran_shapes``: the
    longest name that exists wins. The state size (1 for (h,), 2 for (h, c)) is found
    by running one step on a small batch."""
    path_text, _, function = spec.rpartition(":")
    path = Path(path_text).expanduser().resolve()
    if not path.is_file():
        raise ValueError(f"--cell {spec}: there is no file {path}")
    if not function.endswith("_step"):
        raise ValueError(f"--cell {spec}: name a step function, e.g. {path_text}:lstm_step")
    module_name = "course_cell_" + hashlib.sha256(str(path).encode()).hexdigest()[:12]
    loader = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(loader)
    try:
        loader.loader.exec_module(module)
    except Exception as err:          # the user's own code: report it in one line
        raise ValueError(f"--cell {spec}: importing {path.name} failed: {_where(err, path)}") from None
    step = getattr(module, function, None)
    if not callable(step):
        raise ValueError(f"--cell {spec}: {path.name} defines no function {function}")
    words = function.removesuffix("_step").split("_")
    prefixes = ["_".join(words[:k]) for k in range(len(words), 0, -1)]
    shapes = next((getattr(module, p + "_shapes") for p in prefixes
                   if callable(getattr(module, p + "_shapes", None))), None)
    if shapes is None:
        raise ValueError(f"--cell {spec}: {path.name} defines no {prefixes[0]}_shapes(d_in, d_h) "
                         "returning {parameter name: shape}, which the step function's parameters need")
    init = next((getattr(module, p + "_init") for p in prefixes
                 if callable(getattr(module, p + "_init", None))), None)
    cell = Cell(f"{path.name}:{function}", step, shapes, init=init)
    cell.n_state = _state_size(cell, spec, path)
    return cell


def _where(err: Exception, path: Path) -> str:
    """An exception raised by a user's file, in one line, with the line it came from."""
    line = getattr(err, "lineno", None)
    frames = [f for f in traceback.extract_tb(err.__traceback__) if Path(f.filename) == path]
    if frames:
        line = frames[-1].lineno
    message = err.msg if isinstance(err, SyntaxError) else err
    hint = runtime.explain(err)                   # `1 - x` on a DyNet that refuses it: the fix
    return (f"{type(err).__name__}: {message}" + (f" (line {line} of {path.name})" if line else "")
            + (f". {hint}" if hint else ""))


def _state_size(cell: Cell, spec: str, path: Path) -> int:
    """1 or 2: the size of state that the step function takes and returns (checked on
    a batch of 2, d_in = 3, d_h = 2)."""
    try:
        shapes = {name: tuple(shape) for name, shape in cell.shapes(3, 2).items()}
    except Exception as err:
        raise ValueError(f"--cell {spec}: the shapes function failed: {_where(err, path)}") from None
    failures = []
    for n_state in (1, 2):
        dy.renew_cg()
        rng = np.random.default_rng(0)
        p = {name: dy.inputTensor(rng.uniform(-0.5, 0.5, shape)) for name, shape in shapes.items()}
        x = dy.inputTensor(rng.normal(size=(3, 2)), batched=True)
        state = tuple(dy.zeros((2,), batch_size=2) for _ in range(n_state))
        try:
            out = cell.step(p, x, state)
            if isinstance(out, tuple) and len(out) == n_state and all(e.dim() == ((2,), 2) for e in out):
                return n_state
            failures.append(f"with a state of {n_state} it returned {_describe(out)}")
        except Exception as err:
            failures.append(f"with a state of {n_state}: {_where(err, path)}")
    raise ValueError(f"--cell {spec}: one step on a batch of 2 (d_in = 3, d_h = 2) did not return a "
                     f"state like the one it was given ({'; '.join(failures)}). A step function takes "
                     "(p, x, state) and returns the new state, a tuple such as (h,) or (h, c).")


def _describe(value) -> str:
    if isinstance(value, tuple):
        return f"a tuple of {len(value)} of dimensions {[getattr(e, 'dim', lambda: '?')() for e in value]}"
    return f"a {type(value).__name__}"


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


@dataclass
class Sample:
    """A generated sentence: its tokens (the prompt's first, no ``<s>``/``</s>``), the
    natural-log probability of what was drawn under the distribution it was drawn from
    (temperature and top-k applied; the prompt not counted, ``</s>`` counted), and
    whether it ended with ``</s>`` (False: cut at ``max_length``)."""
    tokens: list
    logprob: float
    finished: bool


SAMPLE_GRAPH_STEPS = 10     # sample() starts a new graph after this many steps


def _tempered(scores: np.ndarray, bos: int, top_k, top_p) -> np.ndarray:
    """The log-probabilities ``sample`` draws from, one column per sentence: softmax of the
    (tempered) scores without ``<s>``, cut to the top k and then to the nucleus of mass
    ``top_p``, renormalised; tokens of equal score or probability in the order of their ids."""
    scores = scores.copy()        # float32 as DyNet gives it: the draws of earlier runs stay the same
    scores[bos] = -np.inf
    if top_k is not None and top_k < len(scores) - 1:
        order = np.argsort(-scores, axis=0, kind="stable")      # ties: the lower index first
        cut = np.ones(scores.shape, dtype=bool)
        np.put_along_axis(cut, order[:top_k], False, axis=0)
        scores[cut] = -np.inf
    logp = scores - scores.max(axis=0)
    logp -= np.log(np.exp(logp).sum(axis=0))
    if top_p is None or top_p >= 1:
        return logp
    probs = np.exp(logp)
    order = np.argsort(-probs, axis=0, kind="stable")
    before = np.cumsum(np.take_along_axis(probs, order, axis=0), axis=0)
    before = np.concatenate([np.zeros((1, probs.shape[1])), before[:-1]])   # mass of the more probable
    kept = np.zeros_like(probs, dtype=bool)
    np.put_along_axis(kept, order, before < top_p, axis=0)   # below p before it: it is still needed
    probs = np.where(kept, probs, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(probs / probs.sum(axis=0))


def _distributions(distribution, scores: np.ndarray, bos: int) -> np.ndarray:
    """``distribution`` (one sentence's scores -> probabilities) applied to each column,
    with a clear error when what it returns cannot be drawn from."""
    scores = scores.astype(float)
    scores[bos] = -np.inf
    columns = []
    for j in range(scores.shape[1]):
        p = np.asarray(distribution(scores[:, j].copy()), dtype=float)
        if p.shape != scores[:, j].shape or not np.all(np.isfinite(p)) or p.min() < 0 \
                or abs(p.sum() - 1) > 1e-6:
            raise ValueError(f"distribution must return the probabilities of the {scores.shape[0]:,} tokens "
                             f"(shape {scores[:, j].shape}, finite, not negative, summing to 1); it returned "
                             f"shape {p.shape}" + (f", summing to {p.sum():.6g}" if p.shape == scores[:, j].shape else ""))
        columns.append(p)
    return np.stack(columns, axis=1)


def sample(model: RNNLM, n: int = 10, temperature: float = 1.0, top_k: int | None = None,
           prompt=None, seed: int = 1, max_length: int = 100, *, top_p: float | None = None,
           distribution=None) -> list[Sample]:
    """Draw ``n`` sentences from the model, token by token, all ``n`` in one batch.

    At each step the next token is drawn from softmax(scores / temperature) over the
    vocabulary (``<s>`` excluded), restricted to the ``top_k`` most probable tokens when
    given, then to the nucleus when ``top_p`` is given: the fewest most probable of those
    tokens whose probability reaches ``top_p``, the one that crosses it included,
    renormalised (ties: the lower token id first, so exactly ``top_k`` tokens stay). ``distribution``: instead of those three, a
    function of one sentence's scores (a NumPy vector over the vocabulary, ``-inf`` at
    ``<s>``) that returns the probabilities to draw from (your own sampler, exercise 03).
    ``prompt``: tokens every sentence starts with (``["the", "king"]``; for a
    character model, characters). A sentence ends at ``</s>`` or after ``max_length``
    tokens. The draws come from NumPy's generator seeded with ``seed``, and the model
    has no dropout here, so the same seed gives the same sentences.
    """
    if n < 1 or max_length < 1:
        raise ValueError(f"n ({n}) and max_length ({max_length}) must be positive")
    if not (temperature > 0 and math.isfinite(temperature)):
        raise ValueError(f"temperature must be a positive number, got {temperature}: 1 samples the "
                         "model as it is, lower is more conservative, higher more adventurous")
    if top_k is not None and top_k < 1:
        raise ValueError(f"top_k must be at least 1, got {top_k}")
    if top_p is not None and not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}: the probability the kept tokens reach")
    if distribution is not None and (temperature != 1.0 or top_k is not None or top_p is not None):
        raise ValueError("give either distribution (a function that applies its own temperature, top-k "
                         "and top-p) or temperature, top_k and top_p, not both")
    prompt = list(prompt or [])
    unknown = [t for t in prompt if t not in model.vocab or t in (model.vocab.token(model.vocab.bos),
                                                                   model.vocab.token(model.vocab.eos))]
    if unknown:
        raise ValueError(f"the prompt holds {unknown[:5]}, which the model's vocabulary of "
                         f"{len(model.vocab):,} tokens does not have: use words of its training corpus")
    if len(prompt) >= max_length:
        raise ValueError(f"the prompt is {len(prompt)} tokens long, not shorter than max_length {max_length}")
    rng = np.random.default_rng(seed)
    dy.renew_cg()
    states = [layer.start(n) for layer in model.layers]
    W, b = model.W_hs.expr(), model.b_s.expr()
    tokens = [list(prompt) for _ in range(n)]
    logprob, finished = np.zeros(n), [False] * n
    words, read = [model.vocab.bos] * n, []
    for t in range(max_length + 1):
        if model.stepwise():
            h = model.advance(states, words)
        else:                 # a sequence layer has no step: read the whole prefix again
            read.append(words)
            dy.renew_cg()
            h = model.hidden_states(read)[-1]
            W, b = model.W_hs.expr(), model.b_s.expr()
        if t < len(prompt):
            words = [model.vocab.index(prompt[t])] * n
            continue
        scores = np.reshape(dy.affine_transform([b, W, h]).npvalue(), (len(model.vocab), n))
        if distribution is not None:
            probs = _distributions(distribution, scores, model.vocab.bos)
            with np.errstate(divide="ignore"):
                logp = np.log(probs)
        else:
            logp = _tempered(scores / temperature, model.vocab.bos, top_k, top_p)
            probs = np.exp(logp)
        cumulative = np.cumsum(probs, axis=0)
        draws = rng.random(n) * cumulative[-1]
        words = [int(np.searchsorted(cumulative[:, j], draws[j], side="right")) for j in range(n)]
        words = [min(w, len(model.vocab) - 1) for w in words]
        for j, w in enumerate(words):
            if finished[j] is not False:
                continue
            if w != model.vocab.eos and len(tokens[j]) == max_length:
                finished[j] = None    # full: the sentence stays unfinished
                continue
            logprob[j] += logp[w, j]
            if w == model.vocab.eos:
                finished[j] = True
            else:
                tokens[j].append(model.vocab.token(w))
        if all(f is not False for f in finished):
            break
        if model.stepwise() and t % SAMPLE_GRAPH_STEPS == SAMPLE_GRAPH_STEPS - 1:
            # a fresh graph from the state's numbers: the same values, and memory that does not
            # grow with the sentence (2,000 sentences of 60 steps held 4.5 GB in one graph)
            values = model.state_values(states)
            dy.renew_cg()
            states = [layer.start(n, v) for layer, v in zip(model.layers, values)]
            W, b = model.W_hs.expr(), model.b_s.expr()
    return [Sample(tokens[j], float(logprob[j]), finished[j] is True) for j in range(n)]


LOGGED = ("epoch", "train_ppl", "lr", "tokens_per_s", "seconds", "valid_ppl")   # an epoch's log line


class TrainingDiverged(ValueError):
    """The loss became infinite or NaN; the parameters are left as before that batch."""


@dataclass
class TrainState:
    """Where a training run stands: enough for :func:`train` to continue it.

    epoch, batch: the epoch under way and how many of its batches are done (batch 0
    of epoch k + 1 once epoch k is finished). lr: the learning rate now. best: the best
    held-out perplexity so far. history: one row per finished epoch. nll, predictions,
    seconds: the sums of the epoch under way, so that its row comes out as if it had
    never stopped.
    """
    epoch: int = 1
    batch: int = 0
    lr: float = 0.0
    best: float = math.inf
    history: list = field(default_factory=list)
    nll: float = 0.0
    predictions: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    carried: list | None = None     # a stream's state after batch ``batch`` (numbers, one list per layer)


def settle_sparse_gradients(model: RNNLM) -> None:
    """Give DyNet's sparse-gradient bookkeeping a state that does not depend on the process's past.

    For gradient clipping, DyNet adds up the squared gradient of a lookup table row by
    row, in the order of a hash set of the rows used, and that order depends on how
    large the set has ever grown in this process. A run continued in a new process
    would clip by a norm that differs in its last bits, and drift. Using every row once
    (a backward pass applied with learning rate 0, which changes no parameter) grows
    the set to its largest size in any process, so the order then depends only on
    the batch."""
    dy.renew_cg()
    for table in model.pc.lookup_parameters_list():
        rows = dy.lookup_batch(table, list(range(table.shape()[0])))
        dy.sum_batches(dy.sum_elems(rows)).backward()
    dy.SimpleSGDTrainer(model.pc, 0.0).update()


def batch_seed(seed: int, epoch: int, index: int) -> int:
    """DyNet's seed for batch ``index`` of ``epoch`` (never 0, which DyNet reads as 'random')."""
    return 1 + (seed * 1_000_003 + epoch * 100_003 + index) % (2**31 - 2)


def train(model: RNNLM, train_sentences, valid_sentences=None, settings: Settings | None = None, *,
          schedule=None, progress: bool = True, checkpoint: str | Path | None = None, log=print,
          resume: TrainState | None = None, stop=None, on_save=None, on_epoch=None,
          resumable: bool = False, **changes) -> list[dict]:
    """Train ``model``: the one training loop of the course, its command line and its benchmarks.

    ``settings`` (:class:`course.settings.Settings`; ``changes`` are its fields by name, e.g.
    ``epochs=3, lr=0.01``) says how. Batches come from a source (:mod:`course.sources`;
    ``train_sentences`` may be one already):
    minibatches of sentences sorted by length and shuffled per epoch, or with
    ``stream=True`` one continuous stream read in segments of ``bptt`` steps, the state
    carried from each segment to the next. The loss of a batch is summed over time and
    averaged over its sentences (a stream's rows). Gradients are clipped to norm
    ``clip``. ``dropout`` is applied in training only (see :meth:`RNNLM.hidden_states`);
    evaluation is deterministic. ``max_batches`` ends each epoch early (quick runs).

    After each epoch the ``schedule`` (:mod:`course.schedules`; by default the one the
    settings name: halve the rate when held-out perplexity does not improve, or with
    ``decay_after=k`` after every epoch past the k-th, as Zaremba et al. 2014) sets the
    learning rate and may stop training. With ``checkpoint``, the best model (by held-out
    perplexity) is saved there. Returns one dict per epoch.

    Hooks: ``stop()`` is asked before every batch; when it says True, training ends
    there. ``on_save(state, improved)`` is called with a :class:`TrainState` after every
    epoch (``improved``: its held-out perplexity is the best so far) and at such a stop;
    ``train(..., resume=state)`` continues from it, with the same batch order (fixed by
    seed and epoch) and, in a stream, the same carried state. ``on_epoch(row, state)``
    is called after ``on_save`` with the epoch's row (which it may add to). ``resumable``
    makes a run that stops and continues in another process compute what one that never
    stopped does: DyNet's random generator is re-seeded before every batch from (seed,
    epoch, batch), so the dropout masks are the same, and
    :func:`settle_sparse_gradients` runs first. A new trainer starts at ``resume``: SGD
    has no other state, but Adam's moment estimates start again from zero (DyNet cannot
    save them).

    Raises :class:`TrainingDiverged` when a batch's loss is infinite or NaN.
    """
    s = (settings or Settings()).but(**changes)
    schedule = schedule or schedules.of(s)
    state = resume if resume is not None else TrainState(lr=s.learning_rate)
    trainer = getattr(dy, OPTIMIZERS[s.optimizer])(model.pc, state.lr)
    trainer.set_clip_threshold(s.clip if s.clip else -1)
    source = sources.of(s, train_sentences, model.vocab)
    n_batches = len(source) if s.max_batches is None else min(len(source), s.max_batches)
    if resumable:
        settle_sparse_gradients(model)
    history = state.history
    carried = None if state.carried is None else [[np.asarray(v) for v in layer] for layer in state.carried]
    for epoch in range(state.epoch, s.epochs + 1):
        bar = progress_bar(total=n_batches, initial=state.batch, desc=f"epoch {epoch}/{s.epochs}",
                           disable=not progress)
        start = time.perf_counter() - state.seconds
        cpu_start = time.process_time() - state.cpu_seconds

        def keep_place():
            state.seconds = time.perf_counter() - start
            state.cpu_seconds = time.process_time() - cpu_start
            state.carried = None if carried is None else [[v.tolist() for v in layer] for layer in carried]
        for index in range(state.batch, n_batches):
            if stop is not None and stop():
                bar.close()
                keep_place()
                if on_save:
                    on_save(state, False)
                return history
            batch = source.batch(s.seed, epoch, index, carried)
            if resumable and s.dropout:
                dy.reset_random_seed(batch_seed(s.seed, epoch, index))
            nll = model.train_step(batch, s.dropout, 1.0 / batch.size)
            if not math.isfinite(nll):
                bar.close()
                keep_place()
                _diverged(model, nll, epoch, index, trainer, state)
            trainer.update()
            carried = source.carry(batch)
            state.batch, state.nll = index + 1, state.nll + nll
            state.predictions += batch.n_predictions
            if progress:
                bar.update()
                bar.set_postfix(ppl=f"{math.exp(min(state.nll / state.predictions, 50)):.1f}",
                                tok_s=f"{state.predictions / (time.perf_counter() - start):.0f}", refresh=False)
        bar.close()
        seconds = time.perf_counter() - start
        row = {"epoch": epoch, "train_ppl": perplexity(state.nll, state.predictions),
               "lr": trainer.learning_rate, "tokens_per_s": state.predictions / seconds, "seconds": seconds,
               "cpu_seconds": time.process_time() - cpu_start, "tokens": state.predictions}
        best, improved, gained = state.best, False, None
        if valid_sentences is not None:
            row["valid_ppl"] = held_out(model, valid_sentences, isinstance(source, sources.Stream),
                                        progress=f"epoch {epoch}: held-out" if progress else None)
            gained = row["improved"] = schedule.gained(row["valid_ppl"], best)
            if row["valid_ppl"] < best:
                best, improved = row["valid_ppl"], True
                if checkpoint:
                    model.save(checkpoint)
        trainer.learning_rate = schedule.next_lr(trainer.learning_rate, epoch, gained)
        history.append(row)
        if log:
            log("  ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()
                          if k in LOGGED))
        state = TrainState(epoch + 1, 0, trainer.learning_rate, best, history)
        carried = None
        if on_save:
            on_save(state, improved)
        if on_epoch:
            on_epoch(row, state)
        if schedule.stop(history) or (stop is not None and stop() and epoch < s.epochs):
            return history
    return history


def _diverged(model: RNNLM, nll: float, epoch: int, index: int, trainer, state: TrainState):
    """Raise :class:`TrainingDiverged`, its ``state`` where training stood before the batch."""
    if isinstance(model.cell, Cell) and epoch == 1 and index == 0:
        err = TrainingDiverged(
            f"the loss of the very first batch is {nll}, before any update: the step function "
            f"{model.cell.name} returns nan or inf on its fresh parameters (not a learning-rate "
            "problem). Run it on a small batch and look for a division by zero, the log or "
            "square root of a negative number, or an exp that overflows.")
    else:
        err = TrainingDiverged(f"the training loss became {nll} at batch {index + 1} of epoch "
                               f"{epoch} (learning rate {trainer.learning_rate:g}): the model "
                               "diverged; lower the learning rate or the gradient clipping threshold")
    err.state = state
    raise err
