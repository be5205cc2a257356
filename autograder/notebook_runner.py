"""Execute notebooks the way a student's Jupyter does (a real kernel, started in
the notebook's own folder) and report what happened."""
from __future__ import annotations

import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from autograder.cellmarks import marks

CELL_TIMEOUT = 600
# jupyter_client picks free TCP ports for a kernel, closes them, and starts the kernel, which binds
# them a second later: by then another process starting a kernel at the same moment can hold one,
# and the kernel dies before it answers ("Address already in use"), before any cell has run. Such a
# start is tried again, a few times; a kernel that dies after it answered is not.
KERNEL_STARTS = 3
DIED_AT_START = "before replying to kernel_info"


def execute(path: Path, nb=None, stop_at_error: bool = True):
    """Run a notebook; return (executed notebook, seconds, error or None)."""
    nb = nb if nb is not None else nbformat.read(path, as_version=4)
    start, error = time.perf_counter(), None
    for attempt in range(1, KERNEL_STARTS + 1):
        client = NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3",
                                resources={"metadata": {"path": str(path.parent)}},
                                allow_errors=not stop_at_error)
        try:
            client.execute()
        except CellExecutionError as err:
            error = err
        except RuntimeError as err:
            if DIED_AT_START in str(err) and attempt < KERNEL_STARTS:
                continue
            raise
        return nb, time.perf_counter() - start, error


def stderr_in_graded_cells(nb) -> list[str]:
    """grade_ids of test cells that wrote to stderr (nbgrader would score them 0)."""
    return [marks(c)["grade_id"] for c in nb.cells
            if c.cell_type == "code" and marks(c).get("grade")
            and any(o.get("output_type") == "stream" and o.get("name") == "stderr" for o in c.outputs)]


def first_error(nb):
    """(cell index, exception name) of the first cell that raised, or None."""
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                return i, out["ename"]
    return None


def with_answers(exercise: Path, solution: Path) -> nbformat.NotebookNode:
    """The exercise as a student who solved it hands it in: each answer cell holds the
    solution's code (solution markers removed); the visible checks stay as shipped."""
    answers = {marks(c)["grade_id"]: c.source for c in nbformat.read(solution, as_version=4).cells
               if marks(c).get("solution")}
    nb = nbformat.read(exercise, as_version=4)
    for cell in nb.cells:
        grade_id = marks(cell).get("grade_id")
        if marks(cell).get("solution") and grade_id in answers:
            cell.source = "\n".join(line for line in answers[grade_id].splitlines()
                                    if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line)
    return nb
