"""Chapter 03 (LSTM without a forget gate): the check of the graded step function.

``lstm_step(p, x, state) -> (h, c)`` is tutorial eqs 47-51 (with the logistic
function of eq 52 in its correct form, 1/(1 + exp(-x))), with the parameter names
of the reference cell ``lstm-noforget`` (:mod:`autograder.reference.cells`):
``W_xu, W_hu, b_u`` (update, eq 47), ``W_xi, W_hi, b_i`` (input gate, eq 48),
``W_xo, W_ho, b_o`` (output gate, eq 49). The check runs the student's step and
the reference on the same random non-zero, non-symmetric weights, a batch of 7
over 4 steps from a non-zero (h, c), and compares every state (h and c) and every
parameter gradient (:func:`grading.step_check`).
"""
from __future__ import annotations

from autograder.reference.cells import make_cell
from autograder.reference.grading import step_check

CHECKS = [
    step_check("ch03.lstm_step", "lstm_step", lambda: make_cell("lstm-noforget")),
]
