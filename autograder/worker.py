"""One submission graded from its bytes: what the trusted grader's one caller runs.

``GradeInSandbox`` (nbgrader_plugin.py, in ``nbgrader autograde``) runs :func:`grade_files` in its
own process, or hands it to a worker of a Dask cluster (``make autograde SCHEDULER=...``), which
imports this module and the trusted grader only (not nbgrader, not the gradebook): it receives the
submission's files as bytes, grades them in a temporary folder of its own machine and returns the
trusted result, which the nbgrader run that sent it records. A worker never holds the instructor's
fresh-point key: each task brings the one submission's point key (``trusted.point_key``), drawn on
the instructor's machine, so a worker that is broken into cannot work out any other submission's
points. The cluster is reached over TLS only (:mod:`autograder.cluster`).
"""
from __future__ import annotations

import tempfile
import time
from pathlib import Path

from autograder import trusted


def submission_files(folder: Path) -> dict:
    """A submitted folder's regular files by relative path, as bytes (intake made them regular and
    few): all a worker needs to grade it."""
    return {str(path.relative_to(folder)): path.read_bytes()
            for path in sorted(folder.rglob("*")) if path.is_file() and not path.is_symlink()}


def grade_files(chapter: str, files: dict, limits: trusted.Limits | None = None, points: tuple | None = None) -> dict:
    """Grade one submission from its bytes in a temporary folder of this machine (a cluster's
    worker runs this); the trusted result. ``points``: (digest, point key) of the submission as the
    instructor's machine worked them out (a worker's task); None on the instructor's machine, which
    holds the key."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / chapter
        for name, data in files.items():
            target = (folder / name).resolve()
            if not target.is_relative_to(folder.resolve()):
                raise ValueError(f"{name}: not a path inside the submission")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        start = time.perf_counter()
        result = trusted.grade(folder / f"{chapter}.ipynb", chapter, limits, points=points).to_json()
        result["seconds"] = round(time.perf_counter() - start, 1)
        return result
