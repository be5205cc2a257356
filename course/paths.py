"""Where things are. Every path in the course is resolved from the course's folder (the
repository, or the student release a student downloaded), so notebooks work wherever Jupyter
was started and however the package was installed.

The course's folder is the first of:
1. ``COURSE_ROOT``, when set (a folder holding ``data/course``);
2. the folder above the ``course`` package, when it holds ``data/course`` (the repository, and
   ``pip install -e .`` of the release);
3. the working folder or one of its parents that holds ``data/course`` and ``course/`` (a
   ``pip install .`` of the release, which copies the package alone into site-packages: Jupyter
   starts a notebook's kernel in the notebook's own folder, ``lectures/`` or ``exercises/``).
Failing all three, ROOT is the folder above the package, and what needs the data says how to fix it
(:data:`NOT_FOUND`).
"""
import os
from pathlib import Path

PACKAGE_PARENT = Path(__file__).resolve().parent.parent


def _holds_course(folder: Path) -> bool:
    return (folder / "data" / "course").is_dir()


def find_root(environ=os.environ, cwd: Path | None = None) -> Path | None:
    """The course's folder, or None when there is none to be found."""
    if environ.get("COURSE_ROOT"):
        return Path(environ["COURSE_ROOT"]).expanduser().resolve()
    if _holds_course(PACKAGE_PARENT):
        return PACKAGE_PARENT
    here = (cwd or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if _holds_course(folder) and (folder / "course").is_dir():
            return folder
    return None


FOUND = find_root()
ROOT = FOUND or PACKAGE_PARENT
DATA = ROOT / "data"
COURSE_DATA = DATA / "course"
EXTERNAL_DATA = DATA / "external"
NOT_FOUND = (None if FOUND else
             "the course's folder (the one holding data/course and lectures/) was not found: the package is "
             f"installed in {PACKAGE_PARENT} and Python was started in {Path.cwd()}. Start Jupyter or Python "
             "inside the course's folder, or set COURSE_ROOT to it (export COURSE_ROOT=/path/to/the/course), "
             "or install the course with `pip install -e .` from that folder")
