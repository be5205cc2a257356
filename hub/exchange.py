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
"""
from __future__ import annotations

import fnmatch
import os
import pwd
import shutil
import stat

from nbgrader.exchange.default.collect import ExchangeCollect

from autograder.intake import MAX_DEPTH, MAX_ENTRIES, Refused, open_regular


class SafeCollect(ExchangeCollect):

    def do_copy(self, src, dest, log=None):
        student = self._path_to_record(src)["username"]
        partial = dest + ".partial"
        shutil.rmtree(partial, ignore_errors=True)
        try:
            try:
                uid = pwd.getpwnam(student).pw_uid
            except KeyError:
                raise Refused(f"there is no account named {student}")
            parent = os.open(os.path.dirname(src), os.O_RDONLY | os.O_DIRECTORY)
            try:
                top = self._open_dir(os.path.basename(src), parent, uid, "")
            finally:
                os.close(parent)
            self._budget = {"entries": MAX_ENTRIES, "bytes": 1000 * self.coursedir.max_dir_size}
            self._copy_dir(top, partial, uid, "")
        except Exception as err:                  # Refused, OSError, anything: this submission only
            shutil.rmtree(partial, ignore_errors=True)
            self.log.error("Refused the submission %s of %s: %s. Nothing of it was collected; "
                           "ask the student to submit again with the Assignments tab (nbgrader submit).",
                           os.path.basename(src), student, err)
            return
        os.rename(partial, dest)

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
                    if any(fnmatch.fnmatch(entry.name, glob) for glob in self.coursedir.ignore):
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
            if not any(fnmatch.fnmatch(name, glob) for glob in self.coursedir.include):
                return
            if info.st_size > 1000 * self.coursedir.max_file_size:
                self.log.warning("Skipped %s: larger than %s kB", where, self.coursedir.max_file_size)
                return
            self._budget["bytes"] -= info.st_size
            if self._budget["bytes"] < 0:
                raise Refused(f"larger than {self.coursedir.max_dir_size} kB in all")
            with os.fdopen(os.dup(fd), "rb") as source, open(dest, "xb") as target:
                shutil.copyfileobj(source, target)
        finally:
            os.close(fd)
