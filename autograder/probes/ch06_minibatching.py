"""Probes of chapter 06 (minibatching): run a student's ``pad_batch`` and
``masked_batch_nll`` on the grader's inputs and return numbers.

Runs in the autograder's sandbox, so it imports no reference code. The grader's
inputs come from :mod:`autograder.reference.ch06_minibatching`.
"""
from __future__ import annotations

import numpy as np

from autograder.probes import run_refusing
from course import data

# -------------------------------------------------------------------------- pad_batch
# "Write the padding yourself", judged by what runs (autograder.probes.run_refusing): while the
# student's pad_batch is probed, the course's padding helpers (make_batches pads through make_batch;
# nothing else in `course` pads) refuse to work. Their code objects are taken here, when the sandbox
# loads the probes, before any student code runs.
HELPERS = (data.make_batch, data.make_batches)
HELPER_CODE = tuple(f.__code__ for f in HELPERS)


def _refused(*args, **kwargs):
    raise RuntimeError("course.data.make_batch and make_batches cannot be used in pad_batch: "
                       "write the padding yourself")


def run_without_course_batching(call):
    """``(call()'s result or None, whether it reached the course's padding)``."""
    return run_refusing(call, HELPERS, HELPER_CODE, _refused)


def _time_major(value, what: str):
    try:
        array = np.array(value, dtype=float)        # a copy: nothing of the student's is read later
    except (TypeError, ValueError):
        raise TypeError(f"pad_batch: {what} must be a list of time steps, each a list with one "
                        "number per sentence (all steps the same length)") from None
    if array.ndim != 2:
        raise TypeError(f"pad_batch: {what} must be 2-d (time steps x sentences), got {array.ndim}-d")
    return array


def _tables(result) -> dict:
    """What pad_batch returned as plain arrays (converted while the helpers still refuse)."""
    if not isinstance(result, tuple) or len(result) != 3:
        raise TypeError("pad_batch must return a tuple (inputs, targets, masks)")
    tables = {name: _time_major(value, name) for name, value in zip(("inputs", "targets", "masks"), result)}
    mask_values = [m for step in result[2] for m in step]
    return {**tables, "masks_are_float": float(all(isinstance(m, (float, np.floating)) for m in mask_values))}


def pad_batch(functions: dict, inputs: dict) -> dict:
    """``pad_batch(sentences, vocab)`` on the grader's sentences: the three tables as
    ``(T, B)`` arrays and whether the masks hold floats; or, when it reached the course's own
    make_batch by any route, only that."""
    fn = functions["pad_batch"]
    vocab = data.Vocab(inputs["tokens"])
    tables, reached = run_without_course_batching(lambda: _tables(fn([list(s) for s in inputs["sentences"]], vocab)))
    if reached:
        return {"calls_course_batching": 1.0}
    return {**tables, "calls_course_batching": 0.0}


# -------------------------------------------------------------------------- masked_batch_nll
def build_model(dy, params: dict):
    """A fresh parameter collection holding the grader's language model:
    embeddings ``E``, a 1-layer ``dy.VanillaLSTMBuilder`` and the softmax layer."""
    pc = dy.ParameterCollection()
    E = pc.lookup_parameters_from_numpy(np.asarray(params["E"]))
    d_in, d_h = params["E"].shape[1], params["rnn.W_h"].shape[1]
    rnn = dy.VanillaLSTMBuilder(1, d_in, d_h, pc)
    for name, p in zip(("rnn.W_x", "rnn.W_h", "rnn.b"), rnn.get_parameters()[0]):
        p.set_value(np.asarray(params[name]))
    W_hs = pc.add_parameters(params["W_hs"].shape, init=dy.NumpyInitializer(params["W_hs"]))
    b_s = pc.add_parameters(params["b_s"].shape, init=dy.NumpyInitializer(params["b_s"]))
    return {"pc": pc, "E": E, "rnn": rnn, "W_hs": W_hs, "b_s": b_s}


def gradients(model: dict) -> dict:
    grads = {"E": model["E"].grad_as_array(), "W_hs": model["W_hs"].grad_as_array(),
             "b_s": model["b_s"].grad_as_array()}
    for name, p in zip(("rnn.W_x", "rnn.W_h", "rnn.b"), model["rnn"].get_parameters()[0]):
        grads[name] = p.grad_as_array()
    return grads


def masked_batch_nll(functions: dict, inputs: dict) -> dict:
    """``masked_batch_nll(lm, batch)`` on the grader's padded batch: its dimension,
    and for a scalar its value and the gradient of every parameter."""
    from course import runtime
    dy = runtime.dynet()
    dy.renew_cg()
    model = build_model(dy, inputs["params"])
    lm = {"E": model["E"], "rnn": model["rnn"], "W_hs": model["W_hs"].expr(True),
          "b_s": model["b_s"].expr(True)}
    batch = tuple([list(step) for step in inputs[part]] for part in ("inputs", "targets", "masks"))
    loss = functions["masked_batch_nll"](lm, batch)
    if not isinstance(loss, dy.Expression):
        raise TypeError(f"masked_batch_nll must return a DyNet expression, got {type(loss).__name__}")
    dims, batch_size = loss.dim()
    out = {"size": float(np.prod(dims)), "batch": float(batch_size)}
    if out["size"] == 1 and batch_size == 1:       # DyNet back-propagates from scalars only
        out["value"] = float(loss.value())
        loss.backward()
        out["grads"] = gradients(model)
    return out
