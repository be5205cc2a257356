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
