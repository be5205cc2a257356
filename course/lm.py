"""Recurrent language models: the model, its forward pass, scoring and checkpoints.

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

Around the model: :mod:`course.training` trains it, :mod:`course.sampling` draws sentences
from it, :mod:`course.evaluation` measures it, and :mod:`course.cell_files` finds a cell by
its command-line name.
"""
from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from course import runtime
from course.cell import Cell
from course.cell_files import resolve_cell, saved_cell
from course.checkpoint import DAMAGED, RECORD, CheckpointError, read_json, read_record
from course.data import Segment, Vocab, batch_orders, encode, make_batch
from course.files import save_parameters, sha256_of, write_atomic
from course.layers import BUILDERS, BuilderLayer, CellLayer, as_batch
from course.settings import MODEL_DEFAULTS, ModelSettings

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
class Config(ModelSettings):
    """Everything needed to rebuild a model, as a checkpoint's ``config.json`` holds it: its
    :class:`ModelSettings` (``cell`` by name), the vocabulary's size and what its cell needs
    besides. A subclass rather than a holder of one, so that ``model.config.hidden`` and
    ``config.json``'s flat keys read as they always have (checkpoints written before
    ``init_scale`` was recorded load with None)."""
    vocab_size: int = 0
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
        if isinstance(cell, str) and cell not in BUILDERS:
            raise ValueError(f"unknown builder {cell!r}: use one of {sorted(BUILDERS)} or pass a Cell")
        self.vocab = vocab
        self.cell = cell
        self.config = Config(cell if isinstance(cell, str) else cell.name, embed, hidden, layers, residual,
                             vocab_size=len(vocab), extra=dict(extra or {}))    # which checks the sizes
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
        self.config.init_scale = scale

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
        time order, and :func:`course.sampling.sample` draws a token per step from the carried state."""
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
            cell = config.cell if config.cell in BUILDERS else saved_cell(config)
        model = cls(vocab, cell, config.embed, config.hidden, config.layers, config.residual,
                    extra=config.extra)
        model.config.init_scale = config.init_scale
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
