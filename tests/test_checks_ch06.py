"""The chapter-06 checks pass a correct pad_batch / masked_batch_nll and fail plausible mistakes."""
import sys

import pytest

if "dynet" not in sys.modules:          # tests/conftest.py normally configures DyNet first
    import dynet_config
    dynet_config.set(random_seed=42, mem=512, autobatch=0)

import dynet as dy  # noqa: E402
import numpy as np  # noqa: E402

from autograder.probes import ch06_minibatching as probes  # noqa: E402
from autograder.reference import ch06_minibatching as ch06  # noqa: E402
from autograder.reference.grading import all_checks, check, run_check  # noqa: E402
from course import data  # noqa: E402
from tests.slips import Slip  # noqa: E402


# -------------------------------------------------------------------------- answers to grade
def pad_batch(sentences, vocab, pad=None, float_masks=True):
    """A correct answer (pad=None, float_masks=True) and, through the options, wrong ones."""
    pad = vocab.eos if pad is None else pad
    ids = [[vocab.index(w) for w in s] for s in sentences]
    length = max(len(s) for s in ids) + 1
    one, zero = (1.0, 0.0) if float_masks else (1, 0)
    inputs = [[vocab.bos if t == 0 else (s[t - 1] if t <= len(s) else pad) for s in ids]
              for t in range(length)]
    targets = [[s[t] if t < len(s) else (vocab.eos if t == len(s) else pad) for s in ids]
               for t in range(length)]
    masks = [[one if t <= len(s) else zero for s in ids] for t in range(length)]
    return inputs, targets, masks


def masked_batch_nll(lm, batch, use_mask=True, mean=False, numpy_mask=False):
    """A correct answer with the defaults; the options make the usual mistakes."""
    inputs, targets, masks = batch
    state = lm["rnn"].initial_state()
    terms = []
    for words_in, words_out, mask in zip(inputs, targets, masks):
        state = state.add_input(dy.lookup_batch(lm["E"], words_in))
        scores = dy.affine_transform([lm["b_s"], lm["W_hs"], state.output()])
        losses = dy.pickneglogsoftmax_batch(scores, words_out)
        if numpy_mask:       # the value computed outside DyNet: right number, no gradient
            losses = dy.scalarInput(float(np.dot(losses.npvalue().ravel(), mask)))
        elif use_mask:
            losses = dy.cmult(losses, dy.inputTensor(mask, batched=True))
        terms.append(losses)
    total = dy.sum_batches(dy.esum(terms))
    if mean:
        total = total * (1.0 / sum(sum(m) for m in masks))
    return total


def run(name, **functions):
    return run_check(all_checks()[name], functions)


PAD_CHECKS = ("ch06.pad_words", "ch06.pad_masks", "ch06.pad_padding")
NLL_CHECKS = ("ch06.masked_nll", "ch06.masked_nll_gradients")


def failing(names, **functions):
    return {name: found for name in names if (found := run(name, **functions))}


# -------------------------------------------------------------------------- pad_batch
def test_checks_are_registered():
    assert set(PAD_CHECKS + NLL_CHECKS) <= set(all_checks())


def test_correct_pad_batch_passes():
    for name in PAD_CHECKS:
        check(name, pad_batch=pad_batch, points=1)


def test_correct_pad_batch_equals_the_course_make_batch():
    vocab = data.Vocab(ch06.TOKENS)
    ids, _ = data.encode(ch06.PAD_SENTENCES, vocab, max_unknown=1.0)
    course = data.make_batch(ids, vocab)
    assert pad_batch(ch06.PAD_SENTENCES, vocab) == (course.inputs, course.targets, course.masks)


@pytest.mark.parametrize("reverse", [True, False])
def test_sorting_the_sentences_costs_the_order_check_only(reverse):
    found = failing(PAD_CHECKS, pad_batch=lambda s, v: pad_batch(sorted(s, key=len, reverse=reverse), v))
    assert list(found) == ["ch06.pad_words"] and "keep the input order" in found["ch06.pad_words"][0], found


def test_padding_with_the_wrong_token_fails_the_padding_check_only():
    found = failing(PAD_CHECKS, pad_batch=lambda s, v: pad_batch(s, v, pad=v.unk))
    assert list(found) == ["ch06.pad_padding"] and "pad with </s>" in found["ch06.pad_padding"][0], found


def test_a_sorted_batch_padded_wrongly_fails_both():
    found = failing(PAD_CHECKS, pad_batch=lambda s, v: pad_batch(sorted(s, key=len), v, pad=v.unk))
    assert set(found) == {"ch06.pad_words", "ch06.pad_padding"}, found


def test_integer_masks_fail_the_masks_check_only():
    found = failing(PAD_CHECKS, pad_batch=lambda s, v: pad_batch(s, v, float_masks=False))
    assert found == {"ch06.pad_masks": ["masks must hold floats (1.0 / 0.0), not ints or bools"]}


def test_batch_major_layout_fails_every_check():
    def batch_major(sentences, vocab):
        return tuple([list(row) for row in zip(*part)] for part in pad_batch(sentences, vocab))
    found = failing(PAD_CHECKS, pad_batch=batch_major)
    assert set(found) == set(PAD_CHECKS) and all("time-major" in p[0] for p in found.values())


def test_masking_the_final_eos_fails():
    def no_final_eos(sentences, vocab):
        inputs, targets, masks = pad_batch(sentences, vocab)
        lengths = [len(s) for s in sentences]
        masks = [[1.0 if t < n else 0.0 for n in lengths] for t in range(len(masks))]
        return inputs, targets, masks
    found = failing(PAD_CHECKS, pad_batch=no_final_eos)
    assert list(found) == ["ch06.pad_masks"] and "masks differ" in found["ch06.pad_masks"][0], found


def test_unknown_words_must_be_unk():
    def unknown_as_eos(sentences, vocab):
        known = [[w if w in vocab.tokens else "</s>" for w in s] for s in sentences]
        return pad_batch(known, vocab)
    found = failing(PAD_CHECKS, pad_batch=unknown_as_eos)
    assert list(found) == ["ch06.pad_words"] and "<unk>" in found["ch06.pad_words"][0], found


def test_calling_the_course_make_batch_fails():
    def lazy(sentences, vocab):
        ids, _ = data.encode(sentences, vocab, max_unknown=1.0)
        b = data.make_batch(ids, vocab)
        return b.inputs, b.targets, b.masks
    assert failing(PAD_CHECKS, pad_batch=lazy) == {
        name: ["pad_batch calls course.data.make_batch/make_batches: write the padding yourself"]
        for name in PAD_CHECKS}


def test_a_helper_of_their_own_named_make_batch_is_fine():
    namespace = {"pad_batch_impl": pad_batch}
    exec("def make_batch(s, v):\n    return pad_batch_impl(s, v)\n"
         "def pad_batch(s, v):\n    return make_batch(s, v)\n", namespace)
    assert failing(PAD_CHECKS, pad_batch=namespace["pad_batch"]) == {}


REFUSED = {name: ["pad_batch calls course.data.make_batch/make_batches: write the padding yourself"]
           for name in PAD_CHECKS}


def _course_pad(make_batch):
    """A pad_batch that leaves the padding to ``make_batch`` (the course's, however it was reached)."""
    def lazy(sentences, vocab):
        ids, _ = data.encode(sentences, vocab, max_unknown=1.0)
        b = make_batch(ids, vocab)
        return b.inputs, b.targets, b.masks
    return lazy


def _by_getattr(sentences, vocab):
    import importlib
    return _course_pad(getattr(importlib.import_module("course.data"), "make_" + "batch"))(sentences, vocab)


def _by_alias():
    alias = data.make_batch            # taken when the answer cell ran, before the probe
    return _course_pad(alias)


def _by_partial():
    import functools
    return _course_pad(functools.partial(data.make_batch))


def _by_code_copy():
    import types
    copy = types.FunctionType(data.make_batch.__code__, vars(data), "mine", data.make_batch.__defaults__)
    return _course_pad(copy)


def _by_renamed_code():
    import types
    code = data.make_batch.__code__.replace(co_name="mine", co_firstlineno=1)
    return _course_pad(types.FunctionType(code, vars(data), "mine", data.make_batch.__defaults__))


def _by_course_batches(sentences, vocab):
    ids, _ = data.encode(sentences, vocab, max_unknown=1.0)
    (b,) = data.make_batches(ids, vocab, batch_size=len(ids), sort=False)
    return b.inputs, b.targets, b.masks


def _in_a_thread():
    import threading
    copy = _by_code_copy()

    def in_thread(sentences, vocab):
        out = []
        worker = threading.Thread(target=lambda: out.append(copy(sentences, vocab)))
        worker.start()
        worker.join()
        return out[0]
    return in_thread


def _restores_the_code():
    saved = data.make_batch.__code__

    def restoring(sentences, vocab):
        data.make_batch.__code__ = saved
        return _course_pad(data.make_batch)(sentences, vocab)
    return restoring


def _removes_the_hook(sentences, vocab):
    import sys
    sys.setprofile(None)
    return _by_code_copy()(sentences, vocab)


def _catches_the_refusal(sentences, vocab):
    try:
        return _course_pad(data.make_batch)(sentences, vocab)
    except RuntimeError:
        return pad_batch(sentences, vocab)


@pytest.mark.parametrize("route", [_by_getattr, _by_alias(), _by_partial(), _by_code_copy(), _by_renamed_code(),
                                   _by_course_batches, _in_a_thread(), _restores_the_code(), _removes_the_hook,
                                   _catches_the_refusal],
                         ids=["getattr-importlib", "alias", "partial", "code-copy", "renamed-code",
                              "make_batches", "thread", "restores-code", "removes-hook", "catches-refusal"])
def test_every_route_to_the_course_padding_scores_as_the_plain_call(route):
    """Judged by what runs: each way of reaching course.data.make_batch fails the padding checks as
    the plain call does, and the helpers are whole again afterwards."""
    assert failing(PAD_CHECKS, pad_batch=route) == REFUSED
    assert data.make_batch.__code__ is probes.HELPER_CODE[0] and data.make_batches.__code__ is probes.HELPER_CODE[1]
    assert data.make_batch([[3]], data.Vocab(ch06.TOKENS)).masks == [[1.0], [1.0]]
    import sys
    import threading
    assert sys.getprofile() is None and threading.getprofile() is None


# -------------------------------------------------------------------------- masked_batch_nll
def test_correct_masked_batch_nll_passes():
    assert failing(NLL_CHECKS, masked_batch_nll=masked_batch_nll) == {}


def test_reference_is_the_padded_batch_with_its_mask():
    """The judge's one-at-a-time reference equals the padded, masked batch."""
    inputs = ch06.nll_inputs()
    batched = probes.masked_batch_nll({"masked_batch_nll": masked_batch_nll}, inputs)
    alone = ch06.one_at_a_time(inputs)
    assert batched["value"] == pytest.approx(alone["value"], rel=1e-5)
    assert ch06.padded_value(inputs, inputs["masks"]) == pytest.approx(alone["value"], rel=1e-5)
    assert batched["value"] < ch06.padded_value(inputs, np.ones_like(np.asarray(inputs["masks"])))


def last_step_unmasked(lm, batch):
    inputs, targets, masks = batch
    state, terms = lm["rnn"].initial_state(), []
    for t, (words_in, words_out, mask) in enumerate(zip(inputs, targets, masks)):
        state = state.add_input(dy.lookup_batch(lm["E"], words_in))
        losses = dy.pickneglogsoftmax_batch(dy.affine_transform([lm["b_s"], lm["W_hs"], state.output()]), words_out)
        terms.append(losses if t == len(inputs) - 1 else dy.cmult(losses, dy.inputTensor(mask, batched=True)))
    return dy.sum_batches(dy.esum(terms))


@pytest.mark.parametrize("wrong, says", [
    (lambda lm, b: masked_batch_nll(lm, b, use_mask=False), "the padded positions were counted"),
    (last_step_unmasked, "the last time step's losses are not masked"),
    (lambda lm, b: masked_batch_nll(lm, b, mean=True), "the loss is averaged over the predictions"),
])
def test_a_wrong_value_fails_the_value_check_only_and_is_named(wrong, says):
    found = failing(NLL_CHECKS, masked_batch_nll=wrong)
    assert list(found) == ["ch06.masked_nll"] and found["ch06.masked_nll"][0].startswith(says), found


def test_mask_applied_in_numpy_fails_the_gradients_only():
    found = failing(NLL_CHECKS, masked_batch_nll=lambda lm, b: masked_batch_nll(lm, b, numpy_mask=True))
    assert list(found) == ["ch06.masked_nll_gradients"], found
    assert "outside DyNet" in found["ch06.masked_nll_gradients"][0]


def test_a_batched_result_is_refused():
    def per_sentence(lm, batch):
        total = masked_batch_nll(lm, batch)
        return dy.concatenate_to_batch([total, total])
    found = failing(NLL_CHECKS, masked_batch_nll=per_sentence)
    assert set(found) == set(NLL_CHECKS) and all("dy.sum_batches" in p[0] for p in found.values())


def test_checks_judge_the_numbers_as_the_sandbox_returns_them():
    """The autograder carries the probe's numbers through an npz file: flat, all arrays."""
    from autograder.probes import to_arrays as flatten
    from autograder.probes import from_arrays as _unflatten
    for name, fn in [(n, pad_batch) for n in PAD_CHECKS] + [(n, masked_batch_nll) for n in NLL_CHECKS]:
        c = all_checks()[name]
        inputs = c.make_inputs()
        numbers = _unflatten(flatten(probes.__dict__[c.probe.split(":")[1]]({c.functions[0]: fn}, inputs)))
        assert c.judge(numbers, inputs) == []


# ------------------------------------------------------------------ slips
# Each slip is one mistake a student makes in the solution's answer cell, graded end to end by
# tests/test_slips.py, which makes the slip table of autograder/README.md from them.
SLIPS = [
    # ------------------------------------------------------------------ 06: pad_batch, masked_batch_nll
    Slip("pad_batch sorts the sentences by length", "06_minibatching", "pad_batch",
         old="for s in sentences]",
         new="for s in sorted(sentences, key=len, reverse=True)]",
         visible="pad_batch_tests", shows="keep the input order (do not sort)",
         failing=("ch06.pad_words",),
         says="keep the input order", lost=1),
    Slip("padding with `<unk>` instead of `</s>`", "06_minibatching", "pad_batch",
         old="else vocab.eos) for s in ids])",
         new="else vocab.unk) for s in ids])",
         visible="pad_batch_tests", shows="then </s> (2)",
         failing=("ch06.pad_padding",),
         says="pad with </s>", lost=1),
    Slip("the last time step left unmasked", "06_minibatching", "masked_batch_nll",
         old="terms.append(dy.cmult(losses, dy.inputTensor(mask, batched=True)))",
         new="terms.append(losses if len(terms) == len(inputs) - 1 else dy.cmult(losses, "
             "dy.inputTensor(mask, batched=True)))",
         visible="masked_batch_nll_tests", shows="the padding was counted: use the masks",
         failing=("ch06.masked_nll",),
         says="the last time step's losses", lost=3),
    Slip("the mean instead of the sum", "06_minibatching", "masked_batch_nll",
         old="return dy.sum_batches(dy.esum(terms))",
         new="return dy.sum_batches(dy.esum(terms)) * (1.0 / sum(sum(m) for m in masks))",
         visible="masked_batch_nll_tests", shows="the loss is averaged over the",
         failing=("ch06.masked_nll",),
         says="the loss is averaged over the predictions", lost=3),
    Slip("the mask without batched=True", "06_minibatching", "masked_batch_nll",
         old="dy.inputTensor(mask, batched=True)",
         new="dy.inputTensor(mask)",
         visible="masked_batch_nll_tests", shows="is a mask built with dy.inputTensor(mask, batched=True)?",
         failing=("ch06.masked_nll", "ch06.masked_nll_gradients"),
         says="is a mask built with dy.inputTensor(mask, batched=True)?", lost=4),
    Slip("the masks one step late", "06_minibatching", "masked_batch_nll",
         old="zip(inputs, targets, masks)",
         new="zip(inputs, targets, [[1] * len(masks[0])] + list(masks[:-1]))",
         visible="masked_batch_nll_tests", shows="not the mask of the word read",
         failing=("ch06.masked_nll",),
         says="the masks are one step late", lost=3),
]
