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
import shutil
from pathlib import Path

import nbformat

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
INIT = "import numpy as np\n\n\ndef lstm_init(name, shape, forget_bias=1.0):\n{body}\n"
INIT_RIGHT = INIT.replace("{body}", '    return np.full(shape, float(forget_bias)) if name == "b_f" else None')
INIT_MISSING = INIT.replace("{body}", "    return None   # forgot the forget bias")

SNOOP = '''
for _path in ["../../../gradebook.db", "../../../../autograder/heldout/course_hidden.txt",
              __import__("course.paths").paths.ROOT / "autograder" / "heldout" / "course_hidden.txt"]:
    try:
        print(open(_path, "rb").read(200))
    except Exception as _err:
        print("could not read", _path, type(_err).__name__)
'''
WRITE_GRADEBOOK = '''
import sqlite3
try:
    _db = sqlite3.connect("../../../gradebook.db")
    _db.execute("UPDATE grade SET manual_score = 100")
    _db.commit()
except Exception as _err:
    print("could not write the gradebook:", _err)
'''
ALLCLOSE = "\nnp.allclose = lambda *a, **k: True\nnp.testing.assert_allclose = lambda *a, **k: None\n"
BLANK_ASSERTS = '''
def _blank(lines):
    return [] if any("assert" in line or "check(" in line for line in lines) else lines
get_ipython().input_transformers_cleanup.append(_blank)
'''
WARNS = GRU_RIGHT.replace("    (h_prev,) = state", "    import warnings\n    warnings.warn('a harmless warning')\n    (h_prev,) = state")

FULL, ZERO = 1.0, 0.0
# student: (chapter, {answer grade_id: source}, expected fraction per answer function, statuses, how)
STUDENTS = {
    "correct": ("05_gru", {"gru_step": GRU_RIGHT}, {"gru_step": FULL}, ["graded"], None),
    "one_minus_z": ("05_gru", {"gru_step": GRU_ONE_MINUS_Z}, {"gru_step": FULL}, ["graded"], None),
    "wrong_gate_order": ("04_forget_gate", {"lstm_step": LSTM_GATES_SWAPPED, "lstm_init": INIT_RIGHT},
                         {"lstm_step": ZERO, "lstm_init": FULL}, ["graded"], None),
    "forget_bias_missing": ("04_forget_gate", {"lstm_step": LSTM_RIGHT, "lstm_init": INIT_MISSING},
                            {"lstm_step": FULL, "lstm_init": ZERO}, ["graded"], None),
    "numpy_no_gradients": ("05_gru", {"gru_step": GRU_NUMPY}, {"gru_step": ZERO}, ["graded", "suspicious"], None),
    "infinite_loop": ("05_gru", {"gru_step": GRU_RIGHT + "\nwhile True:\n    pass\n"}, {"gru_step": ZERO},
                      ["graded"], None),
    "ignores_interrupt": ("05_gru", {"gru_step": GRU_RIGHT + "\nwhile True:\n    try:\n        while True:\n"
                                     "            pass\n    except KeyboardInterrupt:\n        pass\n"},
                          {"gru_step": ZERO}, ["graded"], None),
    "kernel_crash": ("05_gru", {"gru_step": GRU_RIGHT + "\nimport os\nos._exit(1)\n"}, {"gru_step": ZERO},
                     ["graded"], None),
    "memory_bomb": ("05_gru", {"gru_step": GRU_RIGHT + "\n_hog = []\nwhile True:\n    _hog.append(bytearray(10**8))\n"},
                    {"gru_step": ZERO}, ["graded"], None),
    "corrupt_json": ("05_gru", {"gru_step": GRU_RIGHT}, {"gru_step": ZERO}, ["failed"], "truncate"),
    "deleted_grade_cell": ("05_gru", {"gru_step": GRU_RIGHT}, {"gru_step": FULL}, ["graded", "needs manual grade"],
                           "delete_test"),
    "edited_grade_cell": ("05_gru", {"gru_step": GRU_WRONG}, {"gru_step": ZERO}, ["graded", "suspicious"],
                          "edit_test"),
    "allclose_patched": ("05_gru", {"gru_step": GRU_WRONG + ALLCLOSE}, {"gru_step": ZERO},
                         ["graded", "suspicious"], None),
    "assert_blanking": ("05_gru", {"gru_step": GRU_WRONG + BLANK_ASSERTS}, {"gru_step": ZERO}, ["suspicious"], None),
    "reads_grader_files": ("05_gru", {"gru_step": GRU_RIGHT + SNOOP}, {"gru_step": FULL}, ["graded"], None),
    "writes_gradebook": ("05_gru", {"gru_step": GRU_WRONG + WRITE_GRADEBOOK}, {"gru_step": ZERO},
                         ["suspicious"], None),
    "prints_warning": ("05_gru", {"gru_step": WARNS}, {"gru_step": FULL}, ["graded"], None),
    "empty": ("05_gru", {}, {"gru_step": ZERO}, ["graded"], None),
}


def build():
    shutil.rmtree(OUT, ignore_errors=True)
    expected = {}
    for student, (chapter, answers, fractions, statuses, how) in STUDENTS.items():
        nb = nbformat.read(ROOT / "exercises" / f"{chapter}.ipynb", as_version=4)
        for cell in nb.cells:
            gid = cell.metadata.get("nbgrader", {}).get("grade_id")
            if gid in answers:
                cell.source = answers[gid].strip() + "\n"
        if how == "delete_test":
            nb.cells = [c for c in nb.cells if not c.metadata.get("nbgrader", {}).get("grade")
                        or c is not next(x for x in nb.cells if x.metadata.get("nbgrader", {}).get("grade"))]
        if how == "edit_test":
            for cell in nb.cells:
                if cell.metadata.get("nbgrader", {}).get("grade"):
                    cell.source, cell.metadata["nbgrader"]["points"] = "pass", 100
        path = OUT / student / f"{chapter}.ipynb"
        path.parent.mkdir(parents=True)
        text = nbformat.writes(nb)
        path.write_text(text[:len(text) // 2] if how == "truncate" else text)
        expected[student] = {"notebook": chapter, "fractions": fractions, "statuses": statuses}
    (HERE / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")
    return expected


if __name__ == "__main__":
    for name in build():
        print(f"wrote {OUT.name}/{name}")
