"""Chapter 02 (the S-RNN language model): the checks of the graded step function.

``rnn_step(p, x, state) -> (h,)`` is tutorial eq 44,
``h_t = tanh(W_xh x_t + W_hh h_{t-1} + b_h)``, with the parameter names of the
reference cell ``srnn`` (:mod:`autograder.reference.cells`). Four checks, each
on a batch of 7 over 4 steps from a non-zero start state (:mod:`.steps`):

* ``ch02.rnn_input``: the input term alone: W_hh = 0, so h_t = tanh(W_xh x_t + b_h);
* ``ch02.rnn_recurrence``: the recurrent term alone: W_xh = 0 and b_h = 0, so
  h_t = tanh(W_hh h_{t-1}) (a transposed W_hh fails here and only here);
* ``ch02.rnn_step``: everything at once, on random non-zero weights;
* ``ch02.rnn_gradients``: the gradient of every parameter (a step computed in
  NumPy has the right values and no gradients).

A known slip is named when the student's states are exactly that slip's.
"""
from __future__ import annotations

import dynet as dy

from autograder.reference import steps

SEED = 20261102
LECTURE = ("02_srnn", "eq 44")
VISIBLE = "rnn_step_values"


def _affine(p, x, h_prev):
    return p["W_xh"] * x + p["W_hh"] * h_prev


SLIPS = {
    "logistic": ("h_t is squashed with the logistic sigmoid; eq 44 uses tanh",
                 lambda p, x, s: (dy.logistic(_affine(p, x, s[0]) + p["b_h"]),)),
    "no bias": ("b_h is missing: eq 44 adds the bias inside the tanh",
                lambda p, x, s: (dy.tanh(_affine(p, x, s[0])),)),
    "bias after tanh": ("b_h is added after the tanh; eq 44 adds it inside: "
                        "tanh(W_xh x_t + W_hh h_{t-1} + b_h)",
                        lambda p, x, s: (dy.tanh(_affine(p, x, s[0])) + p["b_h"],)),
    "transposed": ("W_hh is used transposed: in W_hh h_{t-1}, row i of W_hh makes unit i of "
                   "the new state (no dy.transpose)",
                   lambda p, x, s: (dy.tanh(p["W_xh"] * x + dy.transpose(p["W_hh"]) * s[0] + p["b_h"]),)),
    "no recurrence": ("h_{t-1} does not enter the new state: eq 44 adds W_hh h_{t-1}",
                      lambda p, x, s: (dy.tanh(p["W_xh"] * x + p["b_h"]),)),
}


def slips(*names):
    return [SLIPS[n] for n in names]


CHECKS = [
    steps.values_check(
        "ch02.rnn_input", "rnn_step", "srnn", seed=SEED, tweak=steps.set_params(W_hh=0.0),
        slips=slips("logistic", "no bias", "bias after tanh", "no recurrence"),
        explain={0: "with W_hh = 0 the state is tanh(W_xh x_t + b_h); check the input term "
                    "W_xh x_t, the bias b_h and the tanh (eq 44)"},
        about="batch 7, 4 steps, W_hh = 0 (so h_t = tanh(W_xh x_t + b_h)), random non-zero W_xh and b_h",
        lecture=LECTURE, visible=VISIBLE),
    steps.values_check(
        "ch02.rnn_recurrence", "rnn_step", "srnn", seed=SEED + 1,
        tweak=steps.set_params(W_xh=0.0, b_h=0.0),
        slips=slips("transposed", "no recurrence", "logistic"),
        explain={0: "with W_xh = 0 and b_h = 0 the state is tanh(W_hh h_{t-1}); check the "
                    "recurrent term W_hh h_{t-1} (eq 44)"},
        about="batch 7, 4 steps, W_xh = 0 and b_h = 0 (so h_t = tanh(W_hh h_{t-1})), random "
              "non-zero W_hh, start state non-zero",
        lecture=LECTURE, visible=VISIBLE),
    steps.values_check(
        "ch02.rnn_step", "rnn_step", "srnn", seed=SEED + 2, slips=list(SLIPS.values()),
        explain={0: "check eq 44 term by term: tanh(W_xh x_t + W_hh h_{t-1} + b_h)"},
        lecture=LECTURE, visible=VISIBLE),
    steps.gradients_check("ch02.rnn_gradients", "rnn_step", "srnn", seed=SEED + 3, visible="rnn_step_gradients"),
]
