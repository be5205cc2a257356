"""Chapter 09's checks pass the reference answers and fail plausible wrong ones, each in
the checks of what it breaks, with a message naming it."""
import warnings

import numpy as np
import pytest

from autograder.reference import ch09_dropout as ch09
from autograder.reference.grading import all_checks, run_check
from course import runtime
from tests.slips import Slip

dy = runtime.dynet()


def problems(name, **functions):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # log(0) of the wrong answers
        try:
            return run_check(all_checks()[name], functions)
        except Exception as err:                            # a probe that crashes fails too
            return [f"{type(err).__name__}: {err}"]


# --------------------------------------------------------------- variational dropout
def variational(xs, p):
    if p == 0:
        return list(xs)
    d, batch = xs[0].dim()[0][0], xs[0].dim()[1]
    mask = dy.random_bernoulli((d,), 1.0 - p, 1.0 / (1.0 - p), batch_size=batch)
    return [dy.cmult(x, mask) for x in xs]


def new_mask_every_step(xs, p):
    return [dy.dropout(x, p) for x in xs]


def unscaled(xs, p):
    d, batch = xs[0].dim()[0][0], xs[0].dim()[1]
    mask = dy.random_bernoulli((d,), 1.0 - p, 1.0, batch_size=batch)
    return [dy.cmult(x, mask) for x in xs]


def keeps_with_probability_p(xs, p):
    if p == 0:
        return list(xs)
    d, batch = xs[0].dim()[0][0], xs[0].dim()[1]
    mask = dy.random_bernoulli((d,), p, 1.0 / (1.0 - p), batch_size=batch)
    return [dy.cmult(x, mask) for x in xs]


def one_mask_for_the_batch(xs, p):
    if p == 0:
        return list(xs)
    mask = dy.random_bernoulli((xs[0].dim()[0][0],), 1.0 - p, 1.0 / (1.0 - p))
    return [dy.cmult(x, mask) for x in xs]


def one_draw_per_sentence(xs, p):
    if p == 0:
        return list(xs)
    d, batch = xs[0].dim()[0][0], xs[0].dim()[1]
    keep = dy.random_bernoulli((1,), 1.0 - p, 1.0 / (1.0 - p), batch_size=batch)
    return [dy.cmult(x, dy.concatenate([keep] * d)) for x in xs]


def numpy_values(xs, p):
    if p == 0:
        return list(xs)
    d, batch = xs[0].dim()[0][0], xs[0].dim()[1]
    mask = (np.random.default_rng(3).random((d, batch)) >= p) / (1.0 - p)
    return [dy.inputTensor(x.npvalue() * mask, batched=True) for x in xs]


DROPOUT = ("ch09.dropout_mask", "ch09.dropout_off", "ch09.dropout_gradients")


def failing(names, **functions):
    return {name: found for name in names if (found := problems(name, **functions))}


def rate_fixed(xs, p):
    """Dropout left on at test time: the rate does not follow p, so p = 0 still drops."""
    d, batch = xs[0].dim()[0][0], xs[0].dim()[1]
    mask = dy.random_bernoulli((d,), 0.5, 2.0, batch_size=batch)
    return [dy.cmult(x, mask) for x in xs]


def test_variational_dropout_reference_passes():
    assert failing(DROPOUT, variational_dropout=variational) == {}


@pytest.mark.parametrize("wrong, checks, says", [
    (new_mask_every_step, {"ch09.dropout_mask"}, "changes from one time step"),
    (unscaled, {"ch09.dropout_mask"}, "1/(1-p)"),
    (keeps_with_probability_p, {"ch09.dropout_mask"}, "probability of DROPPING"),
    (one_mask_for_the_batch, {"ch09.dropout_mask"}, "share a mask"),
    (one_draw_per_sentence, {"ch09.dropout_mask"}, "kept or dropped together"),
    (numpy_values, {"ch09.dropout_gradients"}, "gradient"),
    (rate_fixed, {"ch09.dropout_mask", "ch09.dropout_off"}, "p"),
])
def test_variational_dropout_wrong_answers_fail(wrong, checks, says):
    found = failing(DROPOUT, variational_dropout=wrong)
    assert set(found) == checks and all(says in " ".join(p) for p in found.values()), found


def test_a_rate_that_ignores_p_is_named():
    found = failing(DROPOUT, variational_dropout=rate_fixed)
    assert "it must follow p" in found["ch09.dropout_mask"][0]
    assert "as at test time" in found["ch09.dropout_off"][0]


# --------------------------------------------------------------- Monte Carlo dropout
def geometric_mean(model, sentences, samples, p):
    passes = [model.token_logprobs(sentences, dropout=p) for _ in range(samples)]
    return [np.mean([run[i] for run in passes], axis=0) for i in range(len(sentences))]


def naive_average(model, sentences, samples, p):
    passes = [model.token_logprobs(sentences, dropout=p) for _ in range(samples)]
    return [np.log(np.mean(np.exp([run[i] for run in passes]), axis=0)) for i in range(len(sentences))]


def sum_not_mean(model, sentences, samples, p):
    passes = [model.token_logprobs(sentences, dropout=p) for _ in range(samples)]
    return [np.logaddexp.reduce([run[i] for run in passes], axis=0) for i in range(len(sentences))]


def one_pass_too_many(model, sentences, samples, p):
    return ch09.reference_mc_token_logprobs(model, sentences, samples + 1, p)


def deterministic(model, sentences, samples, p):
    return model.token_logprobs(sentences)


MC = ("ch09.mc_average", "ch09.mc_stable", "ch09.mc_model")


def test_mc_token_logprobs_reference_passes():
    assert failing(MC, mc_token_logprobs=ch09.reference_mc_token_logprobs) == {}


@pytest.mark.parametrize("wrong, checks, says", [
    (geometric_mean, set(MC), "geometric mean"),
    (naive_average, {"ch09.mc_stable"}, "log-sum-exp"),
    (sum_not_mean, set(MC), "divided by K"),
    (one_pass_too_many, set(MC), "stochastic passes"),
    (deterministic, set(MC), "exactly"),
])
def test_mc_token_logprobs_wrong_answers_fail(wrong, checks, says):
    found = failing(MC, mc_token_logprobs=wrong)
    assert set(found) == checks, found
    assert all(says in " ".join(p) for name, p in found.items() if name != "ch09.mc_model"), found


def test_mc_token_logprobs_is_independent_of_batching():
    """Scoring the sentences one at a time is as right as scoring them together."""
    def one_at_a_time(model, sentences, samples, p):
        return [ch09.reference_mc_token_logprobs(model, [s], samples, p)[0] for s in sentences]
    assert failing(MC, mc_token_logprobs=one_at_a_time) == {}


def test_real_model_half_catches_extra_random_draws():
    """On the small RNNLM, a wasted stochastic pass shifts the masks of the passes that count
    (the scripted half catches it too, by counting calls)."""
    from autograder.probes.ch09_dropout import run_mc

    def extra_draw(model, sentences, samples, p):
        model.token_logprobs(sentences, dropout=p)
        return ch09.reference_mc_token_logprobs(model, sentences, samples, p)

    real = ch09.mc_model_inputs()["model"]
    args = (real["spec"], real["sentences"], real["samples"], real["p"], real["seed"])
    got, want = run_mc(extra_draw, *args), run_mc(ch09.reference_mc_token_logprobs, *args)
    assert not all(np.allclose(a[0], b[0], atol=ch09.MODEL_ATOL) for a, b in zip(got, want))
    again = run_mc(ch09.reference_mc_token_logprobs, *args)
    assert all(np.array_equal(a[0], b[0]) for a, b in zip(again, want))


def perplexity_problems(perplexity, token_logprobs=ch09.reference_mc_token_logprobs):
    return problems("ch09.mc_dropout_perplexity", mc_dropout_perplexity=perplexity,
                    mc_token_logprobs=token_logprobs)


def test_mc_dropout_perplexity_reference_passes():
    assert perplexity_problems(ch09.reference_mc_dropout_perplexity) == []


def test_a_perplexity_built_on_a_wrong_average_is_not_blamed_for_it():
    """mc_token_logprobs' slip costs its own checks; the perplexity of its values is right."""
    def perplexity_of(token_logprobs):
        def perplexity(model, sentences, samples, p):
            lps = token_logprobs(model, sentences, samples, p)
            return float(np.exp(-sum(lp.sum() for lp in lps) / sum(len(s) + 1 for s in sentences)))
        return perplexity
    assert perplexity_problems(perplexity_of(geometric_mean), geometric_mean) == []
    assert perplexity_problems(perplexity_of(sum_not_mean), sum_not_mean) == []
    assert perplexity_problems(words_only, geometric_mean)     # its own slip still fails


def words_only(model, sentences, samples, p):
    lps = ch09.reference_mc_token_logprobs(model, sentences, samples, p)
    return float(np.exp(-sum(lp.sum() for lp in lps) / sum(len(s) for s in sentences)))


def mean_of_sentence_perplexities(model, sentences, samples, p):
    lps = ch09.reference_mc_token_logprobs(model, sentences, samples, p)
    return float(np.mean([np.exp(-lp.mean()) for lp in lps]))


def single_pass(model, sentences, samples, p):
    return ch09.reference_mc_dropout_perplexity(model, sentences, 1, p)


@pytest.mark.parametrize("wrong, says", [
    (words_only, "</s>"),
    (mean_of_sentence_perplexities, "differs"),
    (single_pass, "samples"),
])
def test_mc_dropout_perplexity_wrong_answers_fail(wrong, says):
    found = perplexity_problems(wrong)
    assert found and says in " ".join(found), found


def test_same_seed_same_masks():
    """The design the real-model comparison rests on: re-seeding DyNet repeats the masks."""
    from autograder.probes.ch09_dropout import build_model
    model = build_model(ch09._model_spec(np.random.default_rng(0)))
    sentence = [["the", "cat", "sees", "a", "dog"]]
    runtime.init(seed=5)
    first = [model.token_logprobs(sentence, dropout=0.5)[0] for _ in range(2)]
    runtime.init(seed=5)
    again = [model.token_logprobs(sentence, dropout=0.5)[0] for _ in range(2)]
    assert np.array_equal(first[0], again[0]) and np.array_equal(first[1], again[1])
    assert not np.allclose(first[0], first[1])            # and the two passes differ


# ------------------------------------------------------------------ slips
# Each slip is one mistake a student makes in the solution's answer cell, graded end to end by
# tests/test_slips.py, which makes the slip table of autograder/README.md from them.
SLIPS = [
    # ------------------------------------------------------------------ 09: dropout, Monte Carlo dropout
    Slip("dropout left on at test time (the rate fixed, p ignored)", "09_dropout", "variational_dropout",
         old="    if p == 0:\n"
             "        return list(xs)\n"
             "    d, batch_size = xs[0].dim()[0][0], xs[0].dim()[1]\n"
             "    mask = dy.random_bernoulli((d,), 1.0 - p, 1.0 / (1.0 - p), batch_size=batch_size)",
         new="    d, batch_size = xs[0].dim()[0][0], xs[0].dim()[1]\n"
             "    mask = dy.random_bernoulli((d,), 0.5, 2.0, batch_size=batch_size)",
         visible="variational_dropout_tests", shows="as at test time",
         failing=("ch09.dropout_mask", "ch09.dropout_off"),
         says="it must follow p", lost=2),
    Slip("a new dropout mask at every step", "09_dropout", "variational_dropout",
         old="return [dy.cmult(x, mask) for x in xs]",
         new="return [dy.dropout(x, p) for x in xs]",
         visible="variational_dropout_tests", shows="the mask must be the same at every time step",
         failing=("ch09.dropout_mask",),
         says="the mask changes from one time step", lost=1),
    Slip("Monte Carlo average of log-probabilities", "09_dropout", "mc_token_logprobs",
         old="result.append(top + np.log(np.exp(a - top).sum(axis=0)) - np.log(samples))",
         new="result.append(a.mean(axis=0))",
         visible="mc_token_logprobs_tests", shows="the mean probabilities are [0.4, 0.3, 0.8]",
         failing=("ch09.mc_average", "ch09.mc_stable", "ch09.mc_model"),
         says="averages of log-probabilities", lost=4),
    Slip("Monte Carlo average without log-sum-exp", "09_dropout", "mc_token_logprobs",
         old="result.append(top + np.log(np.exp(a - top).sum(axis=0)) - np.log(samples))",
         new="result.append(np.log(np.exp(a).mean(axis=0)))",
         visible="mc_token_logprobs_tests", shows="use the log-sum-exp trick",
         failing=("ch09.mc_stable",),
         says="exp() underflows", lost=1),
    Slip("perplexity over the words only, `</s>` not counted", "09_dropout", "mc_dropout_perplexity",
         old="sum(len(s) + 1 for s in sentences)",
         new="sum(len(s) for s in sentences)",
         visible="mc_dropout_perplexity_tests", shows="so the perplexity is 5",
         failing=("ch09.mc_dropout_perplexity",),
         says="len(s) + 1 predictions per sentence", lost=3),
]
