"""What the lectures look inside: the converged models of bench/converge.py, small.

* the embeddings and recurrent weights of the LSTM (forget bias 1 and 0) and the GRU, seed
  1, in the layout of DyNet's builder of that cell (chapters 04, 05, 08 load them into
  `lm.RNNLM(vocab, "lstm" | "gru", ...)`): RECORDS/NAME-s1-weights.npz, float16, about 1 MB
  each; the softmax layer is left out (the lectures draw gates, not predictions);
* [RAN] eq 8 on the agreement pairs: for every number pair whose cue is 6 or more words
  before the verb, the most influential previous word of the state that predicts the verb
  (see `arrows`): how often it is the cue, for every cell whose memory is a weighted sum:
  RECORDS/arrows.json;
* the gates and content of LSTM - S-RNN - OUT (the pure weighted-sum model, [WS] eq 11) on a
  few of those sentences, for chapter 08's figures: RECORDS/lstm-srnn-out-s1-gates.npz.
* the attention weights of chapter 11's converged attention models (attention alone, and on
  top of an LSTM), per head, on the same sentences, and their mean weight by distance at the
  state that predicts the verb of the far number pairs: RECORDS/NAME-s1-attention.npz;
* how well each converged model (seed 1, its best epoch) fits the sentences it was trained
  on: its perplexity on the training split, in evaluation mode, beside valid and the training
  split's floor: RECORDS/train_fit.json (bench/converge_tables.py states it with the 3% goal).

Each part needs the checkpoints under runs/converge/ of the runs it reads.

    .venv/bin/python bench/converge_inside.py
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from common import ROOT
from converge import ATTENTION, DEPTH, MODELS, NGRAMS, RECORDS, WORK, best_parameters, build_model, load_splits

from course import runtime
from course.bench import BUILDER_PARAMETERS

WEIGHTS = ("lstm", "lstm-fb0", "gru")
#: the cells whose memory is a weighted sum ([WS] eq 8): their reference steps record i and f
WEIGHTED_SUMS = ("lstm-noforget", "lstm", "lstm-fb0", "lstm-srnn", "lstm-srnn-out", "lstm-srnn-hidden",
                 "ran-identity", "ran-tanh")
GATES_OF, GATE_SENTENCES = "lstm-srnn-out", 12
FAR = 6           # the pairs whose cue is at least this far before the verb

#: the weights of a converged hand-written cell in the layout of DyNet's builder of that cell
BUILDER_LAYOUT = {
    "lstm": ("lstm", lambda p: {"W_x": np.vstack([p["W_x" + g] for g in "ifou"]),
                                "W_h": np.vstack([p["W_h" + g] for g in "ifou"]),
                                # the builder adds its forget bias of 1 inside the forget gate itself
                                "b": np.concatenate([p["b_i"], p["b_f"] - 1.0, p["b_o"], p["b_u"]])}),
    "gru": ("gru", lambda p: {k: p[k] for k in BUILDER_PARAMETERS["gru"]}),
}


def load_best(name: str, seed: int, splits: dict, work=WORK):
    """The best epoch of a finished run, as a course.lm.RNNLM with its reference cell."""
    from course.data import Vocab
    _, cell_name, size = MODELS[name]
    best = best_parameters(name, seed, work)
    if not best.exists():
        raise FileNotFoundError(f"{best} is missing: train the run first (python bench/converge.py "
                                f"--models {name} --seeds {seed})")
    runtime.init(seed=seed)
    model = build_model(Vocab.build(splits["train"]), cell_name, size)
    model.pc.populate(str(best))
    return model


def export_weights(name: str, seed: int, splits: dict, records=RECORDS, work=WORK) -> Path:
    """Write a one-layer hand-written LSTM or GRU's embeddings and recurrent weights as float16
    in its builder's layout to RECORDS/NAME-sSEED-weights.npz."""
    cell_name = MODELS[name][1]
    if cell_name not in BUILDER_LAYOUT or MODELS[name][2].get("layers", 1) != 1:
        raise ValueError(f"{name}: only one-layer hand-written {sorted(BUILDER_LAYOUT)} cells can be exported")
    model = load_best(name, seed, splits, work)
    params = {k: v.as_array() for k, v in model.layers[0].params.items()}
    builder, layout = BUILDER_LAYOUT[cell_name]
    arrays = {k: v.astype(np.float16) for k, v in layout(params).items()}
    path = Path(records) / f"{name}-s{seed}-weights.npz"
    np.savez_compressed(path, M=model.embeddings.as_array().astype(np.float16), builder=builder, **arrays)
    return path


def trace(model, words) -> dict:
    """The reference cell's recorded gates while the model reads <s> + words (one sentence)."""
    from autograder.reference.weights import run_and_record
    ids = [model.vocab.bos] + [model.vocab.index(w) for w in words]
    layer = model.layers[0]
    return run_and_record(layer.cell, layer.params, model.embeddings.as_array()[ids])


def wilson(k: int, n: int, z: float = 1.96) -> tuple:
    """The Wilson 95% interval of a proportion k / n."""
    p = k / n
    centre, half = (p + z * z / (2 * n)) / (1 + z * z / n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def verb_readout(model, pair) -> np.ndarray:
    """g = d(score of the right verb form - score of the wrong one) / d c_t at the state that
    predicts the verb: how much each component of the memory moves the model's choice."""
    dy = runtime.dynet()
    layer = model.layers[0]
    ids = [model.vocab.bos] + [model.vocab.index(w) for w in pair.words[:pair.target_index]]
    dy.renew_cg()
    p = {name: value.expr(False) for name, value in layer.params.items()}
    state = tuple(dy.zeros((model.config.hidden,)) for _ in range(layer.cell.n_state))
    for i in ids:
        state = layer.cell.step(p, dy.lookup(model.embeddings, i), state)
    scores = dy.affine_transform([model.b_s.expr(False), model.W_hs.expr(False), state[0]])
    margin = dy.pick(scores, model.vocab.index(pair.right)) - dy.pick(scores, model.vocab.index(pair.wrong))
    margin.backward(full=True)
    return state[1].gradient()


def arrows(model, pairs) -> dict:
    """The most influential previous word of the state that predicts the verb, three ways: [RAN]
    eq 8 ("max": the largest single component of w_j^t), the L2 norm of w_j^t ("l2"), and
    "readout": the word whose part of the memory, w_j^t * c~_j, pushes the verb's score towards
    the right form the most (its dot product with `verb_readout`). How often each is the cue, the
    word just before the state, or the cue's phrase (the cue or the word before it, e.g. "these");
    "chance": the share a predecessor drawn at random would hit."""
    from autograder.reference.weights import memory_weights, most_influential
    counts = {score: {"cue": 0, "previous": 0, "cue_or_before": 0} for score in ("max", "l2", "readout")}
    chance = 0.0
    for pair in pairs:
        recorded = trace(model, list(pair.words[:pair.target_index]))
        w, _ = memory_weights(recorded["i"], recorded.get("f"))
        t = pair.target_index                     # step t reads word t-1 (step 0 reads <s>) and predicts the verb
        chance += 1 / t                           # t predecessors j < t to choose from
        readout = (w[t, :t] * recorded["content"][:t]) @ verb_readout(model, pair)
        for score, found in counts.items():
            v = int(np.argmax(readout)) if score == "readout" else most_influential(w, score)[t]
            found["cue"] += int(v == pair.cue_index + 1)
            found["cue_or_before"] += int(v in (pair.cue_index, pair.cue_index + 1))
            found["previous"] += int(v == t - 1)
    out = {"pairs": len(pairs), "chance": chance / len(pairs)}
    for score, found in counts.items():
        low, high = wilson(found["cue"], len(pairs))
        out[score] = {**found, "cue_share": found["cue"] / len(pairs), "low": low, "high": high,
                      "cue_or_before_share": found["cue_or_before"] / len(pairs),
                      "previous_share": found["previous"] / len(pairs)}
    return out


def record_gates(model, pairs, path: Path) -> Path:
    """For each pair: the input and forget gates and the content layer (float16) while the model
    reads the sentence up to and including the verb, and `verb_readout` at the state that
    predicts the verb; with the words and the cue and verb positions."""
    arrays, meta = {}, []
    for k, pair in enumerate(pairs):
        recorded = trace(model, list(pair.words[:pair.target_index + 1]))
        for key in ("i", "f", "content"):
            arrays[f"{key}{k}"] = recorded[key].astype(np.float16)
        arrays[f"readout{k}"] = verb_readout(model, pair).astype(np.float16)
        meta.append({"words": list(pair.words[:pair.target_index + 1]), "cue_index": pair.cue_index,
                     "target_index": pair.target_index, "right": pair.right, "wrong": pair.wrong})
    np.savez_compressed(path, sentences=json.dumps(meta), **arrays)
    return path


def record_attention(model, pairs, far_pairs, path: Path) -> Path:
    """For each pair: the attention weights, one (T, T) array per head (float16, [t, j] the weight
    of input j at position t; input 0 is <s>), while the model reads the sentence up to the word
    before the verb; with the words and the cue and verb positions. And the mean weight by
    distance before the state that predicts the verb, on every tenth of `far_pairs`, as
    bench/attention_compare.py measures its small models."""
    from attention_compare import weights_of, where_weights_fall
    arrays, meta = {}, []
    for k, pair in enumerate(pairs):
        arrays[f"a{k}"] = np.stack(weights_of(model, list(pair.words[:pair.target_index]))).astype(np.float16)
        meta.append({"words": list(pair.words[:pair.target_index + 1]), "cue_index": pair.cue_index,
                     "target_index": pair.target_index})
    fall = where_weights_fall(model, far_pairs[::10])
    np.savez_compressed(path, sentences=json.dumps(meta), weights=json.dumps(fall), **arrays)
    return path


def train_fit(name: str, seed: int, splits: dict, work=WORK) -> dict:
    """The best epoch of a finished run scored on the training split (evaluation mode: no
    dropout), beside the training split's floor."""
    from course import evaluation
    from course.grammar import floor_perplexity
    model = load_best(name, seed, splits, work)
    return {"seed": seed, "train_ppl": evaluation.evaluate(model, splits["train"]), "train_floor": floor_perplexity("train")}


def finished(name: str, seed: int = 1, records=RECORDS) -> bool:
    record = Path(records) / f"{name}-s{seed}.json"
    return record.exists() and "final" in json.loads(record.read_text())


def far_number_pairs():
    from course.agreement import load_pairs
    return [p for p in load_pairs() if p.task == "number" and p.distance >= FAR]


def main():
    runtime.init(seed=1, mem=1536)
    splits = load_splits()
    for name in WEIGHTS:
        if best_parameters(name, 1).exists():
            print(f"wrote {export_weights(name, 1, splits).relative_to(ROOT)}", flush=True)
    pairs = far_number_pairs()
    path = RECORDS / "arrows.json"
    found = json.loads(path.read_text()) if path.exists() else {}
    for name in WEIGHTED_SUMS:
        if name not in found and finished(name):
            found[name] = arrows(load_best(name, 1, splits), pairs)
            path.write_text(json.dumps(found, indent=1) + "\n")
            print(f"{name}: the verb's arrow points at the cue in {found[name]['max']['cue']} of {len(pairs)} "
                  f"pairs ([RAN] eq 8)", flush=True)
    path = RECORDS / "train_fit.json"
    fits = json.loads(path.read_text()) if path.exists() else {}
    for name in MODELS:
        if name not in fits and name not in NGRAMS + DEPTH and finished(name):
            fits[name] = fit = train_fit(name, 1, splits)
            path.write_text(json.dumps(fits, indent=1) + "\n")
            print(f"{name}: perplexity {fit['train_ppl']:.2f} on the training split (its floor "
                  f"{fit['train_floor']:.2f})", flush=True)
    chosen = sorted(pairs, key=lambda p: (len(p.words[:p.target_index]), p.distance))[::len(pairs) // GATE_SENTENCES]
    if best_parameters(GATES_OF, 1).exists():
        print(f"wrote {record_gates(load_best(GATES_OF, 1, splits), chosen[:GATE_SENTENCES], RECORDS / f'{GATES_OF}-s1-gates.npz').relative_to(ROOT)}")
    for name in ATTENTION:
        path = RECORDS / f"{name}-s1-attention.npz"
        if not path.exists() and finished(name):
            print(f"wrote {record_attention(load_best(name, 1, splits), chosen[:GATE_SENTENCES], pairs, path).relative_to(ROOT)}")


if __name__ == "__main__":
    main()
