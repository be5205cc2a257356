"""The hub's collect (hub/exchange.py) within the grader's intake limits: a folder
too deep or too full is refused with a reason, never a crash, and the other
students' submissions are collected."""
import logging
import os
import pwd

import pytest
from nbgrader.auth import Authenticator
from nbgrader.coursedir import CourseDirectory

from hub.exchange import SafeCollect
from tests.conftest import make_deep, remove_deep

USER = pwd.getpwuid(os.getuid()).pw_name


def collect(tmp_path, caplog, fill) -> bool:
    """Submit a notebook and whatever ``fill`` adds beside it; whether it was collected."""
    src = tmp_path / "inbound" / f"{USER}+05_gru+2026-11-25 10:00:00.000000 UTC+x"
    src.mkdir(parents=True)
    (src / "05_gru.ipynb").write_text("{}")
    fill(src)
    collector = SafeCollect(coursedir=CourseDirectory(), authenticator=Authenticator())
    collector.log = logging.getLogger("collect")
    dest = tmp_path / "submitted"
    with caplog.at_level(logging.ERROR, logger="collect"):
        collector.do_copy(str(src), str(dest))
    return dest.is_dir()


def deep(src):
    make_deep(src, 1100)


def many(src):
    for i in range(1500):
        (src / f"{i}.txt").touch()


@pytest.mark.parametrize("fill, why", [(deep, "more than 16 folder levels deep"),
                                       (many, "more than 1000 files and folders")])
def test_a_folder_too_deep_or_too_full_is_refused_with_a_reason(tmp_path, caplog, fill, why):
    try:
        assert not collect(tmp_path, caplog, fill)
        assert why in caplog.text
    finally:
        remove_deep(next((tmp_path / "inbound").iterdir()))


def test_a_submission_within_the_limits_is_collected(tmp_path, caplog):
    assert collect(tmp_path, caplog, lambda src: (src / "notes.txt").write_text("hi"))
    assert (tmp_path / "submitted" / "notes.txt").read_text() == "hi"


DEADLINES = ('[policy]\ngrace_minutes = 15\npercent_per_day = 10\ncap_percent = 50\n\n'
             '[due]\n"05_gru" = "2026-03-01T12:00:00Z"\n')
FORGED_TIME = "2026-03-01 11:59:00.000000 UTC"          # a minute before the due date


def test_the_hub_times_a_submission_by_the_exchanges_record(tmp_path, monkeypatch):
    """Issue 39, case 3 on the hub, through `nbgrader collect` with the hub's configuration, then
    `nbgrader autograde` (formgrader's button), `nbgrader export` and `make grades`: a hand-made
    inbound folder whose name says 2099 and holds a forged on-time timestamp.txt is left out (it
    was picked before, penalty 0); the student's real, late folder is collected with the exchange's
    time, not the forged timestamp.txt inside it, and gets the late penalty in every place. A
    folder whose student's name is not an id is left out before anything is joined to its name."""
    import csv
    import datetime
    import shutil
    import subprocess
    import sys

    import nbformat

    from autograder import grade
    from tests.conftest import ROOT

    (tmp_path / "deadlines.toml").write_text(DEADLINES)
    monkeypatch.setenv("COURSE_DEADLINES", str(tmp_path / "deadlines.toml"))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    course, exchange = tmp_path / "course", tmp_path / "exchange"
    grade.prepare_course(course, ["05_gru"])
    inbound = exchange / "rnnlm-course" / "inbound"
    inbound.mkdir(parents=True)
    notebook = ROOT / "autograder" / "samples" / "submissions" / "correct" / "05_gru.ipynb"
    now = datetime.datetime.now(datetime.timezone.utc)
    made = {"real": f"{USER}+05_gru+{now - datetime.timedelta(minutes=1):%Y-%m-%d %H:%M:%S.%f} UTC+a",
            "2099": f"{USER}+05_gru+2099-01-01 00:00:00.000000 UTC+b",
            "odd": f"{USER}\x1b[2K+05_gru+{now:%Y-%m-%d %H:%M:%S.%f} UTC+c"}
    for kind, name in made.items():
        (inbound / name).mkdir()
        nb = nbformat.read(notebook, as_version=4)
        nb.cells.append(nbformat.v4.new_markdown_cell(f"handed in as {kind}"))
        nbformat.write(nb, inbound / name / "05_gru.ipynb")
        (inbound / name / "timestamp.txt").write_text(FORGED_TIME)
    collect = grade.nbgrader("collect", "05_gru", f"--Exchange.root={exchange}",
                             "--ExchangeFactory.collect=hub.exchange.SafeCollect", course=course)
    log = collect.stdout + collect.stderr
    assert "2099-01-01 00:00 UTC, after the exchange recorded the folder" in log and "made by hand" in log, log
    assert "does not begin with a student's id" in log and "\x1b" not in log, log
    submitted = course / "submitted" / USER / "05_gru"
    assert "handed in as real" in (submitted / "05_gru.ipynb").read_text()
    stamp = datetime.datetime.strptime((submitted / "timestamp.txt").read_text().strip(), "%Y-%m-%d %H:%M:%S.%f UTC")
    assert abs(stamp - now.replace(tzinfo=None)) < datetime.timedelta(minutes=10), stamp
    assert sorted(os.listdir(course / "submitted")) == [USER] and not (course / "05_gru").exists()

    grade.nbgrader("autograde", "05_gru", "--student", USER, "--force", course=course)
    grade.nbgrader("export", course=course)
    exported = next(csv.DictReader(open(course / "grades.csv")))
    assert (float(exported["score"]), float(exported["late_submission_penalty"])) == (2.5, 2.5), exported
    shown = subprocess.run([sys.executable, "-m", "autograder.grade", "grades", "--course", str(course)],
                           cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert f"{USER} " in shown.stdout and "2.5 / 5" in shown.stdout and "the exchange's record" in shown.stdout, \
        shown.stdout + shown.stderr
    ours = next(csv.DictReader(open(course / "course-grades.csv")))
    assert float(ours["score"]) == 2.5 and float(ours["late_penalty"]) == 2.5, ours
    shutil.rmtree(course / "submitted")


def test_a_student_cannot_choose_the_collected_time(tmp_path, caplog):
    """The collected folder's timestamp.txt is the exchange's (its latest ctime), not the one inside."""
    assert collect(tmp_path, caplog, lambda src: (src / "timestamp.txt").write_text(FORGED_TIME))
    written = (tmp_path / "submitted" / "timestamp.txt").read_text()
    assert written.strip() != FORGED_TIME and written.startswith("20"), written
