"""Probes: the code that runs a student's graded functions and returns numbers.

This package is what the autograder's sandbox imports next to the student's
code, so it must never import reference solutions (``autograder.reference``):
a test checks that. Chapter-specific probes live in ``autograder/probes/chNN_*.py``
under the same rule. For step functions the work is split in three:

* :func:`make_inputs` draws the grader's inputs (seeded): random non-zero,
  non-symmetric parameters, a batch of inputs over several steps, a non-zero
  start state, and a random projection that turns the outputs into a loss;
* :func:`run_step` runs any step function on them with DyNet and returns plain
  NumPy arrays: every state at every step and the gradient of every parameter;
* :func:`compare` lists the differences (without revealing reference values).

:mod:`autograder.reference.grading` puts them together.
"""
from __future__ import annotations

import importlib
import sys
import threading

import numpy as np

#: probes whose sandbox result is a traced program (autograder/probes/trace.py), not numbers
TRACED = {"autograder.probes:step": "autograder.probes.trace:trace_step",
          "autograder.probes:sequence": "autograder.probes.trace:trace_sequence"}
ATOL = 1e-5          # outputs: max abs difference (float32 arithmetic in DyNet)
GRAD_RTOL = 1e-4     # gradients: relative to the largest reference gradient


def lookup(probe: str, traced: bool = False):
    """The function a check's ``probe`` ("autograder.probes.module:function") names; with
    ``traced``, the tracing version of a probe in :data:`TRACED` (what the sandbox runs)."""
    dotted = TRACED.get(probe, probe) if traced else probe
    module, _, function = dotted.partition(":")
    if not module.startswith("autograder.probes"):
        raise ValueError(f"probe {dotted!r} must live in autograder/probes/")
    return getattr(importlib.import_module(module), function)


def make_inputs(shapes: dict, n_state: int, d_in: int = 5, d_h: int = 4, batch: int = 7,
                steps: int = 4, seed: int = 20261122) -> dict:
    rng = np.random.default_rng(seed)
    params = {name: rng.uniform(-0.9, 0.9, size=shape) for name, shape in shapes.items()}
    return {
        "params": params,
        "xs": rng.normal(size=(steps, d_in, batch)),
        "state0": rng.uniform(-0.5, 0.5, size=(n_state, d_h, batch)),
        "projection": rng.normal(size=(steps, d_h)),
    }


def dynet():
    from course import runtime
    return runtime.dynet()


#: DyNet memory zeroed before each check: more than any check's graphs take
CHECK_MEMORY_MB = 8


def clean_memory():
    """Before each check, in the sandbox, the replay and the notebooks: a NaN or infinity that the
    last check's graphs left in DyNet's memory would come back in this one's ``W * x`` and fail a
    sound function for another's overflow (course.runtime.clear_memory says why)."""
    from course import runtime
    runtime.clear_memory(CHECK_MEMORY_MB)


def parameters(values: dict):
    """The grader's values as DyNet parameters, in a fresh computation graph:
    ``(pc, P, p)`` with ``P`` the parameters (to read gradients from; ``pc`` keeps
    them alive) and ``p`` their trainable expressions (what a student's function gets)."""
    dy = dynet()
    dy.renew_cg()
    pc = dy.ParameterCollection()
    P = {name: pc.add_parameters(value.shape, init=dy.NumpyInitializer(value)) for name, value in values.items()}
    p = {name: param.expr(True) for name, param in P.items()}   # True: gradients flow
    return pc, P, p


def check_state(state, n_state: int):
    if not isinstance(state, tuple) or len(state) != n_state:
        raise TypeError(f"the step function must return a tuple of {n_state} expression(s), "
                        f"got {type(state).__name__}")


def measure(states: list, P: dict, inputs: dict) -> dict:
    """Every state at every step and, through a fixed random projection of the
    outputs as the loss, every parameter's gradient, as NumPy arrays."""
    dy = dynet()
    loss = dy.sum_batches(dy.esum([dy.dot_product(dy.inputTensor(inputs["projection"][t]), state[0])
                                   for t, state in enumerate(states)]))
    loss.forward()
    loss.backward()
    return {
        "states": np.array([[s.npvalue().reshape(s.dim()[0][0], -1) for s in st] for st in states]),
        "grads": {name: param.grad_as_array() for name, param in P.items()},
    }


def run_step(step, inputs: dict) -> dict:
    """Run ``step`` over the inputs in this process; return states and parameter gradients."""
    dy = dynet()
    pc, P, p = parameters(inputs["params"])
    state = tuple(dy.inputTensor(s, batched=True) for s in inputs["state0"])
    states = []
    for x in inputs["xs"]:
        state = step(p, dy.inputTensor(x, batched=True), state)
        check_state(state, len(inputs["state0"]))
        states.append(state)
    return measure(states, P, inputs)


# ------------------------------------------------------------------ sequence functions (chapter 11)
# A sequence function sees a whole sentence at once: ``f(p, X, heads) -> H``, X and H expressions
# ((d, T), B), the T positions of B sentences side by side (chapter 11's causal self-attention).
# Its inputs are shaped as a step's, so that the trusted grader moves them to a fresh point alike:
# ``xs`` holds one X, (1, d, T, B); ``state0`` is empty; ``projection`` is (d, T), the loss's weights.
def sequence_output(H, inputs: dict):
    """The function's result as an expression ((d, T), B), or TypeError saying what it is."""
    d, T, B = inputs["xs"].shape[1:]
    if not hasattr(H, "dim"):
        raise TypeError(f"{inputs['function']} must return a DyNet expression, got {type(H).__name__}")
    dims, batch = H.dim()
    if tuple(dims) not in ((d, T),) + (((d,),) if T == 1 else ()) or batch != B:
        raise TypeError(f"{inputs['function']} must return ((d, T), B) = (({d}, {T}), {B}): one column per "
                        f"position, the batch kept; got {tuple(dims)}, batch {batch}")
    return H


def measure_sequence(H, P: dict, inputs: dict) -> dict:
    """The outputs (d, T, B) and, through the fixed projection of every position as the loss,
    every parameter's gradient, as NumPy arrays."""
    dy = dynet()
    d, T, B = inputs["xs"].shape[1:]
    H = dy.reshape(H, (d, T), batch_size=B)
    loss = dy.sum_batches(dy.sum_elems(dy.cmult(dy.inputTensor(inputs["projection"]), H)))
    loss.forward()
    loss.backward()
    return {"outputs": np.reshape(H.npvalue(), (d, T, B)),
            "grads": {name: param.grad_as_array() for name, param in P.items()}}


def run_sequence(fn, inputs: dict) -> dict:
    """Run a sequence function on the inputs in this process: its outputs and parameter gradients."""
    dy = dynet()
    pc, P, p = parameters(inputs["params"])
    X = dy.inputTensor(inputs["xs"][0], batched=True)
    H = sequence_output(fn(p, X, int(inputs["heads"])), inputs)
    return measure_sequence(H, P, inputs)


def sequence(functions: dict, inputs: dict) -> dict:
    """The probe of every sequence-function check (traced in the sandbox: trace.trace_sequence)."""
    return run_sequence(functions[inputs["function"]], inputs)


def compare(got: dict, expected: dict, atol: float = ATOL, grad_rtol: float = GRAD_RTOL) -> list[str]:
    """Human-readable problems; empty when the results agree."""
    problems = []
    got_states, want_states = np.asarray(got["states"]), np.asarray(expected["states"])
    if got_states.shape != want_states.shape:
        return [f"state shapes differ: got {got_states.shape[1:]} per step, expected "
                f"{want_states.shape[1:]} (n_state, d_h, batch)"]
    for t in range(want_states.shape[0]):
        for k in range(want_states.shape[1]):
            diff = np.abs(got_states[t, k] - want_states[t, k]).max()
            if not diff <= atol:
                problems.append(f"state[{k}] at step {t + 1} differs (max abs diff {diff:.3g} > {atol})")
                break
        if problems:
            break
    wrong = []
    for name, want in expected["grads"].items():
        have = np.asarray(got["grads"].get(name, np.zeros_like(want)))
        err = np.abs(have - want).max() / max(np.abs(want).max(), 1e-8)
        if not err <= grad_rtol:
            wrong.append(f"{name} ({err:.2g})")
    if wrong:
        problems.append(f"gradients differ (relative error > {grad_rtol}) for {', '.join(wrong)}: "
                        "a parameter used in the wrong place, or a value computed outside DyNet?")
    return problems


FUSED = ("vanilla_lstm_gates", "vanilla_lstm_c", "vanilla_lstm_h")   # DyNet's whole-LSTM operations


def names_used(fn, depth: int = 3) -> set:
    """Attribute and global names a function's code uses, following the functions
    it calls from its module (a few levels deep) and the functions nested in it."""
    seen, names, todo = set(), set(), [(fn, depth)]
    while todo:
        f, level = todo.pop()
        code = getattr(f, "__code__", None)
        if code is None or code in seen:
            continue
        seen.add(code)
        codes = [code]
        while codes:
            c = codes.pop()
            names.update(c.co_names)
            codes.extend(k for k in c.co_consts if hasattr(k, "co_names"))
        if level:
            todo.extend((f.__globals__[n], level - 1) for n in code.co_names
                        if callable(f.__globals__.get(n)) and hasattr(f.__globals__[n], "__code__"))
    return names


def step(functions: dict, inputs: dict) -> dict:
    """The probe of every step-function check: run the student's ``inputs["function"]``,
    and note whether it hands the work to DyNet's fused LSTM operations."""
    fn = functions[inputs["function"]]
    return {**run_step(fn, inputs), "fused": float(bool(set(FUSED) & names_used(fn)))}


# ------------------------------------------------------------------ "write it yourself"
# Chapters 02, 03 and 06 grade a function the course itself also implements (the release ships it).
# Judged by what runs, not by names: while the student's function runs, the course's helpers refuse
# to work, whatever route reaches them (an alias, getattr, importlib, a partial, another course
# function that calls them), and a profile hook notes any run of their code, also as a copy made
# from their code object. Undoing the defence counts as reaching them: the hook removed or replaced
# (even if put back: the hook sees the call of sys.setprofile), a helper's code restored, or a thread
# or process started (a raw ``_thread`` thread runs without the hook, a forked process undoes it
# unseen and sends the numbers back; the student's function needs neither).
# Each probe takes its helpers' code objects when the sandbox loads it, before student code runs,
# and converts what the function returned inside ``call``: an object whose ``__array__`` ran later
# would run after the helpers are restored.
STARTS = {"_thread": ("start_new_thread", "start_new", "start_joinable_thread"),       # C module -> functions
          "posix": ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system"),
          "_posixsubprocess": ("fork_exec",)}


def _same_program(code, codes) -> bool:
    """``code`` is one of ``codes`` or a copy of one (the same program, under any name or line)."""
    return any(code is c or (code.co_code, code.co_consts, code.co_names) == (c.co_code, c.co_consts, c.co_names)
               for c in codes)


def run_refusing(call, helpers, helper_codes, refusal, c_call=None):
    """``(call()'s result or None, whether it reached a helper)``. While ``call`` runs, each function of
    ``helpers`` runs ``refusal``'s code instead of its own (``helper_codes``, taken before student code
    ran), and a profile hook notes any run of a helper's or the refusal's code, any C function for
    which ``c_call(function)`` is true, and what undoes the defence. A refusal the student's code met
    counts as reaching the helper; any other error of the student's is raised."""
    watched = tuple(helper_codes) + (refusal.__code__,)
    reached = []

    def hook(frame, event, arg):
        if event == "call" and _same_program(frame.f_code, watched):
            reached.append(frame.f_code.co_name)
        elif event == "c_call" and (arg is sys.setprofile or (c_call is not None and c_call(arg))
                                    or getattr(arg, "__name__", "") in STARTS.get(getattr(arg, "__module__", None), ())):
            reached.append(getattr(arg, "__name__", "?"))

    saved_profile, saved_thread_profile = sys.getprofile(), threading.getprofile()
    for helper in helpers:
        helper.__code__ = refusal.__code__
    sys.setprofile(hook)
    threading.setprofile(hook)
    result = error = None
    try:
        try:
            result = call()
        except Exception as err:            # the refusal, or the student's own error: decided below
            error = err
        intact = (sys.getprofile() is hook and threading.getprofile() is hook
                  and all(h.__code__ is refusal.__code__ for h in helpers))
        seen = bool(reached)                # before the restoring sys.setprofile below is noted
    finally:
        sys.setprofile(saved_profile)
        threading.setprofile(saved_thread_profile)
        for helper, code in zip(helpers, helper_codes):
            helper.__code__ = code
    if error is not None and intact and not seen:
        raise error
    return result, seen or not intact


def to_arrays(numbers, prefix: str = "") -> dict:
    """What a probe returns (nested dicts of numbers) -> {"a/b": float array}, as the
    sandbox writes it (an .npz file, read back with ``allow_pickle=False``)."""
    if isinstance(numbers, dict):
        out = {}
        for key, value in numbers.items():
            out.update(to_arrays(value, f"{prefix}{key}/"))
        return out
    return {prefix.rstrip("/"): np.asarray(numbers, dtype=float)}


def from_arrays(flat: dict) -> dict:
    """The inverse of :func:`to_arrays`: what a judge receives."""
    tree: dict = {}
    for key, value in flat.items():
        node, parts = tree, key.split("/")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return tree


def transported(numbers) -> dict:
    """Numbers as the trusted side sees them after the trip out of the sandbox."""
    return from_arrays(to_arrays(numbers))
