"""Chapter 02 (the S-RNN language model): the check of the graded step function.

``rnn_step(p, x, state) -> (h,)`` is tutorial eq 44,
``h_t = tanh(W_xh x_t + W_hh h_{t-1} + b_h)``, with the parameter names of the
reference cell ``srnn`` (:mod:`autograder.reference.cells`). The check runs the
student's step and the reference on the same random non-zero, non-symmetric
weights, a batch of 7 over 4 steps from a non-zero start state, and compares
every state and every parameter gradient (:func:`grading.step_check`).
"""
from __future__ import annotations

from autograder.reference.cells import make_cell
from autograder.reference.grading import step_check

CHECKS = [
    step_check("ch02.rnn_step", "rnn_step", lambda: make_cell("srnn")),
]
