"""The command line: a class's submissions through intake (stage 1) into one nbgrader run each.

    python -m autograder.grade release   [--out DIR]
    python -m autograder.grade autograde SUBMISSIONS [--workers N | --scheduler tls://HOST:PORT [--certs DIR]]
                                         [--students A,B] [--collected TIME] [--course DIR]
    python -m autograder.grade feedback  [--course DIR]
    python -m autograder.grade grades    [--csv FILE] [--course DIR]

(``make release``, ``make autograde SUBMISSIONS=DIR``, ``make feedback``,
``make grades`` call these.) SUBMISSIONS holds ``<student>/<chapter>.ipynb`` or
nbgrader's own ``<student>/<chapter>/<chapter>.ipynb``. The course directory
(default ``autograder/work/course``) is an ordinary nbgrader course directory
whose configuration is ``autograder/nbgrader_config.py``.

How a score is made, in stages (autograder/README.md): intake, here; the nbgrader plugin
(:mod:`autograder.nbgrader_plugin`, in each ``nbgrader autograde`` run); the grader
(:mod:`autograder.grader`); the sandbox (:mod:`autograder.sandbox`); the checks
(:mod:`autograder.reference.grading`). The result store is :mod:`autograder.results`. ``autograde``:

1. intake (:mod:`autograder.intake`): each submission is copied into
   ``submitted/<student>/<chapter>/`` as regular files, or refused with a reason; its time is
   when intake first saw that version of it (``--collected`` for a folder collected earlier),
   never a time the student wrote;
2. ``nbgrader autograde <chapter> --student <student>`` for each accepted submission, several at
   once in a pool (``--workers`` here; with ``--scheduler tls://HOST:PORT``, as many as the Dask
   cluster's workers have threads, reached over TLS with the course's certificates:
   :mod:`autograder.cluster`), each a process of its own forked from a server that has imported
   nbgrader and the grader once (:func:`autograde_submission`, :func:`nbgrader`). In it the course's
   preprocessor (``GradeInSandbox``, in place of nbgrader's in-kernel execution) calls the grader, on
   this machine or on a worker of the cluster, which gets the submission's bytes and returns its
   result, with no file system shared; nbgrader records the scores in the gradebook, so formgrader,
   ``nbgrader export`` and ``nbgrader generate_feedback`` show them. That is the only way a score is made: one
   student's run cannot stop, stall or change another's;
3. ``feedback`` runs ``nbgrader generate_feedback`` (pages in ``feedback/``,
   which ``nbgrader release_feedback`` hands out), ``grades`` prints the table
   and writes ``course-grades.csv`` with a status column (``grades.csv`` is ``nbgrader
   export``'s). Both show the score after the late penalty, as ``nbgrader export`` computes it;
   every name and note in them is escaped (:func:`intake.printable`).
"""
from __future__ import annotations

import argparse
import csv
import datetime
import json
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

from autograder import chapters as manifest
from autograder import feedback, grader, intake, late_policy, nbgrader_runs, sandbox
from autograder.results import load_records, load_result, results_dir, save_result
from course.paths import ROOT

WORK = ROOT / "autograder" / "work"
COURSE = WORK / "course"
GRADEBOOK_WAIT_S = 120          # how long a run waits for another's write to the gradebook


#: ``nbgrader ARGS`` in the course directory, a process of its own forked from a preloaded server
nbgrader = nbgrader_runs.run


def prepare_course(course: Path, chapters: list):
    """An nbgrader course directory that knows these chapters: the course's
    configuration, each solution notebook as the assignment's source, and the
    gradebook entries ``generate_assignment`` makes (redone when a solution changes)."""
    course.mkdir(parents=True, exist_ok=True)
    config = f"c = get_config()  # noqa: F821\nload_subconfig({str(ROOT / 'autograder' / 'nbgrader_config.py')!r})\n"
    if not (course / "nbgrader_config.py").is_file() or (course / "nbgrader_config.py").read_text() != config:
        (course / "nbgrader_config.py").write_text(config)
    for chapter in chapters:
        solution = (ROOT / "solutions" / f"{chapter}.ipynb").read_bytes()
        source = course / "source" / chapter / f"{chapter}.ipynb"
        if source.is_file() and source.read_bytes() == solution and (course / "release" / chapter).is_dir():
            continue
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_bytes(solution)
        nbgrader("generate_assignment", chapter, "--force", course=course)
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", late_policy.COURSE_ID) as gb:   # due dates as the file says
        late_policy.set_due_dates(gb, chapters)


def _failed(chapter: str, reason: str) -> dict:
    """The record of a submission that was not graded: the reason, no points."""
    solution = ROOT / "solutions" / f"{chapter}.ipynb"
    max_score = sum(p for _, p, _ in grader.spec_of(solution).tests) if solution.is_file() else 0.0
    return grader.Result(notebook=chapter, failure=reason, max_score=max_score).to_json()


def _refused(course: Path, item, reason: str) -> dict:
    """A refused submission's record. One with a student's name and one of the course's chapters
    also gets its result saved (for ``grades`` and its feedback page) and its earlier copy removed
    from submitted/ (nothing older is graded in its place); any other name touches nothing on disk."""
    result = _failed(item.chapter, reason)
    try:
        folder = intake.inside(course / "submitted", item.student, item.chapter)
    except ValueError:
        folder = None
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
        save_result(course, item.student, item.chapter, result)
    return {"student": item.student, **result, "status": "failed", "reason": reason}


def pool_size(workers: int = 2, scheduler: str | None = None, certs: Path | None = None) -> int:
    """How many submissions are graded at once: ``workers`` on this machine, or as many as the
    Dask cluster's workers have threads (asked once, over TLS with the course's certificates: a
    scheduler that cannot be reached, or a plain tcp:// one, stops the run here, before anyone is graded)."""
    if not scheduler:
        return max(1, workers)
    from autograder import cluster
    with cluster.client(scheduler, certs or cluster.CERTS) as client:
        return max(1, sum(client.nthreads().values()))


def autograde_submission(course: Path, student: str, chapter: str, limits: sandbox.Limits | None = None,
                         scheduler: str | None = None, certs: Path | None = None):
    """``nbgrader autograde CHAPTER --student STUDENT``, a process of its own: its GradeInSandbox
    (stage 2, :mod:`autograder.nbgrader_plugin`) grades the submission and nbgrader records the score.
    A run that fails, or outlives three times the submission's time, is that student's failure, with
    the reason in the grade table; never the class's."""
    limits = limits or sandbox.Limits()
    (results_dir(course) / student / f"{chapter}.json").unlink(missing_ok=True)     # no stale result
    options = [f"--GradeInSandbox.limits={json.dumps(asdict(limits))}",
               # many runs share one gradebook: a run waits for another's write instead of failing on
               # SQLite's lock after the driver's 5 s (tests/test_grading_runs.py holds the lock longer)
               f"--CourseDirectory.db_url=sqlite:///{course / 'gradebook.db'}?timeout={GRADEBOOK_WAIT_S}"]
    if scheduler:
        options += [f"--GradeInSandbox.scheduler={scheduler}", f"--GradeInSandbox.certs={certs or ''}"]
    seconds = 3 * (limits.wall_s + sandbox.START_S)
    try:
        run = nbgrader("autograde", chapter, "--student", student, "--force", *options, course=course,
                       check=False, timeout=seconds)
        failure = None if run.returncode == 0 else f"nbgrader autograde stopped (exit code {run.returncode})"
    except subprocess.TimeoutExpired:
        failure = f"nbgrader autograde did not finish within {seconds} s"
    if failure is None and load_result(course, student, chapter) is None:
        failure = "nbgrader autograde did not grade it"
    if failure:
        save_result(course, student, chapter, _failed(chapter, failure + ": grade it again, or by hand"))


def autograde(submissions: Path, course: Path = COURSE, workers: int = 2, limits: sandbox.Limits | None = None,
              students: list | None = None, scheduler: str | None = None, certs: Path | None = None,
              collected: datetime.datetime | None = None) -> list:
    """Grade a folder of submissions into the course directory; the records, one per submission.
    ``scheduler``: a Dask cluster's tls:// address, reached with the course's certificates in
    ``certs`` (default autograder/work/cluster, ``make cluster-certs``). A submission's time is when
    intake first saw that version of it: now, or ``collected`` (when the instructor collected the
    folder, if earlier; intake.stamp)."""
    if scheduler:
        from autograder import cluster
        cluster.check_address(scheduler)              # before anything is copied or graded
        certs = Path(certs or cluster.CERTS).resolve()
        cluster.security(certs)
    now = datetime.datetime.now(datetime.timezone.utc)
    if collected is not None and collected > now:
        raise ValueError(f"--collected {collected:%Y-%m-%d %H:%M} UTC is in the future: give the time you "
                         "collected the folder, or leave it out (now)")
    if Path(submissions).resolve().is_relative_to((course / "submitted").resolve()):
        raise ValueError(f"{submissions} is the course's own submitted/ folder, which intake replaces: grade it "
                         "with `nbgrader autograde CHAPTER --student S`, or give a copy as SUBMISSIONS")
    known = set(manifest.stems())          # the course's assignments: the chapter manifest
    items = [s for s in intake.collect(submissions, known) if not students or s.student in students]
    if not items:
        raise ValueError(f"no notebooks found under {submissions}: expected <student>/<chapter>.ipynb "
                         "or <student>/<chapter>/<chapter>.ipynb")
    prepare_course(course, sorted({s.chapter for s in items if s.chapter in known}))
    records, accepted = [], []
    for item in items:
        reason = item.refused           # intake checked the names: a student's, one of the course's chapters
        if reason is None:
            target = intake.inside(course / "submitted", item.student, item.chapter)
            try:
                intake.place(item, target)
                grader.read_submission(target / f"{item.chapter}.ipynb")
                intake.stamp(course, item.student, item.chapter, target, collected or now)
                accepted.append(item)
                continue
            except (intake.Refused, ValueError) as err:
                reason = str(err)
            except OSError as err:                  # this student only; the class goes on
                reason = f"the submission cannot be copied ({err.strerror or err})"
        records.append(_refused(course, item, reason))

    with ThreadPoolExecutor(max_workers=pool_size(workers, scheduler, certs)) as pool:     # waits for all
        runs = [pool.submit(autograde_submission, course, item.student, item.chapter, limits, scheduler, certs)
                for item in accepted]
    for run in runs:            # a submission's failure is recorded; this raises an error of the machine
        run.result()
    wanted = {(i.student, i.chapter) for i in accepted}
    return records + [r for r in load_records(course) if (r["student"], r["notebook"]) in wanted]


def spreadsheet_safe(value):
    """A CSV cell a spreadsheet shows as text: one that begins with = + - @, a tab or
    a carriage return gets a leading ' (OWASP's rule against formula injection)."""
    return "'" + value if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


def write_csv(records: list, path: Path):
    """The grade table as CSV: the score after the late penalty; every cell escaped
    (intake.printable: no control character) and shown by a spreadsheet as text."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["student", "assignment", "score", "max_score", "late_penalty", "received", "status", "reason"])
        for r in records:
            row = (r["student"], r["notebook"], r["score"], r["max_score"], r.get("late_penalty", 0.0),
                   r.get("received", ""), r["status"], r.get("reason", ""))
            writer.writerow([spreadsheet_safe(intake.printable(v) if isinstance(v, str) else v) for v in row])


def write_feedback(course: Path = COURSE, workers: int = 2) -> Path:
    """nbgrader's feedback page for every graded submission (the course's content, see
    nbgrader_plugin.CourseFeedback), each made in a process of its own with limits of time and
    memory (feedback.make_pages); a page for each one nbgrader could not take, and for each
    whose page could not be made, with the reason (the rest of the class gets theirs)."""
    printable = intake.printable         # names and nbgrader's words: no control character
    made = sorted((p.parent.parent.name, p.parent.name) for p in (course / "autograded").glob("*/*/*.ipynb"))
    unmade = feedback.make_pages(course, made, workers)
    for (student, notebook), (reason, said) in unmade.items():
        print(f"no feedback page for {printable(student)} {printable(notebook)}: {reason}"
              + (f" (nbgrader: {printable(said)})" if said else "") + "; the student gets the reason instead",
              file=sys.stderr)
    for record in load_records(course):
        student, notebook = record["student"], record["notebook"]
        if (student, notebook) in unmade:
            reason = (f"the feedback page of your notebook could not be made ({unmade[student, notebook][0]}): "
                      "ask your instructor")
        elif record["status"] == "failed":
            reason = record["reason"]
        else:
            continue
        out = course / "feedback" / student / notebook / f"{notebook}.html"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(feedback.page(record, student, record["status"], reason))
    return course / "feedback"


def print_table(records: list):
    """The grade table on the terminal: the score after the late penalty; names and reasons
    escaped (intake.printable), so none can move the cursor, hide text or forge a row."""
    shown = intake.printable
    print(f"{'student':<24} {'assignment':<26} {'score':>11}  status")
    for r in sorted(records, key=lambda r: (r["student"], r["notebook"])):
        print(f"{shown(r['student']):<24} {shown(r['notebook']):<26} {r['score']:>5g} / {r['max_score']:<3g}  "
              f"{r['status']}{': ' + shown(r['reason'])[:90] if r.get('reason') else ''}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("release", help="build the student release")
    p.add_argument("--out", default=str(ROOT / "release"))
    p = sub.add_parser("autograde", help="grade a folder of submissions")
    p.add_argument("submissions")
    p.add_argument("--workers", type=int, default=2, help="submissions graded at once on this machine")
    p.add_argument("--scheduler", default=None,
                   help="grade on a Dask cluster instead, as many at once as its workers have threads, "
                        "over TLS only, e.g. tls://10.0.0.5:8786 (docs/teaching.md)")
    p.add_argument("--certs", default=None, help="the course's cluster certificates (make cluster-certs; "
                                                 "default autograder/work/cluster)")
    p.add_argument("--students", default="", help="comma-separated student folders to grade (default: all)")
    p.add_argument("--collected", default=None,
                   help="when you collected SUBMISSIONS, e.g. 2027-03-02T00:05:00Z (default: now): the time of "
                        "each submission intake has not seen before (README: time of submission)")
    for name in ("autograde", "feedback", "grades"):
        p = sub.choices.get(name) or sub.add_parser(name, help={"feedback": "write the feedback pages",
                                                              "grades": "print the grade table, write the CSV"}[name])
        p.add_argument("--course", default=str(COURSE), help="the nbgrader course directory")
    sub.choices["grades"].add_argument("--csv", default=None, help="default: COURSE/course-grades.csv "
                                                                   "(grades.csv is nbgrader export's)")
    args = parser.parse_args(argv)

    if args.command == "release":
        from autograder.release import build
        print(f"student release written to {build(Path(args.out))}")
        return 0
    course = Path(args.course).resolve()
    if args.command == "autograde":
        if not Path(args.submissions).is_dir():
            parser.error(f"{args.submissions} is not a folder of submissions (<student>/<chapter>.ipynb)")
        students = [s for s in args.students.split(",") if s] or None
        try:            # a refused scheduler, missing certificates, a future --collected: exit 2, saying why
            collected = late_policy.utc(args.collected, "--collected") if args.collected else None
            records = autograde(Path(args.submissions), course, args.workers, students=students,
                                scheduler=args.scheduler, certs=args.certs, collected=collected)
        except ValueError as err:
            parser.error(str(err))
        print_table(records)
        print(f"scores are in the gradebook of {course}: `make grades`, `make feedback`, or nbgrader's "
              "own export and formgrader")
    elif args.command == "feedback":
        print(f"feedback pages in {write_feedback(course)}")
    elif args.command == "grades":
        records = load_records(course)
        print_table(records)
        out = Path(args.csv or course / "course-grades.csv")
        write_csv(records, out)
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
