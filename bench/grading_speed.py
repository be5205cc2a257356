"""Seconds to grade: one notebook, one full submission (every chapter) and the
sample class (every kind of attack), with 1 and 2 workers. Grading is the whole
instructor's path: intake, then ``nbgrader autograde CH --student S`` per submission, N at once,
each calling the confined grader and writing the gradebook.

    .venv/bin/python bench/grading_speed.py [--workers 1,2] [--what notebook,full,class] [--executors local,dask]
                                            [--against REV,...] [--rounds N]

``dask`` grades on a Dask cluster started here (``distributed.LocalCluster``: as many worker
processes as workers, one thread each, on loopback, over TLS with certificates made for the run):
the cost of sending each submission's bytes to a worker and its result back, beside the local pool
in the same run. ``--against REV`` runs this benchmark as it is at an earlier commit (a temporary
git worktree of it, the same arguments, this environment), in the same run and on the same
machine, before this checkout's; ``--rounds N`` takes them in turn N times, for medians on a
machine whose load changes.
"""
import ast
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
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
def local_cluster(workers: int, certs: Path):
    """A Dask scheduler and WORKERS single-threaded worker processes on loopback, over TLS with the
    course's certificates in ``certs``; its address."""
    from distributed import LocalCluster
    from autograder import cluster
    cluster.make_certs(certs)
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                      protocol="tls://", security=cluster.security(certs, ("client", "scheduler", "worker")),
                      dashboard_address=None) as local:
        yield local.scheduler_address


def fresh_fork_server():
    """Stop the fork server that preparing the course started, so that the timed grading pays for
    starting one (its imports), as `make autograde` does (the standard library's own test hook)."""
    from multiprocessing import forkserver
    if hasattr(forkserver._forkserver, "_stop"):
        forkserver._forkserver._stop()


def at_commit(rev: str, argv: list) -> list:
    """The rows this benchmark prints at commit ``rev``, run in a temporary worktree of it with the
    same arguments (its own autograder first on the path, for its nbgrader runs too)."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp, "tree")
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--quiet", "--detach", str(tree), rev], check=True)
        try:
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(tree / "bench")])}
            run = subprocess.run([sys.executable, str(tree / "bench" / "grading_speed.py"), *argv], cwd=tree, env=env,
                                 capture_output=True, text=True)
            if run.returncode != 0:
                raise RuntimeError(f"grading_speed.py at {rev} failed:\n{run.stderr[-3000:]}")
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
    return [ast.literal_eval(line) for line in run.stdout.splitlines() if line.startswith("[")]


def main():
    import argparse
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--what", default="notebook,full,class")
    parser.add_argument("--class-size", type=int, default=50)
    parser.add_argument("--executors", default="local", help="local, dask or both (local,dask)")
    parser.add_argument("--against", default="", help="earlier commits to measure in the same run, e.g. c5fa832,4e73a32")
    parser.add_argument("--rounds", type=int, default=1, help="measure every commit this many times, in turn")
    args = parser.parse_args()
    argv = ["--workers", args.workers, "--what", args.what, "--class-size", str(args.class_size),
            "--executors", args.executors]
    revs = [r for r in args.against.split(",") if r]
    if revs:            # every commit in turn, this checkout last in each round; a row per commit and round
        runs = {rev: [] for rev in revs + ["this checkout"]}
        for _ in range(args.rounds):
            for rev in revs:
                runs[rev].append(at_commit(rev, argv))
                print(rev, runs[rev][-1], flush=True)
            runs["this checkout"].append(measure(args))
        return publish(args, runs)
    rows = measure(args)
    publish(args, {"this checkout": [rows]})


def measure(args) -> list:
    """The rows of this checkout, each printed as it is measured."""
    from autograder import exercises, grade
    from course import runtime
    runtime.init(seed=1)
    exercises.use_this_environment()
    samples = ROOT / "autograder" / "samples" / "submissions"
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        certs = Path(tmp, "certs")
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
                fresh_fork_server()
                with local_cluster(workers, certs) if where == "dask" else contextlib.nullcontext() as scheduler:
                    start = time.perf_counter()
                    records = grade.autograde(folder, course=course, workers=workers, scheduler=scheduler,
                                              certs=certs if scheduler else None)
                    seconds = time.perf_counter() - start
                per = [r.get("seconds") for r in records if r.get("seconds") is not None]
                statuses = sorted({r["status"] for r in records})
                points = f"{sum(r['score'] for r in records):g} / {sum(r['max_score'] for r in records):g}"
                rows.append([label, "local pool" if where == "local" else "Dask cluster", workers, f"{seconds:.0f}", f"{statistics.median(per):.1f}" if per else "-",
                             f"{max(per):.0f}" if per else "-", points, ", ".join(statuses)])
                print(rows[-1], flush=True)
    return rows


def publish(args, runs: dict):
    """The table: for each commit and row, the median seconds over the rounds (and each round's)."""
    header = ["what", "executor", "workers", "seconds", "median s per notebook", "max s", "points", "statuses"]
    rows = []
    for rev, rounds in runs.items():
        for i, row in enumerate(rounds[0]):
            seconds = [float(r[i][3]) for r in rounds]
            spread = f" ({', '.join(f'{x:.0f}' for x in seconds)})" if len(seconds) > 1 else ""
            label = row[0] if rev == "this checkout" else f"{row[0]}, at {rev}"
            rows.append([label, *row[1:3], f"{statistics.median(seconds):.0f}{spread}", *row[4:]])
    body = ("Wall seconds for `grade.autograde` (intake, then `nbgrader autograde CH --student S` per "
            "submission, N at once, each grading with the confined grader, here or on the Dask cluster, and "
            "writing the gradebook); the course directory is prepared "
            "beforehand and not timed. Per-notebook seconds are the trusted grader's own (median, max): "
            "a notebook that loops costs the limit of the cell or check that loops. The full submission is "
            "every solution notebook; its capstone comes without the saved model it must submit beside it, "
            "so it earns 0 of its 10 points.\n\n"
            + table(header, rows))
    report("grading_speed", "Grading speed", body,
           f"python bench/grading_speed.py --workers {args.workers} --what {args.what} "
           f"--class-size {args.class_size} --executors {args.executors}"
           + (f" --against {args.against} --rounds {args.rounds}" if args.against else ""))


if __name__ == "__main__":
    main()
