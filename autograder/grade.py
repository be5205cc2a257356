"""The instructor's grading workflow: nbgrader plus what it lacks.

    python -m autograder.grade release  [--out DIR]
    python -m autograder.grade autograde SUBMISSIONS [--workers N] [--cell-timeout S]
    python -m autograder.grade feedback
    python -m autograder.grade grades   [--csv FILE]

(``make release``, ``make autograde SUBMISSIONS=DIR``, ``make feedback``,
``make grades`` call these.) SUBMISSIONS holds ``<student>/<chapter>.ipynb`` or
nbgrader's own ``<student>/<chapter>/<chapter>.ipynb``.

Each submission is graded twice, in isolation from every other one:

1. by nbgrader (``autograde``) in a private copy of the course directory with
   its own gradebook, so a submission that writes to "the gradebook" touches
   only its own throwaway copy;
2. by the trusted grader (:mod:`autograder.trusted`): the score that counts.

Where nbgrader gave more than the trusted grader, the submission is marked
*suspicious* for the instructor to look at. Results land in
``autograder/work/results/<student>/<chapter>.json``.
"""
from __future__ import annotations

import argparse
import csv
import html
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from autograder import trusted
from autograder.exercises import use_this_environment

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "autograder" / "work"
STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")


# -- collecting submissions -------------------------------------------------------
def collect(submissions: Path) -> list:
    """(student, chapter, path) for every submitted notebook, in either layout."""
    found = []
    for student_dir in sorted(p for p in Path(submissions).iterdir() if p.is_dir()):
        for path in sorted(student_dir.rglob("*.ipynb")):
            if ".ipynb_checkpoints" in path.parts:
                continue
            found.append((student_dir.name, path.stem, path))
    return found


# -- nbgrader, one private course directory per submission ------------------------
def template(chapters: list, work: Path) -> Path:
    """A course directory with the chapters' source and a gradebook that knows them."""
    use_this_environment()
    base = work / "template"
    stamp = json.dumps({ch: (ROOT / "solutions" / f"{ch}.ipynb").stat().st_mtime for ch in chapters})
    if (base / "stamp.json").exists() and (base / "stamp.json").read_text() == stamp:
        return base
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    shutil.copy(ROOT / "autograder" / "nbgrader_config.py", base / "nbgrader_config.py")
    for ch in chapters:
        (base / "source" / ch).mkdir(parents=True)
        shutil.copy(ROOT / "solutions" / f"{ch}.ipynb", base / "source" / ch / f"{ch}.ipynb")
        run = subprocess.run(["nbgrader", "generate_assignment", ch, "--force"], cwd=base,
                             capture_output=True, text=True)
        if run.returncode != 0:
            raise RuntimeError(f"nbgrader generate_assignment {ch} failed:\n{run.stderr[-2000:]}")
    (base / "stamp.json").write_text(stamp)
    return base


def _nbgrader_limits():
    resource.setrlimit(resource.RLIMIT_AS, (8 << 30,) * 2)     # the kernel inherits it
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def nbgrader_autograde(base: Path, student: str, chapter: str, path: Path, work: Path,
                       cell_timeout: int, wall_s: int) -> dict:
    """Run nbgrader autograde privately; per-cell scores from its gradebook."""
    from nbgrader.api import Gradebook
    private = work / "runs" / student / chapter
    shutil.rmtree(private, ignore_errors=True)
    shutil.copytree(base, private, ignore=shutil.ignore_patterns("stamp.json"))
    target = private / "submitted" / student / chapter
    target.mkdir(parents=True)
    shutil.copy(path, target / f"{chapter}.ipynb")
    for folder in trusted.artifacts_of(path, chapter):      # e.g. the capstone's saved model
        shutil.copytree(folder, target / folder.name, symlinks=False)
    env = {**os.environ, "NBGRADER_EXECUTION": "autograde"}
    command = ["nbgrader", "autograde", chapter, "--student", student, "--force",
               f"--Execute.timeout={cell_timeout}"]
    try:
        run = subprocess.run(command, cwd=private, env=env, capture_output=True, text=True,
                             timeout=wall_s, preexec_fn=_nbgrader_limits, start_new_session=True)
        log = run.stdout + run.stderr
    except subprocess.TimeoutExpired:
        return {"error": f"nbgrader did not finish within {wall_s} s (a loop that ignores interrupts?)"}
    (work / "results" / student).mkdir(parents=True, exist_ok=True)
    (work / "results" / student / f"{chapter}.nbgrader.log").write_text(log[-20000:])
    try:
        with Gradebook(f"sqlite:///{private / 'gradebook.db'}") as gb:
            nb = gb.find_submission_notebook(chapter, chapter, student)
            return {"cells": {g.name: {"score": g.score, "max_score": g.max_score,
                                       "needs_manual_grade": g.needs_manual_grade} for g in nb.grades}}
    except Exception as err:
        line = next((l for l in reversed(log.splitlines()) if "ERROR" in l), "")
        return {"error": f"nbgrader could not grade it ({type(err).__name__}) {line[:200]}".strip()}


# -- combining --------------------------------------------------------------------
def status_of(result: dict, nbg: dict) -> tuple:
    if result.get("failure"):
        return "failed", result["failure"]
    reasons = list(result.get("notes", []))
    if "error" in nbg:
        reasons.append(nbg["error"])
    if result.get("aborted"):     # stopped for a loop, a crash or memory: nbgrader may disagree, fairly
        return "graded", " ".join(reasons)
    if "cells" in nbg:
        inflated = [c["grade_id"] for c in result["cells"]
                    if (nbg["cells"].get(c["grade_id"], {}).get("score") or 0) > c["points"] + 1e-9]
        if inflated:
            return "suspicious", (f"nbgrader, running inside the submission's own kernel, gave points "
                                  f"the trusted grader did not ({', '.join(inflated)}); "
                                  "the trusted score counts. " + " ".join(reasons)).strip()
        manual = sorted(gid for gid, c in nbg["cells"].items() if c.get("needs_manual_grade"))
        if manual:
            return "needs manual grade", " ".join(
                [f"nbgrader asks for a manual grade of {', '.join(manual)} (a manually graded answer, "
                 "or a grade cell the submission deleted or changed); the trusted score stands"] + reasons)
    elif "error" not in nbg:
        reasons.append("nbgrader gave no result")
    return "graded", " ".join(reasons)


def grade_one(item, base, work, cell_timeout, wall_s, limits) -> dict:
    student, chapter, path = item
    start = time.perf_counter()
    if not STUDENT_ID.match(student):
        record = {"student": student, "notebook": chapter, "score": 0.0, "max_score": 0.0,
                  "status": "failed", "reason": "student folder name must be letters, digits, _ . -"}
    else:
        result = trusted.grade(path, chapter, limits).to_json()
        nbg = (nbgrader_autograde(base, student, chapter, path, work, cell_timeout, wall_s)
               if not result.get("failure") or "unknown assignment" not in result["failure"] else {})
        status, reason = status_of(result, nbg)
        nbgrader_score = sum((c.get("score") or 0) for c in nbg.get("cells", {}).values()) if "cells" in nbg else None
        record = {"student": student, **result, "status": status, "reason": reason,
                  "nbgrader_score": nbgrader_score}
    record["seconds"] = round(time.perf_counter() - start, 1)
    out = work / "results" / student / f"{chapter}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    return record


def autograde(submissions: Path, work: Path = WORK, workers: int = 2, cell_timeout: int = 300,
              wall_s: int = 1200, limits: trusted.Limits | None = None) -> list:
    items = collect(submissions)
    if not items:
        raise ValueError(f"no notebooks found under {submissions}: expected <student>/<chapter>.ipynb "
                         "or <student>/<chapter>/<chapter>.ipynb")
    known = {p.stem for p in (ROOT / "solutions").glob("*.ipynb")}
    base = template(sorted({ch for _, ch, _ in items if ch in known}), work)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        records = list(pool.map(lambda item: grade_one(item, base, work, cell_timeout, wall_s,
                                                       limits or trusted.Limits()), items))
    return records


def load_records(work: Path = WORK) -> list:
    return [json.loads(p.read_text()) for p in sorted((work / "results").glob("*/*.json"))]


def write_csv(records: list, path: Path):
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["student", "assignment", "score", "max_score", "status", "reason", "nbgrader_score"])
        for r in records:
            writer.writerow([r["student"], r["notebook"], r["score"], r["max_score"], r["status"],
                             r.get("reason", ""), "" if r.get("nbgrader_score") is None else r["nbgrader_score"]])


def feedback_html(record: dict) -> str:
    """Per-check results and messages; never a hidden test's source or a reference value."""
    rows = []
    for cell in record.get("cells", []):
        messages = [f"{name}: passed" if not problems else f"{name}: " + "; ".join(problems)
                    for name, problems in cell.get("checks", {}).items()]
        rows.append(f"<tr><td>{html.escape(cell['grade_id'])}</td><td>{cell['points']:g} / "
                    f"{cell['max_points']:g}</td><td>{html.escape(' | '.join(messages))}</td></tr>")
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in record.get("notes", []))
    reason = html.escape(record.get("reason", ""))
    return (f"<!doctype html><meta charset='utf-8'><title>{html.escape(record['notebook'])}</title>"
            f"<h1>{html.escape(record['notebook'])}: {record['score']:g} / {record['max_score']:g}</h1>"
            f"<p>Status: {html.escape(record['status'])}. {reason}</p>"
            f"<table border=1 cellpadding=4><tr><th>test cell</th><th>points</th><th>checks</th></tr>"
            f"{''.join(rows)}</table><ul>{notes}</ul>")


def print_table(records: list):
    print(f"{'student':<24} {'assignment':<26} {'score':>11}  status")
    for r in sorted(records, key=lambda r: (r["student"], r["notebook"])):
        print(f"{r['student']:<24} {r['notebook']:<26} {r['score']:>5g} / {r['max_score']:<3g}  "
              f"{r['status']}{': ' + r['reason'][:90] if r.get('reason') else ''}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("release", help="build the student release")
    p.add_argument("--out", default=str(ROOT / "release"))
    p = sub.add_parser("autograde", help="grade a folder of submissions")
    p.add_argument("submissions")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--cell-timeout", type=int, default=300)
    sub.add_parser("feedback", help="write feedback pages for the graded submissions")
    p = sub.add_parser("grades", help="print the grade table and write the CSV")
    p.add_argument("--csv", default=str(WORK / "grades.csv"))
    args = parser.parse_args(argv)

    if args.command == "release":
        from autograder.release import build
        path = build(Path(args.out))
        print(f"student release written to {path}")
    elif args.command == "autograde":
        print_table(autograde(Path(args.submissions), workers=args.workers, cell_timeout=args.cell_timeout))
    elif args.command == "feedback":
        for r in load_records():
            out = WORK / "feedback" / r["student"] / f"{r['notebook']}.html"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(feedback_html(r))
        print(f"feedback pages in {WORK / 'feedback'}")
    elif args.command == "grades":
        records = load_records()
        print_table(records)
        write_csv(records, Path(args.csv))
        print(f"wrote {args.csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
