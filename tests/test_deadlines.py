"""Due dates, late work and extensions, end to end: a class of four correct 05_gru submissions whose
time stamps (nbgrader's timestamp.txt, as its exchange writes it) are on time, inside the grace
period, late, and late but within an extension recorded with the course's command, graded with
`autograde`: the gradebook, `nbgrader export` and each feedback page show the score the policy says."""
import csv
import datetime
import shutil

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
# student -> (submitted at, expected score of 5): 3 started days late = 30% of 5 taken
CLASS = {"ontime": ("2026-03-01 11:00:00.000000 UTC", 5.0),
         "grace": ("2026-03-01 12:10:00.000000 UTC", 5.0),
         "late": ("2026-03-03 13:00:00.000000 UTC", 3.5),
         "extended": ("2026-03-03 13:00:00.000000 UTC", 5.0)}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("deadlines")
    (base / "deadlines.toml").write_text(DEADLINES)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("COURSE_DEADLINES", str(base / "deadlines.toml"))
        notebook = ROOT / "autograder" / "samples" / "submissions" / "correct" / "05_gru.ipynb"
        for student, (when, _) in CLASS.items():
            folder = base / "class" / student / "05_gru"
            folder.mkdir(parents=True)
            shutil.copy(notebook, folder / "05_gru.ipynb")
            (folder / "timestamp.txt").write_text(when + "\n")
        course = base / "course"
        grade.prepare_course(course, ["05_gru"])
        extension = late_policy.extend(course, "extended", "05_gru", "2026-03-04T00:00:00Z")
        records = grade.autograde(base / "class", course=course, workers=2)
        pages = grade.write_feedback(course)
        export = grade.nbgrader("export", course=course)
        yield {"course": course, "records": records, "pages": pages, "export": export, "extension": extension,
               "readme": release.student_readme()}


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
        for student, (_, score) in CLASS.items():
            submission = gb.find_submission("05_gru", student)
            assert submission.score - submission.late_submission_penalty == pytest.approx(score), student
    rows = {r["student_id"]: r for r in csv.DictReader(open(graded["course"] / "grades.csv"))}
    for student, (_, score) in CLASS.items():
        assert float(rows[student]["score"]) == pytest.approx(score), rows[student]


def test_each_feedback_page_says_what_was_taken(graded):
    for student, (_, score) in CLASS.items():
        page = (graded["pages"] / student / "05_gru" / "05_gru.html").read_text()
        assert f"{score:g} / 5 points" in page, student
        assert ("late: 1.5 points taken" in page) == (student == "late"), student


def test_students_read_the_due_dates_and_the_policy_in_the_release(graded):
    assert "| 05_gru | 2026-03-01 12:00 UTC |" in graded["readme"]
    assert "loses 10% of its score per started day late, at most 50%" in graded["readme"]


def test_a_bad_date_or_extension_is_refused_with_the_fix(tmp_path, monkeypatch):
    (tmp_path / "d.toml").write_text('[due]\n"05_gru" = "next tuesday"\n')
    monkeypatch.setenv("COURSE_DEADLINES", str(tmp_path / "d.toml"))
    with pytest.raises(ValueError, match="not a date like"):
        late_policy.load()
    (tmp_path / "d.toml").write_text(DEADLINES)
    with pytest.raises(ValueError, match="is not after"):
        late_policy.extend(tmp_path, "s", "05_gru", "2026-02-01T00:00:00Z")
    with pytest.raises(ValueError, match="no time zone"):
        late_policy.extend(tmp_path, "s", "05_gru", "2026-03-05T00:00:00")
