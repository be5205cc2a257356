"""Training speed of the builder LSTM against batch size (tutorial section 6.5).

Each batch size trains on the same sentences of the course corpus (length-sorted
batches); the sizes are timed in turns, `--repeats` rounds, and the median is
reported, so that background load hits every size alike.

    .venv/bin/python bench/batch_speed.py [--sentences 1500] [--repeats 3]
"""
import argparse

from common import report, table

from course import runtime


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=1500)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", default="1,8,32,64")
    args = parser.parse_args()
    runtime.init(seed=1, mem=1024)
    from course import lm
    from course.corpora import read_corpus
    from course.data import Vocab
    from course import training
    from course.settings import Settings

    train = read_corpus("course", "train")
    vocab = Vocab.build(train)
    sentences = train[:args.sentences]
    n_tokens = sum(len(s) + 1 for s in sentences)
    sizes = [int(s) for s in args.sizes.split(",")]
    model = lm.RNNLM(vocab, "lstm", embed=64, hidden=128)
    train_s = Settings(lr=0.001, epochs=1)

    def epoch(size) -> float:
        """Seconds of one epoch through the course's loop (its batches built as they are used)."""
        return training.train(model, sentences, None, train_s.but(batch_size=size), progress=False, log=None)[0]["seconds"]

    seconds = {b: [] for b in sizes}
    for _ in range(args.repeats):                 # interleaved rounds
        for b in sizes:
            seconds[b].append(epoch(b))
    import statistics
    speed = {b: n_tokens / statistics.median(seconds[b]) for b in sizes}
    rows = [(b, f"{speed[b]:,.0f}", f"{speed[b] / speed[sizes[0]]:.1f}x") for b in sizes]
    body = (f"Builder LSTM (embed 64, hidden 128, 1 layer), vocabulary {len(vocab)}, "
            f"{len(sentences)} training sentences ({n_tokens:,} predicted tokens), Adam; "
            f"median of {args.repeats} interleaved rounds.\n\n"
            + table(["batch size", "training tokens/s", f"vs batch {sizes[0]}"], rows))
    report("batch_speed", "Training speed against batch size", body,
           f"python bench/batch_speed.py --sentences {args.sentences} --repeats {args.repeats}")


if __name__ == "__main__":
    main()
