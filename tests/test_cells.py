"""The reference cells, verified three ways (issue: every recurrent cell of the course).

1. each DyNet step against the independent NumPy implementation (tests/numpy_cells.py);
2. DyNet's gradients against central finite differences of the NumPy version;
3. the LSTM and GRU against DyNet's own VanillaLSTMBuilder / GRUBuilder;
plus parameter counts (RAN paper), the layout conventions, the forget-bias
initialisation and the release rule (no graded cell in ``course/``).
"""
import re
import sys

import numpy as np
import pytest

if "dynet" not in sys.modules:          # tests/conftest.py normally configures DyNet first
    import dynet_config
    dynet_config.set(random_seed=42, mem=512, autobatch=0)
import dynet as dy  # noqa: E402

from tests import numpy_cells  # noqa: E402
from autograder.reference import cells as ref  # noqa: E402
from autograder.reference import grading  # noqa: E402
from tests.conftest import ROOT  # noqa: E402

D_IN, D_H = 3, 4            # different sizes, so a transposed matrix cannot pass
STEPS = 5
TOL_VALUE = 1e-5
TOL_GRAD = 1e-3
NAMES = sorted(ref.CELLS)


# ----------------------------------------------------------------------- helpers
def random_params(cell, rng, d_in=D_IN, d_h=D_H, scale=0.6):
    """Random non-zero, non-symmetric weights and biases, rounded to float32
    (the values DyNet will hold), returned as float64 arrays."""
    return {name: rng.normal(0.0, scale, size=shape).astype(np.float32).astype(np.float64)
            for name, shape in cell.shapes(d_in, d_h).items()}


def to_dynet(params):
    pc = dy.ParameterCollection()
    handles = {}
    for name, value in params.items():
        handles[name] = pc.add_parameters(value.shape)
        handles[name].set_value(value)
    return pc, handles


def batch_input(rows):
    """(B, d) batch-first NumPy -> DyNet ((d,), B) expression (B = 1 is unbatched)."""
    rows = np.asarray(rows, dtype=float)
    if rows.shape[0] == 1:
        return dy.inputTensor(rows[0])
    return dy.inputTensor(rows.T, batched=True)


def batch_value(expr, batch):
    """DyNet ((d,), B) value -> (B, d) NumPy."""
    value = np.asarray(expr.npvalue(), dtype=float)
    return value.reshape(-1, batch).T if batch > 1 else value.reshape(1, -1)


def random_sequence(cell, rng, batch, steps=STEPS):
    xs = rng.normal(0.0, 1.0, size=(steps, batch, D_IN)).astype(np.float32).astype(np.float64)
    state0 = tuple(rng.uniform(-0.8, 0.8, size=(batch, D_H)).astype(np.float32).astype(np.float64)
                   for _ in range(cell.n_state))
    return xs, state0


def dynet_run(cell, handles, xs, state0):
    """Run the reference step in one graph; list of per-step state expressions."""
    dy.renew_cg()
    p = {name: h.expr(True) for name, h in handles.items()}   # expr() alone is a constant
    state = tuple(batch_input(s) for s in state0)
    states = []
    for x in xs:
        state = cell.step(p, batch_input(x), state)
        assert isinstance(state, tuple) and len(state) == cell.n_state, (
            f"{cell.name}: step must return a tuple of {cell.n_state} expressions")
        states.append(state)
    return states


# ------------------------------------------------------------ 1. DyNet vs NumPy
def test_every_cell_has_a_numpy_reference():
    assert set(NAMES) == set(numpy_cells.NUMPY_STEPS)


@pytest.mark.parametrize("batch", [1, 7])
@pytest.mark.parametrize("name", NAMES)
def test_step_matches_numpy(name, batch):
    cell = ref.CELLS[name]
    rng = np.random.default_rng(100 + 7 * NAMES.index(name) + batch)
    params = random_params(cell, rng)
    xs, state0 = random_sequence(cell, rng, batch)
    _, handles = to_dynet(params)
    got = dynet_run(cell, handles, xs, state0)
    expected = numpy_cells.run(name, params, xs, state0)
    for t, (dy_state, (np_state, _)) in enumerate(zip(got, expected)):
        for k, (e, want) in enumerate(zip(dy_state, np_state)):
            diff = np.abs(batch_value(e, batch) - want).max()
            assert diff <= TOL_VALUE, f"{name}: state[{k}] at step {t} differs by {diff:.2e}"
    # the sequence really moved away from the initial state (non-trivial check)
    assert np.abs(expected[-1][0][0] - state0[0]).max() > 1e-2


# ------------------------------------------------ 2. gradients vs finite differences
def test_parameter_expr_without_argument_is_a_constant():
    """dyNET38 2.1 trap the gradient check relies on: ``P.expr()`` returns a constant
    (no gradient, never trained); ``P.expr(True)`` and ``dy.parameter(P)`` are trainable."""
    pc = dy.ParameterCollection()
    grads = {}
    for how in ("expr()", "expr(True)"):
        P = pc.add_parameters((2, 3))
        dy.renew_cg()
        e = P.expr() if how == "expr()" else P.expr(True)
        loss = dy.sum_elems(dy.tanh(e * dy.inputTensor(np.array([0.5, -1.0, 2.0]))))
        loss.value()
        loss.backward()
        grads[how] = np.abs(P.grad_as_array()).max()
    assert grads["expr()"] == 0.0 and grads["expr(True)"] > 0.0


def numpy_loss(name, params, xs, state0, projections):
    states = numpy_cells.run(name, params, xs, state0)
    return sum(float((state[0] @ proj).sum()) for (state, _), proj in zip(states, projections))


def relative_error(a, b):
    """Element-wise |a - b| / (|a| + |b|), guarded where both are ~0 (float32 round-off)."""
    return np.abs(a - b) / np.maximum(np.abs(a) + np.abs(b), 1e-4)


@pytest.mark.parametrize("name", NAMES)
def test_gradients_match_finite_differences(name):
    cell = ref.CELLS[name]
    batch = 3
    rng = np.random.default_rng(500 + NAMES.index(name))
    params = random_params(cell, rng)
    xs, state0 = random_sequence(cell, rng, batch, steps=4)
    projections = rng.normal(size=(len(xs), D_H))     # loss = sum_t sum_b proj_t . h_t

    _, handles = to_dynet(params)
    states = dynet_run(cell, handles, xs, state0)
    loss = dy.sum_batches(dy.esum([dy.dot_product(dy.inputTensor(proj), state[0])
                                   for state, proj in zip(states, projections)]))
    assert abs(loss.value() - numpy_loss(name, params, xs, state0, projections)) < 1e-4
    loss.backward()

    eps = 1e-6
    for pname, value in params.items():
        numeric = np.zeros_like(value)
        for index in np.ndindex(value.shape):
            shifted = {k: v.copy() for k, v in params.items()}
            shifted[pname][index] = value[index] + eps
            up = numpy_loss(name, shifted, xs, state0, projections)
            shifted[pname][index] = value[index] - eps
            down = numpy_loss(name, shifted, xs, state0, projections)
            numeric[index] = (up - down) / (2 * eps)
        analytic = handles[pname].grad_as_array().astype(np.float64)
        assert np.abs(numeric).max() > 1e-3, f"{name}: {pname} gets no gradient"
        error = relative_error(analytic, numeric).max()
        assert error <= TOL_GRAD, f"{name}: gradient of {pname} off by relative {error:.2e}"


# ------------------------------------------------- 3. against DyNet's own builders
def _set_random(builder, rng):
    for p in builder.get_parameters()[0]:
        p.set_value(rng.normal(0.0, 0.6, size=p.shape()))


@pytest.mark.parametrize("forget_bias", [None, 0.0, 2.5])
def test_lstm_matches_vanilla_lstm_builder(forget_bias):
    batch = 7
    rng = np.random.default_rng(31)
    pc = dy.ParameterCollection()
    if forget_bias is None:      # DyNet's default: adds 1.0 inside the forget gate
        builder = dy.VanillaLSTMBuilder(1, D_IN, D_H, pc)
    else:
        builder = dy.VanillaLSTMBuilder(1, D_IN, D_H, pc, forget_bias=forget_bias)
    _set_random(builder, rng)
    fb = 1.0 if forget_bias is None else forget_bias
    params = ref.params_from_vanilla_lstm_builder(builder, forget_bias=fb)
    _, handles = to_dynet(params)
    xs, (h0, c0) = random_sequence(ref.CELLS["lstm"], rng, batch)

    ours = dynet_run(ref.CELLS["lstm"], handles, xs, (h0, c0))
    state = builder.initial_state([batch_input(c0), batch_input(h0)])   # DyNet order: c, h
    for t, x in enumerate(xs):
        state = state.add_input(batch_input(x))
        c_theirs, h_theirs = state.s()
        h_ours, c_ours = ours[t]
        for label, a, b in (("h", h_ours, h_theirs), ("c", c_ours, c_theirs)):
            diff = np.abs(a.npvalue() - b.npvalue()).max()
            assert diff <= TOL_VALUE, f"{label} differs from VanillaLSTMBuilder by {diff:.2e} at step {t}"


def test_vanilla_lstm_builder_adds_forget_bias_at_run_time():
    """The documented finding: DyNet's bias parameter starts at 0 and the default
    builder adds 1.0 inside the forget gate; forgetting it gives other outputs."""
    rng = np.random.default_rng(32)
    pc = dy.ParameterCollection()
    builder = dy.VanillaLSTMBuilder(1, D_IN, D_H, pc)
    assert np.all(builder.get_parameters()[0][2].as_array() == 0.0)
    _set_random(builder, rng)
    _, handles = to_dynet(ref.params_from_vanilla_lstm_builder(builder, forget_bias=0.0))
    xs, (h0, c0) = random_sequence(ref.CELLS["lstm"], rng, 7)
    ours = dynet_run(ref.CELLS["lstm"], handles, xs, (h0, c0))
    state = builder.initial_state([batch_input(c0), batch_input(h0)])
    for x in xs:
        state = state.add_input(batch_input(x))
    assert np.abs(ours[-1][1].npvalue() - state.s()[0].npvalue()).max() > 1e-3


def test_gru_matches_gru_builder():
    batch = 7
    rng = np.random.default_rng(33)
    pc = dy.ParameterCollection()
    builder = dy.GRUBuilder(1, D_IN, D_H, pc)
    _set_random(builder, rng)
    _, handles = to_dynet(ref.params_from_gru_builder(builder))
    xs, (h0,) = random_sequence(ref.CELLS["gru"], rng, batch)
    ours = dynet_run(ref.CELLS["gru"], handles, xs, (h0,))
    state = builder.initial_state([batch_input(h0)])
    for t, x in enumerate(xs):
        state = state.add_input(batch_input(x))
        diff = np.abs(ours[t][0].npvalue() - state.output().npvalue()).max()
        assert diff <= TOL_VALUE, f"h differs from GRUBuilder by {diff:.2e} at step {t}"


# ------------------------------------------------------------ 4. parameter counts
def test_parameter_counts_match_ran_paper_formulas():
    for d_i, d_h in [(3, 5), (256, 1024)]:
        assert ref.CELLS["lstm"].param_count(d_i, d_h, biases=False) == 4 * d_h**2 + 4 * d_h * d_i
        for name in ("ran-identity", "ran-tanh"):
            assert ref.CELLS[name].param_count(d_i, d_h, biases=False) == 2 * d_h**2 + 3 * d_h * d_i


def test_parameter_counts_match_ran_paper_tables():
    """RAN paper Tables 1-2 (d_i = 256, d_h = 1024, biases included), in millions."""
    table = {"srnn": 1.31, "gru": 3.94, "lstm": 5.25, "ran-identity": 2.89, "ran-tanh": 2.89,
             "lstm-srnn": 4.20}       # Table 2: "simplified content layer"
    for name, millions in table.items():
        assert round(ref.CELLS[name].param_count(256, 1024) / 1e6, 2) == millions, name


def test_parameter_counts_of_the_other_cells():
    d_i, d_h = 3, 5
    expected = {"srnn": d_h**2 + d_h * d_i, "lstm-gates": d_h**2 + d_h * d_i,
                "lstm-noforget": 3 * d_h**2 + 3 * d_h * d_i, "gru": 3 * d_h**2 + 3 * d_h * d_i,
                "lstm-srnn": 3 * d_h**2 + 4 * d_h * d_i, "lstm-srnn-out": 2 * d_h**2 + 3 * d_h * d_i,
                "lstm-srnn-hidden": 4 * d_h * d_i}
    for name, count in expected.items():
        assert ref.CELLS[name].param_count(d_i, d_h, biases=False) == count, name


# ------------------------------------------------------------ layout conventions
@pytest.mark.parametrize("name", NAMES)
def test_parameter_shapes_follow_the_naming_convention(name):
    shapes = ref.CELLS[name].shapes(D_IN, D_H)
    assert shapes
    for pname, shape in shapes.items():
        if pname.startswith("b_"):
            assert shape == (D_H,), pname
        elif pname.startswith("W_x"):
            assert shape == (D_H, D_IN), pname
        elif pname.startswith(("W_h", "W_c")):
            assert shape == (D_H, D_H), pname
        else:
            pytest.fail(f"{name}: parameter {pname!r} does not follow W_x*/W_h*/W_c*/b_*")


def test_forget_bias_initialisation():
    for name in ("lstm", "lstm-srnn", "lstm-srnn-out", "lstm-srnn-hidden", "ran-identity", "ran-tanh"):
        cell = ref.CELLS[name]
        assert "b_f" in cell.shapes(D_IN, D_H)
        assert np.all(cell.init("b_f", (D_H,)) == 1.0), name
        assert cell.init("b_i", (D_H,)) is None and cell.init("W_xf", (D_H, D_IN)) is None
        other = ref.make_cell(name, forget_bias=2.5)
        assert np.all(other.init("b_f", (D_H,)) == 2.5) and other.step is cell.step
    assert np.all(ref.lstm_cell(forget_bias=0.0).init("b_f", (3,)) == 0.0)
    for name in ("srnn", "gru", "lstm-noforget", "lstm-gates"):
        assert ref.CELLS[name].init is None
        with pytest.raises(ValueError, match="no forget gate"):
            ref.make_cell(name, forget_bias=1.0)
    with pytest.raises(KeyError, match="unknown cell"):
        ref.make_cell("lstn")


# ------------------------------------------------------------------ the release rule
FORMULA_PATTERNS = {
    "a sigmoid gate (dy.logistic)": r"\blogistic\s*\(",
    "the GRU interpolation 1 - z": r"\b1(\.0*)?\s*-\s*z\b",
    "a forget gate times the previous cell": r"cmult\(\s*f\w*\s*,\s*c",
    "an S-RNN / content layer tanh(affine_transform(...))": r"tanh\(\s*(dy\.)?affine_transform",
}


def graded_names():
    """The graded step functions: those the step checks call, and the reference cells' steps."""
    return grading.graded_functions(steps_only=True) | {cell.step.__name__ for cell in ref.CELLS.values()}


def test_course_package_holds_no_graded_cell():
    """Graded step functions live only in autograder/reference/; course/ holds the machinery."""
    sources = {path: path.read_text() for path in sorted((ROOT / "course").rglob("*.py"))}
    assert sources, "course/ has no Python files to check"
    for path, text in sources.items():
        where = path.relative_to(ROOT)
        for name in graded_names():
            assert not re.search(rf"^\s*def\s+{name}\s*\(", text, re.M), (
                f"{where} defines the graded function {name}(); graded cells live only in "
                f"autograder/reference/ (students write them in the exercises)")
        for what, pattern in FORMULA_PATTERNS.items():
            assert not re.search(pattern, text, re.M), (
                f"{where} contains {what}, a graded formula; move it to autograder/reference/ "
                f"and use a DyNet builder in course/")


def test_release_rule_patterns_detect_the_reference():
    """The rule's patterns are not vacuous: they do find the reference cells."""
    text = (ROOT / "autograder" / "reference" / "cells.py").read_text()
    for name in graded_names():
        assert re.search(rf"^\s*def\s+{name}\s*\(", text, re.M), name
    for what, pattern in FORMULA_PATTERNS.items():
        assert re.search(pattern, text, re.M), what
