"""Training speed of every cell at batch 32, hand-written beside DyNet's builders.

All models train on the same course-corpus sentences (embed 64, hidden 128, Adam);
they are timed in turns, `--repeats` rounds, and the median is reported, so that
background load hits every model alike. The ratio column compares each hand-written
cell with the builder of the same architecture measured in the same rounds.

    .venv/bin/python bench/cell_speed.py [--sentences 1000] [--repeats 3]
"""
import argparse
import statistics

from common import report, table

from course import runtime

PAIRS = {"hand-lstm": "lstm", "hand-gru": "gru", "hand-srnn": "srnn"}
CELLS = ["srnn", "lstm", "gru", "hand-srnn", "hand-lstm", "hand-gru", "lstm-noforget", "lstm-srnn",
         "lstm-srnn-out", "lstm-srnn-hidden", "lstm-gates", "ran-identity", "ran-tanh"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    runtime.init(seed=1, mem=1024)
    from course import lm, training
    from course.corpora import read_corpus
    from course.data import Vocab
    from course.settings import Settings

    train = read_corpus("course", "train")
    vocab = Vocab.build(train)
    sentences = train[:args.sentences]
    n_tokens = sum(len(s) + 1 for s in sentences)
    from autograder.reference.cells import make_cell
    models = {name: lm.RNNLM(vocab, name if name in lm.BUILDERS else make_cell(name.removeprefix("hand-")), 64, 128)
              for name in CELLS}
    train_s = Settings(batch_size=32, lr=0.001, epochs=1)

    seconds = {name: [] for name in CELLS}
    for _ in range(args.repeats):
        for name in CELLS:         # one epoch through the course's loop; its row says how long it took
            row = training.train(models[name], sentences, None, train_s, progress=False, log=None)[0]
            seconds[name].append(row["seconds"])
    median = {name: statistics.median(s) for name, s in seconds.items()}
    rows = []
    for name in CELLS:
        ratio = f"{median[name] / median[PAIRS[name]]:.2f}x the builder's time" if name in PAIRS else ""
        kind = "DyNet builder" if name in ("srnn", "lstm", "gru") else "hand-written"
        rows.append([name, kind, f"{n_tokens / median[name]:,.0f}", f"{models[name].param_count():,}", ratio])
    body = (f"{args.sentences} training sentences ({n_tokens:,} predicted tokens), batch 32, embed 64, "
            f"hidden 128, vocabulary {len(vocab)}, Adam; median of {args.repeats} interleaved rounds.\n\n"
            + table(["cell", "kind", "training tokens/s", "parameters", "hand-written / builder"], rows))
    report("cell_speed", "Training speed of each cell at batch 32", body,
           f"python bench/cell_speed.py --sentences {args.sentences} --repeats {args.repeats}")


if __name__ == "__main__":
    main()
