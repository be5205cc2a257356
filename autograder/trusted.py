"""The grade that counts: student code runs only in the confined sandbox.

For one submitted notebook: read it (a corrupt file is a failed submission with
its reason, never a crash), take the answer cells by their grade_id (the first of
duplicates, in notebook order, as nbgrader does), run them with the chapter's
probes in the sandbox (:mod:`autograder.sandbox`), and judge what comes back here
against the reference. A step check's result is a traced program, which a second
sandbox that runs no student code replays into numbers
(:mod:`autograder.probes.trace`), at a fresh point: the check's weights, inputs and
start state moved by a secret amount (:func:`fresh_point`), so the program is
judged as a function, not as a transcript of the values it was traced at. Each test cell's points are split over the
checks its hidden tests name, as the solution notebook states (``points=`` on a
``check(...)`` call; calls without it share the rest equally:
:func:`autograder.reference.grading.split_points`). Test cells and
points come from the instructors' notebook, so editing them in a submission
changes nothing.

Time is limited per piece of work: an answer cell, a check's probe, and the whole
submission each have a limit (:class:`Limits`). A cell or probe that runs past its
limit, crashes or exhausts memory costs the checks that need it, and the sandbox
is started again for the rest.
"""
from __future__ import annotations

import hashlib
import hmac
import io
import json
import os
import pickle
import queue
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat
import numpy as np

from autograder.cellmarks import course_marks, marks
from autograder.probes import TRACED, from_arrays
from autograder.frames import read_frames
from autograder.intake import copy_regular_files
from autograder.sandbox import LAUNCHER, OUT_OF_MEMORY
from autograder.reference.grading import check_calls, split_points
from course import runtime
from course.paths import ROOT

SOLUTIONS = ROOT / "solutions"
MAX_OUTPUT = 256 << 20         # everything one sandbox may send
START_S = 90                   # loading DyNet, NumPy and the course in a fresh process
REPLAY_GRACE_S = 10            # a replay that starts after the submission's time is up gets this
FRESH_SPREAD = 0.1             # a fresh point moves each number by up to this fraction
FRESH_KEY = ROOT / "autograder" / "work" / "fresh-points.key"   # the grader's secret (never in a sandbox)
NAMESPACES = ["unshare", "--user", "--map-root-user", "--pid", "--fork", "--kill-child",
              "--mount-proc", "--net", "--ipc"]
JUDGING = threading.Lock()     # DyNet has one computation graph per process: one judge at a time


@dataclass
class Limits:
    cell_s: int = 30           # one answer cell
    check_s: int = 30          # one check's probe, unless the check declares its own (Check.seconds)
    wall_s: int = 300          # everything one submission may take
    cpu_s: int = 120           # CPU seconds of one sandbox process
    memory_mb: int = 4096      # address space of the sandbox process (its data segment on the GPU)
    file_mb: int = 64          # largest file it may write
    disk_mb: int = 256         # everything it may write (a tmpfs; the copied model files count)


@dataclass
class CellScore:
    grade_id: str
    points: float
    max_points: float
    checks: dict = field(default_factory=dict)     # check name -> list of problems ([] = passed)
    weights: dict = field(default_factory=dict)    # check name -> its share of the points


@dataclass
class Result:
    notebook: str
    score: float = 0.0
    max_score: float = 0.0
    cells: list = field(default_factory=list)
    failure: str | None = None         # why the submission could not be graded normally
    aborted: bool = False              # some of its code was stopped (time, memory, crash)
    notes: list = field(default_factory=list)
    digest: str = ""                   # of what was graded: answer cells and model files

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class Spec:
    """What the instructors' notebook says is graded."""
    answers: list            # grade_ids of answer cells, in order
    tests: list              # (grade_id, points, {check name: its share of the points})
    manual: list             # grade_ids of manually graded cells
    marks: dict = field(default_factory=dict)      # grade_id -> (grade, solution) of every nbgrader cell

    @property
    def shares(self) -> dict:
        return {gid: weights for gid, _, weights in self.tests}


def spec_of(notebook) -> Spec:
    """The spec of an instructors' notebook (a path, or a notebook whose test cells
    are the instructors', as nbgrader restores them before grading)."""
    nb = nbformat.read(notebook, as_version=4) if isinstance(notebook, (str, Path)) else notebook
    answers, tests, manual, marked = [], [], [], {}
    for cell in nb.cells:
        meta = marks(cell)
        if "grade_id" in meta:
            marked[meta["grade_id"]] = (bool(meta.get("grade")), bool(meta.get("solution")))
        if meta.get("solution") and meta.get("grade"):
            manual.append(meta["grade_id"])
        elif meta.get("solution") and cell.cell_type == "code":
            answers.append(meta["grade_id"])
        elif meta.get("grade") and cell.cell_type == "code":
            points = float(meta.get("points", 0))
            tests.append((meta["grade_id"], points, split_points(points, check_calls(cell.source))))
    return Spec(answers, tests, manual, marked)


def odd_cells(nb, spec: Spec) -> list:
    """Notes on nbgrader marks of the submission that the assignment does not have
    (nbgrader_plugin.KnownCells removes or restores them; grading uses the
    instructors' cells): named by the cell's position, or by the assignment's grade_id.
    Marks without a readable grade_id (a string, a number, ``{}``) count as unknown."""
    unknown, changed = [], []
    for index, cell in enumerate(nb.cells, 1):
        meta = marks(cell)
        gid = meta.get("grade_id")
        if course_marks(cell).get("ignored") or ("nbgrader" in cell.metadata and gid not in spec.marks):
            unknown.append(str(index))
        elif gid is not None and (bool(meta.get("grade")), bool(meta.get("solution"))) != spec.marks[gid]:
            changed.append(gid)
    notes = []
    if unknown:
        cells = (f"cells {', '.join(unknown)} of the notebook carry" if len(unknown) > 1
                 else f"cell {unknown[0]} of the notebook carries")
        notes.append(f"{cells} nbgrader marks the assignment does not have (an unknown grade_id, or marks "
                     "nbgrader cannot read): ignored, not graded")
    for gid in [g for g in spec.marks if g in changed]:
        notes.append(f"the cell {gid} is marked differently from the assignment's (grade or answer cell): "
                     "graded as the assignment's")
    return notes


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


def answer_sources(nb, answers: list) -> tuple:
    """(grade_id, source) of each answer cell, the first of duplicates; and the duplicates."""
    found, duplicates = {}, []
    for cell in nb.cells:
        meta = marks(cell)
        gid = meta.get("grade_id")
        copy_of = course_marks(cell).get("copy_of")
        if copy_of in answers:                                    # marked by nbgrader_plugin
            duplicates.append(copy_of)
        if cell.get("cell_type") == "code" and gid in answers and meta.get("solution"):
            if gid in found:
                duplicates.append(gid)
            found.setdefault(gid, cell.source)
    return [(gid, found[gid]) for gid in answers if gid in found], duplicates


ARTIFACT_MB = 64     # the largest saved model a submission may bring


def artifacts_of(path: Path, chapter: str) -> list:
    """Folders a submission brings next to its notebook: ``<chapter>_model/``
    (the capstone's saved model), given to the sandbox as its working files."""
    folder = Path(path).parent / f"{chapter}_model"
    return [folder] if folder.is_dir() and not folder.is_symlink() else []


_grader_code: str | None = None


def grader_code() -> str:
    """A digest of the grader's own code (checks, probes, sandbox): part of every
    result's digest, so a result says which grader made it."""
    global _grader_code
    if _grader_code is None:
        h = hashlib.sha256()
        for path in sorted((ROOT / "autograder").rglob("*.py")):
            if path.relative_to(ROOT / "autograder").parts[0] not in ("samples", "work"):  # work: course dirs
                h.update(path.read_bytes())
        _grader_code = h.hexdigest()
    return _grader_code


def digest_of(cells: list, artifacts: list, spec: Spec) -> str:
    """What a grade depends on: the answer cells, the model files, the test cells'
    checks and points, the grader's code (the fresh point is drawn from it)."""
    h = hashlib.sha256(json.dumps([cells, spec.tests, grader_code()]).encode())
    for folder in artifacts:
        for path in sorted(Path(folder).rglob("*")):
            if path.is_file() and not path.is_symlink():
                h.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def fresh_key() -> bytes:
    """The grader's secret: the instructor's key file, made on first use. Only the instructor's
    machine reads it: a grading machine of a cluster is handed :func:`point_key` instead."""
    if not FRESH_KEY.is_file():                    # made whole, then linked: the first grader to link wins
        FRESH_KEY.parent.mkdir(parents=True, exist_ok=True)
        fd, partial = tempfile.mkstemp(dir=FRESH_KEY.parent)           # mode 0600: the grader's only
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(32))
        try:
            os.link(partial, FRESH_KEY)
        except FileExistsError:
            pass
        os.unlink(partial)
    return FRESH_KEY.read_bytes()


def point_key(digest: str) -> bytes:
    """The secret one submission's fresh points are drawn from: the grader's key bound to the
    submission's digest (HMAC). The instructor's machine sends this, never the key, with a task to a
    cluster's worker: a worker that is broken into learns the points of the submissions it was given
    (which it holds as numbers anyway), and nothing of any other submission's, past or future."""
    return hmac.new(fresh_key(), digest.encode(), hashlib.sha256).digest()


def submission_digest(path: Path, chapter: str) -> str | None:
    """The digest :func:`grade` gives this submission (None when it cannot be read), worked out
    without running any of it: what the instructor's machine binds a cluster task's points to."""
    spec = spec_of(SOLUTIONS / f"{chapter}.ipynb")
    try:
        nb = read_submission(path)
    except (ValueError, OSError):
        return None
    return digest_of(answer_sources(nb, spec.answers)[0], artifacts_of(path, chapter), spec)


def fresh_point(inputs: dict, key: bytes, check: str) -> dict:
    """A step check's inputs where the submission never ran: every weight and
    projection multiplied by its own factor in [0.9, 1.1], every row of the inputs
    and start states by one factor for the whole batch. Zeros, signs, saturated
    gates and batch columns that read the same inputs stay as the check made them,
    so each check still isolates its part. Drawn from the submission's
    :func:`point_key`: the same submission gets the same point, and student code
    (which cannot read the key) cannot know it."""
    seed = hashlib.sha256(key + b"/" + check.encode()).digest()
    rng = np.random.default_rng(int.from_bytes(seed[:16], "big"))

    def move(values, per_row: bool = False):
        values = np.asarray(values, dtype=float)
        shape = values.shape[:-1] + (1,) if per_row else values.shape
        return values * (1 + FRESH_SPREAD * rng.uniform(-1, 1, size=shape))
    return {**inputs, "params": {name: move(v) for name, v in inputs["params"].items()},
            "xs": move(inputs["xs"], per_row=True), "state0": move(inputs["state0"], per_row=True),
            "projection": move(inputs["projection"])}


# -- the sandbox, from the outside -----------------------------------------------------
_namespaces: tuple | None = None


def namespaces() -> tuple:
    """(usable, why not): whether new user, PID and network namespaces can be made here."""
    global _namespaces
    if _namespaces is None:
        try:
            run = subprocess.run(NAMESPACES + ["true"], capture_output=True, text=True, timeout=20)
            _namespaces = (run.returncode == 0, run.stderr.strip()[:200])
        except (OSError, subprocess.TimeoutExpired) as err:
            _namespaces = (False, str(err)[:200])
    return _namespaces


def _limit(limits: Limits):
    # On the GPU (COURSE_GPU=1) CUDA reserves far more address space than memory_mb when it
    # starts, so the cap is on the data segment there (private writable memory: what NumPy
    # and Python allocate); elsewhere on the address space, which shared mappings count in too.
    memory = resource.RLIMIT_DATA if runtime.gpu_requested() else resource.RLIMIT_AS

    def apply():
        resource.setrlimit(memory, (limits.memory_mb << 20,) * 2)
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 5))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_mb << 20,) * 2)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return apply


class SandboxProcess:
    """One sandbox process and the frames it sends (see autograder/sandbox.py)."""

    def __init__(self, request: dict, inputs: dict, limits: Limits, artifacts=()):
        self.workdir = Path(tempfile.mkdtemp(prefix="sandbox-"))
        (self.workdir / "request.json").write_text(json.dumps(request))
        with open(self.workdir / "inputs.pkl", "wb") as f:
            pickle.dump(inputs, f)
        for folder in artifacts:
            copy_regular_files(folder, self.workdir / folder.name)
        read, write = os.pipe()
        command = [sys.executable, "-c", LAUNCHER, str(self.workdir), str(write)]
        isolated, _ = namespaces()
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(self.workdir), "MPLCONFIGDIR": str(self.workdir),
               "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1",
               "COURSE_GPU": os.environ.get("COURSE_GPU", "")}
        self.process = subprocess.Popen((NAMESPACES if isolated else []) + command, cwd=self.workdir, env=env,
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, pass_fds=(write,),
                                        preexec_fn=_limit(limits), start_new_session=True)
        os.close(write)
        self.frames: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, args=(read,), daemon=True).start()

    def _read(self, fd: int):
        """Frames into the queue; None at the end. A malformed or oversized stream ends it."""
        with os.fdopen(fd, "rb") as stream:
            for frame in read_frames(stream, MAX_OUTPUT):
                self.frames.put(frame)
        self.frames.put(None)

    def next(self, seconds: float):
        """The next frame, None when the process has closed the channel, "timeout"."""
        try:
            return self.frames.get(timeout=max(seconds, 0.01))
        except queue.Empty:
            return "timeout"

    def stop(self, wait: float = 0) -> str:
        """End it and everything it started (after ``wait`` seconds for it to end by
        itself); how it ended, in words."""
        try:
            self.process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            pass
        killed = self.process.poll() is None
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        code = self.process.wait()
        shutil.rmtree(self.workdir, ignore_errors=True)
        if killed:
            return "was stopped"
        return {-signal.SIGKILL: "was killed (memory or CPU limit)", -signal.SIGXCPU: "used up its CPU time",
                -signal.SIGSEGV: "crashed (segmentation fault)", -signal.SIGABRT: "crashed (aborted)",
                OUT_OF_MEMORY: "exhausted the memory limit", 137: "was killed (memory or CPU limit)",
                152: "used up its CPU time", 139: "crashed (segmentation fault)", 134: "crashed (aborted)",
                }.get(code, f"ended the process (exit code {code})")


def _message(text) -> str:
    """A message from the sandbox as a student may read it: text, one line, bounded."""
    return re.sub(r"[\x00-\x1f\x7f]+", " ", str(text))[:400]


def _decode(frame: dict, traced: bool):
    blob = frame.get("blob", b"")
    if traced:
        return json.loads(blob)
    with np.load(io.BytesIO(blob), allow_pickle=False) as data:
        return from_arrays({k: data[k] for k in data.files})


def run_sandbox(cells: list, probes: list, inputs: dict, limits: Limits, confine: bool = True,
                artifacts: list = (), replay_inputs: dict | None = None):
    """Run the answer cells and the probes; return (numbers per check, errors per
    check or ``cell:<grade_id>``, notes, whether anything was stopped). Traced
    programs are replayed on ``replay_inputs`` (default: the inputs they were traced on).

    Each cell and each probe has its own time limit (``limits``; a probe's ``seconds``,
    from its check, when given). When one runs past it (or
    crashes, or exhausts memory), the sandbox is stopped and started again for
    the checks still to do: without the cell (its functions are then missing), or
    without the probe (its check fails with the reason)."""
    numbers, errors, notes, programs = {}, {}, [], {}
    todo = list(probes)
    cells = list(cells)
    aborted = False
    isolated, why = namespaces()
    if not isolated:
        notes.append(f"sandbox without namespaces ({why or 'unshare unavailable'}): processes it starts "
                     "are stopped by process group only, and UDP is not blocked")
    deadline = time.monotonic() + limits.wall_s
    for _ in range(len(probes) + len(cells) + 1):
        if not todo:
            break
        box = SandboxProcess({"cells": cells, "probes": todo, "confine": confine, "disk_mb": limits.disk_mb},
                      {p["check"]: inputs[p["check"]] for p in todo}, limits, artifacts)
        phase, name, until = "start", None, time.monotonic() + START_S
        ending = None
        while True:
            frame = box.next(min(until, deadline) - time.monotonic())
            if frame is None or frame == "timeout":
                ending = frame
                break
            event = frame.get("event")
            check = frame.get("check")
            if phase == "start":                   # no student code has run yet
                if event == "not confined":
                    notes.append("sandbox not confined: " + _message(frame.get("why")))
                elif event == "ready":
                    phase = "between"
                elif event == "garbled":
                    ending = "garbled"
                    break
            elif event == "cell" and phase == "between" and frame.get("cell") in dict(cells):
                phase, name, until = "cell", frame["cell"], time.monotonic() + limits.cell_s
            elif event in ("cell done", "cell failed") and phase == "cell":
                if event == "cell failed":
                    errors[f"cell:{name}"] = _message(frame.get("error"))
                phase, name, until = "between", None, time.monotonic() + limits.cell_s
            elif event == "probe" and phase == "between" and any(p["check"] == check for p in todo):
                seconds = next(p for p in todo if p["check"] == check).get("seconds") or limits.check_s
                phase, name, until = "probe", check, time.monotonic() + seconds
            elif event in ("result", "probe failed") and phase == "probe" and check == name:
                item = next(p for p in todo if p["check"] == check)
                todo.remove(item)
                if event == "probe failed":
                    errors[check] = _message(frame.get("error"))
                else:
                    traced = item["probe"] in TRACED
                    try:
                        (programs if traced else numbers)[check] = _decode(frame, traced)
                    except Exception as err:
                        errors[check] = f"unreadable result ({type(err).__name__})"
                phase, name, until = "between", None, time.monotonic() + limits.check_s
            elif event == "tampered":
                what = "; ".join(_message(w) for w in frame.get("what", []))[:400]
                notes.append(f"the submission's code {what}: the grader's own code must not be changed, "
                             "so the checks after that point were not graded")
                for item in todo:
                    errors[item["check"]] = "not graded: the submission changed the grader's code or environment"
                todo, aborted = [], True
            elif event == "finished":
                ending = "finished"
                break
            elif event == "garbled":
                ending = "garbled"
                break
        how = box.stop(wait=5 if ending in ("finished", None) else 0)
        if ending == "finished":
            break
        aborted = True
        if time.monotonic() >= deadline:
            notes.append(f"the submission used up its {limits.wall_s} s; what was left was not graded")
            break
        why = {"timeout": "ran past its time limit (an endless loop?)",
               "garbled": "wrote over the grader's channel"}.get(ending, how)
        if phase == "cell":
            cells = [c for c in cells if c[0] != name]
            errors[f"cell:{name}"] = f"the cell {why}"
            notes.append(f"answer cell {name} {why}; the checks were run without it")
        elif phase == "probe":
            todo = [p for p in todo if p["check"] != name]
            errors[name] = f"stopped: the code it calls {why}"
        else:
            notes.append(f"the sandbox {why} ({phase})")
            break
    for item in todo:
        errors.setdefault(item["check"], "not graded (see the notes)")
    if programs:
        numbers.update(_replay(programs, replay_inputs or inputs, limits, errors, deadline))
    return numbers, errors, notes, aborted


def _replay(programs: dict, inputs: dict, limits: Limits, errors: dict, deadline: float) -> dict:
    """Traced programs into numbers, in a sandbox that runs no student code. The
    replay is the submission's work: it runs within the submission's time (its
    process's start aside), or REPLAY_GRACE_S when it starts after that time."""
    numbers = {}
    box = SandboxProcess({"replay": [{"check": c, "program": p} for c, p in programs.items()],
                   "disk_mb": limits.disk_mb}, {c: inputs[c] for c in programs}, limits)
    until = time.monotonic() + START_S
    while True:
        frame = box.next(until - time.monotonic())
        if not isinstance(frame, dict) or frame.get("event") in ("finished", "garbled"):
            break
        if frame.get("event") == "ready":          # its start is not the submission's time; the rest is
            until = max(deadline, time.monotonic() + REPLAY_GRACE_S)
        check = frame.get("check")
        if check in programs and frame.get("event") == "result":
            try:
                numbers[check] = _decode(frame, traced=False)
            except Exception as err:
                errors[check] = f"unreadable result ({type(err).__name__})"
        elif check in programs and frame.get("event") == "probe failed":
            errors[check] = _message(frame.get("error"))
    how = box.stop(wait=5)
    for check in programs:
        if check not in numbers:
            errors.setdefault(check, f"the step's operations could not be replayed (the replay {how})")
    return numbers


# -- grading ------------------------------------------------------------------------------
def grade(path: Path, chapter: str | None = None, limits: Limits | None = None,
          confine: bool = True, points: tuple | None = None) -> Result:
    """Grade one submitted notebook file against the course's solution notebook;
    never raises for a bad submission. ``points``: (digest, :func:`point_key`) as the instructor's
    machine worked them out, on a machine that does not hold the key (a cluster's worker)."""
    chapter = chapter or Path(path).stem
    solution = SOLUTIONS / f"{chapter}.ipynb"
    if not solution.exists():
        return Result(notebook=chapter, failure=f"unknown assignment {chapter!r}: the notebook's name "
                                                 "must be one of the course's")
    spec = spec_of(solution)
    try:
        nb = read_submission(path)
    except (ValueError, OSError) as err:
        result = Result(notebook=chapter, failure=str(err), max_score=sum(p for _, p, _ in spec.tests))
        result.cells = [asdict(CellScore(gid, 0.0, pts, weights=w)) for gid, pts, w in spec.tests]
        return result
    return grade_notebook(nb, chapter, spec, artifacts_of(path, chapter), limits, confine, points)


def grade_notebook(nb, chapter: str, spec: Spec, artifacts: list = (), limits: Limits | None = None,
                   confine: bool = True, points: tuple | None = None) -> Result:
    """Grade a notebook already read (:func:`grade` calls this)."""
    from course import runtime
    runtime.dynet()                  # started here, before reference code imports DyNet
    from autograder.reference.grading import all_checks
    limits = limits or Limits()
    result = Result(notebook=chapter, max_score=sum(points for _, points, _ in spec.tests))
    with JUDGING:
        checks = all_checks()
        names = sorted({name for _, _, cs in spec.tests for name in cs})
        inputs = {name: checks[name].make_inputs() for name in names}
    probes = [{"check": name, "probe": checks[name].probe, "functions": list(checks[name].functions),
               "seconds": checks[name].seconds} for name in names]
    cells, duplicates = answer_sources(nb, spec.answers)
    result.digest = digest_of(cells, artifacts, spec)
    for gid in sorted(set(duplicates)):
        result.notes.append(f"the answer cell {gid} appears more than once: the first one in the notebook "
                            "was graded and the later copies ignored (delete the copies)")
    result.notes += odd_cells(nb, spec)
    missing = [gid for gid in spec.answers if gid not in dict(cells)]
    if missing:
        result.notes.append(f"answer cells missing from the submission: {', '.join(missing)}")
    if points is not None and points[0] != result.digest:      # points bound to another submission or grader
        result.failure = ("this grading machine's grader differs from the instructor's (another commit of the "
                          "course?): bring its checkout to the instructor's commit, then grade again")
        result.cells = [asdict(CellScore(gid, 0.0, pts, weights=w)) for gid, pts, w in spec.tests]
        return result
    key = point_key(result.digest) if points is None else points[1]
    judged = {**inputs, **{name: fresh_point(inputs[name], key, name) for name in names
                           if checks[name].probe in TRACED}}
    numbers, errors, notes, result.aborted = run_sandbox(cells, probes, inputs, limits, confine, artifacts,
                                                         replay_inputs=judged)
    result.notes += notes
    result.notes += [f"{key.removeprefix('cell:')} raised {err}" for key, err in errors.items()
                     if key.startswith("cell:") and not err.startswith("the cell ")]
    with JUDGING:
        for gid, points, weights in spec.tests:
            score = CellScore(gid, 0.0, points, weights=weights)
            for name in weights:
                if name in numbers:
                    try:
                        score.checks[name] = list(checks[name].judge(numbers[name], judged[name]))
                    except Exception as err:
                        score.checks[name] = [f"the returned values have the wrong form ({type(err).__name__})"]
                else:
                    score.checks[name] = [errors.get(name, "not run")]
            score.points = round(sum(w for name, w in weights.items() if not score.checks[name]), 6)
            result.cells.append(asdict(score))
    result.score = round(sum(c["points"] for c in result.cells), 6)
    return result
