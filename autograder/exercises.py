"""Student exercises generated from the instructors' solution notebooks.

``solutions/NN_topic.ipynb`` is the nbgrader source (``### BEGIN SOLUTION`` /
``### BEGIN HIDDEN TESTS``); ``exercises/NN_topic.ipynb`` is what nbgrader's
``generate_assignment`` makes of it, committed so students can open it
directly. ``make exercises`` regenerates them; a test fails when a committed
exercise differs from what its solution generates.

    python -m autograder.exercises [--check] [NAMES...]
"""
from __future__ import annotations

import argparse
import copy
import os
import shutil
import sys
import tempfile
from pathlib import Path

import nbformat

from autograder import chapters
from autograder.cellmarks import marks
from course.paths import ROOT

SOLUTIONS, EXERCISES, LECTURES = ROOT / "solutions", ROOT / "exercises", ROOT / "lectures"
STUB = 'raise NotImplementedError("Student exercise: replace this line with your code")'


def use_this_environment():
    """nbgrader runs tools (alembic) and kernels by name: find them next to this Python."""
    bin_dir = str(Path(sys.executable).parent)
    if os.environ.get("PATH", "").split(os.pathsep)[0] != bin_dir:
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")


def nbgrader_config():
    from traitlets.config import Config
    c = Config()
    c.ClearSolutions.code_stub = {"python": STUB}
    c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
    c.ClearSolutions.enforce_metadata = True
    c.CourseDirectory.source_directory = "source"
    c.CourseDirectory.release_directory = "release"
    c.NbGraderAPI.log_level = "ERROR"
    return c


def strip_outputs(nb):
    """Notebooks are stored without outputs or execution counts."""
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        cell.metadata.pop("execution", None)
    return nb


def solution_names() -> list[str]:
    """The chapters' solutions, as the chapter manifest lists them."""
    return chapters.stems()


def generate(names=None, out_dir: Path = EXERCISES) -> list[Path]:
    """Run nbgrader's generate_assignment on each solution; write the exercises."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    use_this_environment()
    names = names or solution_names()
    written = []
    with tempfile.TemporaryDirectory() as tmp:
        config = nbgrader_config()
        config.CourseDirectory.root = tmp
        config.CourseDirectory.db_url = f"sqlite:///{tmp}/gradebook.db"
        api = NbGraderAPI(CourseDirectory(config=config), config=config)
        for name in names:
            source = Path(tmp, "source", name)
            source.mkdir(parents=True)
            shutil.copy(SOLUTIONS / f"{name}.ipynb", source / f"{name}.ipynb")
            result = api.generate_assignment(name)
            if not result["success"]:
                raise RuntimeError(f"nbgrader could not generate {name}:\n{result.get('log')}")
            nb = nbformat.read(Path(tmp, "release", name, f"{name}.ipynb"), as_version=4)
            out_dir.mkdir(parents=True, exist_ok=True)
            target = out_dir / f"{name}.ipynb"
            nbformat.write(strip_outputs(nb), target)
            written.append(target)
    return written


def grade_ids(nb) -> dict:
    return {marks(c)["grade_id"]: c for c in nb.cells if marks(c).get("grade_id")}


def inject_solutions(exercise, solution):
    """The exercise with every solution and test cell's source taken back from the
    solution notebook (matched by grade_id): what a perfect student submits,
    with the hidden tests restored as the autograder restores them."""
    nb = copy.deepcopy(exercise)
    reference = grade_ids(solution)
    for cell in nb.cells:
        meta = marks(cell)
        if meta.get("solution") or meta.get("grade"):
            cell.source = reference[meta["grade_id"]].source
    return nb


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="solution names (default: all)")
    parser.add_argument("--check", action="store_true", help="fail if a committed exercise is stale")
    args = parser.parse_args(argv)
    if not args.check:
        for path in generate(args.names or None):
            print(f"wrote {path.relative_to(ROOT)}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        stale = [p.name for p in generate(args.names or None, Path(tmp))
                 if not (EXERCISES / p.name).exists() or (EXERCISES / p.name).read_bytes() != p.read_bytes()]
    if stale:
        print(f"stale exercises: {stale}; run `make exercises` and commit", file=sys.stderr)
        return 1
    print("exercises are in sync with solutions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
