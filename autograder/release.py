"""The student release: what students download, and nothing else.

Holds the exercises, the lectures, the ``course`` package, the course corpus, the
install files and a README for students. Never: solutions, hidden tests, the
reference implementations (``autograder/``), the grader's held-out data.
``tests/test_release.py`` proves it on every run.
"""
from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INCLUDE = ["exercises", "lectures", "course", "data/course", "data/README.md",
           "pyproject.toml", "environment.yml", "LICENSE"]
STUDENT_README = """# RNN language models with DyNet: student release

Install once (Python 3.11 or 3.12):

    python3 -m venv .venv
    .venv/bin/pip install -e .
    .venv/bin/jupyter lab

Work through `exercises/` in order (00, 01, ...); the matching `lectures/` notebook
explains each chapter. Fill in the cells that say `raise NotImplementedError`, run
the visible checks, and before you submit use *Kernel > Restart Kernel and Run All
Cells* (or `.venv/bin/nbgrader validate exercises/NN_topic.ipynb`) so that the
notebook runs top to bottom. Submit the `.ipynb` file itself.

Graders run hidden checks on other inputs (batch sizes above 1, several steps,
gradients), so make your functions general, not tuned to the visible examples.
"""


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
    (out / "README.md").write_text(STUDENT_README)
    return out
