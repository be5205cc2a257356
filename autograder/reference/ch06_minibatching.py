"""Checks of chapter 06 (minibatching): ``pad_batch`` and ``masked_batch_nll``.

Tutorial section 6.5: the sentences of a minibatch are padded with ``</s>`` to
one length, and the loss at every padded position is multiplied by 0 (masked),
so that a padded batch scores exactly like its sentences one at a time.

* ``ch06.pad_batch``: the student's ``pad_batch(sentences, vocab)`` against
  the course's :func:`course.data.make_batch` (inputs, targets, masks, the
  padding token, float masks), written without calling the course's batching.
* ``ch06.masked_batch_nll``: the student's ``masked_batch_nll(lm, batch)`` on a
  padded batch against the same sentences scored one at a time, unbatched and
  unpadded (the value and the gradient of every parameter).

The probes are in :mod:`autograder.probes.ch06_minibatching`.
"""
from __future__ import annotations

import numpy as np

from autograder.probes import ch06_minibatching as probes
from autograder.reference.grading import Check

VALUE_RTOL = 1e-5    # summed NLL: relative difference (float32 arithmetic in DyNet)
GRAD_RTOL = 1e-4     # gradients: relative to the largest reference gradient

TOKENS = ["<unk>", "<s>", "</s>", "the", "cat", "dog", "sat", "ran", "on", "a", "mat", "rug", "slept"]
# lengths 3, 1, 6, 2, 6, 4: unsorted, two of the longest length, and two words
# ("zebra", "quietly") that are not in the vocabulary, so they must become <unk>
PAD_SENTENCES = [
    ["the", "cat", "sat"],
    ["dog"],
    ["a", "dog", "ran", "on", "the", "rug"],
    ["zebra", "slept"],
    ["the", "cat", "sat", "on", "a", "mat"],
    ["a", "dog", "slept", "quietly"],
]
# the masked loss: word ids of a vocabulary of NLL_VOCAB words (0-2 are <unk> <s> </s>)
NLL_VOCAB, D_IN, D_H = 13, 5, 4
NLL_SENTENCES = [[5, 9, 3, 11], [7], [4, 4, 12, 8, 3, 10], [6, 3, 9], [12, 5, 8, 3, 7, 6], [9, 11]]
SEED = 20260606


# -------------------------------------------------------------------------- pad_batch
def pad_inputs() -> dict:
    return {"tokens": list(TOKENS), "sentences": [list(s) for s in PAD_SENTENCES]}


def judge_pad_batch(numbers: dict, inputs: dict) -> list[str]:
    from course.data import Vocab, encode, make_batch
    if numbers["calls_course_batching"]:
        return ["pad_batch calls course.data.make_batch/make_batches: write the padding yourself"]
    vocab = Vocab(inputs["tokens"])
    ids, _ = encode(inputs["sentences"], vocab, max_unknown=1.0)
    want = make_batch(ids, vocab)
    expected = {name: np.array(getattr(want, name), dtype=float) for name in ("inputs", "targets", "masks")}
    shape = expected["inputs"].shape
    problems = [f"{name} has shape {np.shape(numbers[name])}, expected {shape}: time-major, one row "
                "per time step (the longest sentence's words + 1), one column per sentence"
                for name in expected if np.shape(numbers[name]) != shape]
    if problems:
        return problems
    if not np.array_equal(numbers["masks"], expected["masks"]):
        problems.append("masks differ: 1.0 for each real prediction (a sentence's n words and its "
                        "final </s>), 0.0 for every padded position after it")
    elif not numbers["masks_are_float"]:
        problems.append("masks must hold floats (1.0 / 0.0), not ints or bools")
    real = expected["masks"] == 1.0
    for name in ("inputs", "targets"):
        got = np.asarray(numbers[name])
        if not np.array_equal(got[real], expected[name][real]):
            problems.append(f"{name} at real (unpadded) positions differ: inputs are <s> w_1 ... w_n, "
                            "targets w_1 ... w_n </s>, and words outside the vocabulary are <unk>")
        elif not np.array_equal(got[~real], expected[name][~real]):
            used = sorted({int(v) for v in got[~real]})
            problems.append(f"{name}: the padding holds the ids {used}; pad with </s> (vocab.eos = {vocab.eos})")
    return problems


# -------------------------------------------------------------------------- masked_batch_nll
def nll_inputs() -> dict:
    """Seeded parameters of the grader's LSTM language model and a padded batch."""
    from course.data import Vocab, make_batch
    rng = np.random.default_rng(SEED)
    params = {"E": rng.uniform(-0.9, 0.9, size=(NLL_VOCAB, D_IN)),
              "rnn.W_x": rng.uniform(-0.9, 0.9, size=(4 * D_H, D_IN)),
              "rnn.W_h": rng.uniform(-0.9, 0.9, size=(4 * D_H, D_H)),
              "rnn.b": rng.uniform(-0.5, 0.5, size=(4 * D_H,)),
              "W_hs": rng.uniform(-0.9, 0.9, size=(NLL_VOCAB, D_H)),
              "b_s": rng.uniform(-0.5, 0.5, size=(NLL_VOCAB,))}
    vocab = Vocab(["<unk>", "<s>", "</s>"] + [f"w{i}" for i in range(3, NLL_VOCAB)])
    batch = make_batch(NLL_SENTENCES, vocab)
    return {"params": params, "sentences": [list(s) for s in NLL_SENTENCES],
            "inputs": batch.inputs, "targets": batch.targets, "masks": batch.masks}


def one_at_a_time(inputs: dict, mask_padding: bool = True) -> dict:
    """The reference: each sentence alone (batch size 1, no padding), all summed.

    ``mask_padding=False`` scores every sentence padded to the batch's length
    instead, which is what a batch without its mask computes, so that the
    judge can name that mistake.
    """
    from course import runtime
    dy = runtime.dynet()
    dy.renew_cg()
    model = probes.build_model(dy, inputs["params"])
    W, b = model["W_hs"].expr(True), model["b_s"].expr(True)
    bos, eos = 1, 2
    length = max(len(s) for s in inputs["sentences"]) + 1
    terms = []
    for s in inputs["sentences"]:
        padding = [] if mask_padding else [eos] * (length - len(s) - 1)
        state = model["rnn"].initial_state()
        for w_in, w_out in zip([bos] + s + padding, s + [eos] + padding):
            state = state.add_input(dy.lookup(model["E"], w_in))
            terms.append(dy.pickneglogsoftmax(dy.affine_transform([b, W, state.output()]), w_out))
    loss = dy.esum(terms)
    value = loss.value()
    loss.backward()
    return {"value": float(value), "grads": probes.gradients(model)}


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= VALUE_RTOL * abs(b)


def judge_masked_batch_nll(numbers: dict, inputs: dict) -> list[str]:
    if numbers["size"] != 1 or numbers["batch"] != 1:
        return [f"masked_batch_nll must return one number for the whole batch (dim ((1,), 1)); it "
                f"returned {int(numbers['size'])} value(s) x batch size {int(numbers['batch'])}: "
                "sum over the time steps, and sum the batch with dy.sum_batches"]
    want = one_at_a_time(inputs)
    got, ref = float(numbers["value"]), want["value"]
    if not _close(got, ref):
        n_predictions = sum(len(s) + 1 for s in inputs["sentences"])
        if _close(got, one_at_a_time(inputs, mask_padding=False)["value"]):
            return ["the padded positions were counted: multiply each step's losses by that step's "
                    "mask before summing"]
        if _close(got * n_predictions, ref):
            return ["the loss is averaged over the predictions; return the sum"]
        if _close(got * len(inputs["sentences"]), ref):
            return ["the loss is averaged over the sentences; return the sum"]
        return [f"the padded batch does not score like its sentences one at a time (relative "
                f"difference {abs(got - ref) / abs(ref):.3g} > {VALUE_RTOL})"]
    wrong = []
    for name, expected in want["grads"].items():
        have = np.asarray(numbers["grads"].get(name, np.zeros_like(expected)))
        err = np.abs(have - expected).max() / max(np.abs(expected).max(), 1e-8)
        if have.shape != expected.shape or not err <= GRAD_RTOL:
            wrong.append(name)
    if wrong:
        return [f"the value is right but the gradients of {', '.join(wrong)} differ (relative "
                f"error > {GRAD_RTOL}): was part of the loss computed outside DyNet?"]
    return []


CHECKS = [
    Check("ch06.pad_batch", ("pad_batch",), pad_inputs,
          "autograder.probes.ch06_minibatching:pad_batch", judge_pad_batch),
    Check("ch06.masked_batch_nll", ("masked_batch_nll",), nll_inputs,
          "autograder.probes.ch06_minibatching:masked_batch_nll", judge_masked_batch_nll),
]
