"""The layers a language model stacks: what :class:`course.lm.RNNLM` asks of each.

A layer reads a sequence of vectors (each a batch, time-major) and returns one vector
per step, carrying a *state* from one step to the next. Two kinds plug in:

* a **step layer** has ``step(state, x) -> state``, ``output(state) -> h`` and
  ``with_output(state, h) -> state`` (the state with h_t replaced: a lateral residual
  rewrites it): one time step at a time. :class:`CellLayer` runs a
  :class:`course.cell.Cell` (a step function a student writes); :class:`BuilderLayer` one
  of DyNet's own builders. The model runs the loop over the steps itself
  (``RNNLM._run_layer``), because residuals and dropout sit between one step and the next.
* a **sequence layer** has ``run(state, xs) -> (state, hs)`` instead: it sees the whole
  sequence at once, so it need not be a recurrence. :class:`CausalAttention` is one.

Every layer also has ``start(batch_size, values=None) -> state`` (the state before the
first step: zeros, or ``values`` carried over as numbers, as a stream's next segment
does) and ``values(state) -> list`` (the state as numbers, one (d, batch) array per part).

No layer is told where a sentence's padding is. It need not be: a language model reads
left to right, so the output at a real word never depends on a later position, and the
padding of a batch always comes after a sentence's last word. A layer that looked ahead
(a bidirectional one) would need the padding masks; none here does.
"""
from __future__ import annotations

import numpy as np

from course import runtime
from course.cell import Cell

dy = runtime.dynet()

# DyNet's builders, usable wherever a Cell is: name -> builder class.
BUILDERS = {"srnn": "SimpleRNNBuilder", "lstm": "VanillaLSTMBuilder", "gru": "GRUBuilder"}


def as_batch(array: np.ndarray):
    """A (d, n) array as a batch of n vectors (DyNet's inputTensor mishandles n = 1)."""
    return dy.inputTensor(array[:, 0]) if array.shape[1] == 1 else dy.inputTensor(array, batched=True)


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

    def start(self, batch_size: int, values=None):
        """The state before the first step: zeros, or ``values`` (numbers, see :meth:`values`)."""
        self.p = {name: P.expr(True) for name, P in self.params.items()}   # True: trainable (expr() alone is a constant)
        if values is not None:
            return tuple(as_batch(v) for v in values)
        zero = dy.zeros((self.d_h,), batch_size=batch_size)
        return (zero,) * self.cell.n_state

    def values(self, state) -> list:
        """The state as numbers, one (d_h, batch) array per part: no gradient flows back into them."""
        return [np.reshape(e.npvalue(), (self.d_h, -1)) for e in state]

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

    def start(self, batch_size: int, values=None):
        if values is not None:
            return self.builder.initial_state([as_batch(v) for v in values])
        return self.builder.initial_state()

    @staticmethod
    def values(state) -> list:
        return [np.reshape(e.npvalue(), (e.dim()[0][0], -1)) for e in state.s()]

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


class CausalAttention:
    """Causal self-attention, a sequence layer: each position's output is a weighted sum of
    the values of the positions up to it, with scalar weights from one softmax::

        q_t = W_q x_t,  k_j = W_k x_j,  v_j = W_v x_j
        a_t = softmax_j(q_t . k_j / sqrt(d))          over j = 1..t
        h_t = tanh(sum_{j<=t} a_tj v_j)

    The weighted-sum paper (seed 002, section 4, "LSTM as Self-Attention") sets this beside
    the memory cell of LSTM - S-RNN - OUT, h_t = tanh(c_t) with c_t a weighted sum of
    context-independent functions of the inputs (its eq 8/9): there the weights are vectors,
    built step by step by the gates, and can only decay; here they are scalars, computed for
    all positions at once and normalised by one softmax, at a cost quadratic in the length.

    Two options, and one method, turn it into the models lecture 11 compares (the defaults are the
    layer above):

    * ``heads``: n heads, each on its own d / n rows of W_q, W_k, W_v, scaled by sqrt(d / n):
      n scalar weights per word, between one scalar and the LSTM's vector of d;
    * ``positions``: a learned vector per position (up to that many words) added to x_t, so
      that the layer knows the order of the words without a recurrent layer below it (0: none);
    * :meth:`normalise` makes the weights from the scores: a softmax over j <= t, a distribution.
      bench/attention_compare.py overrides it with weights that are not normalised (each in (0, 1)
      on its own, so that their sum grows with the length as the LSTM's memory can).

    ``record = True`` keeps the weights of the last run in ``recorded``: one (T, T, batch) array
    per head, [t, j] the weight of word j at position t.

    It carries nothing from one segment of a stream to the next; each segment attends within
    itself."""

    def __init__(self, pc, d_in: int, d: int, heads: int = 1, positions: int = 0):
        if d % heads:
            raise ValueError(f"{heads} heads must divide the width d = {d}")
        self.d, self.heads, self.positions = d, heads, positions
        self.W = {name: pc.add_parameters((d, d_in), name=name) for name in ("Wq", "Wk", "Wv")}
        if positions:
            self.P = pc.add_parameters((d_in, positions), init=dy.NormalInitializer(0.0, 0.1), name="P")
        self.record, self.recorded = False, []

    def start(self, batch_size: int, values=None):
        return ()

    @staticmethod
    def values(state) -> list:
        return []

    @staticmethod
    def normalise(scores):
        """The weights from the masked scores [j, t]: column t a distribution over j <= t."""
        return dy.softmax(scores, d=0)

    def run(self, state, xs):
        T = len(xs)
        X = dy.concatenate_cols(xs)                                     # d_in x T, a batch
        if self.positions:
            if T > self.positions:
                raise ValueError(f"a sentence of {T} tokens is longer than the {self.positions} positions "
                                 "this attention layer has vectors for: make it with more positions")
            X = X + dy.select_cols(self.P.expr(True), list(range(T)))
        Q, K, V = (self.W[name].expr(True) * X for name in ("Wq", "Wk", "Wv"))
        d_k = self.d // self.heads
        later = np.tril(np.full((T, T), -1e9), k=-1)                    # [j, t] with j > t: masked
        parts, self.recorded = [], []
        for i in range(self.heads):
            q, k, v = (M if self.heads == 1 else dy.pick_range(M, i * d_k, (i + 1) * d_k) for M in (Q, K, V))
            scores = dy.transpose(k) * q / np.sqrt(d_k) + dy.inputTensor(later)
            A = self.normalise(scores)
            parts.append(v * A)                                         # column t: sum_j a_tj v_j
            if self.record:
                self.recorded.append(np.reshape(dy.transpose(A).npvalue(), (T, T, -1)))
        H = dy.tanh(parts[0] if self.heads == 1 else dy.concatenate(parts, d=0))
        return state, [dy.pick(H, t, 1) for t in range(T)]
