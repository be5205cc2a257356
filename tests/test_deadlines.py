"""Due dates, late work and extensions, end to end through the real commands: a class of correct
05_gru submissions collected in rounds (`autograde --collected TIME`, the time the instructor took
the folder), on time, inside the grace period, late, and late but within an extension recorded with
the course's command; and late students who claim otherwise: no timestamp.txt (the flat layout),
one forged to a minute before the due date, one of 1970. The time that counts is when the grader
first saw each version: the grade table, course-grades.csv, `nbgrader export` and each feedback
page show the score the policy says, one number, and grading again keeps the first time while a
changed submission gets a new one."""
import contextlib
import csv
import datetime
import io
import json
import re
import shutil

import nbformat
import pytest

from autograder import grade, late_policy, release
from tests.conftest import ROOT

pytestmark = pytest.mark.xdist_group("deadlines")
DEADLINES = """[policy]
grace_minutes = 15
percent_per_day = 10
cap_percent = 50

[due]
"05_gru" = "2026-03-01T12:00:00Z"
"""
NOTEBOOK = ROOT / "autograder" / "samples" / "submissions" / "correct" / "05_gru.ipynb"
ON_TIME, GRACE, LATE, AGAIN = ("2026-03-01T11:00:00Z", "2026-03-01T12:10:00Z", "2026-03-03T13:00:00Z",
                               "2026-03-10T09:00:00Z")
# student -> (collected in the round of, what the student wrote as timestamp.txt or None (flat layout),
#             expected score of 5): 3 started days late = 30% of 5 taken; 9 days = 90%, capped at 50%
CLASS = {"ontime": (ON_TIME, "2026-03-01 11:00:00.000000 UTC", 5.0),
         "grace": (GRACE, "2026-03-01 12:10:00.000000 UTC", 5.0),
         "late": (LATE, "2026-03-03 13:00:00.000000 UTC", 3.5),
         "extended": (LATE, "2026-03-03 13:00:00.000000 UTC", 5.0),
         "flat_late": (LATE, None, 3.5),
         "forged_minute": (LATE, "2026-03-01 11:59:00.000000 UTC", 3.5),
         "epoch": (LATE, "1970-01-01 00:00:00.000000 UTC", 3.5),
         "resubmits": (ON_TIME, "2026-03-01 11:00:00.000000 UTC", 2.5)}     # changed, seen again in AGAIN
ROW = re.compile(r"^(\S+)\s+(\S+)\s+([\d.]+) / ([\d.]+)\s+(.*)$")


def run(*argv) -> str:
    """`python -m autograder.grade ARGV` as the make targets run it; what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert grade.main(list(argv)) == 0
    return out.getvalue()


def table(text: str) -> dict:
    return {m[1]: (float(m[3]), m[5]) for m in map(ROW.match, text.splitlines()[1:]) if m}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("deadlines")
    (base / "deadlines.toml").write_text(DEADLINES)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("COURSE_DEADLINES", str(base / "deadlines.toml"))
        submissions, course = base / "class", base / "course"
        for student, (_, wrote, _) in CLASS.items():
            folder = submissions / student / ("05_gru" if wrote else "")
            folder.mkdir(parents=True)
            shutil.copy(NOTEBOOK, folder / "05_gru.ipynb")
            if wrote:
                (folder / "timestamp.txt").write_text(wrote + "\n")
        grade.prepare_course(course, ["05_gru"])
        extension = late_policy.extend(course, "extended", "05_gru", "2026-03-04T00:00:00Z")
        tables = {}
        for when in (ON_TIME, GRACE, LATE):
            students = ",".join(s for s, (collected, *_) in CLASS.items() if collected == when)
            tables[when] = table(run("autograde", str(submissions), "--course", str(course), "--collected", when,
                                     "--students", students))
        changed = submissions / "resubmits" / "05_gru" / "05_gru.ipynb"     # a new version after the due date
        nb = nbformat.read(changed, as_version=4)
        nb.cells.append(nbformat.v4.new_markdown_cell("one more note"))
        nbformat.write(nb, changed)
        tables[AGAIN] = table(run("autograde", str(submissions), "--course", str(course), "--collected", AGAIN,
                                  "--students", "ontime,late,forged_minute,resubmits"))
        shown = table(run("grades", "--course", str(course)))
        pages = grade.write_feedback(course)
        export = grade.nbgrader("export", course=course)
        yield {"course": course, "tables": tables, "shown": shown, "pages": pages, "export": export,
               "extension": extension, "readme": release.student_readme()}


def test_the_policy_in_numbers():
    policy = late_policy.load()["policy"]
    assert late_policy.penalty_share(0, policy) == 0
    assert late_policy.penalty_share(60 * policy["grace_minutes"], policy) == 0
    assert late_policy.penalty_share(60 * policy["grace_minutes"] + 1, policy) == policy["percent_per_day"] / 100
    assert late_policy.penalty_share(10 ** 8, policy) == policy["cap_percent"] / 100


def test_the_gradebook_and_the_export_hold_the_policys_scores(graded):
    assert graded["extension"] == datetime.timedelta(days=2, hours=12)
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{graded['course'] / 'gradebook.db'}", late_policy.COURSE_ID) as gb:
        for student, (*_, score) in CLASS.items():
            submission = gb.find_submission("05_gru", student)
            assert submission.score - submission.late_submission_penalty == pytest.approx(score), student
    rows = {r["student_id"]: r for r in csv.DictReader(open(graded["course"] / "grades.csv"))}
    for student, (*_, score) in CLASS.items():
        assert float(rows[student]["score"]) == pytest.approx(score), rows[student]


def test_the_table_and_csv_show_the_same_number_as_the_export(graded):
    """`make grades` shows the score after the penalty, as `nbgrader export` does, in its own file."""
    exported = {r["student_id"]: float(r["score"]) for r in csv.DictReader(open(graded["course"] / "grades.csv"))}
    ours = {r["student"]: r for r in csv.DictReader(open(graded["course"] / "course-grades.csv"))}
    for student, (*_, score) in CLASS.items():
        assert graded["shown"][student][0] == pytest.approx(score), graded["shown"][student]
        assert float(ours[student]["score"]) == pytest.approx(score) == exported[student], ours[student]
        assert float(ours[student]["late_penalty"]) == pytest.approx(5.0 - score), ours[student]
    assert ours["late"]["received"] == "2026-03-03 13:00:00 UTC"
    note = "late, 1.5 points taken: received 2026-03-03 13:00 UTC (first seen by the grader)"
    assert graded["shown"]["flat_late"][1].startswith("graded: " + note), graded["shown"]["flat_late"]
    assert ours["forged_minute"]["reason"].startswith(note), ours["forged_minute"]
    assert "late" not in graded["shown"]["extended"][1]


def test_the_students_timestamp_counts_for_nothing(graded):
    """A forged time, 1970, or none at all: the time is when the grader first saw the work."""
    for student in ("flat_late", "forged_minute", "epoch", "late"):
        stamp = graded["course"] / "submitted" / student / "05_gru" / "timestamp.txt"
        assert stamp.read_text().strip() == "2026-03-03 13:00:00.000000 UTC", student
        assert graded["tables"][LATE][student][0] == pytest.approx(3.5), graded["tables"][LATE][student]


def test_grading_again_keeps_the_first_time_and_a_new_version_gets_its_own(graded):
    again = graded["tables"][AGAIN]
    assert again["ontime"][0] == 5.0 and again["late"][0] == 3.5 and again["forged_minute"][0] == 3.5, again
    assert graded["tables"][ON_TIME]["resubmits"][0] == 5.0 and again["resubmits"][0] == 2.5, again
    seen = json.loads((graded["course"] / "received.json").read_text())
    assert sorted(seen["resubmits/05_gru"].values()) == ["2026-03-01 11:00:00.000000 UTC",
                                                         "2026-03-10 09:00:00.000000 UTC"]


def test_each_feedback_page_says_what_was_taken(graded):
    for student, (*_, score) in CLASS.items():
        page = (graded["pages"] / student / "05_gru" / "05_gru.html").read_text()
        assert f"{score:g} / 5 points" in page, student
        assert ("late: 1.5 points taken" in page) == (CLASS[student][2] == 3.5), student


def test_students_read_the_due_dates_and_the_policy_in_the_release(graded):
    assert "| 05_gru | 2026-03-01 12:00 UTC |" in graded["readme"]
    assert "loses 10% of its score per started day late, at most 50%" in graded["readme"]
    assert "the time the grader received it" in graded["readme"]


def test_a_bad_date_or_extension_is_refused_with_the_fix(tmp_path, monkeypatch):
    (tmp_path / "d.toml").write_text('[due]\n"05_gru" = "next tuesday"\n')
    monkeypatch.setenv("COURSE_DEADLINES", str(tmp_path / "d.toml"))
    with pytest.raises(ValueError, match="not a date like"):
        late_policy.load()
    (tmp_path / "d.toml").write_text('[due]\n"05_gur" = "2026-03-01T12:00:00Z"\n')     # misspelt: never due
    with pytest.raises(ValueError, match="05_gur, which the course does not have.*05_gru"):
        late_policy.load()
    (tmp_path / "d.toml").write_text(DEADLINES)
    with pytest.raises(ValueError, match="is not after"):
        late_policy.extend(tmp_path, "s", "05_gru", "2026-02-01T00:00:00Z")
    with pytest.raises(ValueError, match="no time zone"):
        late_policy.extend(tmp_path, "s", "05_gru", "2026-03-05T00:00:00")
    with pytest.raises(ValueError, match="in the future"):
        grade.autograde(tmp_path, course=tmp_path / "course",
                        collected=datetime.datetime(2999, 1, 1, tzinfo=datetime.timezone.utc))
