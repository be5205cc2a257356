"""The slip table of autograder/README.md, tested end to end.

Each slip is one mistake a student makes, built from the solution notebook by a
source substitution in one answer cell. For each:

1. the trusted grader (:func:`autograder.grader.grade`, one sandbox run) fails
   exactly the hidden checks the table names, says the expected message, and gives
   every test cell the share of its points that the other checks earn (the split the
   solution's ``points=`` states) and the notebook the expected score;
2. run as the student runs it (every code cell in order, the test cells without
   their hidden part, in this process), the visible test cell named in the table
   fails with the message the table quotes, and so does the visible part of every
   test cell that loses points: no slip passes visibly and then fails hidden.

The README's tables are rendered from ``SLIPS`` and the solutions' points
(``python -m tests.test_slips`` prints them) and a test keeps them the same.
"""
from __future__ import annotations

import contextlib
import io
import json
import warnings
from dataclasses import dataclass

import nbformat
import pytest

from autograder import grader
from autograder.cellmarks import marks
from autograder.reference.grading import all_checks, check_calls, split_points
from tests.conftest import ROOT, once_per_run

LIMITS = grader.Limits(wall_s=120, cpu_s=120)
HIDDEN = "### BEGIN HIDDEN TESTS"


@dataclass
class Slip:
    name: str            # what the student did, as the table says it
    chapter: str         # the notebook, "05_gru"
    answer: str          # grade_id of the answer cell the slip is in
    old: str             # text of the solution's answer cell ...
    new: str             # ... and what the student wrote instead
    visible: str         # grade_id of the visible test cell that catches it ...
    shows: str           # ... and a phrase of what it shows the student
    failing: tuple       # the hidden checks that fail; the first says ...
    says: str            # ... this (a phrase of its message)
    score: float         # the notebook's score with the slip
    explained: tuple = ()  # test cells that lose points with no visible failure of their own


SLIPS = [
    # ------------------------------------------------------------------ 02: rnn_step
    Slip("W_hh used transposed", "02_srnn", "rnn_step",
         old='p["W_hh"], h_prev]',
         new='dy.transpose(p["W_hh"]), h_prev]',
         visible="rnn_step_values", shows="row i of W_hh makes unit i",
         failing=("ch02.rnn_recurrence", "ch02.rnn_step"),
         says="W_hh is used transposed", score=4),
    Slip("bias b_h missing", "02_srnn", "rnn_step",
         old='dy.affine_transform([p["b_h"], p["W_xh"], x, p["W_hh"], h_prev])',
         new='p["W_xh"] * x + p["W_hh"] * h_prev',
         visible="rnn_step_values", shows="with W_hh = 0, h = tanh(W_xh x + b_h) should be",
         failing=("ch02.rnn_input", "ch02.rnn_step"),
         says="b_h is missing", score=4),
    Slip("logistic where tanh belongs", "02_srnn", "rnn_step",
         old="h = dy.tanh(",
         new="h = dy.logistic(",
         visible="rnn_step_values", shows="with W_hh = 0, h = tanh(W_xh x + b_h) should be",
         failing=("ch02.rnn_step", "ch02.rnn_input", "ch02.rnn_recurrence"),
         says="squashed with the logistic sigmoid", score=3),
    Slip("the step computed in NumPy", "02_srnn", "rnn_step",
         old='h = dy.tanh(dy.affine_transform([p["b_h"], p["W_xh"], x, p["W_hh"], h_prev]))',
         new='import numpy as np\n'
             '    h = dy.inputTensor(np.tanh(p["W_xh"].npvalue() @ x.npvalue() + p["W_hh"].npvalue() @ '
             'h_prev.npvalue() + p["b_h"].npvalue()[:, None]), batched=True)',
         visible="rnn_step_gradients", shows="no gradient reached W_xh",
         failing=("ch02.rnn_gradients", "ch02.rnn_step", "ch02.rnn_input", "ch02.rnn_recurrence"),
         says="no gradient reaches any parameter", score=2,
         # numbers computed at the point it ran at are constants, wrong at the grader's fresh point;
         # in the notebook they are right, and the visible gradient check is what says so
         explained=("rnn_step_values",)),
    # ------------------------------------------------------------------ 02: srnn_step_backward, by hand
    Slip("backward without the tanh's derivative", "02_srnn", "srnn_step_backward",
         old="da = dh * (1 - h ** 2)",
         new="da = dh",
         visible="srnn_step_backward_tests", shows="db_h should be",
         failing=("ch02.backward_inputs", "ch02.backward_params"),
         says="the tanh's derivative is missing", score=4),
    Slip("tanh' taken of h: 1 - tanh(h)**2", "02_srnn", "srnn_step_backward",
         old="da = dh * (1 - h ** 2)",
         new="da = dh * (1 - np.tanh(h) ** 2)",
         visible="srnn_step_backward_tests", shows="db_h should be",
         failing=("ch02.backward_inputs", "ch02.backward_params"),
         says="tanh' is applied to h, which is already tanh(a)", score=4),
    Slip("dW_hh transposed", "02_srnn", "srnn_step_backward",
         old="dW_hh = da @ h_prev.T",
         new="dW_hh = h_prev @ da.T",
         visible="srnn_step_backward_tests", shows="dW_hh should be",
         failing=("ch02.backward_params",),
         says="dW_hh is transposed", score=5),
    Slip("db_h not summed over the batch", "02_srnn", "srnn_step_backward",
         old="db_h = da.sum(axis=1)",
         new="db_h = da",
         visible="srnn_step_backward_tests", shows="db_h has shape (2, 2), expected (2,)",
         failing=("ch02.backward_params",),
         says="sum da over the batch", score=5),
    Slip("dh_prev without W_hh^T", "02_srnn", "srnn_step_backward",
         old="dh_prev = W_hh.T @ da",
         new="dh_prev = da",
         visible="srnn_step_backward_tests", shows="dh_prev should be",
         failing=("ch02.backward_inputs",),
         says="dh_prev is missing W_hh^T", score=5),
    # ------------------------------------------------------------------ 03: lstm_step, no forget gate
    Slip("input and output gates' parameters swapped", "03_lstm", "lstm_step",
         old='i = dy.logistic(dy.affine_transform([p["b_i"], p["W_xi"], x, p["W_hi"], h_prev]))\n'
             '    o = dy.logistic(dy.affine_transform([p["b_o"], p["W_xo"], x, p["W_ho"], h_prev]))',
         new='i = dy.logistic(dy.affine_transform([p["b_o"], p["W_xo"], x, p["W_ho"], h_prev]))\n'
             '    o = dy.logistic(dy.affine_transform([p["b_i"], p["W_xi"], x, p["W_hi"], h_prev]))',
         visible="lstm_step_values", shows="does your input gate read W_xi, W_hi and b_i",
         failing=("ch03.lstm_memory", "ch03.lstm_output", "ch03.lstm_step"),
         says="the input gate reads the output gate's parameters", score=4),
    Slip("tanh where the output gate's sigmoid belongs", "03_lstm", "lstm_step",
         old="o = dy.logistic(",
         new="o = dy.tanh(",
         visible="lstm_step_values", shows="c is right but h is",
         failing=("ch03.lstm_step", "ch03.lstm_output"),
         says="the output gate uses tanh", score=5),
    Slip("h = o * c, the tanh of eq 51 left out", "03_lstm", "lstm_step",
         old="h = dy.cmult(o, dy.tanh(c))",
         new="h = dy.cmult(o, c)",
         visible="lstm_step_values", shows="with b_o = +30 the output gate is open",
         failing=("ch03.lstm_output", "ch03.lstm_step"),
         says="so h_t must be tanh(c_t)", score=5),
    Slip("logistic and tanh exchanged between u and i", "03_lstm", "lstm_step",
         old='u = dy.tanh(dy.affine_transform([p["b_u"], p["W_xu"], x, p["W_hu"], h_prev]))\n'
             '    i = dy.logistic(dy.affine_transform([p["b_i"], p["W_xi"], x, p["W_hi"], h_prev]))',
         new='u = dy.logistic(dy.affine_transform([p["b_u"], p["W_xu"], x, p["W_hu"], h_prev]))\n'
             '    i = dy.tanh(dy.affine_transform([p["b_i"], p["W_xi"], x, p["W_hi"], h_prev]))',
         visible="lstm_step_values", shows="your input gate is -1, not 0",
         failing=("ch03.lstm_memory", "ch03.lstm_step"),
         says="u_t and i_t have each other's function", score=5),
    Slip("h from the old memory: o * tanh(c_prev)", "03_lstm", "lstm_step",
         old="h = dy.cmult(o, dy.tanh(c))",
         new="h = dy.cmult(o, dy.tanh(c_prev))",
         visible="lstm_step_values", shows="h is tanh(c_prev)",
         failing=("ch03.lstm_output", "ch03.lstm_step"),
         says="from the old memory", score=5),
    Slip("c_prev scaled by (1 - i): no carousel", "03_lstm", "lstm_step",
         old="c = dy.cmult(i, u) + c_prev",
         new="c = dy.cmult(i, u) + dy.cmult(1 - i, c_prev)",
         visible="lstm_step_carousel", shows="d sum(c_20) / d c_0 is",
         failing=("ch03.lstm_carousel", "ch03.lstm_memory", "ch03.lstm_step"),
         says="constant error carousel", score=4),
    # ------------------------------------------------------------------ 03: next_token_distribution, the sampler
    Slip("temperature applied after the softmax", "03_lstm", "next_token_distribution",
         old="z = np.asarray(scores, dtype=float) / temperature\n"
             "    p = np.exp(z - z.max())                     # the largest score subtracted: no overflow\n",
         new="z = np.asarray(scores, dtype=float)\n"
             "    p = np.exp(z - z.max()) / temperature\n",
         visible="next_token_distribution_tests", shows="divide the scores by the temperature before the softmax",
         failing=("ch03.next_token_distribution", "ch03.sampler_draws"),
         says="divide the scores by it before the softmax", score=5),
    Slip("top-k off by one: k + 1 tokens kept", "03_lstm", "next_token_distribution",
         old="p[order[top_k:]] = 0.0",
         new="p[order[top_k + 1:]] = 0.0",
         visible="next_token_distribution_tests", shows="top_k = 1 keeps the most probable token only",
         failing=("ch03.next_token_distribution", "ch03.sampler_draws"),
         says="top-k keeps one token too many", score=5),
    Slip("top-p without the token that crosses p", "03_lstm", "next_token_distribution",
         old="p[order[crossing + 1:]] = 0.0",
         new="p[order[crossing:]] = 0.0",
         visible="next_token_distribution_tests", shows="the token that crosses top_p is kept",
         failing=("ch03.next_token_distribution", "ch03.sampler_draws"),
         says="top-p leaves out the token that crosses p", score=5),
    Slip("kept probabilities not renormalised", "03_lstm", "next_token_distribution",
         old="        p[order[top_k:]] = 0.0\n        p /= p.sum()\n",
         new="        p[order[top_k:]] = 0.0\n",
         visible="next_token_distribution_tests", shows="renormalise what is kept",
         failing=("ch03.next_token_distribution", "ch03.sampler_draws"),
         says="not renormalised", score=5),
    # ------------------------------------------------------------------ 04: lstm_step, lstm_init
    Slip("input and forget gates swapped", "04_forget_gate", "lstm_step",
         old='i, f, o = gate("i"), gate("f"), gate("o")',
         new='f, i, o = gate("i"), gate("f"), gate("o")',
         visible="lstm_step_forget_gate", shows="with f = 1 and i = 0 the memory cell must stay as it was",
         failing=("ch04.lstm_forget_gate", "ch04.lstm_step", "ch04.lstm_builder"),
         says="do i_t and f_t read their own parameters", score=4),
    Slip("h where c belongs: f * h_prev", "04_forget_gate", "lstm_step",
         old="dy.cmult(f, c_prev)",
         new="dy.cmult(f, h_prev)",
         visible="lstm_step_forget_gate", shows="with f = 1 and i = 0 the memory cell must stay as it was",
         failing=("ch04.lstm_forget_gate", "ch04.lstm_step", "ch04.lstm_builder"),
         says="f_t multiplies h_{t-1}", score=4),
    Slip("forget_bias argument ignored", "04_forget_gate", "lstm_init",
         old="np.full(shape, float(forget_bias))",
         new="np.full(shape, 1.0)",
         visible="lstm_init_visible", shows="use the forget_bias argument",
         failing=("ch04.lstm_init",),
         says="is the forget_bias argument used?", score=5),
    # ------------------------------------------------------------------ 05: gru_step
    Slip("reset gate applied after W_hh", "05_gru", "gru_step",
         old='x, p["W_hh"], dy.cmult(r, h_prev)]))',
         new='x]) + dy.cmult(r, p["W_hh"] * h_prev))',
         visible="gru_step_update_gate", shows="is r applied to h_prev before W_hh?",
         failing=("ch05.gru_reset_gate", "ch05.gru_step", "ch05.gru_builder"),
         says="eq 58 applies it to h_{t-1} before W_hh", score=2),
    Slip("z and 1 - z exchanged", "05_gru", "gru_step",
         old="dy.cmult(-z + 1, h_prev) + dy.cmult(z, candidate)",
         new="dy.cmult(z, h_prev) + dy.cmult(-z + 1, candidate)",
         visible="gru_step_update_gate", shows="with z = 0 the state must stay as it was",
         failing=("ch05.gru_update_gate", "ch05.gru_step", "ch05.gru_builder"),
         says="z_t and 1 - z_t are exchanged", score=2),
    # ------------------------------------------------------------------ 06: pad_batch, masked_batch_nll
    Slip("pad_batch sorts the sentences by length", "06_minibatching", "pad_batch",
         old="for s in sentences]",
         new="for s in sorted(sentences, key=len, reverse=True)]",
         visible="pad_batch_tests", shows="keep the input order (do not sort)",
         failing=("ch06.pad_words",),
         says="keep the input order", score=6),
    Slip("padding with `<unk>` instead of `</s>`", "06_minibatching", "pad_batch",
         old="else vocab.eos) for s in ids])",
         new="else vocab.unk) for s in ids])",
         visible="pad_batch_tests", shows="then </s> (2)",
         failing=("ch06.pad_padding",),
         says="pad with </s>", score=6),
    Slip("the last time step left unmasked", "06_minibatching", "masked_batch_nll",
         old="terms.append(dy.cmult(losses, dy.inputTensor(mask, batched=True)))",
         new="terms.append(losses if len(terms) == len(inputs) - 1 else dy.cmult(losses, "
             "dy.inputTensor(mask, batched=True)))",
         visible="masked_batch_nll_tests", shows="the padding was counted: use the masks",
         failing=("ch06.masked_nll",),
         says="the last time step's losses", score=4),
    Slip("the mean instead of the sum", "06_minibatching", "masked_batch_nll",
         old="return dy.sum_batches(dy.esum(terms))",
         new="return dy.sum_batches(dy.esum(terms)) * (1.0 / sum(sum(m) for m in masks))",
         visible="masked_batch_nll_tests", shows="the loss is averaged over the",
         failing=("ch06.masked_nll",),
         says="the loss is averaged over the predictions", score=4),
    Slip("the mask without batched=True", "06_minibatching", "masked_batch_nll",
         old="dy.inputTensor(mask, batched=True)",
         new="dy.inputTensor(mask)",
         visible="masked_batch_nll_tests", shows="is a mask built with dy.inputTensor(mask, batched=True)?",
         failing=("ch06.masked_nll", "ch06.masked_nll_gradients"),
         says="is a mask built with dy.inputTensor(mask, batched=True)?", score=3),
    Slip("the masks one step late", "06_minibatching", "masked_batch_nll",
         old="zip(inputs, targets, masks)",
         new="zip(inputs, targets, [[1] * len(masks[0])] + list(masks[:-1]))",
         visible="masked_batch_nll_tests", shows="not the mask of the word read",
         failing=("ch06.masked_nll",),
         says="the masks are one step late", score=4),
    # ------------------------------------------------------------------ 07: stacked_step
    Slip("residual added before the layer's nonlinearity", "07_stacked_residual", "stacked_step",
         old="        state = step(p, x, state)\n"
             "        h = state[0]\n"
             "        if residual is not None:\n"
             "            h = h + x ",
         new="        if residual is not None:\n"
             "            state = (state[0] + x,) + tuple(state[1:])\n"
             "        state = step(p, x, state)\n"
             "        h = state[0]\n"
             "        if residual is not None:\n"
             "            h = h ",
         visible="stacked_step_tests", shows="residual='vertical', step 1: top output",
         failing=("ch07.residual_vertical", "ch07.residual_lateral"),
         says="the residual is added to h_{t-1} before the layer runs", score=3),
    Slip("lateral residual not passed to the next step", "07_stacked_residual", "stacked_step",
         old='if residual == "lateral":',
         new="if False:",
         visible="stacked_step_tests", shows="residual='lateral', step 1: new states",
         failing=("ch07.residual_lateral",),
         says="must also replace h (new_state[0])", score=4),
    Slip("horizontal residual adds the input x_t, not h_{t-1}", "07_stacked_residual", "horizontal_step",
         old="return (new_state[0] + state[0],)",
         new="return (new_state[0] + x,)",
         visible="horizontal_step_tests", shows="step 1: new state (h, c)",
         failing=("ch07.residual_horizontal",),
         says="adds the fast state of the previous time step", score=4),
    # ------------------------------------------------------------------ 08: ablations, weights
    Slip("RAN gates reading h_prev, not c_prev", "08_weighted_sum", "ran_step",
         old='    _, c_prev = state\n'
             '    content = dy.affine_transform([p["b_u"], p["W_xu"], x])\n'
             '    i = dy.logistic(dy.affine_transform([p["b_i"], p["W_ci"], c_prev, p["W_xi"], x]))\n'
             '    f = dy.logistic(dy.affine_transform([p["b_f"], p["W_cf"], c_prev, p["W_xf"], x]))',
         new='    h_prev, c_prev = state\n'
             '    content = dy.affine_transform([p["b_u"], p["W_xu"], x])\n'
             '    i = dy.logistic(dy.affine_transform([p["b_i"], p["W_ci"], h_prev, p["W_xi"], x]))\n'
             '    f = dy.logistic(dy.affine_transform([p["b_f"], p["W_cf"], h_prev, p["W_xf"], x]))',
         visible="ran_tanh_step_visible", shows="the gates read c_prev (W_ci, W_cf), not h_prev",
         failing=("ch08.ran_tanh_step", "ch08.ran_identity_step"),
         says="in a RAN they read the previous memory cell c_{t-1}", score=11),
    Slip("LSTM - S-RNN with a tanh content layer", "08_weighted_sum", "lstm_minus_srnn_step",
         old='content = p["W_xu"] * x',
         new='content = dy.tanh(p["W_xu"] * x)',
         visible="lstm_minus_srnn_step_visible", shows="eq 9's content layer is W_xu x_t alone",
         failing=("ch08.lstm_minus_srnn_step",),
         says="the content layer is squashed with tanh", score=12),
    Slip("memory weights: the product includes f_j", "08_weighted_sum", "memory_weights",
         old="w[t, t] = i[t]",
         new="w[t, t] = i[t] * f[t]",
         visible="memory_weights_visible", shows="w[:, :, 0] should be",
         failing=("ch08.memory_weights", "ch08.memory_weights_saturated"),
         says="w[t, t] must be i_t", score=11),
    Slip("most influential word: the word itself counted", "08_weighted_sum", "most_influential",
         old="np.argmax(strength[t, :t])",
         new="np.argmax(strength[t, :t + 1])",
         visible="most_influential_visible", shows="only predecessors j < t count",
         failing=("ch08.most_influential",),
         says="only predecessors count", score=12),
    # ------------------------------------------------------------------ 09: dropout, Monte Carlo dropout
    Slip("dropout left on at test time (the rate fixed, p ignored)", "09_dropout", "variational_dropout",
         old="    if p == 0:\n"
             "        return list(xs)\n"
             "    d, batch_size = xs[0].dim()[0][0], xs[0].dim()[1]\n"
             "    mask = dy.random_bernoulli((d,), 1.0 - p, 1.0 / (1.0 - p), batch_size=batch_size)",
         new="    d, batch_size = xs[0].dim()[0][0], xs[0].dim()[1]\n"
             "    mask = dy.random_bernoulli((d,), 0.5, 2.0, batch_size=batch_size)",
         visible="variational_dropout_tests", shows="as at test time",
         failing=("ch09.dropout_mask", "ch09.dropout_off"),
         says="it must follow p", score=8),
    Slip("a new dropout mask at every step", "09_dropout", "variational_dropout",
         old="return [dy.cmult(x, mask) for x in xs]",
         new="return [dy.dropout(x, p) for x in xs]",
         visible="variational_dropout_tests", shows="the mask must be the same at every time step",
         failing=("ch09.dropout_mask",),
         says="the mask changes from one time step", score=9),
    Slip("Monte Carlo average of log-probabilities", "09_dropout", "mc_token_logprobs",
         old="result.append(top + np.log(np.exp(a - top).sum(axis=0)) - np.log(samples))",
         new="result.append(a.mean(axis=0))",
         visible="mc_token_logprobs_tests", shows="the mean probabilities are [0.4, 0.3, 0.8]",
         failing=("ch09.mc_average", "ch09.mc_stable", "ch09.mc_model"),
         says="averages of log-probabilities", score=6),
    Slip("Monte Carlo average without log-sum-exp", "09_dropout", "mc_token_logprobs",
         old="result.append(top + np.log(np.exp(a - top).sum(axis=0)) - np.log(samples))",
         new="result.append(np.log(np.exp(a).mean(axis=0)))",
         visible="mc_token_logprobs_tests", shows="use the log-sum-exp trick",
         failing=("ch09.mc_stable",),
         says="exp() underflows", score=9),
    Slip("perplexity over the words only, `</s>` not counted", "09_dropout", "mc_dropout_perplexity",
         old="sum(len(s) + 1 for s in sentences)",
         new="sum(len(s) for s in sentences)",
         visible="mc_dropout_perplexity_tests", shows="so the perplexity is 5",
         failing=("ch09.mc_dropout_perplexity",),
         says="len(s) + 1 predictions per sentence", score=7),
    # ------------------------------------------------------------------ 11: causal_attention
    Slip("mask off by one: the next word visible", "11_attention", "causal_attention",
         old="np.tril(np.full((T, T), -1e9), k=-1)",
         new="np.tril(np.full((T, T), -1e9), k=-2)",
         visible="attention_causal", shows="changing word 5 changed the output at position(s) [4]",
         failing=("ch11.attention_one_head", "ch11.attention_heads", "ch11.attention_causal", "ch11.attention_long"),
         says="position t sees position t + 1", score=1.5),
    Slip("mask off by one: the word itself hidden", "11_attention", "causal_attention",
         old="np.tril(np.full((T, T), -1e9), k=-1)",
         new="np.tril(np.full((T, T), -1e9), k=0)",
         visible="attention_values", shows="with one head, H of the first sentence is",
         failing=("ch11.attention_one_head", "ch11.attention_heads", "ch11.attention_causal", "ch11.attention_long"),
         says="position t does not see itself", score=1.5),
    Slip("scores not scaled", "11_attention", "causal_attention",
         old="dy.transpose(k) * q / np.sqrt(d_k) +",
         new="dy.transpose(k) * q +",
         visible="attention_values", shows="with one head, H of the first sentence is",
         failing=("ch11.attention_one_head", "ch11.attention_heads", "ch11.attention_long"),
         says="the scores are not scaled", score=3),
    Slip("scores scaled by sqrt(d), not each head's sqrt(d_k)", "11_attention", "causal_attention",
         old="q / np.sqrt(d_k)",
         new="q / np.sqrt(d)",
         visible="attention_values", shows="with two heads, H of the first sentence is",
         failing=("ch11.attention_heads", "ch11.attention_long"),
         says="divided by sqrt(d), the whole width", score=4),
    Slip("softmax over the wrong axis (the queries)", "11_attention", "causal_attention",
         old="dy.softmax(scores, d=0)",
         new="dy.softmax(scores, d=1)",
         visible="attention_values", shows="with one head, H of the first sentence is",
         failing=("ch11.attention_one_head", "ch11.attention_heads", "ch11.attention_causal", "ch11.attention_long"),
         says="the softmax runs over the wrong axis", score=1.5),
    Slip("no causal mask: future positions visible", "11_attention", "causal_attention",
         old="scores = dy.transpose(k) * q / np.sqrt(d_k) + dy.inputTensor(later)",
         new="scores = dy.transpose(k) * q / np.sqrt(d_k)",
         visible="attention_causal", shows="changing word 5 changed the output at position(s) [1, 2, 3, 4]",
         failing=("ch11.attention_causal", "ch11.attention_one_head", "ch11.attention_heads", "ch11.attention_long"),
         says="position t sees the later positions", score=1.5),
    Slip("positions not added", "11_attention", "causal_attention",
         old='X = X + dy.select_cols(p["P"], list(range(T)))',
         new="X = X",
         visible="attention_values", shows="with one head, H of the first sentence is",
         failing=("ch11.attention_one_head", "ch11.attention_heads", "ch11.attention_lengths", "ch11.attention_long"),
         says="the positions are not added", score=2.5),
]

def solution_with(slip: Slip):
    """The solution notebook with the slip in its answer cell."""
    nb = nbformat.read(ROOT / "solutions" / f"{slip.chapter}.ipynb", as_version=4)
    cells = [c for c in nb.cells if marks(c).get("grade_id") == slip.answer]
    assert len(cells) == 1 and cells[0].source.count(slip.old) == 1, \
        f"{slip.name}: {slip.old!r} must occur once in the answer cell {slip.answer}"
    cells[0].source = cells[0].source.replace(slip.old, slip.new)
    return nb


def is_test(cell) -> bool:
    return bool(marks(cell).get("grade"))


def visible_failures(nb) -> dict:
    """Run the notebook as a student does, up to its last test cell, in this process:
    every code cell in order, each test cell without its hidden part. Returns
    {test cell: its error} for the test cells that fail."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    last = max(i for i, c in enumerate(code) if is_test(c))
    namespace = {"__name__": "__main__"}
    failures = {}
    for cell in code[:last + 1]:
        source = cell.source.split(HIDDEN)[0]
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")          # a slip's log(0): the student sees it too
            try:
                exec(compile(source, marks(cell).get("grade_id", "cell"), "exec"),
                     namespace)
            except Exception as err:
                if not is_test(cell):
                    raise
                failures[marks(cell)["grade_id"]] = f"{type(err).__name__}: {err}"
    return failures


def expected_points(slip: Slip) -> dict:
    """Each test cell's points: the shares of its checks that do not fail."""
    return {gid: sum(share for name, share in shares.items() if name not in slip.failing)
            for gid, shares in grader.spec_of(ROOT / "solutions" / f"{slip.chapter}.ipynb").shares.items()}


def table() -> str:
    """The slip table of autograder/README.md."""
    lines = ["| # | chapter | slip | visible check that fails: what it shows | hidden checks that fail | score "
             "| message |",
             "|---|---|---|---|---|---|---|"]
    for n, slip in enumerate(SLIPS, 1):
        tests = grader.spec_of(ROOT / "solutions" / f"{slip.chapter}.ipynb").tests
        failing = ", ".join(f"`{name}`" for name in slip.failing)
        lines.append(f"| {n} | {slip.chapter} | {slip.name} | `{slip.visible}`: `{slip.shows}` ... | {failing} | "
                     f"{slip.score:g}/{sum(points for _, points, _ in tests):g} | `{slip.says}` ... |")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="session")
def graded(tmp_path_factory):
    """Each slip graded once per run by the trusted grader (one sandbox run each), by the worker
    that meets it first; both of its tests, on either worker, read that result."""
    def grade(slip: Slip) -> grader.Result:
        def build(folder):
            path = folder / f"{slip.chapter}.ipynb"
            nbformat.write(solution_with(slip), path)
            (folder / "result.json").write_text(json.dumps(grader.grade(path, slip.chapter, LIMITS).to_json()))
        folder = once_per_run(tmp_path_factory, f"slip{SLIPS.index(slip):02d}", build)
        return grader.Result(**json.loads((folder / "result.json").read_text()))
    return grade


@pytest.mark.parametrize("slip", SLIPS, ids=[f"{s.chapter}-{s.name}" for s in SLIPS])
def test_the_grader_gives_each_cell_its_points_and_says_why(slip, graded):
    result = graded(slip)
    assert result.failure is None and not result.aborted, (result.failure, result.notes)
    failing = {name for cell in result.cells for name, problems in cell["checks"].items() if problems}
    assert failing == set(slip.failing), {c["grade_id"]: c["checks"] for c in result.cells}
    said = [p for cell in result.cells for p in cell["checks"].get(slip.failing[0], [])]
    assert any(slip.says in p for p in said), said
    assert {c["grade_id"]: c["points"] for c in result.cells} == pytest.approx(expected_points(slip))
    assert result.score == pytest.approx(slip.score)
    for cell in result.cells:               # messages are short and numbers-and-names only
        for problems in cell["checks"].values():
            assert all(len(p) <= 400 for p in problems), problems


@pytest.mark.parametrize("slip", SLIPS, ids=[f"{s.chapter}-{s.name}" for s in SLIPS])
def test_the_visible_checks_catch_it_first(slip, graded):
    failures = visible_failures(solution_with(slip))
    assert slip.visible in failures, f"{slip.name} passes the visible check {slip.visible}"
    assert slip.shows in failures[slip.visible], failures[slip.visible]
    losing = {c["grade_id"] for c in graded(slip).cells if c["points"] < c["max_points"]}
    assert losing - set(slip.explained) <= set(failures), \
        f"{sorted(losing - set(failures))} lose points but pass visibly"


@pytest.mark.parametrize("chapter", sorted({s.chapter for s in SLIPS}))
def test_the_solution_passes_every_visible_check(chapter):
    nb = nbformat.read(ROOT / "solutions" / f"{chapter}.ipynb", as_version=4)
    assert visible_failures(nb) == {}


def test_every_check_says_what_it_ran_where_to_reread_and_which_visible_check_matches():
    """The feedback page's metadata: ``about`` (the inputs, in words), ``lecture`` (a
    heading or equation the lecture holds), ``visible`` (the test cell whose hidden
    tests name the check)."""
    for name, c in all_checks().items():
        chapter = name[2:4]
        assert c.about and len(c.about) <= 300, name
        stem, where = c.lecture
        lecture = nbformat.read(ROOT / "lectures" / f"{stem}.ipynb", as_version=4)
        text = "\n".join(cell.source for cell in lecture.cells if cell.cell_type == "markdown")
        found = (f"\\tag{{{where[3:]}}}" in text) if where.startswith("eq ") else (where in text)
        assert found, f"{name}: {where!r} is not in lectures/{stem}.ipynb"
        solution = next((ROOT / "solutions").glob(f"{chapter}_*.ipynb"))
        shares = grader.spec_of(solution).shares
        assert name in shares.get(c.visible, {}), f"{name}: {c.visible} is no test cell that names it"


def test_a_cell_splits_its_points_as_its_calls_say():
    source = ('check("ch05.a", f=f, points=2)\n'
              'check("ch05.b", f=f)\ncheck(\n    "ch05.c", f=f)\n')
    assert check_calls(source) == [("ch05.a", 2.0), ("ch05.b", None), ("ch05.c", None)]
    assert split_points(4, check_calls(source)) == {"ch05.a": 2.0, "ch05.b": 1.0, "ch05.c": 1.0}
    with pytest.raises(ValueError, match="do not add up"):
        split_points(3, [("ch05.a", 2.0), ("ch05.b", 2.0)])
    with pytest.raises(ValueError, match="do not add up"):
        split_points(3, [("ch05.a", 2.0)])


def points_table() -> str:
    """Each test cell's points and their split over its checks, for every chapter with a cell that
    splits its points (00, 01 and the capstone hold one check per cell: nothing to split)."""
    lines = ["| chapter | test cell: points = check points + ... | total |", "|---|---|---|"]
    for path in sorted((ROOT / "solutions").glob("*.ipynb")):
        spec = grader.spec_of(path)
        if all(len(shares) == 1 for shares in spec.shares.values()):
            continue
        cells = "; ".join(f"`{gid}` {points:g} = " + " + ".join(f"{name.split('.')[1]} {share:g}"
                                                              for name, share in spec.shares[gid].items())
                          for gid, points, _ in spec.tests)
        lines.append(f"| {path.stem} | {cells} | {sum(points for _, points, _ in spec.tests):g} |")
    return "\n".join(lines) + "\n"


def test_the_readme_tables_are_these():
    readme = (ROOT / "autograder" / "README.md").read_text()
    assert points_table() in readme and table() in readme, \
        "the tables of autograder/README.md are stale: python -m tests.test_slips"


if __name__ == "__main__":
    print(points_table(), end="\n")
    print(table(), end="")
