"""Confine the current process's file system access with Linux Landlock.

The autograder's sandbox calls :func:`restrict` after loading what it needs and
before running student code: from then on the process (and its children) can
read only the listed paths, write only the listed ones, cannot open network
connections and cannot signal processes outside itself. Landlock needs Linux
5.13+ and no privileges; :func:`available` says whether this kernel has it.
"""
from __future__ import annotations

import ctypes
import os
import platform

SYS = {"x86_64": (444, 445, 446), "aarch64": (444, 445, 446)}   # create, add_rule, restrict
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1, 2, 4, 8
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR, MAKE_REG = 16, 32, 64, 128, 256
MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM, REFER, TRUNCATE, IOCTL_DEV = (
    512, 1024, 2048, 4096, 8192, 16384, 32768)
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
READ = EXECUTE | READ_FILE | READ_DIR
PR_SET_NO_NEW_PRIVS = 38


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def abi_version() -> int:
    """Landlock ABI version of this kernel, 0 when Landlock is unavailable."""
    if platform.system() != "Linux" or platform.machine() not in SYS:
        return 0
    version = _libc().syscall(SYS[platform.machine()][0], None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return max(version, 0)


def available() -> bool:
    return abi_version() >= 1


def _all_fs_rights(abi: int) -> int:
    rights = 8191                        # ABI 1: EXECUTE .. MAKE_SYM
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


def restrict(read: list, write: list):
    """Allow reading (and executing) under ``read``, everything under ``write``;
    deny all other file access, TCP, and signals to outside processes."""
    abi = abi_version()
    if abi < 1:
        raise OSError("Landlock is not available on this system")
    create, add_rule, restrict_self = SYS[platform.machine()]
    libc = _libc()
    handled = _all_fs_rights(abi)
    attr = _RulesetAttr(handled, 3 if abi >= 4 else 0, 3 if abi >= 6 else 0)  # TCP bind+connect; signals+sockets
    size = 8 if abi < 4 else (16 if abi < 6 else 24)
    ruleset = libc.syscall(create, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        for paths, rights in ((read, READ), (write, handled)):
            for path in paths:
                if not os.path.exists(path):
                    continue
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                try:
                    allowed = rights & handled
                    if not os.path.isdir(path):
                        allowed &= FILE_RIGHTS
                    rule = _PathBeneath(allowed, fd)
                    if libc.syscall(add_rule, ruleset, 1, ctypes.byref(rule), 0) != 0:
                        raise OSError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
                finally:
                    os.close(fd)
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(NO_NEW_PRIVS) failed")
        if libc.syscall(restrict_self, ruleset, 0) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)
