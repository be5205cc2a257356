"""Chapter 11's checks (causal self-attention): the references agree, the solution passes, each slip
fails exactly the checks of the part it breaks with a message that names it, the traced program
replays at a fresh point as the function itself computes there. The real grader on chapter 11's
class: tests/test_grader_ch11.py (this file also runs in the DyNet 2.2 suite, which holds no grader)."""
import json
import subprocess
import sys

import numpy as np
import pytest

from course import runtime

dy = runtime.dynet()

from autograder import grader, probes  # noqa: E402
from autograder.probes import trace  # noqa: E402
from autograder.reference import ch11_attention as ch11  # noqa: E402
from autograder.reference import grading  # noqa: E402
from autograder.reference.cells import causal_attention as reference_attention  # noqa: E402
from autograder.samples import make_samples  # noqa: E402
from tests.conftest import ROOT  # noqa: E402
from tests.slips import Slip  # noqa: E402

CHECKS = {c.name: c for c in ch11.CHECKS}
ALL = set(CHECKS)


def problems(fn, name):
    return grading.run_check(CHECKS[name], {"causal_attention": fn})


def attention(p, X, heads, mask_k=-1, scale=True, axis=0, positions=True, project=True):
    """The solution's attention with one part changed (a slip)."""
    d = X.dim()[0][0]
    T = X.dim()[0][1] if len(X.dim()[0]) > 1 else 1
    d_k = d // heads
    if positions:
        X = X + dy.select_cols(p["P"], list(range(T)))
    later = None if mask_k is None else np.tril(np.full((T, T), -1e9), k=mask_k)
    outputs = []
    for i in range(heads):
        q, k, v = (dy.pick_range(p[W] * X, i * d_k, (i + 1) * d_k) for W in ("W_q", "W_k", "W_v"))
        scores = dy.transpose(k) * q
        if scale:
            scores = scores / np.sqrt(d_k)
        if mask_k is not None:
            scores = scores + dy.inputTensor(later)
        outputs.append(v * dy.softmax(scores, d=axis))
    H = dy.concatenate(outputs, d=0)
    return p["W_o"] * H if project else H


def slip(**changed):
    return lambda p, X, heads: attention(p, X, heads, **changed)


def sample_function(source: str):
    namespace = {}
    exec(source, namespace)
    return namespace["causal_attention"]


def test_the_checks_are_registered_and_the_two_references_agree():
    assert set(grading.chapter_checks("ch11")) == ALL
    for c in ch11.CHECKS:
        inputs = c.make_inputs()
        got = probes.run_sequence(reference_attention, inputs)["outputs"]
        assert np.abs(got - ch11.reference(inputs)).max() < 1e-5, c.name


@pytest.mark.parametrize("fn", [reference_attention, slip(), sample_function(make_samples.ATTENTION_RIGHT)],
                         ids=["reference", "solution's layout", "scores as [t, j], softmax over rows"])
def test_correct_attention_passes_every_check(fn):
    for name in ALL:
        assert problems(fn, name) == [], name


MISTAKES = {   # slip -> (the function, the checks it fails, a phrase of the first message)
    "next word visible": (slip(mask_k=-2), ALL - {"ch11.attention_gradients", "ch11.attention_lengths"},
                          "position t sees position t + 1"),
    "itself hidden": (slip(mask_k=0), ALL - {"ch11.attention_gradients", "ch11.attention_lengths"},
                      "does not see itself"),
    "no mask": (slip(mask_k=None), ALL - {"ch11.attention_gradients", "ch11.attention_lengths"},
                "sees the later positions"),
    "no scaling": (slip(scale=False), {"ch11.attention_one_head", "ch11.attention_heads", "ch11.attention_long"},
                   "not scaled"),
    "softmax over queries": (slip(axis=1), ALL - {"ch11.attention_gradients", "ch11.attention_lengths"},
                             "wrong axis"),
    "no positions": (slip(positions=False), ALL - {"ch11.attention_gradients", "ch11.attention_causal"},
                     "positions are not added"),
    "no W_o": (slip(project=False), ALL - {"ch11.attention_gradients", "ch11.attention_causal"},
               "not multiplied by W_o"),
}


@pytest.mark.parametrize("name", sorted(MISTAKES))
def test_a_slip_fails_the_checks_of_its_part_and_is_named(name):
    fn, failing, says = MISTAKES[name]
    found = {c: problems(fn, c) for c in ALL}
    assert {c for c, p in found.items() if p} == failing, found
    for c in failing:
        assert says in found[c][0], (c, found[c])


def test_sqrt_d_for_every_head_fails_only_where_there_are_several_heads():
    def by_width(p, X, heads):
        return _scaled_by(p, X, heads, np.sqrt(X.dim()[0][0]))
    found = {c: problems(by_width, c) for c in ALL}
    assert {c for c, p in found.items() if p} == {"ch11.attention_heads", "ch11.attention_long"}, found
    assert "sqrt(d), the whole width" in found["ch11.attention_heads"][0]


def _scaled_by(p, X, heads, by):
    d = X.dim()[0][0]
    T = X.dim()[0][1] if len(X.dim()[0]) > 1 else 1
    d_k = d // heads
    X = X + dy.select_cols(p["P"], list(range(T)))
    later = dy.inputTensor(np.tril(np.full((T, T), -1e9), k=-1))
    outputs = []
    for i in range(heads):
        q, k, v = (dy.pick_range(p[W] * X, i * d_k, (i + 1) * d_k) for W in ("W_q", "W_k", "W_v"))
        outputs.append(v * dy.softmax(dy.transpose(k) * q / by + later, d=0))
    return p["W_o"] * dy.concatenate(outputs, d=0)


def test_an_unknown_mistake_says_where_it_starts_and_a_wrong_shape_says_what_is_expected():
    def tanh_added(p, X, heads):
        return dy.tanh(reference_attention(p, X, heads))
    said = problems(tanh_added, "ch11.attention_one_head")
    assert len(said) == 1 and "differs from position 1 on" in said[0], said
    with pytest.raises(TypeError, match=r"must return \(\(d, T\), B\)"):
        problems(lambda p, X, heads: dy.transpose(reference_attention(p, X, heads)), "ch11.attention_heads")


def test_the_causal_check_judges_causality_alone():
    """A function whose values are wrong but that reads no later word passes the causal check (the
    value checks say what is wrong); one that reads the next word fails it, whatever its values."""
    assert problems(slip(scale=False), "ch11.attention_causal") == []
    assert problems(slip(positions=False, mask_k=-2), "ch11.attention_causal") != []


def test_values_computed_in_numpy_are_right_but_fail_the_gradients():
    def numpy_inside(p, X, heads):
        inputs = {"params": {k: v.npvalue() for k, v in p.items()}, "xs": X.npvalue()[None], "heads": heads}
        return dy.inputTensor(ch11.reference(inputs), batched=True)
    assert problems(numpy_inside, "ch11.attention_heads") == []          # in-process, at the same point
    said = problems(numpy_inside, "ch11.attention_gradients")
    assert said and "computed outside DyNet" in said[0], said


# Tracing replaces DyNet's functions in the process that traces (as the sandbox does): in a process
# of its own, so that the other tests keep plain DyNet.
TRACED = """
import json
from course import runtime
runtime.init(seed=1)
import _dynet, dynet as dy
import numpy as np
from autograder import grader, probes
from autograder.probes import trace
from autograder.reference import ch11_attention as ch11
from autograder.reference.cells import causal_attention
trace.install(dy, _dynet)
checks = {c.name: c for c in ch11.CHECKS}
found = {}

inputs = checks["ch11.attention_long"].make_inputs()
fresh = grader.fresh_point(inputs, b"k" * 32, "ch11.attention_long")
program = json.loads(json.dumps(trace.trace_sequence({"causal_attention": causal_attention}, inputs)))
replayed = trace.replay(program, fresh)
direct = ch11.reference(fresh)
found["replayed vs reference at the fresh point"] = float(np.abs(replayed["outputs"] - direct).max())
found["moved"] = float(np.abs(fresh["xs"] - inputs["xs"]).max())
found["judged"] = ch11.judge_values(replayed, fresh) + ch11.judge_gradients(replayed, fresh)


def constants(p, X, heads):      # the right numbers at the point it ran at, as constants
    return dy.inputTensor(causal_attention(p, X, heads).npvalue(), batched=True) + X * 0.0


found["constants"] = ch11.judge_values(trace.replay(trace.trace_sequence({"causal_attention": constants}, inputs),
                                                    fresh), fresh)
try:
    trace.replay(program, {**inputs, "sequence": False})
    found["as a step"] = "replayed"
except ValueError as err:
    found["as a step"] = str(err)


def with_builder(p, X, heads):
    dy.VanillaLSTMBuilder(1, 8, 8, dy.ParameterCollection())
    return causal_attention(p, X, heads)


try:
    trace.trace_sequence({"causal_attention": with_builder}, inputs)
    found["builder"] = "traced"
except trace.TraceError as err:
    found["builder"] = str(err)
try:
    trace.trace_sequence({"causal_attention": lambda p, X, heads: dy.transpose(causal_attention(p, X, heads))},
                         inputs)
    found["transposed"] = "traced"
except TypeError as err:
    found["transposed"] = str(err)


class Weight:                     # what CausalAttention reads of a parameter: .expr(True)
    def __init__(self, e):
        self.e = e

    def expr(self, *_):
        return self.e


def by_course_layer(p, X, heads):
    # course.layers.CausalAttention run on the grader's weights, its tanh undone, positions and W_o added
    from course.layers import CausalAttention
    layer = CausalAttention.__new__(CausalAttention)
    layer.d, layer.heads, layer.positions, layer.record = 8, heads, 0, False
    layer.W = {"Wq": Weight(p["W_q"]), "Wk": Weight(p["W_k"]), "Wv": Weight(p["W_v"])}
    T = X.dim()[0][1]
    Xp = X + dy.select_cols(p["P"], list(range(T)))
    _, hs = getattr(layer, "r" + "un")((), [dy.pick(Xp, t, 1) for t in range(T)])
    return p["W_o"] * dy.atanh(dy.concatenate_cols(hs))


try:
    trace.trace_sequence({"causal_attention": by_course_layer}, inputs)
    found["course layer"] = "traced"
except trace.TraceError as err:
    found["course layer"] = str(err)
print(json.dumps(found))
"""


@pytest.fixture(scope="module")
def traced():
    done = subprocess.run([sys.executable, "-c", TRACED], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_traced_program_replays_at_a_fresh_point_as_the_function_computes_there(traced):
    """What leaves the sandbox is a program; the grader runs it at inputs the function never saw.
    Numbers computed at the point it ran at are constants there, and wrong at the fresh point."""
    assert traced["moved"] > 1e-3
    assert traced["replayed vs reference at the fresh point"] < 1e-4 and traced["judged"] == []
    assert traced["constants"] and "differs" in traced["constants"][0], traced["constants"]


def test_a_program_is_a_sequence_only_when_the_graders_inputs_say_so(traced):
    assert traced["as a step"] == "the program's outputs do not match the steps"


def test_the_course_attention_layer_is_refused_while_tracing(traced):
    """course.layers.CausalAttention (shipped for lecture 11's models) computes most of the answer:
    reached by any route while the student's function is traced, it refuses, and the trace fails
    with the rule."""
    assert "reached course.layers.CausalAttention" in traced["course layer"], traced["course layer"]


def test_builders_are_refused_and_a_wrong_shape_is_named_while_tracing(traced):
    assert "is not an operation a graded step function may use" in traced["builder"]
    assert "must return ((d, T), B)" in traced["transposed"]


# ------------------------------------------------------------------ slips
# Each slip is one mistake a student makes in the solution's answer cell, graded end to end by
# tests/test_slips.py, which makes the slip table of autograder/README.md from them.
SLIPS = [
    # ------------------------------------------------------------------ 11: causal_attention
    Slip("mask off by one: the next word visible", "11_attention", "causal_attention",
         old="np.tril(np.full((T, T), -1e9), k=-1)",
         new="np.tril(np.full((T, T), -1e9), k=-2)",
         visible="attention_causal", shows="changing word 5 changed the output at position(s) [4]",
         failing=("ch11.attention_one_head", "ch11.attention_heads", "ch11.attention_causal", "ch11.attention_long"),
         says="position t sees position t + 1", lost=3.5),
    Slip("mask off by one: the word itself hidden", "11_attention", "causal_attention",
         old="np.tril(np.full((T, T), -1e9), k=-1)",
         new="np.tril(np.full((T, T), -1e9), k=0)",
         visible="attention_values", shows="with one head, H of the first sentence is",
         failing=("ch11.attention_one_head", "ch11.attention_heads", "ch11.attention_causal", "ch11.attention_long"),
         says="position t does not see itself", lost=3.5),
    Slip("scores not scaled", "11_attention", "causal_attention",
         old="dy.transpose(k) * q / np.sqrt(d_k) +",
         new="dy.transpose(k) * q +",
         visible="attention_values", shows="with one head, H of the first sentence is",
         failing=("ch11.attention_one_head", "ch11.attention_heads", "ch11.attention_long"),
         says="the scores are not scaled", lost=2),
    Slip("scores scaled by sqrt(d), not each head's sqrt(d_k)", "11_attention", "causal_attention",
         old="q / np.sqrt(d_k)",
         new="q / np.sqrt(d)",
         visible="attention_values", shows="with two heads, H of the first sentence is",
         failing=("ch11.attention_heads", "ch11.attention_long"),
         says="divided by sqrt(d), the whole width", lost=1),
    Slip("softmax over the wrong axis (the queries)", "11_attention", "causal_attention",
         old="dy.softmax(scores, d=0)",
         new="dy.softmax(scores, d=1)",
         visible="attention_values", shows="with one head, H of the first sentence is",
         failing=("ch11.attention_one_head", "ch11.attention_heads", "ch11.attention_causal", "ch11.attention_long"),
         says="the softmax runs over the wrong axis", lost=3.5),
    Slip("no causal mask: future positions visible", "11_attention", "causal_attention",
         old="scores = dy.transpose(k) * q / np.sqrt(d_k) + dy.inputTensor(later)",
         new="scores = dy.transpose(k) * q / np.sqrt(d_k)",
         visible="attention_causal", shows="changing word 5 changed the output at position(s) [1, 2, 3, 4]",
         failing=("ch11.attention_causal", "ch11.attention_one_head", "ch11.attention_heads", "ch11.attention_long"),
         says="position t sees the later positions", lost=3.5),
    Slip("positions not added", "11_attention", "causal_attention",
         old='X = X + dy.select_cols(p["P"], list(range(T)))',
         new="X = X",
         visible="attention_values", shows="with one head, H of the first sentence is",
         failing=("ch11.attention_one_head", "ch11.attention_heads", "ch11.attention_lengths", "ch11.attention_long"),
         says="the positions are not added", lost=2.5),
]
