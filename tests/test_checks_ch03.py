"""The checks of chapter 03's lstm_step (LSTM without forget gate, tutorial eqs 47-51, with
eq 52's logistic in its correct form): the reference and an equivalent rewrite pass;
plausible mistakes fail exactly the checks of the parts they break, with a message that
names the mistake (the input and output gates swapped keep the carousel's point)."""
import numpy as np
import pytest

from autograder.reference.grading import all_checks, run_check
from course import runtime
from tests.slips import Slip

dy = runtime.dynet()


def _affine(p, g, x, h_prev):
    return dy.affine_transform([p["b_" + g], p["W_x" + g], x, p["W_h" + g], h_prev])


def reference(p, x, state):
    h_prev, c_prev = state
    u = dy.tanh(_affine(p, "u", x, h_prev))
    i = dy.logistic(_affine(p, "i", x, h_prev))
    o = dy.logistic(_affine(p, "o", x, h_prev))
    c = dy.cmult(i, u) + c_prev
    return (dy.cmult(o, dy.tanh(c)), c)


def rewritten(p, x, state):
    """Plain operators and the logistic spelt out as 1 / (1 + exp(-z)): must pass too."""
    h_prev, c_prev = state

    def sigma(z):
        return dy.cdiv(dy.ones(z.dim()[0], batch_size=z.dim()[1]), dy.exp(-z) + 1)

    pre = {g: p["W_x" + g] * x + p["W_h" + g] * h_prev + p["b_" + g] for g in "uio"}
    c = c_prev + dy.cmult(sigma(pre["i"]), dy.tanh(pre["u"]))
    return (dy.cmult(sigma(pre["o"]), dy.tanh(c)), c)


def _variant(gate=dy.logistic, output_gate=None, cell=None, hidden=None, swap_io=False):
    def step(p, x, state):
        h_prev, c_prev = state
        u = dy.tanh(_affine(p, "u", x, h_prev))
        i = gate(_affine(p, "o" if swap_io else "i", x, h_prev))
        o = (output_gate or gate)(_affine(p, "i" if swap_io else "o", x, h_prev))
        c = cell(i, u, c_prev) if cell else dy.cmult(i, u) + c_prev
        h = hidden(o, c) if hidden else dy.cmult(o, dy.tanh(c))
        return (h, c)
    return step


def misprinted_logistic(z):
    """Eq 52 as printed in the tutorial, 1 / (1 - exp(-x)): not in (0, 1) at all."""
    return dy.cdiv(dy.ones(z.dim()[0], batch_size=z.dim()[1]), -dy.exp(-z) + 1)


MEMORY, OUTPUT, STEP, GRADIENTS, CAROUSEL = (f"ch03.lstm_{k}" for k in
                                             ("memory", "output", "step", "gradients", "carousel"))
NAMES = (MEMORY, OUTPUT, STEP, GRADIENTS, CAROUSEL)
# mistake: (step, {each check it fails: a phrase of that check's message})
MISPRINT, SWAPPED = "misprints it", "the input gate reads the output gate's parameters"
MISTAKES = {
    "misprinted eq 52": (_variant(gate=misprinted_logistic),
                         {MEMORY: MISPRINT, OUTPUT: "check o_t (eq 49", STEP: MISPRINT}),
    "tanh output gate": (_variant(output_gate=dy.tanh),
                         {OUTPUT: "check o_t (eq 49", STEP: "the output gate uses tanh"}),
    "input and output gates swapped": (_variant(swap_io=True),
                                       {MEMORY: SWAPPED, OUTPUT: "is o_t computed from W_xo", STEP: SWAPPED}),
    "coupled gates (1 - i) * c_prev": (_variant(cell=lambda i, u, c: dy.cmult(i, u) + dy.cmult(-i + 1, c)),
                                       {MEMORY: "multiplied by (1 - i_t)", STEP: "multiplied by (1 - i_t)",
                                        CAROUSEL: "constant error carousel"}),
    "previous cell dropped": (_variant(cell=lambda i, u, c: dy.cmult(i, u)),
                              {MEMORY: "c_{t-1} is missing", STEP: "c_{t-1} is missing",
                               CAROUSEL: "constant error carousel"}),
    "h = o * c without tanh": (_variant(hidden=lambda o, c: dy.cmult(o, c)),
                               {OUTPUT: "so h_t must be tanh(c_t)", STEP: "eq 51 squashes the memory cell"}),
}


def state_in_the_wrong_order(p, x, state):
    h, c = reference(p, x, state)
    return (c, h)


def numpy_inside(p, x, state):
    """The right numbers, computed in NumPy: no gradient reaches the parameters."""
    v = {k: e.npvalue() for k, e in p.items()}
    X, H, C = x.npvalue(), state[0].npvalue(), state[1].npvalue()

    def pre(g):
        return v["W_x" + g] @ X + v["W_h" + g] @ H + v["b_" + g][:, None]

    def sigma(z):
        return 1 / (1 + np.exp(-z))

    c = sigma(pre("i")) * np.tanh(pre("u")) + C
    h = sigma(pre("o")) * np.tanh(c)
    return (dy.inputTensor(h, batched=True), dy.inputTensor(c, batched=True))


def problems(fn, name=STEP):
    return run_check(all_checks()[name], {"lstm_step": fn})


def failing(fn):
    return {name: found for name in NAMES if (found := problems(fn, name))}


def test_the_checks_are_registered():
    assert all(all_checks()[name].functions == ("lstm_step",) for name in NAMES)


def carousel_gaps(step) -> list:
    """How far apart each step's c_t - c_{t-1} is within the carousel check's pairs, and the
    largest |c|: said when a correct step fails, since the margin is what a failure is about."""
    from autograder import probes
    from autograder.reference import ch03_lstm
    inputs = all_checks()[CAROUSEL].make_inputs()
    c = np.asarray(probes.run_step(step, inputs)["states"])[:, 1]
    increments = c - np.concatenate([inputs["state0"][1][None], c[:-1]])
    half = increments.shape[-1] // 2
    gaps = np.abs(increments[..., :half] - increments[..., half:]).reshape(len(c), -1).max(axis=1)
    return [f"gaps {gaps.tolist()}, |c| up to {float(np.abs(c).max()):.3f}, allowed {ch03_lstm.CAROUSEL_ATOL}"]


@pytest.mark.parametrize("correct", [reference, rewritten])
def test_correct_steps_pass(correct):
    found = failing(correct)
    assert found == {}, (found, carousel_gaps(correct) if CAROUSEL in found else "")


def overflowing(p, x, state):
    """A step whose every number is NaN: its graphs leave NaN in DyNet's memory."""
    h, c = reference(p, x, state)
    return (h * float("nan"), c * float("nan"))


def test_a_step_that_overflowed_does_not_fail_the_next_sound_one():
    """DyNet's matrix product computes 0 x (its memory) + W x, so the NaN a step left in DyNet's
    memory came back in the next step's ``W * x`` (a correct step, written with ``*``, failed the
    carousel check after another test had trained a model to NaN in the same process): each check
    starts from zeroed memory (probes.clean_memory)."""
    assert CAROUSEL in failing(overflowing)
    assert failing(rewritten) == {}


@pytest.mark.parametrize("name", sorted(MISTAKES))
def test_a_mistake_fails_the_checks_of_its_parts_and_is_named(name):
    step, hints = MISTAKES[name]
    found = failing(step)
    assert set(found) == set(hints), found
    assert all(hints[check] in " ".join(p) for check, p in found.items()), found


def test_swapped_gates_are_named_not_blamed_on_the_logistic():
    """The issue's wrong-way hint: the gates' wiring is named, the logistic is not."""
    found = failing(MISTAKES["input and output gates swapped"][0])
    assert "the input gate reads the output gate's parameters" in found[MEMORY][0]
    assert not any("logistic" in p for ps in found.values() for p in ps), found


def test_h_must_come_first_in_the_state():
    found = problems(state_in_the_wrong_order)
    assert found == ["the state is returned as (c, h): return (h, c), h first (the next step and the "
                     "model read state[0] as h)"]


def test_numpy_inside_fails_on_the_gradients_only():
    found = failing(numpy_inside)
    assert set(found) == {GRADIENTS} and "outside DyNet" in found[GRADIENTS][0], found


# --------------------------------------------------------------------------- the student's own sampler

DISTRIBUTION, DRAWS = "ch03.next_token_distribution", "ch03.sampler_draws"


def sampler(scores, temperature=1.0, top_k=None, top_p=None, *, after_softmax=False, k_extra=0, ties=False,
            crossing=True, renormalise=True, naive=False):
    """A student's sampler, written apart from the reference, with one of the slips when asked."""
    z = np.asarray(scores, dtype=float)
    z = z if after_softmax else z / temperature
    e = np.exp(z) if naive else np.exp(z - np.max(z))
    p = e / e.sum()
    if after_softmax:
        p = p / temperature
    order = sorted(range(len(p)), key=lambda i: -p[i])          # Python's sort is stable: ties by index
    keep = set(order)
    if top_k is not None and top_k < len(p):
        keep = set(order[:top_k + k_extra])
        if ties:
            keep = {i for i in range(len(p)) if p[i] >= p[order[top_k - 1]]}
    q = np.array([p[i] if i in keep else 0.0 for i in range(len(p))])
    if renormalise:
        q = q / q.sum()
    if top_p is not None and top_p < 1:
        total, nucleus = 0.0, set()
        for i in sorted(keep, key=lambda i: (-q[i], i)):
            if crossing:
                nucleus.add(i)
                total += q[i]
                if total >= top_p:
                    break
            else:
                total += q[i]
                if total >= top_p:
                    break
                nucleus.add(i)
        q = np.array([q[i] if i in nucleus else 0.0 for i in range(len(q))])
        if renormalise:
            q = q / q.sum()
    return q


def slip(**flags):
    def fn(scores, temperature=1.0, top_k=None, top_p=None):
        with np.errstate(all="ignore"):
            return sampler(scores, temperature, top_k, top_p, **flags)
    return fn


def sampler_problems(fn):
    return {name: found for name in (DISTRIBUTION, DRAWS)
            if (found := run_check(all_checks()[name], {"next_token_distribution": fn}))}


def test_an_independent_sampler_passes_both_checks():
    assert sampler_problems(sampler) == {}


# slip: (flags, {each check it fails: a phrase of its message})
SAMPLER_SLIPS = {
    "temperature after the softmax": ({"after_softmax": True},
                                      {DISTRIBUTION: "divide the scores by it before the softmax", DRAWS: "other sentences"}),
    "top-k keeps k + 1": ({"k_extra": 1}, {DISTRIBUTION: "one token too many", DRAWS: "other sentences"}),
    "top-k keeps k - 1": ({"k_extra": -1}, {DISTRIBUTION: "one token too few", DRAWS: "other sentences"}),
    "top-p without the crossing token": ({"crossing": False},
                                         {DISTRIBUTION: "leaves out the token that crosses p", DRAWS: "other sentences"}),
    "no renormalisation": ({"renormalise": False}, {DISTRIBUTION: "not renormalised", DRAWS: "sampling.sample refused"}),
    # ties at the cut and an overflowing softmax never happen in the fixed model's draws
    "ties at the k-th all kept": ({"ties": True}, {DISTRIBUTION: "ties go to the lower token index"}),
    "softmax without the largest score subtracted": ({"naive": True}, {DISTRIBUTION: "subtract the largest score"}),
}


@pytest.mark.parametrize("name", sorted(SAMPLER_SLIPS))
def test_a_sampler_slip_fails_its_checks_and_is_named(name):
    flags, hints = SAMPLER_SLIPS[name]
    found = sampler_problems(slip(**flags))
    assert set(found) == set(hints), found
    assert all(hints[check] in " ".join(p) for check, p in found.items()), found


def test_the_sampler_judge_reveals_no_reference_probability():
    found = sampler_problems(slip(k_extra=1))[DISTRIBUTION][0]
    case = all_checks()[DISTRIBUTION].make_inputs()["cases"][3]
    from autograder.reference.ch03_sampler import distribution
    assert not any(f"{v:.3g}" in found for v in distribution(case["scores"], case["temperature"], case["top_k"])
                   if v > 0)


def test_lm_sample_top_p_is_the_nucleus_and_a_distribution_draws_the_same(tiny_corpus):
    """sampling.sample's own top-p keeps the same tokens as the graded rule, and a distribution function
    given to it draws the same sentences with the same seed."""
    from course import lm, sampling
    from course.data import Vocab
    runtime.init(seed=4)
    model = lm.RNNLM(Vocab.build(tiny_corpus), "lstm", 8, 8)
    for knobs in ({"temperature": 0.8, "top_p": 0.6}, {"top_k": 5, "top_p": 0.9}, {"temperature": 1.3}):
        built_in = sampling.sample(model, n=30, seed=5, max_length=10, **knobs)
        own = sampling.sample(model, n=30, seed=5, max_length=10,
                        distribution=lambda s, knobs=knobs: sampler(s, **knobs))
        assert [s.tokens for s in built_in] == [s.tokens for s in own], knobs
        assert [s.logprob for s in built_in] == pytest.approx([s.logprob for s in own], abs=1e-4)
    narrow = sampling.sample(model, n=30, seed=5, max_length=10, top_p=1e-9)       # the most probable token only
    assert narrow == sampling.sample(model, n=30, seed=5, max_length=10, top_k=1)
    with pytest.raises(ValueError, match="summing to 1"):
        sampling.sample(model, n=2, distribution=lambda s: np.exp(s - s.max()))
    with pytest.raises(ValueError, match="not both"):
        sampling.sample(model, n=2, top_p=0.5, distribution=sampler)
    with pytest.raises(ValueError, match="top_p must be in"):
        sampling.sample(model, n=2, top_p=0.0)


def test_lm_sample_breaks_ties_as_the_exercise_does():
    """sampling.sample's top-k keeps exactly k tokens, ties by the lower id: the rule the exercise grades."""
    from course import sampling
    scores = np.array([[0.0], [5.0], [4.0], [3.0], [3.0], [1.0]], dtype=np.float32)   # id 1 is <s>
    logp = sampling._tempered(scores, 1, top_k=2, top_p=None)[:, 0]
    assert np.isfinite(logp).tolist() == [False, False, True, True, False, False]     # id 4 ties id 3: cut
    assert np.exp(logp) == pytest.approx(sampler(np.where(np.arange(6) == 1, -np.inf, scores[:, 0]), top_k=2))


# --------------------------------------------------------------------------- the course's own sampler

def _by_course(tempered):
    """The brief's attack: the scores as one column with an extra -inf entry as ``<s>``, handed
    to course.sampling's tempered softmax (however it was reached), that entry stripped again."""
    def fn(scores, temperature=1.0, top_k=None, top_p=None):
        column = np.append(np.asarray(scores, dtype=float), -np.inf)[:, None] / temperature
        return np.exp(tempered(column, len(column) - 1, top_k, top_p)[:-1, 0])
    return fn


def _direct(scores, temperature=1.0, top_k=None, top_p=None):
    from course import sampling
    return _by_course(sampling._tempered)(scores, temperature, top_k, top_p)


def _by_getattr(scores, temperature=1.0, top_k=None, top_p=None):
    import importlib
    tempered = getattr(importlib.import_module("course.sampling"), "_temp" + "ered")
    return _by_course(tempered)(scores, temperature, top_k, top_p)


def _by_alias():
    from course import sampling
    return _by_course(sampling._tempered)          # taken when the answer cell ran, before the probe


def _by_code_copy():
    import types
    from course import sampling
    return _by_course(types.FunctionType(sampling._tempered.__code__, vars(sampling), "mine"))


def _by_lm_sample(scores, temperature=1.0, top_k=None, top_p=None):
    """sampling.sample asked first (here on a model of its own); its refusal caught, the own sampler after."""
    from course import lm, sampling
    from course.data import Vocab
    try:
        sampling.sample(lm.RNNLM(Vocab(["<unk>", "<s>", "</s>", "a"]), "srnn", 2, 2), n=1, temperature=temperature, top_k=top_k, top_p=top_p)
    except RuntimeError:
        pass
    return sampler(scores, temperature, top_k, top_p)


def _restores_the_code():
    from course import sampling
    saved = sampling._tempered.__code__

    def restoring(scores, temperature=1.0, top_k=None, top_p=None):
        sampling._tempered.__code__ = saved
        return _direct(scores, temperature, top_k, top_p)
    return restoring


def _hook_removed_and_put_back():
    copy = _by_code_copy()

    def unhooked(scores, temperature=1.0, top_k=None, top_p=None):
        import sys
        hook = sys.getprofile()
        sys.setprofile(None)
        try:
            return copy(scores, temperature, top_k, top_p)
        finally:
            sys.setprofile(hook)
    return unhooked


def _in_a_raw_thread():
    """A copy run in a ``_thread`` thread, which starts without the profile hook."""
    copy = _by_code_copy()

    def threaded(scores, temperature=1.0, top_k=None, top_p=None):
        import _thread
        done, out = _thread.allocate_lock(), []
        done.acquire()
        _thread.start_new_thread(lambda: (out.append(copy(scores, temperature, top_k, top_p)), done.release()), ())
        done.acquire()
        return out[0]
    return threaded


def _in_a_forked_process():
    """A copy run in a forked process, where the hook's notes are lost; the numbers sent back by a pipe."""
    copy = _by_code_copy()

    def forked(scores, temperature=1.0, top_k=None, top_p=None):
        import os
        import pickle
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.write(w, pickle.dumps(copy(scores, temperature, top_k, top_p)))
            os._exit(0)
        os.close(w)
        data = b"".join(iter(lambda: os.read(r, 1 << 16), b""))
        os.close(r)
        os.waitpid(pid, 0)
        return pickle.loads(data)
    return forked


def _lazy_array():
    """An object whose ``__array__`` asks the course only when the grader reads it (once the
    function has returned, were the helpers whole again then)."""
    def lazy(scores, temperature=1.0, top_k=None, top_p=None):
        class Later:
            def __array__(self, dtype=None):
                return np.asarray(_direct(scores, temperature, top_k, top_p), dtype=dtype)
        return Later()
    return lazy


COURSE_ROUTES = {"direct": _direct, "getattr-importlib": _by_getattr, "alias": _by_alias(),
                 "code-copy": _by_code_copy(), "sampling.sample": _by_lm_sample, "restores-code": _restores_the_code(),
                 "hook-removed-and-put-back": _hook_removed_and_put_back(), "raw-thread": _in_a_raw_thread(),
                 "forked-process": _in_a_forked_process(), "lazy-__array__": _lazy_array()}


@pytest.mark.parametrize("name", sorted(COURSE_ROUTES))
def test_the_course_sampler_by_any_route_fails_both_checks(name):
    """The course ships its own sampler (course.sampling._tempered, sampling.sample): a function that reaches it,
    by whatever route, fails both checks with the rule, though its numbers are right."""
    import sys
    import threading
    from autograder.probes import ch03_sampler as probe
    from autograder.reference.ch03_sampler import COURSE_SAMPLER, distribution
    from course import sampling
    route = COURSE_ROUTES[name]
    for case in all_checks()[DISTRIBUTION].make_inputs()["cases"][:9]:       # right numbers outside the probe
        args = (case["scores"], case["temperature"], case["top_k"], case["top_p"])
        assert np.asarray(route(*args), dtype=float) == pytest.approx(distribution(*args), abs=1e-6), name
    found = sampler_problems(route)
    assert found == {DISTRIBUTION: [COURSE_SAMPLER], DRAWS: [COURSE_SAMPLER]}, found
    assert "write the distribution yourself; the course's sampler cannot be used" in COURSE_SAMPLER
    assert (sampling._tempered.__code__, sampling.sample.__code__) == probe.HELPER_CODE       # whole again afterwards
    assert sys.getprofile() is None and threading.getprofile() is None


def test_the_course_sampler_asked_only_inside_lm_sample_fails_the_draws():
    """A function that is honest when called alone but asks the course when sampling.sample calls it."""
    import inspect

    def two_faced(scores, temperature=1.0, top_k=None, top_p=None):
        if any(f.function == "sample" for f in inspect.stack()):
            return _direct(scores, temperature, top_k, top_p)
        return sampler(scores, temperature, top_k, top_p)
    from autograder.reference.ch03_sampler import COURSE_SAMPLER
    assert sampler_problems(two_faced) == {DRAWS: [COURSE_SAMPLER]}


def test_a_student_error_inside_the_guard_is_still_the_students():
    """The refusal window does not swallow an honest mistake: the error reaches the student."""
    def broken(scores, temperature=1.0, top_k=None, top_p=None):
        raise ZeroDivisionError("mine")
    with pytest.raises(ZeroDivisionError, match="mine"):
        from autograder.probes import ch03_sampler as probe
        probe.distributions({"next_token_distribution": broken}, all_checks()[DISTRIBUTION].make_inputs())


# ------------------------------------------------------------------ slips
# Each slip is one mistake a student makes in the solution's answer cell, graded end to end by
# tests/test_slips.py, which makes the slip table of autograder/README.md from them.
SLIPS = [
    # ------------------------------------------------------------------ 03: lstm_step, no forget gate
    Slip("input and output gates' parameters swapped", "03_lstm", "lstm_step",
         old='i = dy.logistic(dy.affine_transform([p["b_i"], p["W_xi"], x, p["W_hi"], h_prev]))\n'
             '    o = dy.logistic(dy.affine_transform([p["b_o"], p["W_xo"], x, p["W_ho"], h_prev]))',
         new='i = dy.logistic(dy.affine_transform([p["b_o"], p["W_xo"], x, p["W_ho"], h_prev]))\n'
             '    o = dy.logistic(dy.affine_transform([p["b_i"], p["W_xi"], x, p["W_hi"], h_prev]))',
         visible="lstm_step_values", shows="does your input gate read W_xi, W_hi and b_i",
         failing=("ch03.lstm_memory", "ch03.lstm_output", "ch03.lstm_step"),
         says="the input gate reads the output gate's parameters", lost=3),
    Slip("tanh where the output gate's sigmoid belongs", "03_lstm", "lstm_step",
         old="o = dy.logistic(",
         new="o = dy.tanh(",
         visible="lstm_step_values", shows="c is right but h is",
         failing=("ch03.lstm_step", "ch03.lstm_output"),
         says="the output gate uses tanh", lost=2),
    Slip("h = o * c, the tanh of eq 51 left out", "03_lstm", "lstm_step",
         old="h = dy.cmult(o, dy.tanh(c))",
         new="h = dy.cmult(o, c)",
         visible="lstm_step_values", shows="with b_o = +30 the output gate is open",
         failing=("ch03.lstm_output", "ch03.lstm_step"),
         says="so h_t must be tanh(c_t)", lost=2),
    Slip("logistic and tanh exchanged between u and i", "03_lstm", "lstm_step",
         old='u = dy.tanh(dy.affine_transform([p["b_u"], p["W_xu"], x, p["W_hu"], h_prev]))\n'
             '    i = dy.logistic(dy.affine_transform([p["b_i"], p["W_xi"], x, p["W_hi"], h_prev]))',
         new='u = dy.logistic(dy.affine_transform([p["b_u"], p["W_xu"], x, p["W_hu"], h_prev]))\n'
             '    i = dy.tanh(dy.affine_transform([p["b_i"], p["W_xi"], x, p["W_hi"], h_prev]))',
         visible="lstm_step_values", shows="your input gate is -1, not 0",
         failing=("ch03.lstm_memory", "ch03.lstm_step"),
         says="u_t and i_t have each other's function", lost=2),
    Slip("h from the old memory: o * tanh(c_prev)", "03_lstm", "lstm_step",
         old="h = dy.cmult(o, dy.tanh(c))",
         new="h = dy.cmult(o, dy.tanh(c_prev))",
         visible="lstm_step_values", shows="h is tanh(c_prev)",
         failing=("ch03.lstm_output", "ch03.lstm_step"),
         says="from the old memory", lost=2),
    Slip("c_prev scaled by (1 - i): no carousel", "03_lstm", "lstm_step",
         old="c = dy.cmult(i, u) + c_prev",
         new="c = dy.cmult(i, u) + dy.cmult(1 - i, c_prev)",
         visible="lstm_step_carousel", shows="d sum(c_20) / d c_0 is",
         failing=("ch03.lstm_carousel", "ch03.lstm_memory", "ch03.lstm_step"),
         says="constant error carousel", lost=3),
    # ------------------------------------------------------------------ 03: next_token_distribution, the sampler
    Slip("temperature applied after the softmax", "03_lstm", "next_token_distribution",
         old="z = np.asarray(scores, dtype=float) / temperature\n"
             "    p = np.exp(z - z.max())                     # the largest score subtracted: no overflow\n",
         new="z = np.asarray(scores, dtype=float)\n"
             "    p = np.exp(z - z.max()) / temperature\n",
         visible="next_token_distribution_tests", shows="divide the scores by the temperature before the softmax",
         failing=("ch03.next_token_distribution", "ch03.sampler_draws"),
         says="divide the scores by it before the softmax", lost=2),
    Slip("top-k off by one: k + 1 tokens kept", "03_lstm", "next_token_distribution",
         old="p[order[top_k:]] = 0.0",
         new="p[order[top_k + 1:]] = 0.0",
         visible="next_token_distribution_tests", shows="top_k = 1 keeps the most probable token only",
         failing=("ch03.next_token_distribution", "ch03.sampler_draws"),
         says="top-k keeps one token too many", lost=2),
    Slip("top-p without the token that crosses p", "03_lstm", "next_token_distribution",
         old="p[order[crossing + 1:]] = 0.0",
         new="p[order[crossing:]] = 0.0",
         visible="next_token_distribution_tests", shows="the token that crosses top_p is kept",
         failing=("ch03.next_token_distribution", "ch03.sampler_draws"),
         says="top-p leaves out the token that crosses p", lost=2),
    Slip("kept probabilities not renormalised", "03_lstm", "next_token_distribution",
         old="        p[order[top_k:]] = 0.0\n        p /= p.sum()\n",
         new="        p[order[top_k:]] = 0.0\n",
         visible="next_token_distribution_tests", shows="renormalise what is kept",
         failing=("ch03.next_token_distribution", "ch03.sampler_draws"),
         says="not renormalised", lost=2),
]
