"""The grade that counts: computed without running student code in this process.

For one submitted notebook: read it (a corrupt file is a failed submission with
its reason, never a crash), take the answer cells by their grade_id, run them
with the chapter's probes in the confined sandbox (:mod:`autograder.sandbox`;
CPU time, memory, file size and wall time limited), and judge the returned
numbers here against the reference. A test cell's points are split over the
checks its hidden tests name (``points=`` in each ``check(...)`` call, the rest
shared equally; :func:`autograder.reference.grading.split_points`), and each
check that passes earns its share. Test cells and points come from the
instructors' solution notebook, so editing them in a submission changes nothing.
"""
from __future__ import annotations

import json
import os
import pickle
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat
import numpy as np

from autograder.probes import from_arrays

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"


@dataclass
class Limits:
    wall_s: int = 120          # the whole sandbox run
    cpu_s: int = 120
    memory_mb: int = 4096      # address space of the sandbox process
    file_mb: int = 64          # largest file it may write


@dataclass
class CellScore:
    grade_id: str
    points: float
    max_points: float
    checks: dict = field(default_factory=dict)     # check name -> list of problems ([] = passed)


@dataclass
class Result:
    notebook: str
    score: float = 0.0
    max_score: float = 0.0
    cells: list = field(default_factory=list)
    failure: str | None = None         # why the submission could not be graded normally
    aborted: bool = False              # its code was stopped (time, memory, crash): scores 0
    notes: list = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class Spec:
    """What the solution notebook says is graded."""
    answers: list            # grade_ids of answer cells, in order
    tests: list              # (grade_id, points, [check names])
    manual: list             # grade_ids of manually graded cells
    shares: dict = field(default_factory=dict)   # grade_id -> {check name: its points}


def spec_of(solution_path: Path) -> Spec:
    from autograder.reference.grading import check_calls, split_points
    nb = nbformat.read(solution_path, as_version=4)
    answers, tests, manual, shares = [], [], [], {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and meta.get("grade"):
            manual.append(meta["grade_id"])
        elif meta.get("solution") and cell.cell_type == "code":
            answers.append(meta["grade_id"])
        elif meta.get("grade"):
            calls = check_calls(cell.source)
            tests.append((meta["grade_id"], float(meta.get("points", 0)), [name for name, _ in calls]))
            shares[meta["grade_id"]] = split_points(tests[-1][1], calls)
    return Spec(answers, tests, manual, shares)


def read_submission(path: Path):
    """The notebook, or raise ValueError with a reason a student can act on."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ValueError("the file is not UTF-8 text; submit the .ipynb file Jupyter saved") from None
    try:
        return nbformat.reads(text, as_version=4)
    except Exception as err:
        raise ValueError(f"the notebook is not valid notebook JSON ({type(err).__name__}: "
                         f"{str(err).splitlines()[0][:200]}); open it in Jupyter, save, resubmit") from None


def answer_sources(nb, answers: list) -> list:
    found = {}
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.get("cell_type") == "code" and meta.get("grade_id") in answers and meta.get("solution"):
            found.setdefault(meta["grade_id"], cell.source)
    return [(gid, found[gid]) for gid in answers if gid in found]


def _limit(limits: Limits):
    def apply():
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_mb << 20,) * 2)
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 5))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_mb << 20,) * 2)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return apply


ARTIFACT_MB = 64     # the largest saved model a submission may bring


def artifacts_of(path: Path, chapter: str) -> list:
    """Folders a submission brings next to its notebook: ``<chapter>_model/``
    (the capstone's saved model), given to the sandbox as its working files."""
    folder = Path(path).parent / f"{chapter}_model"
    return [folder] if folder.is_dir() else []


def run_sandbox(cells: list, probes: list, inputs: dict, limits: Limits, confine: bool = True,
                artifacts: list = ()):
    """Run the sandbox; return (numbers per check, errors per check, notes, aborted).

    A run that is stopped (wall time, CPU or memory limit, the process ended by
    the student's code) returns no numbers at all: such a submission earns
    nothing, whatever it defined before, and the notes say where it stopped."""
    workdir = Path(tempfile.mkdtemp(prefix="sandbox-"))
    try:
        (workdir / "request.json").write_text(json.dumps({"cells": cells, "probes": probes,
                                                          "confine": confine}))
        notes = []
        for folder in artifacts:
            size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file() and not f.is_symlink())
            if size > ARTIFACT_MB << 20:
                notes.append(f"{folder.name}/ is {size >> 20} MB, over the {ARTIFACT_MB} MB limit: not graded")
                continue
            shutil.copytree(folder, workdir / folder.name, symlinks=False,
                            ignore=lambda d, names: [n for n in names if Path(d, n).is_symlink()])
        with open(workdir / "inputs.pkl", "wb") as f:
            pickle.dump(inputs, f)
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(workdir), "MPLCONFIGDIR": str(workdir),
               "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}
        with open(workdir / "output.txt", "wb") as out:
            proc = subprocess.Popen([sys.executable, "-m", "autograder.sandbox", str(workdir)],
                                    cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, preexec_fn=_limit(limits),
                                    start_new_session=True)
            try:
                code = proc.wait(timeout=limits.wall_s)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                code = None
                notes.append(f"stopped after {limits.wall_s} s of wall time (an endless loop?)")
        if code not in (0, None):
            from autograder.sandbox import OUT_OF_MEMORY
            why = {-signal.SIGKILL: "killed (memory or CPU limit)", -signal.SIGXCPU: "CPU time limit",
                   -signal.SIGSEGV: "crashed (segmentation fault)",
                   OUT_OF_MEMORY: f"an answer cell exhausted the memory limit ({limits.memory_mb} MB)"
                   }.get(code, f"exit code {code}")
            notes.append(f"the code ended the grading process early: {why}")
        aborted = code != 0
        events = _events(workdir / "progress.jsonl")
        errors, numbers = {}, {}
        for event in events:
            if event.get("event") in ("probe failed", "cell failed"):
                key = event.get("check") or f"cell:{event.get('cell')}"
                errors[key] = str(event.get("error", ""))[:400]
            elif event.get("event") == "not confined":
                notes.append("sandbox not confined: " + str(event.get("why")))
        for item in probes:
            path = workdir / "results" / f"{item['check']}.npz"
            if path.exists() and not aborted:
                try:
                    with np.load(path, allow_pickle=False) as data:
                        numbers[item["check"]] = from_arrays({k: data[k] for k in data.files})
                except Exception as err:
                    errors[item["check"]] = f"unreadable result ({type(err).__name__})"
        if code is None or (code != 0 and not any(e.get("event") == "finished" for e in events)):
            last = next((e for e in reversed(events) if e.get("event") in ("cell", "probe")), None)
            if last:
                notes.append(f"it stopped while running {last.get('cell') or last.get('check')}")
        return numbers, errors, notes, aborted
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _events(path: Path) -> list:
    events = []
    if path.exists():
        for line in path.read_text(errors="replace").splitlines()[:10000]:
            try:
                event = json.loads(line)
                if isinstance(event, dict):
                    events.append(event)
            except ValueError:
                pass
    return events


def grade(path: Path, chapter: str | None = None, limits: Limits | None = None,
          confine: bool = True) -> Result:
    """Grade one submitted notebook; never raises for a bad submission."""
    from course import runtime
    runtime.dynet()                      # the judges compute references with DyNet
    from autograder.reference.grading import all_checks
    limits = limits or Limits()
    chapter = chapter or Path(path).stem
    result = Result(notebook=chapter)
    solution = SOLUTIONS / f"{chapter}.ipynb"
    if not solution.exists():
        result.failure = f"unknown assignment {chapter!r}: the notebook's name must be one of the course's"
        return result
    spec = spec_of(solution)
    result.max_score = sum(points for _, points, _ in spec.tests)
    try:
        nb = read_submission(path)
    except (ValueError, OSError) as err:
        result.failure = str(err)
        result.cells = [asdict(CellScore(gid, 0.0, pts)) for gid, pts, _ in spec.tests]
        return result
    checks = all_checks()
    names = sorted({name for _, _, cs in spec.tests for name in cs})
    inputs = {name: checks[name].make_inputs() for name in names}
    probes = [{"check": name, "probe": checks[name].probe, "functions": list(checks[name].functions)}
              for name in names]
    cells = answer_sources(nb, spec.answers)
    missing = [gid for gid in spec.answers if gid not in dict(cells)]
    if missing:
        result.notes.append(f"answer cells missing from the submission: {', '.join(missing)}")
    numbers, errors, notes, result.aborted = run_sandbox(cells, probes, inputs, limits, confine,
                                                         artifacts_of(path, chapter))
    result.notes += notes
    result.notes += [f"{key.removeprefix('cell:')} raised {err}" for key, err in errors.items()
                     if key.startswith("cell:")]
    for gid, points, cell_checks in spec.tests:
        score = CellScore(gid, 0.0, points)
        for name in cell_checks:
            if name in numbers:
                try:
                    score.checks[name] = list(checks[name].judge(numbers[name], inputs[name]))
                except Exception as err:
                    score.checks[name] = [f"the returned values have the wrong form ({type(err).__name__})"]
            elif result.aborted:
                score.checks[name] = ["not graded: the submission's code was stopped (see the notes)"]
            else:
                score.checks[name] = [errors.get(name, "not run")]
        score.points = sum(share for name, share in spec.shares[gid].items() if not score.checks[name])
        result.cells.append(asdict(score))
    result.score = sum(c["points"] for c in result.cells)
    return result
