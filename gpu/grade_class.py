"""Grade the sample class into FOLDER/course and write FOLDER/records.json: one pass of
gpu/on_device.sh's grading step (on the CPU, or on the GPU with COURSE_GPU=1).

    python gpu/grade_class.py FOLDER [--workers 8] [--students a,b,...]

A file, not a script on standard input: the grader's nbgrader runs fork from a multiprocessing
fork server, which imports the main module again by its path.
"""
import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from autograder import grade  # noqa: E402
from course import runtime  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--students", default="", help="comma-separated (default: the whole class)")
    args = parser.parse_args()
    students = [s for s in args.students.split(",") if s] or None
    print(f"grading the sample class {'with' if runtime.gpu_requested() else 'without'} COURSE_GPU=1", flush=True)
    records = grade.autograde(Path("autograder/samples/submissions"), course=args.folder / "course",
                              workers=args.workers, students=students)
    grade.print_table(records)
    (args.folder / "records.json").write_text(json.dumps(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
