"""Stage 1, intake: submissions as the grader reads them: regular files, copied once, or refused.

A folder of submissions holds ``<student>/<chapter>.ipynb`` or nbgrader's own
``<student>/<chapter>/<chapter>.ipynb``, each optionally with a
``<chapter>_model/`` folder beside it (the capstone's saved model). Everything
the grader will read is copied from there as regular files, read without
following links; a symbolic link, a FIFO, a device or socket, a hard link (a
second name for a file that may live anywhere) or anything too large refuses the
submission with a reason that names the path. The same student and chapter in
both layouts is refused too, naming both paths: the grader never picks one.

Every name a student controls is checked whole before it is used: the student's folder
(:data:`STUDENT_ID`) and the chapter, which must be one of the course's assignments, before
anything is joined into a path. A path the grader writes or deletes by such a name is made by
:func:`inside`, which refuses one that would leave its folder; a name shown to the instructor
(the grade table, the CSV, a reason) goes through :func:`printable`.

The time of a submission is the grader's own record, never the student's ``timestamp.txt``:
:func:`stamp` keeps, in the course directory, when intake first saw each version of each
submission, and writes that time as the ``timestamp.txt`` nbgrader reads (README: "Time of
submission").

Folders are walked one level at a time, at most :data:`MAX_DEPTH` deep and
:data:`MAX_ENTRIES` entries in all (a folder 1,100 levels deep or 20,000 empty
files are refused with that reason, never a crash or a stall), and a student
whose folder cannot be read is refused alone: the rest of the class is graded.
Of a ``<chapter>_model/`` folder only the files of a saved model
(:data:`MODEL_FILES`) are copied: nbgrader sees the notebook and those, nothing else.
"""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import re
import shutil
import stat
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from course.files import sha256_of, write_json

STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}")      # matched whole: STUDENT_ID.fullmatch
MAX_NOTEBOOK_MB = 16
MAX_FOLDER_MB = 64
MAX_DEPTH = 16            # folder levels under a submitted folder
MAX_ENTRIES = 1000        # files and folders in one submitted folder
MODEL_FILES = ("params.dy", "vocab.json", "config.json", "checkpoint.json")   # what RNNLM.save writes
IGNORED = {".ipynb_checkpoints", "__pycache__", ".DS_Store"}
RECEIVED = "received.json"      # in the course directory: when intake first saw each version (stamp)
TIME_FORMAT = "%Y-%m-%d %H:%M:%S.%f UTC"      # as nbgrader's exchange writes timestamp.txt


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


def printable(text) -> str:
    """``text`` with every control or format character written as its escape (``\\x1b``,
    ``\\r``, ``\\u202e``): C0 and C1 controls, DEL, bidi overrides, zero-width marks, line and
    paragraph separators, and bytes no encoding could show. A name or note printed on the
    instructor's terminal or written into a CSV can then neither move the cursor, hide or
    recolour text, reorder a line nor start a new row."""
    return "".join(ascii(ch)[1:-1] if unicodedata.category(ch)[0] == "C" or ch in "\u2028\u2029" else ch
                   for ch in str(text))


def inside(base: Path, *names: str) -> Path:
    """``base``/``names``... for names that came from a student (a student's folder, a chapter, a
    file named after them). Each must be a whole name (:data:`STUDENT_ID`: no separator, never
    ``.`` or ``..``) and the path must stay under ``base`` once resolved; ValueError otherwise.
    Every path the grader writes or deletes by such a name is made here."""
    for name in names:
        if not STUDENT_ID.fullmatch(name):
            raise ValueError(f"{printable(name)[:80]!r} cannot name a folder or file of the grader's")
    path = Path(base).joinpath(*names)
    if not path.resolve().is_relative_to(Path(base).resolve()):
        raise ValueError(f"{printable(path)} is outside {printable(base)}")
    return path


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


def collect(submissions: Path, chapters) -> list:
    """Every submission in the folder, in order; refused ones carry their reason. ``chapters``:
    the course's assignments, the only chapter names a submission may have (any other is
    refused, its chapter "?", before its name is used)."""
    submissions, chapters = Path(submissions), set(chapters)
    found = []
    for entry in sorted(os.scandir(submissions), key=lambda e: e.name):
        if entry.name in IGNORED or entry.name.startswith("."):
            continue
        if entry.is_symlink() or not entry.is_dir(follow_symlinks=False):
            if entry.name.endswith(".ipynb") or entry.is_symlink():
                found.append(Submission(entry.name, "?", Path(entry.path), [],
                                        refused=f"{printable(entry.name)} is not a student folder: put notebooks "
                                                "in <student>/<chapter>.ipynb"))
            continue
        try:
            found.extend(_student(entry.name, Path(entry.path), chapters))
        except (Refused, OSError) as err:          # this student only; the class goes on
            reason = str(err) if isinstance(err, Refused) else f"the folder cannot be read ({err.strerror})"
            found.append(Submission(entry.name, "?", Path(entry.path), [], refused=reason))
    return found


def _student(student: str, folder: Path, chapters: set) -> list:
    if not STUDENT_ID.fullmatch(student):
        return [Submission(student, "?", folder, [], refused="the student folder's name must be letters, "
                                                             "digits, _ . - (at most 64)")]
    by_chapter: dict = {}                          # <chapter>.ipynb and <chapter>/<chapter>.ipynb only
    out = []
    with os.scandir(folder) as scan:
        entries = sorted(scan, key=lambda e: e.name)
    for entry in entries:
        if entry.name in IGNORED:
            continue
        if entry.is_dir(follow_symlinks=False) and os.path.lexists(Path(entry.path, entry.name + ".ipynb")):
            chapter, path = entry.name, Path(entry.path, entry.name + ".ipynb")
        elif entry.name.endswith(".ipynb"):
            chapter, path = entry.name[:-len(".ipynb")], Path(entry.path)
        else:
            continue
        if chapter not in chapters:                # "...ipynb" is chapter "..": refused before any use
            out.append(Submission(student, "?", path, [], refused=(
                f"{printable(entry.name)[:80]} is not one of the course's assignments: name the notebook "
                f"<chapter>.ipynb with one of {', '.join(sorted(chapters))}")))
            continue
        by_chapter.setdefault(chapter, []).append(path)
    for chapter, paths in sorted(by_chapter.items()):
        if len(paths) > 1:
            names = " and ".join(printable(Path(student) / p.relative_to(folder)) for p in paths)
            out.append(Submission(student, chapter, paths[0], [], refused=f"two submissions of {chapter}: "
                                  f"{names}; keep one of them and resubmit"))
            continue
        path = paths[0]
        model = path.parent / f"{chapter}_model"    # a timestamp.txt beside it is the student's: never read
        out.append(Submission(student, chapter, path, [model] if os.path.lexists(model) else []))
    return out


def place(submission: Submission, target: Path):
    """Copy the submission into ``target`` (its folder in the course's submitted/, made by
    :func:`inside`), replacing what was there; raise Refused, leaving nothing behind, when it
    cannot."""
    shutil.rmtree(target, ignore_errors=True)
    try:
        copy_file(submission.notebook, target / f"{submission.chapter}.ipynb",
                  name=printable(Path(submission.student) / submission.notebook.name))
        for folder in submission.folders:
            copy_folder(folder, target / folder.name)
    except Refused:
        shutil.rmtree(target, ignore_errors=True)
        raise


def version_of(folder: Path) -> str:
    """A digest of what intake copied into a submitted folder (each file's path and bytes,
    ``timestamp.txt`` aside): the same work gives the same digest, any change another."""
    digest = hashlib.sha256()
    for path in sorted(p for p in Path(folder).rglob("*") if p.is_file() and p.name != "timestamp.txt"):
        digest.update(f"{path.relative_to(folder).as_posix()}\0{sha256_of(path)}\0".encode())
    return digest.hexdigest()


def stamp(course: Path, student: str, chapter: str, target: Path, now: datetime.datetime) -> str:
    """The time of a placed submission as the grader's side knows it, written as
    ``target``/timestamp.txt for nbgrader (whose late penalty reads it): when intake first saw
    this version of it, kept in ``course``/received.json by student, chapter and digest.
    Grading again keeps that time; a changed submission is a new version with the time it was
    first seen (``now``: the moment of this run, or when the instructor says the folder was
    collected). Nothing the student wrote (a timestamp.txt, a file's date) counts."""
    record = Path(course) / RECEIVED
    try:
        seen = json.loads(record.read_text()) if record.is_file() else {}
    except (OSError, ValueError) as err:        # the instructor's file: stop the run, never refuse a student
        raise RuntimeError(f"{record} cannot be read ({err}): restore it from a backup; without it every "
                           "submission's time becomes the time it is next seen") from None
    versions = seen.setdefault(f"{student}/{chapter}", {})
    when = versions.setdefault(version_of(target), now.astimezone(datetime.timezone.utc).strftime(TIME_FORMAT))
    write_json(record, seen)
    (target / "timestamp.txt").write_text(when + "\n")
    return when


def first_seen(course: Path, student: str, chapter: str) -> bool:
    """Whether intake recorded this submission's time (else the exchange did, on the hub)."""
    record = Path(course) / RECEIVED
    return record.is_file() and f"{student}/{chapter}" in json.loads(record.read_text())
