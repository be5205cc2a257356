"""The three differences seed 002 (section 4, "LSTM as Self-Attention") names between the LSTM's
weighted sum and self-attention, measured on the course corpus with small, briefly trained models.

Models (width 32 for every layer, Adam, --epochs passes over the first --train training sentences,
two seeds unless --seeds says otherwise; small and short so that it runs in minutes on two cores:
they are not converged, and the table says how far each is from the floor):

* "lstm": DyNet's LSTM: a weighted sum with a *vector* of weights per word (seed 002, eq 9's cousin);
* "gru": DyNet's GRU: h_t a weighted *average* of h_{t-1} and the candidate (coupled gates);
* "attn-1": causal self-attention alone (course.layers.CausalAttention) with learned positions,
  one head: one *scalar* weight per word, a softmax distribution;
* "attn-4": the same with four heads: four scalar weights per word;
* "attn-sigmoid": one head whose weights are each a sigmoid, *not normalised*: their sum can grow
  with the length, as the LSTM's memory can;
* "lstm+attn": attention (four heads) on top of an LSTM (the LSTM gives it the order).

Measured for each: validation perplexity (all of valid) beside the exact floor, agreement on the
course's minimal pairs by distance and by attractors (course.agreement), and

* where the weights fall (attention models): at the state that predicts the verb of each number
  pair, the mean weight on the words at each distance before it, and the share on the subject's
  head noun (the cue) beside the uniform share 1 / (t + 1);
* normalisation: by position t in valid sentences of at least 20 words, the sum of the weights
  sum_j a_tj (attention models; per head, averaged), the mean |c_t| of the LSTM's memory and the
  mean |h_t| of the GRU's state.

    .venv/bin/python bench/attention_compare.py [--train 12000] [--epochs 3] [--seeds 2]

Writes bench/results/attention_compare.md and .json (lecture 11 reads the JSON).
"""
import argparse
import json
import sys
import time

import numpy as np

from common import RESULTS, report, table

WIDTH, POSITIONS, LR, BATCH = 32, 100, 0.01, 32
DISTANCES = 16                 # the weight by distance: 0 .. DISTANCES - 1 words before the state
LONG = 20                      # normalisation: positions 1 .. LONG of sentences at least this long
MODELS = {   # name: (label, what its weights are)
    "lstm": ("LSTM", "a vector per word (d = 32 components), by a dynamic program"),
    "gru": ("GRU", "a weighted average of h_{t-1} and the candidate (coupled gates)"),
    "attn-1": ("attention, 1 head", "one scalar per word, a softmax"),
    "attn-4": ("attention, 4 heads", "four scalars per word, four softmaxes"),
    "attn-sigmoid": ("attention, 1 head, sigmoid weights", "one scalar per word in (0, 1), not normalised"),
    "lstm+attn": ("LSTM + attention (4 heads)", "attention over the LSTM's outputs"),
}


def sigmoid_attention():
    """course.layers.CausalAttention whose weights are each a sigmoid of the score, not normalised
    (the masked scores, -1e9, give weight 0)."""
    from course import runtime
    from course.layers import CausalAttention
    dy = runtime.dynet()

    class SigmoidAttention(CausalAttention):
        @staticmethod
        def normalise(scores):
            return dy.logistic(scores)
    return SigmoidAttention


def build(name: str, vocab):
    from course import lm
    from course.layers import CausalAttention
    cell = "gru" if name == "gru" else "lstm"
    model = lm.RNNLM(vocab, cell, WIDTH, WIDTH)
    if name.startswith("attn"):        # the LSTM the model was made with is replaced (its parameters stay, unused)
        heads = 4 if name == "attn-4" else 1
        kind = sigmoid_attention() if name == "attn-sigmoid" else CausalAttention
        model.layers[0] = kind(model.pc, WIDTH, WIDTH, heads=heads, positions=POSITIONS)
    if name == "lstm+attn":
        model.layers.append(CausalAttention(model.pc, WIDTH, WIDTH, heads=4))
    return model


def attention_layer(model):
    from course.layers import CausalAttention
    return next((layer for layer in model.layers if isinstance(layer, CausalAttention)), None)


def weights_of(model, words):
    """The attention weights over <s> + words: per head, (T, T) with [t, j] the weight of input j at t."""
    from course import runtime
    dy = runtime.dynet()
    layer = attention_layer(model)
    ids = [model.vocab.bos] + [model.vocab.index(w) for w in words]
    layer.record = True
    try:
        dy.renew_cg()
        model.hidden_states([[i] for i in ids])
        return [A[:, :, 0] for A in layer.recorded]
    finally:
        layer.record = False


def where_weights_fall(model, pairs) -> dict:
    """At the state that predicts each number pair's verb: the mean weight by distance, and on the cue."""
    by_distance, cue, uniform = np.zeros(DISTANCES), [], []
    counts = np.zeros(DISTANCES)
    for pair in pairs:
        t = pair.target_index                      # input t (after <s>) predicts word t
        heads = weights_of(model, list(pair.words[:t]))
        A = np.mean([h[t] for h in heads], axis=0)      # weights of inputs 0 .. t
        for k in range(min(DISTANCES, t + 1)):
            by_distance[k] += A[t - k]
            counts[k] += 1
        cue.append(A[pair.cue_index + 1])
        uniform.append(1.0 / (t + 1))
    return {"by_distance": (by_distance / np.maximum(counts, 1)).tolist(), "cue": float(np.mean(cue)),
            "uniform": float(np.mean(uniform)), "pairs": len(cue)}


def weight_sums(model, sentences) -> list:
    """Mean sum_j a_tj at positions 1 .. LONG (attention; heads averaged)."""
    sums = [np.mean([h[:LONG + 1].sum(axis=1) for h in weights_of(model, s[:LONG])], axis=0) for s in sentences]
    return np.mean(sums, axis=0)[1:].tolist()


def state_sizes(model, sentences) -> list:
    """Mean |c_t| (LSTM's memory) or |h_t| (GRU) over the components, at positions 1 .. LONG."""
    from course import runtime
    dy = runtime.dynet()
    builder = model.layers[0].builder
    found = []
    for words in sentences:
        dy.renew_cg()
        ids = [model.vocab.bos] + [model.vocab.index(w) for w in words[:LONG]]
        states = builder.initial_state().add_inputs([dy.lookup(model.embeddings, i) for i in ids])
        found.append([float(np.abs(s.s()[0].npvalue()).mean()) for s in states[1:]])
    return np.mean(found, axis=0).tolist()


def one_run(name: str, seed: int, train, valid, vocab, pairs, long_sentences, epochs: int) -> dict:
    from course import agreement, runtime, training
    runtime.init(seed=seed)
    model = build(name, vocab)
    start = time.perf_counter()
    rows = training.train(model, train, valid, epochs=epochs, batch_size=BATCH, lr=LR, progress=False, log=None)
    record = {"model": name, "seed": seed, "seconds": time.perf_counter() - start,
              "valid_ppl": [r["valid_ppl"] for r in rows], "agreement": agreement.agreement_accuracy(model, pairs)}
    number_pairs = [p for p in pairs if p.task == "number"]
    if attention_layer(model) is not None:
        record["weights"] = where_weights_fall(model, number_pairs[::10])
        record["weight_sums"] = weight_sums(model, long_sentences)
    else:
        record["state_sizes"] = state_sizes(model, long_sentences)
    return record


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=int, default=12000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--models", default=",".join(MODELS))
    args = parser.parse_args()
    from course import runtime
    runtime.init(seed=1)
    from course import corpora, data
    from course.agreement import load_pairs
    from course.grammar import floor_perplexity
    train_all = corpora.read_corpus("course", "train")
    valid = corpora.read_corpus("course", "valid")
    vocab = data.Vocab.build(train_all)
    pairs = load_pairs()
    long_sentences = [s for s in valid if len(s) >= LONG][:200]
    runs = [one_run(name, seed, train_all[:args.train], valid, vocab, pairs, long_sentences, args.epochs)
            for seed in range(1, args.seeds + 1) for name in args.models.split(",")]
    floor = floor_perplexity("valid")
    rows = []
    for r in runs:
        number, gender = r["agreement"]["number"], r["agreement"]["gender"]
        far = number["distance"].get("11-15", {}).get("accuracy", float("nan"))
        rows.append([MODELS[r["model"]][0], r["seed"], f"{r['valid_ppl'][-1]:.2f}", f"{r['valid_ppl'][-1] / floor:.3f}",
                     f"{number['all']['accuracy']:.3f}", f"{far:.3f}",
                     f"{number['attractors'].get('3+', {}).get('balanced_accuracy', float('nan')):.3f}",
                     f"{gender['all']['accuracy']:.3f}", f"{r['seconds']:.0f}"])
    body = (f"Every layer {WIDTH} wide, Adam (lr {LR}), batch {BATCH}, {args.epochs} epochs over the first "
            f"{args.train:,} training sentences; attention-only models have learned positions (up to {POSITIONS}). "
            f"Small and short: none of these is converged. Floor (the grammar's exact perplexity of valid): "
            f"{floor:.2f}.\n\n"
            + table(["model", "seed", "valid ppl", "÷ floor", "number agreement", "number, 11-15 words apart",
                     "number, 3+ attractors (balanced)", "reflexives", "train s"], rows)
            + "\n\nWhat each model's weights are: "
            + "; ".join(f"{label}: {what}" for label, what in MODELS.values()) + ".")
    report("attention_compare", "From the weighted sum to attention: small models on the course corpus", body,
           "python bench/attention_compare.py " + " ".join(sys.argv[1:]))
    (RESULTS / "attention_compare.json").write_text(json.dumps(
        {"settings": {"width": WIDTH, "train": args.train, "epochs": args.epochs, "lr": LR, "batch": BATCH,
                      "positions": POSITIONS, "seeds": args.seeds, "long": LONG, "distances": DISTANCES},
         "floor": floor, "labels": {k: v[0] for k, v in MODELS.items()}, "runs": runs}, indent=1) + "\n")


if __name__ == "__main__":
    main()
