"""Run time of every notebook with its default settings (the CPU budget a student
laptop must meet: each under 5 minutes).

    .venv/bin/python bench/notebook_times.py [--only NN_]
"""
import argparse
import os

from common import ROOT, report, table

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ["PATH"] = str(ROOT / ".venv" / "bin") + os.pathsep + os.environ.get("PATH", "")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="", help="run only notebooks whose name starts with this")
    args = parser.parse_args()
    from autograder.notebook_runner import execute, first_error
    rows = []
    for folder in ("lectures", "solutions", "exercises"):
        for path in sorted((ROOT / folder).glob(f"{args.only}*.ipynb")):
            nb, seconds, error = execute(path)
            stopped = first_error(nb)
            if folder == "exercises":
                outcome = (f"stops at the first stub ({stopped[1]})" if stopped else "ran through: no stub?")
            else:
                outcome = "ok" if error is None else "ERROR"
            rows.append([f"{folder}/{path.name}", f"{seconds:.0f}", outcome])
            print(rows[-1], flush=True)
    body = ("Each notebook executed top to bottom in a fresh Jupyter kernel with its default settings "
            "(exercises as shipped stop at the first student stub).\n\n"
            + table(["notebook", "seconds", "outcome"], rows))
    report("notebook_times", "Notebook run times", body, "python bench/notebook_times.py")


if __name__ == "__main__":
    main()
