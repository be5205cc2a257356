"""Every nbgrader command the course runs, each in a process of its own, forked from one server
that has imported nbgrader and the grader once (multiprocessing's forkserver; what it preloads is
:mod:`autograder.nbgrader_preload`). ``make autograde`` runs one per submission, ``make feedback``
one per page: each starts in milliseconds instead of seconds of imports, and each stays a process of
its own, so that one run that fails, stalls or runs away costs its own submission or page alone.

As with any multiprocessing, a script that calls :func:`run` keeps its work under
``if __name__ == "__main__":``: the server imports the calling script.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

PRELOAD = ["autograder.nbgrader_preload"]
_forks = None


def _forkserver():
    """The fork server's context (its server started on first use, with PRELOAD imported)."""
    global _forks
    if _forks is None:
        _forks = multiprocessing.get_context("forkserver")
        _forks.set_forkserver_preload(PRELOAD)
    return _forks


def _main(course: str, argv: list, env: dict, log: str, cpu_s: int | None, memory: int | None):
    """In the child: a new session (a stuck run is killed with what it started), the caller's
    environment, limits of CPU time and address space when given, output to ``log``, and nbgrader's
    application and its singletons made here, fresh for this run."""
    import resource
    os.setsid()
    if memory:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    if cpu_s:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))
    os.environ.clear()
    os.environ.update(env)
    tempfile.tempdir = None          # the temporary folder of this environment (TMPDIR), not the server's
    os.chdir(course)
    fd = os.open(log, os.O_WRONLY | os.O_TRUNC)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.argv = ["nbgrader", *argv]
    from nbgrader.apps.nbgraderapp import NbGraderApp
    NbGraderApp.launch_instance(argv)            # its sys.exit(code) is this process's exit code


def run(*args, course: Path, check: bool = True, timeout: float | None = None, cpu_s: int | None = None,
        memory: int | None = None) -> subprocess.CompletedProcess:
    """``nbgrader ARGS`` in the course directory, with this environment's tools; its output (stdout
    and stderr together) and exit code (negative: the signal that stopped it, as SIGXCPU past
    ``cpu_s``). One that outlives ``timeout`` seconds is killed, with everything it started in its
    session, and raises TimeoutExpired; ``check``: a non-zero exit raises RuntimeError."""
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")}
    with tempfile.NamedTemporaryFile(prefix="nbgrader-", suffix=".log") as log:
        process = _forkserver().Process(target=_main, args=(str(course), list(args), env, log.name, cpu_s, memory))
        process.start()
        process.join(timeout)
        if process.exitcode is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                process.kill()
            process.join()
            raise subprocess.TimeoutExpired(["nbgrader", *args], timeout, Path(log.name).read_text(errors="replace"))
        output = Path(log.name).read_text(errors="replace")
    done = subprocess.CompletedProcess(["nbgrader", *args], process.exitcode, output, "")
    if check and done.returncode != 0:
        raise RuntimeError(f"nbgrader {' '.join(args)} failed in {course}:\n{output[-3000:]}")
    return done
