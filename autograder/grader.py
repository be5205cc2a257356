"""Stage 3, the grader: the score that counts, from one submission's files.

``GradeInSandbox`` (:mod:`autograder.nbgrader_plugin`) calls :func:`grade_folder` with the submitted
folder; it grades here, or hands the folder's bytes to a worker of a Dask cluster (``make autograde
SCHEDULER=tls://...``; :mod:`autograder.cluster`), which runs :func:`grade_bytes`: the files into a
temporary folder of its own, then :func:`grade`. A worker imports this module and the sandbox only
(not nbgrader, not the gradebook), and never holds the instructor's fresh-point key: each task brings
the one submission's point key (:func:`point_key`), drawn on the instructor's machine, so a worker that
is broken into cannot work out any other submission's points.

:func:`grade` reads the notebook (a corrupt file is a failed submission with its reason, never a
crash) and the assignment's :class:`Spec` from the instructors' notebook; :func:`score_notebook` takes
the answer cells by their grade_id (the first of duplicates, in notebook order, as nbgrader does),
runs them with the chapter's probes in the sandbox (:func:`autograder.sandbox.run_code`, stage 4) and
judges what comes back here against the reference (the checks of :mod:`autograder.reference.grading`,
stage 5). A step check's result is a traced program, which a second sandbox that runs no student code
replays into numbers (:mod:`autograder.probes.trace`), at a fresh point: the check's weights, inputs
and start state moved by a secret amount (:func:`fresh_point`), so the program is judged as a
function, not as a transcript of the values it was traced at. Each test cell's points are split over
the checks its hidden tests name, as the solution notebook states (``points=`` on a ``check(...)``
call; calls without it share the rest equally: :func:`autograder.reference.grading.split_points`).
Test cells and points come from the instructors' notebook, so editing them in a submission changes
nothing.

Time is limited per piece of work: an answer cell, a check's probe, and the whole submission each
have a limit (:class:`autograder.sandbox.Limits`). A cell or probe that runs past its limit, crashes
or exhausts memory costs the checks that need it, and the sandbox is started again for the rest.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat
import numpy as np

from autograder.cellmarks import course_marks, has_marks, marks
from autograder.probes import TRACED
from autograder.reference.grading import check_calls, split_points
from autograder.sandbox import Limits, run_code
from course.paths import ROOT

SOLUTIONS = ROOT / "solutions"
FRESH_SPREAD = 0.1             # a fresh point moves each number by up to this fraction
FRESH_KEY = ROOT / "autograder" / "work" / "fresh-points.key"   # the grader's secret (never in a sandbox)
JUDGING = threading.Lock()     # DyNet has one computation graph per process: one judge at a time


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
        if course_marks(cell).get("ignored") or (has_marks(cell) and gid not in spec.marks):
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


# -- where it runs: here, or on a cluster's worker, from the submission's bytes ---------------
def submission_files(folder: Path) -> dict:
    """A submitted folder's regular files by relative path, as bytes (intake made them regular and
    few): all a worker needs to grade it."""
    return {str(path.relative_to(folder)): path.read_bytes()
            for path in sorted(folder.rglob("*")) if path.is_file() and not path.is_symlink()}


def grade_folder(chapter: str, folder: Path, limits: Limits, scheduler: str = "", certs: str = "") -> dict:
    """The trusted result of a submitted folder, graded from its files (:func:`grade_bytes`): here, or
    on a worker of the Dask cluster at ``scheduler`` (tls:// only, with the course's certificates in
    ``certs``: :mod:`autograder.cluster`), which is handed the files' bytes and the submission's own
    point key, never the instructor's fresh-point key (a task whose worker dies is run again on
    another). A worker whose grader is not the instructor's fails the submission."""
    files = submission_files(folder)
    if not scheduler:
        return grade_bytes(chapter, files, limits)
    from autograder import cluster
    digest = submission_digest(folder / f"{chapter}.ipynb", chapter)
    points = (digest, point_key(digest)) if digest else ("", b"")
    with cluster.client(scheduler, Path(certs) if certs else cluster.CERTS) as client:
        return client.submit(grade_bytes, chapter, files, limits, points, pure=False).result()


def grade_bytes(chapter: str, files: dict, limits: Limits | None = None, points: tuple | None = None) -> dict:
    """Grade one submission from its bytes in a temporary folder of this machine (a cluster's
    worker runs this); the trusted result, as JSON. ``points``: (digest, point key) of the
    submission as the instructor's machine worked them out (a worker's task); None on the
    instructor's machine, which holds the key."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / chapter
        for name, data in files.items():
            target = (folder / name).resolve()
            if not target.is_relative_to(folder.resolve()):
                raise ValueError(f"{name}: not a path inside the submission")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        start = time.perf_counter()
        result = grade(folder / f"{chapter}.ipynb", chapter, limits, points=points).to_json()
        result["seconds"] = round(time.perf_counter() - start, 1)
        return result


# -- grading: the answer cells run in the sandbox, their numbers judged here --------------------
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
    return score_notebook(nb, chapter, spec, artifacts_of(path, chapter), limits, confine, points)


def score_notebook(nb, chapter: str, spec: Spec, artifacts: list = (), limits: Limits | None = None,
                   confine: bool = True, points: tuple | None = None) -> Result:
    """A notebook already read (:func:`grade` calls this): its answer cells and the checks' probes
    run in the sandbox, what they return judged against the reference at the fresh point."""
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
    numbers, errors, notes, result.aborted = run_code(cells, probes, inputs, limits, confine, artifacts,
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
