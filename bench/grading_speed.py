"""Seconds to grade: one full submission (every chapter) and the sample class,
with 1 and 2 workers. Each grading is nbgrader autograde plus the trusted grader.

    .venv/bin/python bench/grading_speed.py
"""
import shutil
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from common import ROOT, report, table

sys.path.insert(0, str(ROOT))


def main():
    import argparse
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--what", default="full,class", help="full (one student, every chapter), class (the samples)")
    args = parser.parse_args()
    from autograder import exercises, grade
    from course import runtime
    runtime.init(seed=1)
    exercises.use_this_environment()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        full = Path(tmp, "full")
        for solution in sorted((ROOT / "solutions").glob("*.ipynb")):
            exercise = nbformat.read(ROOT / "exercises" / solution.name, as_version=4)
            answered = exercises.inject_solutions(exercise, nbformat.read(solution, as_version=4))
            (full / "student").mkdir(parents=True, exist_ok=True)
            nbformat.write(answered, full / "student" / solution.name)
        n_chapters = len(list((full / "student").glob("*.ipynb")))
        classes = [(f"one full submission ({n_chapters} chapters)", full),
                   ("the sample class (" + str(len(list((ROOT / "autograder/samples/submissions").iterdir())))
                    + " submissions)", ROOT / "autograder" / "samples" / "submissions")]
        chosen = [c for c, key in zip(classes, ("full", "class")) if key in args.what.split(",")]
        for label, folder in chosen:
            for workers in (int(w) for w in args.workers.split(",")):
                work = Path(tmp, f"work-{workers}")
                shutil.rmtree(work, ignore_errors=True)
                grade.template(sorted(p.stem for p in (ROOT / "solutions").glob("*.ipynb")), work)
                start = time.perf_counter()
                records = grade.autograde(folder, work=work, workers=workers)
                seconds = time.perf_counter() - start
                statuses = sorted({r["status"] for r in records})
                score = f"{sum(r['score'] for r in records):g} / {sum(r['max_score'] for r in records):g}"
                rows.append([label, workers, f"{seconds:.0f}", f"{seconds / len(records):.1f}", score,
                             ", ".join(statuses)])
                print(rows[-1], flush=True)
    body = ("nbgrader autograde (private course copy per submission) and the trusted sandboxed grader, "
            "per submission; the course directory template is built beforehand and not timed.\n\n"
            + table(["what", "workers", "seconds", "seconds per notebook", "points", "statuses"], rows))
    report("grading_speed", "Grading speed", body,
           f"python bench/grading_speed.py --workers {args.workers} --what {args.what}")


if __name__ == "__main__":
    main()
