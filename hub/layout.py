"""Where everything of the hub lives: one root folder, prepared by ``hub.prepare``.

    ROOT/                 root's, 0755 (every folder above it must be traversable)
      release/            the student release (``make release``): course/, data/course, exercises, lectures
      env/                the course environment every single-user server runs in (release installed)
      config/student/     JUPYTER_CONFIG_PATH of a student: nbgrader's assignment list only
      config/instructor/  JUPYTER_CONFIG_PATH of the instructor: formgrader too
      exchange/           nbgrader's exchange (world-writable, sticky); exchange/COURSE/ is the instructor's
      state/              root only: the hub's database, cookie secret, roster, generated passwords
      home/NAME/          each account's home, 0700
      home/INSTRUCTOR/grader/        the instructor's copy of this repository (autograder/, solutions/, ...)
      home/INSTRUCTOR/rnnlm-course/  the instructor's nbgrader course directory (gradebook.db, source/, ...)
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_ROOT = "/srv/rnnlm-course"
COURSE_ID = "rnnlm-course"      # the same id as autograder/nbgrader_config.py (tests/test_hub.py checks)


@dataclass(frozen=True)
class Layout:
    root: Path

    @classmethod
    def at(cls, root: str | os.PathLike | None = None) -> "Layout":
        return cls(Path(root or os.environ.get("COURSE_HUB_ROOT") or DEFAULT_ROOT).resolve())

    release = property(lambda self: self.root / "release")
    env = property(lambda self: self.root / "env")
    config = property(lambda self: self.root / "config")
    exchange = property(lambda self: self.root / "exchange")
    state = property(lambda self: self.root / "state")
    homes = property(lambda self: self.root / "home")
    roster = property(lambda self: self.state / "roster.json")
    passwords = property(lambda self: self.state / "passwords.txt")

    def home(self, name: str) -> Path:
        return self.homes / name

    def grader(self, instructor: str) -> Path:
        return self.home(instructor) / "grader"

    def course_dir(self, instructor: str) -> Path:
        return self.home(instructor) / COURSE_ID

    def role_config(self, role: str) -> Path:
        return self.config / role
