"""Step functions as programs: what a step check sends out of the sandbox.

In the sandbox, a student's step function runs on *traced* expressions. Each
wraps a real DyNet expression, so values, shapes and errors are exactly DyNet's,
and remembers how it was computed. What leaves the sandbox is that record: a
small program of DyNet operations over named leaves (the grader's parameters,
inputs and start state), never numbers. The trusted grader replays the program
with DyNet in a process that runs no student code (:func:`replay`) and computes
the states and gradients itself.

Whatever the student's code does inside the sandbox (patch the probes, NumPy or
DyNet, write to the result channel), the most it can send is a program, and a
program that passes the checks is a step function written in DyNet operations:
the exercise. Operations outside :data:`OPERATIONS` (random ones, DyNet's
builders, new parameters, ``renew_cg``) are refused while a step is traced.
"""
from __future__ import annotations

import numbers
import operator

import numpy as np

#: DyNet functions a step function may use: deterministic, expressions in, an expression out.
OPERATIONS = frozenset("""
    abs acos acosh affine_transform asin asinh atan atanh average bmax bmin cdiv ceil cmult
    colwise_add concatenate concatenate_cols concatenate_to_batch constant contract3d_1d
    contract3d_1d_bias cos cosh cube cumsum dot_product elu emax erf esum exp flip_gradient floor
    inputMatrix inputTensor inputVector l2_norm layer_norm lgamma log log_sigmoid log_softmax
    logistic logsumexp logsumexp_dim max_dim mean_batches mean_dim mean_elems min_dim nobackprop
    ones pick pick_batch_elem pick_batch_elems pick_range pickrange pow rectify reshape round
    scalarInput scale_gradient select_cols select_rows selu silu sin sinh softmax softsign sqrt
    square squared_distance squared_norm strided_select sum_batches sum_dim sum_elems tan tanh
    transpose zeroes zeros
    vanilla_lstm_c vanilla_lstm_gates vanilla_lstm_gates_concat vanilla_lstm_h
""".split())


# A number on the left of an expression (``1 - z``, ``2 * z``): dyNET38 2.1 computes it, 2.2 raises
# TypeError. The same value written with the expression first, so that both spellings trace, replay
# and score the same on either DyNet (-z + 1 is 1 - z exactly: negation is exact in floating point).
def _add(a, b): return b + a if isinstance(a, numbers.Number) else a + b
def _sub(a, b): return -b + a if isinstance(a, numbers.Number) else a - b
def _mul(a, b): return b * a if isinstance(a, numbers.Number) else a * b


#: Python's operators on expressions, as DyNet defines them (``1 - z`` included).
OPERATORS = {"add": _add, "sub": _sub, "mul": _mul,
             "truediv": operator.truediv, "pow": operator.pow, "neg": operator.neg,
             "getitem": operator.getitem}
FUSED = frozenset({"vanilla_lstm_gates", "vanilla_lstm_gates_concat", "vanilla_lstm_c", "vanilla_lstm_h"})
LEAVES = ("param", "x", "state0")
MAX_OPS = 50_000             # a 4-step LSTM takes about 100
MAX_NUMBERS = 1_000_000      # constants in a program, all together

ORIGINAL: dict = {}          # name -> the real DyNet function, filled by install()
_tape = None                 # the Tape of the step being traced, or None


class TraceError(TypeError):
    """The step function did something a traced step cannot do; the message says what."""


class Traced:
    """A DyNet expression and its node in the program."""
    __slots__ = ("expr", "node", "tape")

    def __init__(self, tape: "Tape", expr, node: int):
        self.expr, self.node, self.tape = expr, node, tape

    def __getattr__(self, name):                 # npvalue(), dim(), value(), ...: the real expression's
        return getattr(self.expr, name)

    def __repr__(self):
        return f"expression {self.node} of the traced step, dim {self.expr.dim()}"

    def __add__(self, other): return self.tape.apply("add", _add, (self, other))
    def __radd__(self, other): return self.tape.apply("add", _add, (other, self))
    def __sub__(self, other): return self.tape.apply("sub", _sub, (self, other))
    def __rsub__(self, other): return self.tape.apply("sub", _sub, (other, self))
    def __mul__(self, other): return self.tape.apply("mul", _mul, (self, other))
    def __rmul__(self, other): return self.tape.apply("mul", _mul, (other, self))
    def __truediv__(self, other): return self.tape.apply("truediv", operator.truediv, (self, other))
    def __rtruediv__(self, other): return self.tape.apply("truediv", operator.truediv, (other, self))
    def __pow__(self, other): return self.tape.apply("pow", operator.pow, (self, other))
    def __rpow__(self, other): return self.tape.apply("pow", operator.pow, (other, self))
    def __neg__(self): return self.tape.apply("neg", operator.neg, (self,))
    def __getitem__(self, key): return self.tape.apply("getitem", operator.getitem, (self, key))


class Tape:
    """The program being recorded: ``ops[i] = [name, args, kwargs]`` makes node i."""

    def __init__(self):
        self.ops, self.numbers = [], 0

    def leaf(self, kind: str, key, expr) -> Traced:
        self.ops.append(["leaf", [kind, key], {}])
        return Traced(self, expr, len(self.ops) - 1)

    def apply(self, name: str, function, args: tuple, kwargs: dict | None = None):
        kwargs = kwargs or {}
        encoded = [self.encode(a) for a in args], {k: self.encode(v) for k, v in kwargs.items()}
        result = function(*[_real(a) for a in args], **{k: _real(v) for k, v in kwargs.items()})
        if not hasattr(result, "npvalue"):       # a number, a list of values: nothing to record
            return result
        if len(self.ops) >= MAX_OPS:
            raise TraceError(f"the step uses more than {MAX_OPS:,} DyNet operations")
        self.ops.append([name, *encoded])
        return Traced(self, result, len(self.ops) - 1)

    def encode(self, value):
        """A value as JSON data: nodes by number, arrays and tuples marked."""
        if isinstance(value, Traced):
            if value.tape is not self:
                raise TraceError("an expression from another step or cell was used: compute everything "
                                 "the step needs inside the step function")
            return {"n": value.node}
        if isinstance(value, (bool, int, float, str)) or value is None:
            return value
        if isinstance(value, (np.integer, np.floating, np.bool_)):
            return value.item()
        if isinstance(value, np.ndarray):
            self.numbers += value.size
            if self.numbers > MAX_NUMBERS or value.dtype.kind not in "biuf":
                raise TraceError("the step builds constants that are too large or not numbers")
            return {"a": list(value.shape), "v": value.astype(float).ravel().tolist()}
        if isinstance(value, tuple):
            return {"t": [self.encode(v) for v in value]}
        if isinstance(value, list):
            return [self.encode(v) for v in value]
        if isinstance(value, slice):
            return {"s": [self.encode(value.start), self.encode(value.stop), self.encode(value.step)]}
        if hasattr(value, "npvalue"):
            raise TraceError("an expression built outside the step (in another cell, or with _dynet) "
                             "was used: compute everything the step needs inside the step function")
        raise TraceError(f"a DyNet operation got a {type(value).__name__}, which the grader cannot "
                         "follow: pass expressions, numbers, lists and tuples")


def _real(value):
    """What DyNet itself gets: the real expressions inside traced ones."""
    if isinstance(value, Traced):
        return value.expr
    if isinstance(value, (list, tuple)):
        return type(value)(_real(v) for v in value)
    return value


def _wrapper(name: str, original):
    def call(*args, **kwargs):
        if _tape is None:                        # not tracing: DyNet as usual
            return original(*_real(args), **{k: _real(v) for k, v in kwargs.items()})
        if name not in OPERATIONS:
            raise TraceError(f"dy.{name} is not an operation a graded step function may use (it is "
                             "random, builds parameters or changes the computation graph): build the "
                             "step from p, x and state with operations such as dy.logistic, dy.tanh, "
                             "dy.cmult and dy.affine_transform")
        return _tape.apply(name, original, args, kwargs)
    call.__name__ = call.__qualname__ = name
    call.__doc__ = original.__doc__
    return call


def _refused_class(name: str, value) -> bool:
    """DyNet's builders and parameter collections: classes that make parameters."""
    return isinstance(value, type) and (name.endswith("Builder") or name in ("ParameterCollection", "Model"))


def install(*modules):
    """Route the modules' DyNet functions, builders and parameter collections through
    the tracer (the sandbox calls this once, before any student code runs; outside
    a trace they behave as before, inside one a builder is refused)."""
    for module in modules:
        for name in dir(module):
            value = getattr(module, name)
            if name.startswith("_") or not callable(value) or (isinstance(value, type)
                                                              and not _refused_class(name, value)):
                continue
            original = ORIGINAL.setdefault(name, value)
            setattr(module, name, _wrapper(name, original))


def _new_tape(inputs: dict):
    """A fresh tape whose leaves are the grader's parameters: (tape, the parameters as traced
    leaves, DyNet's own inputTensor, the ParameterCollection that must outlive the trace)."""
    from autograder import probes
    input_tensor = ORIGINAL.get("inputTensor") or probes.dynet().inputTensor
    pc, _, real = probes.parameters(inputs["params"])
    tape = Tape()
    return tape, {name: tape.leaf("param", name, expr) for name, expr in real.items()}, input_tensor, pc


def trace_step(functions: dict, inputs: dict) -> dict:
    """Run the student's step over the grader's inputs, traced: the program and,
    for every step, the nodes of the state it returned."""
    global _tape
    from autograder import probes
    step = functions[inputs["function"]]
    tape, p, input_tensor, pc = _new_tape(inputs)
    state = tuple(tape.leaf("state0", k, input_tensor(s, batched=True)) for k, s in enumerate(inputs["state0"]))
    outputs = []
    _tape = tape
    try:
        for t, x in enumerate(inputs["xs"]):
            state = step(p, tape.leaf("x", t, input_tensor(x, batched=True)), state)
            probes.check_state(state, len(inputs["state0"]))
            if not all(isinstance(s, Traced) and s.tape is tape for s in state):
                raise TraceError("the step must return expressions computed from p, x and state "
                                 "with DyNet operations")
            outputs.append([s.node for s in state])
    finally:
        _tape = None
    return {"ops": tape.ops, "outputs": outputs}


# Chapter 11: the course ships a causal attention layer (course.layers.CausalAttention, which lecture
# 11's models use); while the student's function is traced, its run refuses to work and any run of
# its code counts as reaching it (autograder.probes.run_refusing, as chapters 02, 03 and 06 do):
# "write the attention yourself". Its code is taken when the sandbox loads this module.
def _course_attention():
    from course.layers import CausalAttention
    return CausalAttention.run


COURSE_ATTENTION = _course_attention()
COURSE_ATTENTION_CODE = (COURSE_ATTENTION.__code__,)


def _refused_attention(*args, **kwargs):
    raise RuntimeError("course.layers.CausalAttention cannot be used in causal_attention: write the "
                       "attention yourself")


def trace_sequence(functions: dict, inputs: dict) -> dict:
    """Run the student's sequence function (``f(p, X, heads) -> H``, chapter 11) on the grader's
    inputs, traced: the program and, as its one "step", the node of H."""
    global _tape
    from autograder import probes
    fn = functions[inputs["function"]]
    tape, p, input_tensor, pc = _new_tape(inputs)
    X = tape.leaf("x", 0, input_tensor(inputs["xs"][0], batched=True))
    _tape = tape
    try:
        H, reached = probes.run_refusing(lambda: fn(p, X, int(inputs["heads"])), [COURSE_ATTENTION],
                                         COURSE_ATTENTION_CODE, _refused_attention)
        if reached:
            raise TraceError(f"{inputs['function']} reached course.layers.CausalAttention (or undid the "
                             "grader's watch over it): write the attention yourself")
        H = probes.sequence_output(H, inputs)
        if not (isinstance(H, Traced) and H.tape is tape):
            raise TraceError(f"{inputs['function']} must return an expression computed from p and X "
                             "with DyNet operations")
    finally:
        _tape = None
    return {"ops": tape.ops, "outputs": [[H.node]]}


def replay(program: dict, inputs: dict) -> dict:
    """Run a traced step's program with DyNet (no student code): the same numbers
    :func:`autograder.probes.run_step` returns for a step function (for a sequence function,
    ``inputs["sequence"]``: what :func:`autograder.probes.run_sequence` returns). Which of the
    two is decided by the grader's inputs, never by the program."""
    from autograder import probes
    dy = probes.dynet()
    sequence = bool(inputs.get("sequence"))
    ops, outputs = _validated(program, len(inputs["xs"]), 1 if sequence else len(inputs["state0"]))
    pc, P, p = probes.parameters(inputs["params"])
    leaves = {"param": p, "x": inputs["xs"], "state0": inputs["state0"]}
    nodes = []

    def decode(value):
        if isinstance(value, list):
            return [decode(v) for v in value]
        if not isinstance(value, dict):
            return value
        if "a" in value:
            return np.asarray(value["v"], dtype=float).reshape(value["a"])
        (tag, body), = value.items()
        if tag == "n":
            if not isinstance(body, int) or not 0 <= body < len(nodes):
                raise ValueError("the program refers to an expression it has not computed yet")
            return nodes[body]
        if tag == "t":
            return tuple(decode(v) for v in body)
        if tag == "s":
            return slice(*(decode(v) for v in body))
        raise ValueError(f"unknown value {tag!r} in the program")

    for name, args, kwargs in ops:
        if name == "leaf":
            kind, key = args
            value = leaves[kind][key]
            nodes.append(value if kind == "param" else dy.inputTensor(value, batched=True))
            continue
        function = OPERATORS.get(name) or getattr(dy, name)
        nodes.append(function(*decode(args), **{k: decode(v) for k, v in kwargs.items()}))
    states = [tuple(nodes[i] for i in step) for step in outputs]
    if sequence:
        return probes.measure_sequence(probes.sequence_output(states[0][0], inputs), P, inputs)
    return {**probes.measure(states, P, inputs), "fused": float(any(op[0] in FUSED for op in ops))}


def _validated(program, steps: int, n_state: int):
    """The program's operations and outputs, or ValueError naming what is wrong."""
    if not isinstance(program, dict) or not isinstance(program.get("ops"), list) \
            or not isinstance(program.get("outputs"), list):
        raise ValueError("not a program")
    ops, outputs = program["ops"], program["outputs"]
    if len(ops) > MAX_OPS:
        raise ValueError(f"more than {MAX_OPS:,} operations")
    for op in ops:
        if not (isinstance(op, list) and len(op) == 3 and isinstance(op[1], list) and isinstance(op[2], dict)
                and (op[0] in OPERATIONS or op[0] in OPERATORS or op[0] == "leaf")
                and all(isinstance(k, str) and k.isidentifier() for k in op[2])):
            raise ValueError(f"an operation the grader does not allow: {str(op)[:80]}")
        if op[0] == "leaf" and not (len(op[1]) == 2 and op[1][0] in LEAVES):
            raise ValueError("an unknown leaf")
    if len(outputs) != steps or not all(isinstance(o, list) and len(o) == n_state
                                        and all(isinstance(i, int) and 0 <= i < len(ops) for i in o)
                                        for o in outputs):
        raise ValueError("the program's outputs do not match the steps")
    return ops, outputs
