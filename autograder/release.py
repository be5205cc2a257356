"""The student release: what students download, and nothing else.

Holds the exercises, the lectures, the ``course`` package, the course corpus, the
install files and a README for students. Never: solutions, hidden tests, the
reference implementations (``autograder/``), the grader's held-out data.
``tests/test_release.py`` proves it on every run.
"""
from __future__ import annotations

import shutil
from pathlib import Path
from course.paths import ROOT

# bench/results: the measured tables, figures and exported weights the lectures read and cite
INCLUDE = ["exercises", "lectures", "course", "data/course", "data/README.md", "bench/results",
           "pyproject.toml", "environment.yml", "LICENSE"]
STUDENT_README = """# RNN language models with DyNet: student release

Lectures (`lectures/`, read them in order, {chapters}) and graded exercises (`exercises/`, one
per lecture), with the `course` package they use and the course's corpus. It runs on macOS,
Windows and Linux, on a laptop CPU.

## Install, once

You need Python 3.11, 3.12 or 3.13 (DyNet has wheels for each on macOS, Windows and Linux:
`bench/results/platforms.md`). In this folder:

| | with venv | with conda |
|---|---|---|
| macOS, Linux | `python3 -m venv .venv` then `.venv/bin/pip install -e .` | `conda env create -f environment.yml` then `conda activate rnnlm-course` |
| Windows (PowerShell) | `py -3.11 -m venv .venv` then `.venv\\Scripts\\pip install -e .` | the same two conda commands |

This installs DyNet (`dyNET38`), NumPy, Matplotlib, JupyterLab and nbgrader's student tools,
nothing else. `pip install .` (without `-e`) works too: the notebooks find the course's data from
the folder Jupyter was started in (this one or below it; elsewhere, set `COURSE_ROOT` to this folder). Linux x86-64 with Python 3.11 or 3.12 gets DyNet 2.1; everywhere else DyNet 2.2,
which refuses a plain number on the left of an expression: write `1 - z` as `-z + 1` and `2 * z`
as `z * 2` (the error you would see says so too). Each notebook's first cell prints the
versions it runs with.

## Open

`.venv/bin/jupyter lab` (Windows: `.venv\\Scripts\\jupyter lab`; conda: `jupyter lab`) opens
JupyterLab in your browser. Work through `exercises/` in order; each answer cell names the
lecture section it builds on, with a link above it. Fill in the cells that say
`raise NotImplementedError`, then run the visible checks below them.

## Check

Before you submit, run *Kernel > Restart Kernel and Run All Cells*, or from a terminal in this
folder: `.venv/bin/nbgrader validate exercises/05_gru.ipynb` (Windows:
`.venv\\Scripts\\nbgrader validate exercises\\05_gru.ipynb`; conda: `nbgrader validate ...`).
It runs the notebook top to bottom and reports the checks that fail. The grader runs hidden
checks on other inputs (batch sizes above 1, several steps, gradients), so make your functions
general, not tuned to the visible examples.

A NaN can outlive the cell that made it: DyNet's matrix product computes 0 x (what its memory
held) + W x, and each new graph reuses the last one's memory, so after a step that overflowed,
`W * x` of sound numbers can come out NaN in later cells. Training and the checks clear that
memory themselves; after a NaN of your own, run `runtime.clear_memory()` (or restart the kernel).

## Submit

On the course hub: the **Assignments** tab (Nbgrader > Assignments) lists each chapter; *Fetch*
it, work in the fetched copy, and press *Submit*; feedback appears there after grading. Without a
hub: hand in the notebook file (`exercises/NN_topic.ipynb`) and, where the exercise saves one, the
folder `NN_topic_model/` beside it, as your instructor says.

A submission counts as handed in at the time the grader received it, as the course's side records
it: on the hub, when the exchange received it (the last change to what you submitted there);
otherwise, when your instructor collected it. A `timestamp.txt` or a file's date that you write
counts for nothing. Submitting again (changed work) makes a new submission with a new time;
unchanged work keeps the time it was first received.

## The command line

`python -m course train --help` trains the course's models outside Jupyter, e.g.
`python -m course train --cell lstm --epochs 1 --out runs/lstm`. `bench/results/` holds the
measured tables and figures the lectures cite.
"""


def student_readme() -> str:
    """The README, with the due dates and the late policy as autograder/deadlines.toml says now."""
    from autograder import chapters, late_policy
    return STUDENT_README.replace("{chapters}", chapters.chapter_range()) + "\n## Due dates\n\n" + late_policy.describe(late_policy.load()) + "\n"


def build(out: Path) -> Path:
    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints", "*.egg-info")
    for item in INCLUDE:
        source = ROOT / item
        if source.is_dir():
            shutil.copytree(source, out / item, ignore=ignore)
        elif source.exists():
            (out / item).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, out / item)
    (out / "README.md").write_text(student_readme())
    return out
