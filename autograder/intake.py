"""Submissions as the grader reads them: regular files, copied once, or refused.

A folder of submissions holds ``<student>/<chapter>.ipynb`` or nbgrader's own
``<student>/<chapter>/<chapter>.ipynb``, each optionally with a
``<chapter>_model/`` folder beside it (the capstone's saved model). Everything
the grader will read is copied from there as regular files, read without
following links; a symbolic link, a FIFO, a device or socket, a hard link (a
second name for a file that may live anywhere) or anything too large refuses the
submission with a reason that names the path. The same student and chapter in
both layouts is refused too, naming both paths: the grader never picks one.

Folders are walked one level at a time, at most :data:`MAX_DEPTH` deep and
:data:`MAX_ENTRIES` entries in all (a folder 1,100 levels deep or 20,000 empty
files are refused with that reason, never a crash or a stall), and a student
whose folder cannot be read is refused alone: the rest of the class is graded.
Of a ``<chapter>_model/`` folder only the files of a saved model
(:data:`MODEL_FILES`) are copied: nbgrader sees the notebook and those, nothing else.
"""
from __future__ import annotations

import os
import re
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}")      # matched whole: STUDENT_ID.fullmatch
MAX_NOTEBOOK_MB = 16
MAX_FOLDER_MB = 64
MAX_DEPTH = 16            # folder levels under a submitted folder
MAX_ENTRIES = 1000        # files and folders in one submitted folder
MODEL_FILES = ("params.dy", "vocab.json", "config.json", "checkpoint.json")   # what RNNLM.save writes
IGNORED = {".ipynb_checkpoints", "__pycache__", ".DS_Store"}


class Refused(ValueError):
    """A submission the grader (or the hub's exchange) will not read; the message says why
    and what to do."""


@dataclass
class Submission:
    student: str
    chapter: str
    notebook: Path                 # as submitted
    folders: list                  # <chapter>_model/ and the like, as submitted
    refused: str | None = None     # why it is not graded
    timestamp: Path | None = None  # <chapter>/timestamp.txt: when the exchange took it (nbgrader reads it)


def _kind(mode: int) -> str:
    return ("a symbolic link" if stat.S_ISLNK(mode) else "a FIFO" if stat.S_ISFIFO(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket"
            if stat.S_ISSOCK(mode) else "not a regular file")


def open_regular(path, name: str, dir_fd: int | None = None) -> int:
    """A descriptor of ``path`` (relative to ``dir_fd`` when given) if it is a regular file
    with one name, opened without following a link and without blocking on a FIFO; Refused
    otherwise, with ``name`` in the reason. The caller closes it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError as err:
        try:
            info = os.stat(path, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            info = None
        if info is not None and not stat.S_ISREG(info.st_mode):
            raise Refused(f"{name} is {_kind(info.st_mode)}: submit the file itself") from None
        raise Refused(f"{name} cannot be read ({err.strerror})") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
        os.close(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Refused(f"{name} is {_kind(info.st_mode)}: submit the file itself")
        raise Refused(f"{name} is a hard link to another file: submit a copy of the file itself")
    return fd


def copy_file(source: Path, target: Path, limit_mb: int = MAX_NOTEBOOK_MB, name: str | None = None):
    """Copy one regular file (:func:`open_regular`); refuse anything else."""
    name = name or source.name
    with os.fdopen(open_regular(source, name), "rb") as f:
        info = os.fstat(f.fileno())
        if info.st_size > limit_mb << 20:
            raise Refused(f"{name} is {info.st_size >> 20} MB, over the {limit_mb} MB limit")
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "wb") as out:
            shutil.copyfileobj(f, out)


def walk(folder: Path, name: str, depth: int = MAX_DEPTH, entries: int = MAX_ENTRIES) -> list:
    """(path relative to ``folder``, lstat) of everything under it, level by level,
    without following links; Refused past ``depth`` levels or ``entries`` entries."""
    found, level, todo = [], 0, [Path()]
    while todo:
        level += 1
        if level > depth:
            raise Refused(f"{name}/ is more than {depth} folder levels deep")
        below = []
        for relative in todo:
            with os.scandir(folder / relative) as scan:
                for entry in scan:
                    found.append((relative / entry.name, entry.stat(follow_symlinks=False)))
                    if len(found) > entries:
                        raise Refused(f"{name}/ holds more than {entries} files and folders")
                    if entry.is_dir(follow_symlinks=False):
                        below.append(relative / entry.name)
        todo = below
    return found


def copy_folder(source: Path, target: Path, limit_mb: int = MAX_FOLDER_MB, name: str | None = None,
                keep: tuple = MODEL_FILES):
    """Check a folder (regular files and folders only, within the limits) and copy
    the files named in ``keep`` at its top; refuse anything else."""
    name = name or source.name
    info = os.lstat(source)
    if not stat.S_ISDIR(info.st_mode):
        raise Refused(f"{name} is {_kind(info.st_mode)}: submit the folder itself")
    total = 0
    for relative, info in walk(source, name):
        if not (stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)):
            raise Refused(f"{name}/{relative} is {_kind(info.st_mode)}: submit the folder itself")
        total += info.st_size if stat.S_ISREG(info.st_mode) else 0
        if total > limit_mb << 20:
            raise Refused(f"{name}/ is over the {limit_mb} MB limit")
    target.mkdir(parents=True, exist_ok=True)
    for file in keep:
        if os.path.lexists(source / file):
            copy_file(source / file, target / file, limit_mb, name=f"{name}/{file}")


def copy_regular_files(source: Path, target: Path):
    """A folder that intake already checked, as its regular files and folders only (anything
    else is left out; a link is never followed either way)."""
    target.mkdir()
    for entry in os.scandir(source):
        if entry.is_dir(follow_symlinks=False):
            copy_regular_files(Path(entry.path), target / entry.name)
        elif entry.is_file(follow_symlinks=False):
            shutil.copyfile(entry.path, target / entry.name, follow_symlinks=False)


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
        try:
            found.extend(_student(entry.name, Path(entry.path)))
        except (Refused, OSError) as err:          # this student only; the class goes on
            reason = str(err) if isinstance(err, Refused) else f"the folder cannot be read ({err.strerror})"
            found.append(Submission(entry.name, "?", Path(entry.path), [], refused=reason))
    return found


def _student(student: str, folder: Path) -> list:
    if not STUDENT_ID.fullmatch(student):
        return [Submission(student, "?", folder, [], refused="the student folder's name must be letters, "
                                                             "digits, _ . - (at most 64)")]
    by_chapter: dict = {}                          # <chapter>.ipynb and <chapter>/<chapter>.ipynb only
    with os.scandir(folder) as scan:
        entries = sorted(scan, key=lambda e: e.name)
    for entry in entries:
        if entry.name in IGNORED:
            continue
        if entry.is_dir(follow_symlinks=False):
            path = Path(entry.path, entry.name + ".ipynb")
            if os.path.lexists(path):
                by_chapter.setdefault(entry.name, []).append(path)
        elif entry.name.endswith(".ipynb"):
            by_chapter.setdefault(entry.name[:-len(".ipynb")], []).append(Path(entry.path))
    out = []
    for chapter, paths in sorted(by_chapter.items()):
        if len(paths) > 1:
            names = " and ".join(str(Path(student) / p.relative_to(folder)) for p in paths)
            out.append(Submission(student, chapter, paths[0], [], refused=f"two submissions of {chapter}: "
                                  f"{names}; keep one of them and resubmit"))
            continue
        path = paths[0]
        model = path.parent / f"{chapter}_model"
        stamp = path.parent / "timestamp.txt"      # nbgrader's exchange records the submission's time here
        out.append(Submission(student, chapter, path, [model] if os.path.lexists(model) else [],
                              timestamp=stamp if path.parent.name == chapter and os.path.lexists(stamp) else None))
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
        if submission.timestamp is not None:
            copy_file(submission.timestamp, target / "timestamp.txt", limit_mb=1,
                      name=str(Path(submission.student) / submission.chapter / "timestamp.txt"))
            when = (target / "timestamp.txt").read_text(errors="replace").strip()
            try:
                from nbgrader.utils import parse_utc
                parse_utc(when)
            except Exception:
                raise Refused(f"{submission.student}/{submission.chapter}/timestamp.txt holds {when[:40]!r}, not a "
                              "time such as 2027-03-01 12:00:00.000000 UTC: submit through the exchange") from None
    except Refused:
        shutil.rmtree(target, ignore_errors=True)
        raise
