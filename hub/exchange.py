"""nbgrader's collect step, made safe for a shared exchange.

nbgrader's ``inbound`` folder is writable by every student, and ``nbgrader submit`` is
only a convenience: a student can put anything there by hand. nbgrader's own collect
copies it with ``shutil.copytree`` as the instructor, following symlinks, so a
submission that is a symlink to the instructor's ``solutions/`` (or holds one) is
collected as the solutions, a FIFO hangs the copy, and a folder named
``alice+05_gru+...`` made by bob is collected as alice's (nbgrader only warns).

``SafeCollect`` copies a submission only when it is what its student wrote: the
folder and every file under it owned by the student it names, regular files and
folders only (no symlink, FIFO, device or hard link), within nbgrader's size limits.
Every path is opened without following links (``O_NOFOLLOW``, relative to its
already-opened folder), so a link swapped in after a check is refused too. Folders are
copied level by level, within the grader's intake limits (``autograder.intake``:
``MAX_DEPTH`` levels, ``MAX_ENTRIES`` entries). A refused submission is not collected,
and the log says why; the other students' are.

The time of a submission is the exchange's own record, never what the student wrote: nbgrader
takes it from the folder's name (``student+assignment+time+random``, which a student who makes
the folder by hand chooses) and the ``timestamp.txt`` inside it (which the student writes).
``SafeCollect`` reads the student's name from the folder's name only after checking it whole
(a student id that is an account and owns the folder), times each folder by its ``ctime`` (set by
the file system when the folder last changed: nobody but root can set it back), picks each
student's submission by that time, and refuses a folder whose name claims a time after it was
made (a 2099 folder, made by hand). What it collects gets a ``timestamp.txt`` of its own: the
latest ``ctime`` of anything it copied (a file rewritten after the folder was made counts), which
``nbgrader autograde`` reads for the late penalty; the student's is not copied.
"""
from __future__ import annotations

import datetime
import fnmatch
import glob
import os
import pwd
import shutil
import stat

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.exchange.default.collect import ExchangeCollect
from nbgrader.utils import parse_utc

from autograder.intake import (MAX_DEPTH, MAX_ENTRIES, STUDENT_ID, TIME_FORMAT, Refused, open_regular,
                               printable)

#: how far the time in a folder's name may run ahead of its ctime (the student's server and the
#: exchange's disk may keep slightly different clocks); nbgrader submit names it before making it
SLACK = datetime.timedelta(minutes=5)


def utc(seconds: float) -> datetime.datetime:
    """A file system time as nbgrader keeps times (UTC, without a time zone)."""
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).replace(tzinfo=None)


class SafeCollect(ExchangeCollect):

    def _record(self, path) -> dict:
        """nbgrader's record of an inbound folder (student, folder name, time), with the time the
        exchange's disk recorded; Refused when the folder is not what ``nbgrader submit`` makes."""
        name = os.path.basename(path)
        parts = name.rsplit("+", 3)
        if len(parts) < 3:
            raise Refused("its name is not student+assignment+time+random, as nbgrader submit names it")
        student = parts[0]
        if not STUDENT_ID.fullmatch(student):
            raise Refused("its name does not begin with a student's id")
        try:
            uid = pwd.getpwnam(student).pw_uid
        except KeyError:
            raise Refused(f"there is no account named {student}") from None
        info = os.lstat(path)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != uid:
            raise Refused(f"it is not a folder owned by {student}")
        made = utc(info.st_ctime)
        try:
            named = parse_utc(parts[2])
        except Exception:
            raise Refused("the time in its name cannot be read") from None
        if named > made + SLACK:
            raise Refused(f"its name says {named:%Y-%m-%d %H:%M} UTC, after the exchange recorded the folder "
                          f"({made:%Y-%m-%d %H:%M} UTC): it was made by hand, not by nbgrader submit")
        return {"username": student, "filename": name, "timestamp": made}

    def init_src(self):
        """nbgrader's choice of each student's submission (the latest; with ``before_duedate``,
        the latest before the due date, else the latest), made on the exchange's times, among the
        folders that pass :meth:`_record`; the log names each folder left out and why."""
        if self.coursedir.course_id == "":
            self.fail("No course id specified. Re-run with --course flag.")
        self.course_path = os.path.join(self.root, self.coursedir.course_id)
        self.inbound_path = os.path.join(self.course_path, "inbound")
        if not os.path.isdir(self.inbound_path):
            self.fail(f"Course not found: {self.inbound_path}")
        with Gradebook(self.coursedir.db_url, self.coursedir.course_id) as gb:
            try:
                self.duedate = gb.find_assignment(self.coursedir.assignment_id).duedate
            except MissingEntry:
                self.duedate = None
        pattern = f"{self.coursedir.student_id or '*'}+{self.coursedir.assignment_id}+*"     # as nbgrader's
        chosen = {}
        for path in sorted(glob.glob(os.path.join(self.inbound_path, pattern))):
            try:
                record = self._record(path)
            except (Refused, OSError) as err:
                self._refuse(path, err)
                continue
            on_time = self.before_duedate and self.duedate is not None and record["timestamp"] <= self.duedate
            best = chosen.get(record["username"])
            if best is None or (on_time, record["timestamp"]) > (best[0], best[1]["timestamp"]):
                chosen[record["username"]] = (on_time, record)
        self.src_records = [record for _, record in chosen.values()]

    def do_copy(self, src, dest, log=None):
        partial = dest + ".partial"
        try:
            uid = pwd.getpwnam(self._record(src)["username"]).pw_uid    # checked again: init_src's check may be old
            shutil.rmtree(partial, ignore_errors=True)
            self._latest = 0.0                      # the latest ctime of what is copied (_open_dir, _copy_file)
            parent = os.open(os.path.dirname(src), os.O_RDONLY | os.O_DIRECTORY)
            try:
                top = self._open_dir(os.path.basename(src), parent, uid, "")
            finally:
                os.close(parent)
            self._budget = {"entries": MAX_ENTRIES, "bytes": 1000 * self.coursedir.max_dir_size}
            self._copy_dir(top, partial, uid, "")
            with open(os.path.join(partial, "timestamp.txt"), "w") as f:      # the exchange's time, not the student's
                f.write(utc(self._latest).strftime(TIME_FORMAT) + "\n")
        except Exception as err:                  # Refused, OSError, anything: this submission only
            shutil.rmtree(partial, ignore_errors=True)
            self._refuse(src, err)
            return
        os.rename(partial, dest)

    def _refuse(self, path, err):
        """The log line of a folder not collected, names escaped (intake.printable)."""
        self.log.error("Refused the submission %s: %s. Nothing of it was collected; ask the student to submit "
                       "again with the Assignments tab (nbgrader submit).", printable(os.path.basename(path)),
                       printable(err))

    def _open_dir(self, name, parent_fd, uid, where):
        fd = None
        try:
            fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent_fd)
            info = os.fstat(fd)
        except OSError:
            if fd is not None:
                os.close(fd)
            kind = stat.filemode(os.stat(name, dir_fd=parent_fd, follow_symlinks=False).st_mode)
            raise Refused(f"{where or name} is not a folder (mode {kind}): only regular files and folders are collected")
        if info.st_uid != uid:
            os.close(fd)
            raise Refused(f"{where or name} is not owned by the student who submitted it")
        self._latest = max(self._latest, info.st_ctime)
        return fd

    def _copy_dir(self, top, dest, uid, where):
        """The folder open at ``top`` into ``dest``, level by level (no recursion)."""
        todo = [(top, dest, where, 1)]
        while todo:
            fd, dest, where, depth = todo.pop()
            try:
                if depth > MAX_DEPTH:
                    raise Refused(f"more than {MAX_DEPTH} folder levels deep")
                os.mkdir(dest, 0o755)
                for entry in os.scandir(fd):
                    path = os.path.join(where, entry.name)
                    if any(fnmatch.fnmatch(entry.name, pattern) for pattern in self.coursedir.ignore):
                        continue
                    if path == "timestamp.txt":       # the student's own: the exchange writes its own
                        continue
                    self._budget["entries"] -= 1
                    if self._budget["entries"] < 0:
                        raise Refused(f"more than {MAX_ENTRIES} files and folders")
                    mode = os.stat(entry.name, dir_fd=fd, follow_symlinks=False).st_mode
                    if stat.S_ISDIR(mode):
                        todo.append((self._open_dir(entry.name, fd, uid, path), os.path.join(dest, entry.name),
                                     path, depth + 1))
                    elif stat.S_ISREG(mode):
                        self._copy_file(entry.name, fd, os.path.join(dest, entry.name), uid, path)
                    else:
                        raise Refused(f"{path} is not a regular file (mode {stat.filemode(mode)})")
            except BaseException:
                for other, *_ in todo:
                    os.close(other)
                raise
            finally:
                os.close(fd)

    def _copy_file(self, name, dir_fd, dest, uid, where):
        fd = open_regular(name, where, dir_fd)
        try:
            info = os.fstat(fd)
            if info.st_uid != uid:
                raise Refused(f"{where} is not owned by the student who submitted it")
            if not any(fnmatch.fnmatch(name, pattern) for pattern in self.coursedir.include):
                return
            if info.st_size > 1000 * self.coursedir.max_file_size:
                self.log.warning("Skipped %s: larger than %s kB", where, self.coursedir.max_file_size)
                return
            self._budget["bytes"] -= info.st_size
            if self._budget["bytes"] < 0:
                raise Refused(f"larger than {self.coursedir.max_dir_size} kB in all")
            with os.fdopen(os.dup(fd), "rb") as source, open(dest, "xb") as target:
                shutil.copyfileobj(source, target)
            self._latest = max(self._latest, os.fstat(fd).st_ctime)     # after the copy: a late rewrite counts
        finally:
            os.close(fd)
