"""Seconds to grade: one notebook, one full submission (every chapter) and the
sample class (every kind of attack), with 1 and 2 workers. Grading is the whole
instructor's path: intake, then ``nbgrader autograde CH --student S`` per submission, N at once,
each calling the confined grader and writing the gradebook.

    .venv/bin/python bench/grading_speed.py [--workers 1,2] [--what notebook,full,class] [--executors local,dask]

``dask`` grades on a Dask cluster started here (``distributed.LocalCluster``: as many worker
processes as workers, one thread each, on loopback): the cost of sending each submission's bytes
to a worker and its result back, beside the local pool in the same run.
"""
import contextlib
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import nbformat
from common import ROOT, report, table


def full_submission(folder: Path) -> Path:
    """One student who answered every chapter with the solutions."""
    from autograder import exercises
    for solution in sorted((ROOT / "solutions").glob("*.ipynb")):
        exercise = nbformat.read(ROOT / "exercises" / solution.name, as_version=4)
        answered = exercises.inject_solutions(exercise, nbformat.read(solution, as_version=4))
        (folder / "student").mkdir(parents=True, exist_ok=True)
        nbformat.write(answered, folder / "student" / solution.name)
    return folder


def class_of(size: int, folder: Path) -> Path:
    """The sample class, its students repeated under new names until it has ``size``
    submissions (links kept as links: they are attacks too)."""
    samples = sorted((ROOT / "autograder" / "samples" / "submissions").iterdir())
    for i in range(size):
        source = samples[i % len(samples)]
        shutil.copytree(source, folder / f"{source.name}-{i // len(samples) + 1}", symlinks=True)
    return folder


@contextlib.contextmanager
def local_cluster(workers: int):
    """A Dask scheduler and WORKERS single-threaded worker processes on loopback; its address."""
    from distributed import LocalCluster
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster:
        yield cluster.scheduler_address


def main():
    import argparse
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--what", default="notebook,full,class")
    parser.add_argument("--class-size", type=int, default=50)
    parser.add_argument("--executors", default="local", help="local, dask or both (local,dask)")
    args = parser.parse_args()
    from autograder import exercises, grade
    from course import runtime
    runtime.init(seed=1)
    exercises.use_this_environment()
    samples = ROOT / "autograder" / "samples" / "submissions"
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        one = Path(tmp, "one")
        shutil.copytree(samples / "correct", one / "correct")
        full = full_submission(Path(tmp, "full"))
        chosen = {"notebook": ("one honest notebook (05_gru)", one),
                  "full": (f"one full submission ({len(list((full / 'student').glob('*.ipynb')))} chapters)", full),
                  "class": (f"a class of {args.class_size} (the {len(list(samples.iterdir()))} sample "
                            "submissions, repeated)", class_of(args.class_size, Path(tmp, "class")))}
        for key in args.what.split(","):
            label, folder = chosen[key]
            for workers, where in ((int(w), e) for w in args.workers.split(",") for e in args.executors.split(",")):
                course = Path(tmp, f"course-{key}-{workers}-{where}")
                grade.prepare_course(course, sorted(p.stem for p in (ROOT / "solutions").glob("*.ipynb")))
                with local_cluster(workers) if where == "dask" else contextlib.nullcontext() as scheduler:
                    start = time.perf_counter()
                    records = grade.autograde(folder, course=course, workers=workers, scheduler=scheduler)
                    seconds = time.perf_counter() - start
                per = [r.get("seconds") for r in records if r.get("seconds") is not None]
                statuses = sorted({r["status"] for r in records})
                points = f"{sum(r['score'] for r in records):g} / {sum(r['max_score'] for r in records):g}"
                rows.append([label, "local pool" if where == "local" else "Dask cluster", workers, f"{seconds:.0f}", f"{statistics.median(per):.1f}" if per else "-",
                             f"{max(per):.0f}" if per else "-", points, ", ".join(statuses)])
                print(rows[-1], flush=True)
    body = ("Wall seconds for `grade.autograde` (intake, then `nbgrader autograde CH --student S` per "
            "submission, N at once, each grading with the confined grader, here or on the Dask cluster, and "
            "writing the gradebook); the course directory is prepared "
            "beforehand and not timed. Per-notebook seconds are the trusted grader's own (median, max): "
            "a notebook that loops costs the limit of the cell or check that loops. The full submission is "
            "every solution notebook; its capstone comes without the saved model it must submit beside it, "
            "so it earns 0 of its 10 points.\n\n"
            + table(["what", "executor", "workers", "seconds", "median s per notebook", "max s", "points", "statuses"], rows))
    report("grading_speed", "Grading speed", body,
           f"python bench/grading_speed.py --workers {args.workers} --what {args.what} "
           f"--class-size {args.class_size} --executors {args.executors}")


if __name__ == "__main__":
    main()
