"""Submissions as the grader reads them: regular files, copied once, or refused.

A folder of submissions holds ``<student>/<chapter>.ipynb`` or nbgrader's own
``<student>/<chapter>/<chapter>.ipynb``, each optionally with a
``<chapter>_model/`` folder beside it (the capstone's saved model). Everything
the grader will read is copied from there as regular files, read without
following links; a symbolic link, a FIFO, a device or socket, a hard link (a
second name for a file that may live anywhere) or anything too large refuses the
submission with a reason that names the path. The same student and chapter in
both layouts is refused too, naming both paths: the grader never picks one.
"""
from __future__ import annotations

import os
import re
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")
MAX_NOTEBOOK_MB = 16
MAX_FOLDER_MB = 64
IGNORED = {".ipynb_checkpoints", "__pycache__", ".DS_Store"}


class Refused(ValueError):
    """A submission the grader will not read; the message says why and what to do."""


@dataclass
class Submission:
    student: str
    chapter: str
    notebook: Path                 # as submitted
    folders: list                  # <chapter>_model/ and the like, as submitted
    refused: str | None = None     # why it is not graded


def _kind(mode: int) -> str:
    return ("a symbolic link" if stat.S_ISLNK(mode) else "a FIFO" if stat.S_ISFIFO(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket"
            if stat.S_ISSOCK(mode) else "not a regular file")


def copy_file(source: Path, target: Path, limit_mb: int = MAX_NOTEBOOK_MB, name: str | None = None):
    """Copy one regular file, opened without following a link and without blocking
    on a FIFO; refuse anything else."""
    name = name or source.name
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as err:
        info = os.lstat(source) if os.path.lexists(source) else None
        if info is not None and not stat.S_ISREG(info.st_mode):
            raise Refused(f"{name} is {_kind(info.st_mode)}: submit the file itself") from None
        raise Refused(f"{name} cannot be read ({err.strerror})") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise Refused(f"{name} is {_kind(info.st_mode)}: submit the file itself")
        if info.st_nlink > 1:
            raise Refused(f"{name} is a hard link to another file: submit a copy of the file itself")
        if info.st_size > limit_mb << 20:
            raise Refused(f"{name} is {info.st_size >> 20} MB, over the {limit_mb} MB limit")
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "wb") as out:
            shutil.copyfileobj(f, out)


def copy_folder(source: Path, target: Path, limit_mb: int = MAX_FOLDER_MB, name: str | None = None):
    """Copy a folder of regular files (and folders), refusing anything else."""
    name = name or source.name
    info = os.lstat(source)
    if not stat.S_ISDIR(info.st_mode):
        raise Refused(f"{name} is {_kind(info.st_mode)}: submit the folder itself")
    total = 0
    for root, dirs, files in os.walk(source, followlinks=False):
        relative = Path(root).relative_to(source)
        for d in list(dirs):
            mode = os.lstat(Path(root, d)).st_mode
            if not stat.S_ISDIR(mode):
                raise Refused(f"{name}/{relative / d} is {_kind(mode)}: submit the folder itself")
        (target / relative).mkdir(parents=True, exist_ok=True)
        for f in files:
            path = Path(root, f)
            total += os.lstat(path).st_size
            if total > limit_mb << 20:
                raise Refused(f"{name}/ is over the {limit_mb} MB limit")
            copy_file(path, target / relative / f, limit_mb, name=f"{name}/{relative / f}")


def collect(submissions: Path) -> list:
    """Every submission in the folder, in order; refused ones carry their reason."""
    submissions = Path(submissions)
    found = []
    for entry in sorted(os.scandir(submissions), key=lambda e: e.name):
        if entry.name in IGNORED or entry.name.startswith("."):
            continue
        if entry.is_symlink() or not entry.is_dir(follow_symlinks=False):
            if entry.name.endswith(".ipynb") or entry.is_symlink():
                found.append(Submission(entry.name, Path(entry.name).stem, Path(entry.path), [],
                                        refused=f"{entry.name} is not a student folder: put notebooks in "
                                                "<student>/<chapter>.ipynb"))
            continue
        found.extend(_student(entry.name, Path(entry.path)))
    return found


def _student(student: str, folder: Path) -> list:
    if not STUDENT_ID.match(student):
        return [Submission(student, "?", folder, [], refused="the student folder's name must be letters, "
                                                             "digits, _ . - (at most 64)")]
    by_chapter: dict = {}
    for root, dirs, files in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in IGNORED)
        for f in sorted(files):
            if not f.endswith(".ipynb"):
                continue
            path, chapter = Path(root, f), f[:-len(".ipynb")]
            where = path.relative_to(folder)
            if where.parts not in ((f,), (chapter, f)):
                continue                           # e.g. a copy in another folder: not a submission
            by_chapter.setdefault(chapter, []).append(path)
    out = []
    for chapter, paths in sorted(by_chapter.items()):
        if len(paths) > 1:
            names = " and ".join(str(Path(student) / p.relative_to(folder)) for p in paths)
            out.append(Submission(student, chapter, paths[0], [], refused=f"two submissions of {chapter}: "
                                  f"{names}; keep one of them and resubmit"))
            continue
        path = paths[0]
        model = path.parent / f"{chapter}_model"
        out.append(Submission(student, chapter, path, [model] if os.path.lexists(model) else []))
    return out


def place(submission: Submission, target: Path):
    """Copy the submission into ``target`` (its folder in the course's submitted/),
    replacing what was there; raise Refused, leaving nothing behind, when it cannot."""
    shutil.rmtree(target, ignore_errors=True)
    try:
        copy_file(submission.notebook, target / f"{submission.chapter}.ipynb",
                  name=str(Path(submission.student) / submission.notebook.name))
        for folder in submission.folders:
            copy_folder(folder, target / folder.name)
    except Refused:
        shutil.rmtree(target, ignore_errors=True)
        raise
