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

``srnn_step_backward(dh, x, h_prev, h, W_xh, W_hh) -> (dx, dh_prev, dW_xh, dW_hh, db_h)`` is
the backward pass of one step of eq 44, written by hand in NumPy (lecture section 8). Two
checks judge it against DyNet's own gradients of the same step (relative error, as cs231n
does; :func:`rel_error`): ``ch02.backward_inputs`` (dx, dh_prev) and ``ch02.backward_params``
(dW_xh, dW_hh, db_h); the probe is :mod:`autograder.probes.ch02_srnn`.
"""
from __future__ import annotations

import dynet as dy
import numpy as np

from autograder.probes import ch02_srnn as backward_probes
from autograder.reference import steps
from autograder.reference.grading import Check
from course import gradcheck
from course.gradcheck import rel_error

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


# --------------------------------------------------------------------------
# srnn_step_backward: the backward pass of one step of eq 44, by hand in NumPy
# --------------------------------------------------------------------------
# ``srnn_step_backward(dh, x, h_prev, h, W_xh, W_hh) -> (dx, dh_prev, dW_xh, dW_hh, db_h)``:
# given dh = d loss / d h for the step's output h = tanh(a), a = W_xh x + W_hh h_prev + b_h, on
# a batch (one column per sentence), the gradients of the loss with respect to the step's inputs
# and parameters; the loss sums the sentences', so parameter gradients are summed over the batch.
# Two checks, so that a slip costs the part it breaks: ``ch02.backward_inputs`` (dx, dh_prev) and
# ``ch02.backward_params`` (dW_xh, dW_hh, db_h), each on three cases (batches of 7, 2 and 1,
# d_in != d_h, so a transposed dW_xh shows in its shape) judged against DyNet's own gradients of
# the same step by relative error (:func:`course.gradcheck.rel_error`); a known slip is named. A function
# that reaches DyNet's own differentiation fails both (the probe watches what runs).

BACKWARD_SEED = SEED + 10
BACKWARD_SIZES = ((5, 4, 7), (3, 6, 2), (4, 3, 1))      # (d_in, d_h, batch)
BACKWARD_REL_TOL = 1e-5      # DyNet computes in float32: its own gradients agree to about 1e-7
BACKWARD_LECTURE = ("02_srnn", "8 · The backward pass by hand")
BACKWARD_VISIBLE = "srnn_step_backward_tests"
INPUT_GRADIENTS = ("dx", "dh_prev")
PARAM_GRADIENTS = ("dW_xh", "dW_hh", "db_h")


def reference_srnn_step_backward(dh, x, h_prev, h, W_xh, W_hh):
    """The chain rule through eq 44: da = dh * tanh'(a) = dh * (1 - h^2); then each term of a."""
    da = dh * (1 - h ** 2)
    return W_xh.T @ da, W_hh.T @ da, da @ x.T, da @ h_prev.T, da.sum(axis=1)


def _backward_slip(da=None, dh_prev=None, dW_hh=None, db_h=None):
    """The reference with one of the usual slips switched on (each argument: the slip's formula)."""
    def backward(dh, x, h_prev, h, W_xh, W_hh):
        d = da(dh, h) if da else dh * (1 - h ** 2)
        return (W_xh.T @ d, dh_prev(d, W_hh) if dh_prev else W_hh.T @ d, d @ x.T,
                dW_hh(d, h_prev) if dW_hh else d @ h_prev.T, db_h(d) if db_h else d.sum(axis=1))
    return backward


#: (hint, the slip's backward, the gradients it gets wrong)
BACKWARD_SLIPS = [
    ("the tanh's derivative is missing: the gradient reaching a = W_xh x + W_hh h_prev + b_h is "
     "da = dh * (1 - h**2), not dh", _backward_slip(da=lambda dh, h: dh), INPUT_GRADIENTS + PARAM_GRADIENTS),
    ("tanh' is applied to h, which is already tanh(a): tanh'(a) = 1 - tanh(a)**2 = 1 - h**2, "
     "not 1 - tanh(h)**2", _backward_slip(da=lambda dh, h: dh * (1 - np.tanh(h) ** 2)),
     INPUT_GRADIENTS + PARAM_GRADIENTS),
    ("dW_hh is transposed: its entry (i, j) is sum over the batch of da_i * h_prev_j, so dW_hh = da @ h_prev.T",
     _backward_slip(dW_hh=lambda d, h_prev: h_prev @ d.T), ("dW_hh",)),
    ("db_h is averaged over the batch; the loss sums the sentences' losses, so db_h = da.sum(axis=1)",
     _backward_slip(db_h=lambda d: d.mean(axis=1)), ("db_h",)),
    ("dh_prev is missing W_hh^T: h_prev reaches a through W_hh h_prev, so dh_prev = W_hh.T @ da",
     _backward_slip(dh_prev=lambda d, W_hh: d), ("dh_prev",)),
    ("dh_prev uses W_hh untransposed: the chain rule through W_hh h_prev gives dh_prev = W_hh.T @ da",
     _backward_slip(dh_prev=lambda d, W_hh: W_hh @ d), ("dh_prev",)),
]


def backward_inputs() -> dict:
    """Three cases of one S-RNN step: weights, inputs, start state and the gradient dh arriving
    from above, random and non-zero; values that float32 holds exactly, so that DyNet and NumPy
    start from the same numbers."""
    rng = np.random.default_rng(BACKWARD_SEED)

    def draw(shape, scale):
        return rng.uniform(-scale, scale, size=shape).astype(np.float32).astype(float)
    return {"cases": [{"x": draw((d_in, batch), 1.5), "h_prev": draw((d_h, batch), 0.9),
                       "W_xh": draw((d_h, d_in), 0.9), "W_hh": draw((d_h, d_h), 0.9), "b_h": draw((d_h,), 0.5),
                       "dh": draw((d_h, batch), 1.0)} for d_in, d_h, batch in BACKWARD_SIZES]}


def dynet_backward(case: dict) -> dict:
    """DyNet's gradients of one case: what ``srnn_step_backward`` must return."""
    return gradcheck.dynet_srnn_gradients(**case)


def backward_judge(part: tuple):
    """The judge of the gradients ``part`` (names among dx, dh_prev, dW_xh, dW_hh, db_h)."""
    def judge(numbers: dict, inputs: dict) -> list[str]:
        if numbers.get("autodiff"):
            return ["srnn_step_backward asks DyNet for the gradients (.backward(), .gradient(), or "
                    "course.gradcheck, which calls them): the exercise is to write the chain rule by hand, in NumPy"]
        problems, wrong = [], []
        for k, case in enumerate(inputs["cases"]):
            d_in, batch = case["x"].shape
            where = f"case {k + 1} (d_in={d_in}, d_h={case['h_prev'].shape[0]}, batch={batch})"
            want = dynet_backward(case)
            for name in part:
                got = np.asarray(numbers[f"case{k}"][name], dtype=float)
                if got.shape != want[name].shape:
                    problems.append(f"{where}: {name} has shape {got.shape}, expected {want[name].shape}"
                                    + _shape_hint(name, got.shape, want[name].shape))
                elif not rel_error(got, want[name]) <= BACKWARD_REL_TOL:
                    wrong.append((k, name, where, rel_error(got, want[name])))
        if problems:
            return problems[:3]
        if not wrong:
            return []
        for hint, slip, touches in BACKWARD_SLIPS:
            if {name for _, name, _, _ in wrong} <= set(touches) and _matches(numbers, inputs, slip, part):
                return [hint]
        k, name, where, err = wrong[0]
        names = sorted({n for _, n, _, _ in wrong}, key=part.index)
        verb = "differ" if len(names) > 1 else "differs"
        return [f"{where}: {', '.join(names)} {verb} from DyNet's gradients (relative error of {name}: "
                f"{err:.2g} > {BACKWARD_REL_TOL:g}); derive each through da = dh * (1 - h**2)"]
    return judge


def _matches(numbers: dict, inputs: dict, backward, part: tuple) -> bool:
    """Whether the student's gradients ``part`` are those of ``backward`` (a slip) in every case."""
    for k, case in enumerate(inputs["cases"]):
        theirs = dict(zip(backward_probes.OUTPUTS, backward(**backward_probes.arguments(case))))
        if any(not rel_error(numbers[f"case{k}"][name], theirs[name]) <= BACKWARD_REL_TOL for name in part):
            return False
    return True


def _shape_hint(name: str, got: tuple, want: tuple) -> str:
    if name == "db_h" and len(got) == 2 and got[0] == want[0]:
        return ": sum da over the batch (axis 1); b_h is shared by every sentence"
    if len(got) == 2 and got == want[::-1]:
        return f": {name} is transposed"
    return ""


BACKWARD_ABOUT = ("one S-RNN step in three cases: (d_in, d_h, batch) = (5, 4, 7), (3, 6, 2), (4, 3, 1); random "
                  "non-zero weights, inputs, h_prev and dh; judged against DyNet's gradients of sum(dh * h)")
BACKWARD_PROBE = "autograder.probes.ch02_srnn:srnn_step_backward"
CHECKS += [
    Check("ch02.backward_inputs", ("srnn_step_backward",), backward_inputs, BACKWARD_PROBE,
          backward_judge(INPUT_GRADIENTS), BACKWARD_ABOUT + "; the gradients dx and dh_prev",
          BACKWARD_LECTURE, BACKWARD_VISIBLE),
    Check("ch02.backward_params", ("srnn_step_backward",), backward_inputs, BACKWARD_PROBE,
          backward_judge(PARAM_GRADIENTS), BACKWARD_ABOUT + "; the gradients dW_xh, dW_hh and db_h",
          BACKWARD_LECTURE, BACKWARD_VISIBLE),
]
