"""Chapter 04's checks pass the reference and fail plausible wrong answers: each
fails exactly the checks of the parts it breaks, with a message naming the mistake.

The wrong answers are the ones the sample class of the autograder holds (wrong
gate order, forget bias missing, NumPy instead of DyNet) and a few more.
"""
import numpy as np
import pytest

from autograder import probes
from autograder.probes import from_arrays, to_arrays
from autograder.reference import ch04_forget_gate as ch04
from autograder.reference import grading
from autograder.reference.cells import forget_bias_init, lstm_step as reference_lstm_step
from course import runtime
from tests.slips import Slip

dy = runtime.dynet()
CHECKS = {c.name: c for c in ch04.CHECKS}


def problems(name, function):
    check = CHECKS[name]
    return grading.run_check(check, {check.functions[0]: function})


def gate(p, g, x, h):
    return dy.logistic(dy.affine_transform([p["b_" + g], p["W_x" + g], x, p["W_h" + g], h]))


def content(p, x, h):
    return dy.tanh(dy.affine_transform([p["b_u"], p["W_xu"], x, p["W_hu"], h]))


def lstm_written_out(p, x, state):
    """A correct answer written independently of the reference (as a student would)."""
    h_prev, c_prev = state
    i, f, o = gate(p, "i", x, h_prev), gate(p, "f", x, h_prev), gate(p, "o", x, h_prev)
    c = dy.cmult(f, c_prev) + dy.cmult(i, content(p, x, h_prev))
    return (dy.cmult(o, dy.tanh(c)), c)


def written(order="ifo", forget_reads="c", squash=True):
    """lstm_written_out with one part changed: ``order`` are the parameters the gates i, f, o
    read; ``forget_reads``: what f multiplies; ``squash``: tanh(c) in h."""
    def step(p, x, state):
        h_prev, c_prev = state
        i, f, o = (gate(p, g, x, h_prev) for g in order)
        c = dy.cmult(i, content(p, x, h_prev)) + dy.cmult(f, c_prev if forget_reads == "c" else h_prev)
        return (dy.cmult(o, dy.tanh(c) if squash else c), c)
    return step


lstm_input_forget_swapped = written(order="fio")
lstm_input_output_swapped = written(order="ofi")
lstm_forget_reads_h = written(forget_reads="h")            # h where c belongs
lstm_output_without_tanh = written(squash=False)


def lstm_without_forget_gate(p, x, state):
    """Chapter 03's cell (eq 50) handed in for chapter 04."""
    h_prev, c_prev = state
    c = dy.cmult(gate(p, "i", x, h_prev), content(p, x, h_prev)) + c_prev
    return (dy.cmult(gate(p, "o", x, h_prev), dy.tanh(c)), c)


def lstm_in_numpy(p, x, state):
    """Right values, computed in NumPy and fed back as constants: no gradients reach p."""
    sig = lambda a: 1 / (1 + np.exp(-a))
    P = {k: v.npvalue() for k, v in p.items()}
    X, H, C = (e.npvalue().reshape(e.dim()[0][0], -1) for e in (x, *state))
    pre = {g: P["W_x" + g] @ X + P["W_h" + g] @ H + P["b_" + g][:, None] for g in "uifo"}
    c = sig(pre["i"]) * np.tanh(pre["u"]) + sig(pre["f"]) * C
    h = sig(pre["o"]) * np.tanh(c)
    return (dy.inputTensor(h, batched=True), dy.inputTensor(c, batched=True))


STEP, OUTPUT, GRADIENTS, FORGET, BUILDER = (f"ch04.lstm_{k}" for k in
                                            ("step", "output", "gradients", "forget_gate", "builder"))
STEP_CHECKS = (STEP, OUTPUT, GRADIENTS, FORGET, BUILDER)
KEEP = "with the forget gate open (b_f = +30, f_t = 1) and the input gate shut"
ERASE = "with the forget gate shut (b_f = -30, f_t = 0) c_t must not depend on c_{t-1}"
SWAP_IF = "the input gate reads the forget gate's parameters"
SWAP_IO = "the input gate reads the output gate's parameters"
# mistake -> {each check it fails: a phrase of that check's message}
MISTAKES = {
    lstm_input_forget_swapped: {STEP: SWAP_IF, FORGET: KEEP, BUILDER: SWAP_IF},
    lstm_input_output_swapped: {STEP: SWAP_IO, OUTPUT: "is o_t computed from W_xo", FORGET: KEEP,
                                BUILDER: SWAP_IO},
    lstm_without_forget_gate: {STEP: "chapter 03's eq 50", FORGET: ERASE, BUILDER: "chapter 03's eq 50"},
    lstm_forget_reads_h: {STEP: "f_t multiplies h_{t-1}", FORGET: "f_t multiplies h_{t-1}",
                          BUILDER: "f_t multiplies h_{t-1}"},
    lstm_output_without_tanh: {STEP: "h_t differs from step 1", OUTPUT: "so h_t must be tanh(c_t)",
                               BUILDER: "differs from dy.VanillaLSTMBuilder's"},
    lstm_in_numpy: {GRADIENTS: "outside DyNet"},
}


def failing(step):
    return {name: found for name in STEP_CHECKS if (found := problems(name, step))}


def test_reference_and_an_independent_answer_pass():
    assert failing(reference_lstm_step) == {}
    assert failing(lstm_written_out) == {}


@pytest.mark.parametrize("wrong", list(MISTAKES), ids=["i-f swapped", "i-o swapped", "no forget gate",
                                                        "f reads h", "no tanh", "numpy"])
def test_a_mistake_fails_the_checks_of_its_parts_and_is_named(wrong):
    found = failing(wrong)
    assert set(found) == set(MISTAKES[wrong]), found
    assert all(MISTAKES[wrong][check] in " ".join(p) for check, p in found.items()), found


def test_builder_reference_agrees_with_the_reference_cell():
    """Two independent references (DyNet's builder, the course's cell) compute the same."""
    inputs = CHECKS["ch04.lstm_builder"].make_inputs()
    assert probes.compare(ch04.run_vanilla_lstm_builder(inputs), probes.run_step(reference_lstm_step, inputs)) == []


def init_correct(name, shape, forget_bias=1.0):
    return np.full(shape, forget_bias) if name == "b_f" else None


def init_zero_biases(name, shape, forget_bias=1.0):
    """Also right: zero for the other biases is what the default gives them."""
    if name == "b_f":
        return [forget_bias] * shape[0]
    return np.zeros(shape) if len(shape) == 1 else None


def test_reference_init_and_equivalent_answers_pass():
    reference = forget_bias_init(1.0)

    def reference_with_argument(name, shape, forget_bias=1.0):
        return forget_bias_init(forget_bias)(name, shape)

    assert reference("b_f", (4,)).tolist() == [1.0] * 4
    assert problems("ch04.lstm_init", reference_with_argument) == []
    assert problems("ch04.lstm_init", init_correct) == []
    assert problems("ch04.lstm_init", init_zero_biases) == []


@pytest.mark.parametrize("wrong, expected", [
    (lambda name, shape, forget_bias=1.0: None, "returned None for b_f"),
    (lambda name, shape, forget_bias=1.0: np.zeros(shape) if name == "b_f" else None, "leaves the forget bias"),
    (lambda name, shape, forget_bias=1.0: np.ones(shape) if name == "b_f" else None, "forget_bias argument"),
    (lambda name, shape, forget_bias=1.0: np.full(shape, forget_bias) if name == "b_i" else None, "None for b_f"),
    (lambda name, shape, forget_bias=1.0: np.full(shape, forget_bias) if name.startswith("b_") else None,
     "returned a value for b_i, b_o, b_u"),
    (lambda name, shape, forget_bias=1.0: np.full(shape, forget_bias) if name == "b_f" else np.zeros(shape),
     "returned a value for W_hf"),
    (lambda name, shape, forget_bias=1.0: forget_bias if name == "b_f" else None, "returned shape ()"),
])
def test_wrong_inits_fail(wrong, expected):
    found = problems("ch04.lstm_init", wrong)
    assert found and expected in "; ".join(found), found


def test_init_without_forget_bias_argument_fails_with_a_reason():
    def no_argument(name, shape):
        return np.ones(shape) if name == "b_f" else None
    with pytest.raises(TypeError, match="forget_bias"):
        problems("ch04.lstm_init", no_argument)


@pytest.mark.parametrize("answer, passes", [(init_correct, True), (lambda n, s, forget_bias=1.0: None, False)])
def test_init_numbers_survive_the_sandbox_file_format(answer, passes, tmp_path):
    """The probe's numbers go through an .npz file between sandbox and grader."""
    check = CHECKS["ch04.lstm_init"]
    inputs = check.make_inputs()
    numbers = probes.lookup(check.probe)({"lstm_init": answer}, inputs)
    np.savez(tmp_path / "r.npz", **to_arrays(numbers))
    with np.load(tmp_path / "r.npz", allow_pickle=False) as f:
        back = from_arrays({k: f[k] for k in f.files})
    assert (check.judge(back, inputs) == []) == passes


def test_checks_are_registered_and_run_from_a_notebook():
    assert set(STEP_CHECKS) | {"ch04.lstm_init"} <= set(grading.all_checks())
    grading.check("ch04.lstm_step", lstm_step=reference_lstm_step, points=1)
    grading.check("ch04.lstm_init", lstm_init=init_correct)
    with pytest.raises(AssertionError, match="ch04.lstm_init"):
        grading.check("ch04.lstm_init", lstm_init=lambda name, shape, forget_bias=1.0: None)


# ------------------------------------------------------------------ slips
# Each slip is one mistake a student makes in the solution's answer cell, graded end to end by
# tests/test_slips.py, which makes the slip table of autograder/README.md from them.
SLIPS = [
    # ------------------------------------------------------------------ 04: lstm_step, lstm_init
    Slip("input and forget gates swapped", "04_forget_gate", "lstm_step",
         old='i, f, o = gate("i"), gate("f"), gate("o")',
         new='f, i, o = gate("i"), gate("f"), gate("o")',
         visible="lstm_step_forget_gate", shows="with f = 1 and i = 0 the memory cell must stay as it was",
         failing=("ch04.lstm_forget_gate", "ch04.lstm_step", "ch04.lstm_builder"),
         says="do i_t and f_t read their own parameters", lost=3),
    Slip("h where c belongs: f * h_prev", "04_forget_gate", "lstm_step",
         old="dy.cmult(f, c_prev)",
         new="dy.cmult(f, h_prev)",
         visible="lstm_step_forget_gate", shows="with f = 1 and i = 0 the memory cell must stay as it was",
         failing=("ch04.lstm_forget_gate", "ch04.lstm_step", "ch04.lstm_builder"),
         says="f_t multiplies h_{t-1}", lost=3),
    Slip("forget_bias argument ignored", "04_forget_gate", "lstm_init",
         old="np.full(shape, float(forget_bias))",
         new="np.full(shape, 1.0)",
         visible="lstm_init_visible", shows="use the forget_bias argument",
         failing=("ch04.lstm_init",),
         says="is the forget_bias argument used?", lost=2),
]
