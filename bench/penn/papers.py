"""What the papers published: their PTB numbers (PUBLISHED, ZAREMBA_SMALL), the results page's
section that quotes their tables (PUBLISHED_TEXT), and how this setup differs (SETUP_TEXT)."""
from __future__ import annotations

# The seeds' PTB tables, as published (perplexity; the weighted-sum papers do not say
# which split their table reports; Zaremba's test split is used in their tutorial code).
PUBLISHED = {
    # 000_*: "LSTM as a Dynamically Computed Element-wise Weighted Sum", workshop version, Table 1
    "ws_medium": {"srnn": 140.9, "lstm": "83.9 ± 0.3", "lstm-srnn": 80.5, "lstm-srnn-out": 81.6},
    "ws_large": {"srnn": 126.1, "lstm": "78.8 ± 0.2", "lstm-srnn": 76.0, "lstm-srnn-out": 78.5},
    # 002_*: the same paper, later version, Table 1 (adds - S-RNN - HIDDEN; the S-RNN is "- GATES")
    "ws2_medium": {"lstm": "83.9 ± 0.3", "lstm-srnn": 80.5, "lstm-srnn-out": 81.6,
                   "lstm-srnn-hidden": 83.3, "srnn": 140.9},
    "ws2_large": {"lstm": "78.8 ± 0.2", "lstm-srnn": 76.0, "lstm-srnn-out": 78.5,
                  "lstm-srnn-hidden": 82.9, "srnn": 126.1},
    # 004_*: "Recurrent Additive Networks", Table 1 (PTB row)
    "ran": {"srnn": 352.6, "gru": 147.1, "lstm": 157.7, "ran-identity": 130.9, "ran-tanh": 121.0},
}
ZAREMBA_SMALL = {"valid": 120.7, "test": 114.5}


PUBLISHED_TEXT = f"""## The papers' PTB tables, as published

Zaremba et al. (2014), Table 1, non-regularised LSTM (the "small" configuration used here:
2 x 200, 13 epochs): valid **{ZAREMBA_SMALL['valid']}**, test **{ZAREMBA_SMALL['test']}**.

Weighted-sum paper, workshop version (seeds `000_*`, Table 1; Zaremba's medium = 2 x 650 and
large = 2 x 1500 configurations, with dropout):

| configuration | S-RNN | LSTM | LSTM - S-RNN | LSTM - S-RNN - output gate |
|---|---|---|---|---|
| PTB (Medium Model) | 140.9 | 83.9 ± 0.3 | 80.5 | 81.6 |
| PTB (Large Model) | 126.1 | 78.8 ± 0.2 | 76.0 | 78.5 |

The same paper, later version (seeds `002_*`, Table 1):

| configuration | LSTM | - S-RNN | - S-RNN - OUT | - S-RNN - HIDDEN | - GATES |
|---|---|---|---|---|---|
| PTB (Medium) | 83.9 ± 0.3 | 80.5 | 81.6 | 83.3 | 140.9 |
| PTB (Large) | 78.8 ± 0.2 | 76.0 | 78.5 | 82.9 | 126.1 |

Recurrent additive networks (seeds `004_*`, Table 1; 1 layer, embeddings 256, hidden 1024,
50% variational dropout, Adam, batch 512, 100 epochs):

| | Simple RNN | GRU | LSTM | RAN (identity) | RAN (tanh) |
|---|---|---|---|---|---|
| PTB | 352.6 | 147.1 | 157.7 | 130.9 | 121.0 |
| # RNN parameters | 1.31M | 3.94M | 5.25M | 2.89M | 2.89M |

Its Table 2 (the LSTM simplified step by step; the middle column's heading is lost in the seed's
text extraction, the text calls it "Simplified Content Layer"): PTB 157.7 (original LSTM),
134.7, 121.0 (RAN (tanh)); RNN parameters 5.25M, 4.20M, 2.89M.
"""

SETUP_TEXT = """## Setup, and how it differs from the papers

Every model: Zaremba et al.'s (2014) non-regularised "small" budget (2 layers of 200,
embeddings 200, 13 epochs, batch 20, truncated backpropagation over 20 steps with the state
carried between segments and reset at each epoch, SGD lr 1 halved after every epoch past the
4th, gradient norm clipped at 5, all parameters uniform in [-0.1, 0.1], no dropout). Only the
recurrent cell changes (the course's `course.lm.RNNLM` with the reference cells of
`autograder/reference/cells.py`, S-RNN and GRU through DyNet's builders, which compute the
same equations). Differences from their code, all small:

- 20 steps, not 35: the small configuration unrolls 20 steps in both of their published
  programs (the authors' Torch `main.lua`, "Trains 1h and gives test 115 perplexity", and the
  TensorFlow PTB tutorial's `SmallConfig`); 35 belongs to the medium and large configurations;
- the learning rate is halved from epoch 5 on (the TensorFlow tutorial; the Torch program
  halves from epoch 6);
- the vocabulary has 10,001 entries: PTB's 10,000 (with `</s>` as end of sentence) and the
  course's `<s>`, which the stream never uses (one more embedding and softmax row);
- the stream starts with `</s>`, so the first word is predicted too; valid and test are each
  read as one stream (batch 1, as their Torch test evaluation; their validation read 20
  columns), every word counted;
- one LSTM bias per gate (their Torch LSTM has two, one in each of its input and recurrent
  linear maps: the same function);
- the seed is fixed (1) and one run per model is reported (the weighted-sum papers give the
  LSTM's spread over 5 runs: ± 0.2 to ± 0.3). A run is bit-for-bit repeatable on one machine,
  not across machines: the same seed and code gave epoch-1 perplexities 0.2% to 0.9% apart on
  two hosts of this project (floating-point rounding differs between CPUs, and training
  amplifies it);
- runs named "learning rate X" change one setting, the learning rate, for a cell that does not
  train at 1 (the S-RNN, the GRU and the RANs; `LOWER_LR` in `bench/penn/models.py` says why), and
  keep the schedule (halved after every epoch past the 4th);
- the weighted-sum papers trained Zaremba's *medium* and *large* configurations with dropout,
  and the RAN paper a 1 x 1024 network with dropout and Adam for 100 epochs: their numbers are
  for bigger, regularised models. Here every model gets the small, unregularised budget, so the
  absolute numbers are higher and the comparison is of the pattern.
"""

