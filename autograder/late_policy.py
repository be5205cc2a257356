"""Due dates, late work and extensions, from one course file (``autograder/deadlines.toml``).

* The due dates go into nbgrader's gradebook (:func:`set_due_dates`, called whenever the grader
  prepares a course directory, and by the hub's set-up), so nbgrader computes how late each
  submission was from its ``timestamp.txt``, minus any extension. That file is always the
  grader's side's record, never the student's: written by intake (when it first saw that version
  of the submission, ``intake.stamp``) or by the hub's collect (the exchange's time,
  ``hub.exchange.SafeCollect``).
* :class:`CoursePenalty` is nbgrader's late-submission plugin
  (``AssignLatePenalties.plugin_class``): the policy's share of the notebook's score per started
  day late, after a grace period, up to a cap. The gradebook, ``nbgrader export`` and the feedback
  all show the score after it.
* ``make extend STUDENT=s CHAPTER=05_gru UNTIL=2027-03-04T23:59:00Z`` records an extension in the
  gradebook (nbgrader's own ``SubmittedAssignment.extension``), before or after the student submits.

``COURSE_DEADLINES`` names another file (a term's dates kept outside the repository, or a test's).
"""
from __future__ import annotations

import argparse
import datetime
import math
import os
import sys
import tomllib
from pathlib import Path

from nbgrader.plugins import LateSubmissionPlugin

from autograder import chapters

FILE = Path(__file__).resolve().parent / "deadlines.toml"
COURSE_ID = "rnnlm-course"          # autograder/nbgrader_config.py's


def deadlines_file() -> Path:
    return Path(os.environ.get("COURSE_DEADLINES") or FILE)


def load(path: Path | None = None) -> dict:
    """{"policy": {...}, "due": {chapter: aware datetime}}, checked: a clear error names the line to fix."""
    path = path or deadlines_file()
    try:
        raw = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise ValueError(f"{path}: {err}; see autograder/deadlines.toml for the form") from None
    policy = {"grace_minutes": 0, "percent_per_day": 0, "cap_percent": 100, **raw.get("policy", {})}
    for key, value in policy.items():
        if not isinstance(value, (int, float)) or value < 0:
            raise ValueError(f"{path}: [policy] {key} = {value!r} must be a number >= 0")
    due = {chapter: utc(when, f"{path}: [due] {chapter}") for chapter, when in raw.get("due", {}).items()}
    known = chapters.stems()
    unknown = sorted(set(due) - set(known))
    if unknown:      # a misspelt chapter would otherwise never be due
        raise ValueError(f"{path}: [due] names {', '.join(unknown)}, which the course does not have; the "
                         f"chapters are those of autograder/chapters.toml: {', '.join(known)}")
    return {"policy": policy, "due": due}


def utc(when, where: str) -> datetime.datetime:
    """A moment with its time zone, in UTC (a TOML date, or ISO 8601 text); ``where`` names it in
    the error."""
    try:
        moment = when if isinstance(when, datetime.datetime) else datetime.datetime.fromisoformat(str(when))
    except ValueError:
        raise ValueError(f"{where} = {when!r} is not a date like \"2027-03-01T23:59:00Z\"") from None
    if moment.tzinfo is None:
        raise ValueError(f"{where} = {when!r} has no time zone: end it with Z (UTC)")
    return moment.astimezone(datetime.timezone.utc)


def penalty_share(seconds_late: float, policy: dict) -> float:
    """The share of the score taken for a submission this late (0 to cap/100)."""
    late = seconds_late - 60 * policy["grace_minutes"]
    if late <= 0:
        return 0.0
    days = math.ceil(late / 86400)
    return min(policy["cap_percent"], policy["percent_per_day"] * days) / 100


def describe(deadlines: dict) -> str:
    """The policy and the dates in words (the release README, the feedback)."""
    p = deadlines["policy"]
    rule = (f"A submission more than {p['grace_minutes']:g} minutes late loses {p['percent_per_day']:g}% of its "
            f"score per started day late, at most {p['cap_percent']:g}%. Extensions are recorded by your instructor.")
    if not deadlines["due"]:
        return "No due dates are set yet: your instructor announces them. " + rule
    rows = "\n".join(f"| {c} | {d:%Y-%m-%d %H:%M} UTC |" for c, d in sorted(deadlines["due"].items()))
    return f"| chapter | due |\n|---|---|\n{rows}\n\n{rule}"


class CoursePenalty(LateSubmissionPlugin):
    """nbgrader's late-submission plugin, with the course's policy."""

    def late_submission_penalty(self, student_id, score, total_seconds_late):
        share = penalty_share(total_seconds_late, load()["policy"])
        if share:
            self.log.info("%s: %.0f s late, %g%% of %g taken", student_id, total_seconds_late, 100 * share, score)
        return score * share


def set_due_dates(gradebook, names=None, deadlines: dict | None = None):
    """Write each chapter's due date (or none) into an open nbgrader Gradebook: the chapters named,
    or every chapter of the manifest."""
    due = (deadlines or load())["due"]
    for chapter in chapters.stems() if names is None else names:
        when = due.get(chapter)
        gradebook.update_or_create_assignment(chapter, duedate=when.replace(tzinfo=None) if when else None)


def extend(course: Path, student: str, chapter: str, until: str) -> datetime.timedelta:
    """Record that STUDENT may hand CHAPTER in until UNTIL without penalty; the extension."""
    from nbgrader.api import Gradebook
    deadlines = load()
    if chapter not in deadlines["due"]:
        raise ValueError(f"{chapter} has no due date in {deadlines_file()}: nothing to extend")
    extension = utc(until, "UNTIL") - deadlines["due"][chapter]
    if extension <= datetime.timedelta(0):
        raise ValueError(f"{until} is not after {chapter}'s due date ({deadlines['due'][chapter]:%Y-%m-%d %H:%M} UTC)")
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", COURSE_ID) as gb:
        set_due_dates(gb, [chapter], deadlines)
        gb.update_or_create_student(student)
        gb.update_or_create_submission(chapter, student, extension=extension)
    return extension


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Record an extension in the gradebook (instructors).")
    parser.add_argument("student")
    parser.add_argument("chapter", help="e.g. 05_gru")
    parser.add_argument("until", help="the new due date, e.g. 2027-03-04T23:59:00Z")
    parser.add_argument("--course", type=Path, default=Path(__file__).resolve().parent / "work" / "course",
                        help="the nbgrader course directory (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        extension = extend(args.course, args.student, args.chapter, args.until)
    except ValueError as err:
        print(f"extend: {err}", file=sys.stderr)
        return 2
    print(f"{args.student} may hand in {args.chapter} until {args.until} ({extension} after the due date); "
          "a submission graded before this counts it when it is graded again")
    return 0


if __name__ == "__main__":
    sys.exit(main())
