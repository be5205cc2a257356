"""Checks of chapter 06 (minibatching): ``pad_batch`` and ``masked_batch_nll``.

Tutorial section 6.5: the sentences of a minibatch are padded with ``</s>`` to
one length, and the loss at every padded position is multiplied by 0 (masked),
so that a padded batch scores exactly like its sentences one at a time.

``pad_batch(sentences, vocab)`` on six sentences of lengths 3, 1, 6, 2, 6, 4
(not sorted, two of the longest length, two words outside the vocabulary),
against the course's :func:`course.data.make_batch`, in three checks that each
judge one thing (where the student's columns are the sentences in another order,
the masks and the padding are judged in that order, so a sort costs one check):

* ``ch06.pad_words``: inputs and targets at the real positions, column b being
  sentence b (the input order kept), unknown words as ``<unk>``;
* ``ch06.pad_masks``: 1.0 for each real prediction (the words and the final
  ``</s>``), 0.0 after, as floats;
* ``ch06.pad_padding``: the padded positions hold ``</s>``.

``masked_batch_nll(lm, batch)`` on a padded batch of six sentences with the
grader's random LSTM language model, against the same sentences scored one at a
time, unbatched and unpadded:

* ``ch06.masked_nll``: the value (relative tolerance 1e-5); a known slip (the
  padding counted, the last step unmasked, an average instead of the sum) is named;
* ``ch06.masked_nll_gradients``: every parameter's gradient where the value is
  right (relative tolerance 1e-4); where it is not, only that gradients flow.

The probes are in :mod:`autograder.probes.ch06_minibatching`.
"""
from __future__ import annotations

import numpy as np

from autograder.probes import ch06_minibatching as probes
from autograder.reference.grading import Check
from autograder.reference.steps import DYNET_GRADIENTS

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


def _pad_tables(numbers: dict, inputs: dict):
    """(problems, expected tables, student tables with columns put in the input order,
    whether they were in another order)."""
    from course.data import Vocab, encode, make_batch
    if numbers["calls_course_batching"]:
        return ["pad_batch calls course.data.make_batch/make_batches: write the padding yourself"], {}, {}, False
    vocab = Vocab(inputs["tokens"])
    ids, _ = encode(inputs["sentences"], vocab, max_unknown=1.0)
    want = make_batch(ids, vocab)
    expected = {name: np.array(getattr(want, name), dtype=float) for name in ("inputs", "targets", "masks")}
    shape = expected["inputs"].shape
    problems = [f"{name} has shape {np.shape(numbers[name])}, expected {shape}: time-major, one row "
                "per time step (the longest sentence's words + 1), one column per sentence"
                for name in expected if np.shape(numbers[name]) != shape]
    if problems:
        return problems, expected, {}, False
    got = {name: np.asarray(numbers[name], dtype=float) for name in expected}
    order = _column_order(got, expected, [len(s) for s in ids])
    if order is not None and order != list(range(len(order))):
        return [], expected, {name: table[:, order] for name, table in got.items()}, True
    return [], expected, got, False


def _column_order(got: dict, expected: dict, lengths: list):
    """For each sentence b, the student's column that holds it (its words and final
    </s>, read and predicted), or None when no one-to-one match exists."""
    order = []
    for b, n in enumerate(lengths):
        rows = slice(0, n + 1)
        same = [k for k in range(got["inputs"].shape[1])
                if np.array_equal(got["inputs"][rows, k], expected["inputs"][rows, b])
                and np.array_equal(got["targets"][rows, k], expected["targets"][rows, b])]
        if len(same) != 1:
            return None
        order.append(same[0])
    return order if sorted(order) == list(range(len(order))) else None


def judge_pad_words(numbers: dict, inputs: dict) -> list[str]:
    problems, expected, got, reordered = _pad_tables(numbers, inputs)
    if problems:
        return problems
    if reordered:
        return ["the columns hold the sentences in another order (sorted by length?): keep the input "
                "order, column b is sentences[b], so that the caller can pair each column with its sentence"]
    real = expected["masks"] == 1.0
    return [f"{name} at real (unpadded) positions differ: inputs are <s> w_1 ... w_n, targets w_1 ... w_n "
            "</s>, column b is sentences[b], and words outside the vocabulary are <unk>"
            for name in ("inputs", "targets") if not np.array_equal(got[name][real], expected[name][real])]


def judge_pad_masks(numbers: dict, inputs: dict) -> list[str]:
    problems, expected, got, _ = _pad_tables(numbers, inputs)
    if problems:
        return problems
    if not np.array_equal(got["masks"], expected["masks"]):
        return ["masks differ: 1.0 for each real prediction (a sentence's n words and its final </s>), "
                "0.0 for every padded position after it"]
    if not numbers["masks_are_float"]:
        return ["masks must hold floats (1.0 / 0.0), not ints or bools"]
    return []


def judge_pad_padding(numbers: dict, inputs: dict) -> list[str]:
    from course.data import Vocab
    problems, expected, got, _ = _pad_tables(numbers, inputs)
    if problems:
        return problems
    padded = expected["masks"] == 0.0
    eos = Vocab(inputs["tokens"]).eos
    for name in ("inputs", "targets"):
        if not np.array_equal(got[name][padded], expected[name][padded]):
            used = sorted({int(v) for v in got[name][padded]})
            problems.append(f"{name}: the padding holds the ids {used}; pad with </s> (vocab.eos = {eos})")
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


def one_at_a_time(inputs: dict) -> dict:
    """The reference: each sentence alone (batch size 1, no padding), all summed."""
    from course import runtime
    dy = runtime.dynet()
    dy.renew_cg()
    model = probes.build_model(dy, inputs["params"])
    W, b = model["W_hs"].expr(True), model["b_s"].expr(True)
    bos, eos = 1, 2
    terms = []
    for s in inputs["sentences"]:
        state = model["rnn"].initial_state()
        for w_in, w_out in zip([bos] + s, s + [eos]):
            state = state.add_input(dy.lookup(model["E"], w_in))
            terms.append(dy.pickneglogsoftmax(dy.affine_transform([b, W, state.output()]), w_out))
    loss = dy.esum(terms)
    value = loss.value()
    loss.backward()
    return {"value": float(value), "grads": probes.gradients(model)}


def padded_value(inputs: dict, masks) -> float:
    """The padded batch scored with other ``masks``: what a slip computes, so that the
    judge can name it."""
    from course import runtime
    dy = runtime.dynet()
    dy.renew_cg()
    model = probes.build_model(dy, inputs["params"])
    W, b = model["W_hs"].expr(True), model["b_s"].expr(True)
    state, terms = model["rnn"].initial_state(), []
    for words, next_words, mask in zip(inputs["inputs"], inputs["targets"], masks):
        state = state.add_input(dy.lookup_batch(model["E"], words))
        losses = dy.pickneglogsoftmax_batch(dy.affine_transform([b, W, state.output()]), next_words)
        terms.append(dy.cmult(losses, dy.inputTensor(list(mask), batched=True)))
    return float(dy.sum_batches(dy.esum(terms)).value())


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= VALUE_RTOL * abs(b)


def _not_one_number(numbers: dict, inputs: dict) -> list[str]:
    if numbers["size"] != 1 or numbers["batch"] != 1:
        return [f"masked_batch_nll must return one number for the whole batch (dim ((1,), 1)); it "
                f"returned {int(numbers['size'])} value(s) x batch size {int(numbers['batch'])}: "
                "sum over the time steps, and sum the batch with dy.sum_batches"
                + (" (one value per sentence: is a mask built with "
                   "dy.inputTensor(mask, batched=True)?)" if numbers["size"] == len(inputs["sentences"]) else "")]
    return []


def judge_masked_nll(numbers: dict, inputs: dict) -> list[str]:
    if _not_one_number(numbers, inputs):
        return _not_one_number(numbers, inputs)
    got, ref = float(numbers["value"]), one_at_a_time(inputs)["value"]
    if _close(got, ref):
        return []
    masks = np.asarray(inputs["masks"], dtype=float)
    last_unmasked = masks.copy()
    last_unmasked[-1] = 1.0
    late = np.vstack([np.ones_like(masks[:1]), masks[:-1]])     # the input word's mask, not the target's
    early = np.vstack([masks[1:], np.zeros_like(masks[:1])])
    for hint, other in (("the padded positions were counted: multiply each step's losses by that "
                         "step's mask before summing", np.ones_like(masks)),
                        ("the last time step's losses are not masked: multiply every step's losses, "
                         "the last one too, by that step's mask", last_unmasked),
                        ("the masks are one step late: step t's losses are multiplied by step t-1's mask "
                         "(whether the word read is real); use masks[t], which says whether targets[t] is",
                         late),
                        ("the masks are one step early: step t's losses are multiplied by step t+1's mask; "
                         "use masks[t], the mask of the same step as targets[t]", early)):
        if _close(got, padded_value(inputs, other)):
            return [hint]
    n_predictions = sum(len(s) + 1 for s in inputs["sentences"])
    if _close(got * n_predictions, ref):
        return ["the loss is averaged over the predictions; return the sum"]
    if _close(got * len(inputs["sentences"]), ref):
        return ["the loss is averaged over the sentences; return the sum"]
    return [f"the padded batch does not score like its sentences one at a time (relative "
            f"difference {abs(got - ref) / abs(ref):.3g} > {VALUE_RTOL})"]


def judge_masked_nll_gradients(numbers: dict, inputs: dict) -> list[str]:
    if _not_one_number(numbers, inputs):
        return _not_one_number(numbers, inputs)
    want = one_at_a_time(inputs)
    grads = {name: np.asarray(numbers["grads"].get(name, np.zeros_like(g))) for name, g in want["grads"].items()}
    if not _close(float(numbers["value"]), want["value"]):       # ch06.masked_nll says what is wrong
        if any(np.any(g != 0) for g in grads.values()):
            return []
        return ["no gradient reaches any parameter: build the loss from DyNet operations (not NumPy, "
                ".npvalue() or .value())"]
    wrong = []
    for name, expected in want["grads"].items():
        have = grads[name]
        err = np.abs(have - expected).max() / max(np.abs(expected).max(), 1e-8) if have.shape == expected.shape else 1
        if not err <= GRAD_RTOL:
            wrong.append(name)
    if wrong:
        return [f"the value is right but the gradients of {', '.join(wrong)} differ (relative "
                f"error > {GRAD_RTOL}): was part of the loss computed outside DyNet?"]
    return []


PAD_ABOUT = ("six sentences of lengths 3, 1, 6, 2, 6, 4 (not sorted, two of the longest length), two words "
             "outside the vocabulary")
NLL_ABOUT = ("six sentences of lengths 4, 1, 6, 3, 6, 2, padded to 7 steps; an LSTM language model with "
             "random non-zero weights, embeddings 5, hidden 4, 13 words")
PADDING = ("06_minibatching", "4. Sentences of different lengths: padding and masking")
PAD = "autograder.probes.ch06_minibatching:pad_batch"
NLL = "autograder.probes.ch06_minibatching:masked_batch_nll"
CHECKS = [
    Check("ch06.pad_words", ("pad_batch",), pad_inputs, PAD, judge_pad_words, PAD_ABOUT, PADDING,
          "pad_batch_tests"),
    Check("ch06.pad_masks", ("pad_batch",), pad_inputs, PAD, judge_pad_masks, PAD_ABOUT, PADDING,
          "pad_batch_tests"),
    Check("ch06.pad_padding", ("pad_batch",), pad_inputs, PAD, judge_pad_padding, PAD_ABOUT, PADDING,
          "pad_batch_tests"),
    Check("ch06.masked_nll", ("masked_batch_nll",), nll_inputs, NLL, judge_masked_nll, NLL_ABOUT, PADDING,
          "masked_batch_nll_tests"),
    Check("ch06.masked_nll_gradients", ("masked_batch_nll",), nll_inputs, NLL, judge_masked_nll_gradients,
          NLL_ABOUT + "; the gradient of every parameter", DYNET_GRADIENTS, "masked_batch_nll_tests"),
]
