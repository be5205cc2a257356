"""Stage 4, the sandbox: the confined process that runs a submission's answer cells and the
checks' probes, data out only; both sides of it.

The grader (:mod:`autograder.grader`) calls :func:`run_code` (at the end of this module: the
grader's side, which starts the process, reads its frames and enforces :class:`Limits`), which
starts this module in a fresh process, inside new user, PID, network and IPC namespaces where the system allows
them (every process it starts dies with it; no network at all, UDP included):

    python -c "$LAUNCHER" WORKDIR FD       (LAUNCHER below: this module under its own name)

WORKDIR holds ``request.json`` and ``inputs.pkl``, written by the grader's side and
deleted here once read. The process reports through the pipe FD as frames
(:mod:`autograder.frames`): events as they happen, and each check's result.

Student code never holds that pipe. The process forks a child that closes it,
loads DyNet, NumPy, every ``course`` module and the probes, then confines itself
with Landlock (:mod:`autograder.landlock`: read access to Python's own files only,
the course's and the grader's code included no longer; write access to WORKDIR
only; no TCP; no signals or abstract sockets outside), and only then runs the
answer cells and probes, each in a fresh thread (its callers' frames hold nothing
of the grader's). The parent confines itself too, in a Landlock domain of its
own: the child can neither signal nor trace it, nor open its descriptors through
/proc. DyNet starts in the child, after the fork, because CUDA does not survive a
fork (COURSE_GPU=1); the parent never loads it. The child reports to the parent
on a pipe of its own; the parent (:func:`relay`) forwards only frames that fit
the request, in order, with the cell and check names taken from the request,
never from the child.

Two kinds of request:

* ``cells`` + ``probes``: run the answer cells, then each probe. A step check's
  probe is traced (:mod:`autograder.probes.trace`): its result is a program, not
  numbers. Other probes return numbers. After the cells and after each probe,
  :class:`Guard` looks for code that patched the probes, the course, NumPy or
  DyNet, started threads or installed hooks; a submission that did is stopped.
* ``replay``: run programs traced in another sandbox (no student code at all).
"""
from __future__ import annotations

import ctypes
import glob
import importlib
import io
import json
import os
import pickle
import pkgutil
import queue
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import traceback
import types
from dataclasses import dataclass
from pathlib import Path

from autograder.frames import MAX_FRAME, encode, read_frames
from course.paths import ROOT

OUT_OF_MEMORY = 75          # exit code: an answer cell exhausted the memory limit
LAUNCHER = "import sys\nfrom autograder.sandbox import main\nsys.exit(main(*sys.argv[1:]))"
_channel = -1
_sending = threading.Lock()


def send(event: str, blob: bytes = b"", **fields):
    """One frame (:func:`autograder.frames.encode`) onto this process's channel."""
    data = encode(event, blob, **fields)
    with _sending:
        while data:
            data = data[os.write(_channel, data):]


def readable_paths() -> list:
    """What the confined process may read: Python and the installed packages, not
    the repository (its modules are loaded before confinement)."""
    paths = {sys.prefix, sys.base_prefix, sysconfig.get_paths()["stdlib"],
             sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"],
             "/usr/lib", "/lib", "/lib64", "/usr/lib64", "/usr/share/zoneinfo", "/etc/localtime",
             "/dev/null", "/dev/urandom", "/proc/self", "/proc/cpuinfo", "/sys/devices/system/cpu"}
    paths.update(p for p in sys.path if p and "site-packages" in p)
    root = str(ROOT) + os.sep
    return sorted(p for p in paths if not (p + os.sep).startswith(root) or ".venv" in Path(p).parts)


def preload(request: dict) -> dict:
    """Import everything student code or a probe may need while files can still be read (Python's
    own and the installed packages stay readable: Matplotlib, which no check uses, loads from there
    when a cell imports it, drawing with MPLBACKEND's Agg)."""
    import numpy  # noqa: F401
    import dynet_config  # noqa: F401
    from course import runtime
    runtime.init(seed=1)
    import course
    for info in pkgutil.iter_modules(course.__path__):
        importlib.import_module(f"course.{info.name}")
    import autograder.probes
    for info in pkgutil.iter_modules(autograder.probes.__path__):
        importlib.import_module(f"autograder.probes.{info.name}")
    import _dynet
    import dynet
    from autograder.probes import trace
    trace.install(dynet, _dynet)
    return {item["check"]: (autograder.probes.lookup(item["probe"], traced=True),   # check -> (probe, traced)
                            item["probe"] in autograder.probes.TRACED) for item in request.get("probes", [])}


def scratch_space(workdir: Path, megabytes: int) -> Path:
    """The only folder student code may write: a tmpfs of ``megabytes`` in the
    sandbox's own mount namespace (a disk quota), holding a copy of the submission's
    files; the working folder, HOME and TMPDIR. Without a mount namespace, a plain
    folder (and a note: no quota beyond the size of each file)."""
    scratch = workdir / "scratch"
    scratch.mkdir()
    libc = ctypes.CDLL(None, use_errno=True)
    options = f"size={megabytes}m,mode=700".encode()
    if libc.mount(b"tmpfs", str(scratch).encode(), b"tmpfs", 2 | 4, options) != 0:   # MS_NOSUID | MS_NODEV
        send("not confined", why=f"no disk quota: a tmpfs could not be mounted ({os.strerror(ctypes.get_errno())})")
    for entry in os.scandir(workdir):
        if entry.is_dir(follow_symlinks=False) and entry.name != "scratch":
            shutil.copytree(entry.path, scratch / entry.name, symlinks=True)
    os.chdir(scratch)
    os.environ.update(HOME=str(scratch), TMPDIR=str(scratch), MPLCONFIGDIR=str(scratch))
    tempfile.tempdir = str(scratch)
    return scratch


def gpu_devices() -> list:
    """With COURSE_GPU=1, the GPU's device files, which CUDA may open again after DyNet
    started on the card: running GPU code is what the sandbox is for there."""
    from course import runtime
    if not runtime.gpu_requested():
        return []
    return sorted(glob.glob("/dev/nvidia*")) + ["/proc/driver/nvidia"]


def confine(workdir: Path, quiet: bool = False) -> bool:
    from autograder import landlock
    if landlock.available():
        landlock.restrict(read=readable_paths(), write=[str(workdir)] + gpu_devices())
        if not quiet:
            send("confined")
        return True
    if not quiet:
        send("not confined", why="Landlock is unavailable on this system")
    return False


class Guard:
    """What the grader's own code relies on, as it was before student code ran."""

    TRUSTED = ("autograder", "course", "numpy", "dynet", "_dynet", "builtins", "os", "json", "io", "threading",
               "__main__")
    OWN = ("autograder", "__main__")   # the grader's own modules: their containers are watched too

    def __init__(self):
        self.modules = dict(sys.modules)
        self.namespaces = {name: self._namespace(module) for name, module in self.modules.items()
                           if self._trusted(name)}
        self.signals = {s: signal.getsignal(s) for s in signal.valid_signals()
                        if s not in (signal.SIGKILL, signal.SIGSTOP)}
        self.meta_path = list(sys.meta_path)
        import gc
        self.gc_callbacks = list(gc.callbacks)

    def _trusted(self, name: str) -> bool:
        return name.split(".")[0] in self.TRUSTED

    @staticmethod
    def _function(out: dict, key: str, value):
        """A function's code, defaults and what its closure cells hold."""
        out[key + ".__code__"] = id(value.__code__)
        out[key + ".__defaults__"] = id(value.__defaults__)
        out[key + ".__kwdefaults__"] = id(value.__kwdefaults__)
        for i, cell in enumerate(value.__closure__ or ()):
            try:
                out[f"{key}.__closure__[{i}]"] = id(cell.cell_contents)
            except ValueError:                     # an empty cell
                out[f"{key}.__closure__[{i}]"] = None

    @classmethod
    def _namespace(cls, module) -> dict:
        """Attribute -> identity; the code, defaults and closures of every function and
        method defined there; in the grader's own modules, what dicts, lists and sets
        hold (the course's and the libraries' may change as they run: a seed, a cache)."""
        out = {}
        own = getattr(module, "__name__", "").split(".")[0] in cls.OWN
        for key, value in list(vars(module).items()):
            out[key] = id(value)
            if isinstance(value, types.FunctionType):
                cls._function(out, key, value)
            elif own and isinstance(value, dict) and key != "__builtins__":
                out[key + "{}"] = hash(tuple((id(k), id(v)) for k, v in list(value.items())))
            elif own and isinstance(value, (list, set)):
                out[key + "[]"] = hash(tuple(sorted(id(v) for v in list(value))))
            elif isinstance(value, type) and value.__module__ == getattr(module, "__name__", None):
                for attr, member in list(vars(value).items()):
                    out[f"{key}.{attr}"] = id(member)
                    if isinstance(member, types.FunctionType):
                        cls._function(out, f"{key}.{attr}", member)
        return out

    def problems(self) -> list:
        found = []
        if sys.gettrace() is not None or sys.getprofile() is not None \
                or threading.gettrace() is not None or threading.getprofile() is not None:
            found.append("installed a trace or profile hook")
        if threading.active_count() > 1 or len(sys._current_frames()) > 1:
            found.append("started a thread")
        if any(signal.getitimer(t) != (0.0, 0.0) for t in (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL,
                                                           signal.ITIMER_PROF)):
            found.append("set a timer")
        if any(signal.getsignal(s) is not handler for s, handler in self.signals.items()):
            found.append("changed a signal handler")
        if sys.meta_path != self.meta_path:
            found.append("changed the import system")
        import gc
        if gc.callbacks != self.gc_callbacks:
            found.append("installed a garbage-collector callback")
        for name, module in self.modules.items():
            if sys.modules.get(name) is not module:
                found.append(f"replaced the module {name}")
            elif name in self.namespaces:
                now = self._namespace(module)
                changed = sorted(k for k, v in self.namespaces[name].items() if now.get(k) != v)
                if changed:
                    found.append(f"changed {name}.{changed[0]}")
            if len(found) > 3:
                break
        return found


def tampering(guard: Guard, check=Guard.problems, code=Guard.problems.__code__) -> list:
    """What the submission changed, by the Guard's check as it was when this module
    loaded: a patched ``Guard.problems`` is itself a change it reports."""
    return check(guard) if check.__code__ is code else ["changed the sandbox's Guard"]


def describe(err: BaseException) -> str:
    """The error's type and message and the last student frame, briefly: never a
    line of the grader's code or a traceback."""
    frames = [f for f in traceback.extract_tb(err.__traceback__) if f.filename.startswith("<answer cell")]
    where = f" ({frames[-1].filename[1:-1]}, line {frames[-1].lineno})" if frames else ""
    from course.runtime import explain           # e.g. `1 - z` on a DyNet that refuses it: the fix
    hint = explain(err)
    return f"{type(err).__name__}: {str(err)[:300]}{where}" + (f". {hint}" if hint else "")


def isolated(function, *args):
    """``function(*args)`` in a fresh thread, so that the frames above student code
    are the thread's start, not the grader's; (value, exception) back."""
    outcome = [None, None]

    def target():
        try:
            outcome[0] = function(*args)
        except BaseException as err:               # SystemExit, KeyboardInterrupt too
            outcome[1] = err
    thread = threading.Thread(target=target, name="answer")
    thread.start()
    thread.join()
    return outcome


def run_submission(request: dict, inputs: dict, probes: dict):
    """In the child that runs student code: the cells, then the probes. Frames name
    cells and checks by their index in the request; the parent supplies the names."""
    from autograder.probes import clean_memory, to_arrays
    import numpy as np
    guard = Guard()
    namespace = {"__name__": "__student__", "__builtins__": __builtins__}
    for index, (grade_id, source) in enumerate(request["cells"]):
        send("cell", index=index)
        try:
            code = compile(source, f"<answer cell {grade_id}>", "exec")
        except BaseException as err:
            send("cell failed", error=describe(err))
            continue
        _, err = isolated(exec, code, namespace)
        if isinstance(err, MemoryError):          # resource abuse ends the run, like a timeout
            os._exit(OUT_OF_MEMORY)
        if err is None:
            send("cell done")
        else:
            send("cell failed", error=describe(err))
    problems = tampering(guard)
    for index, item in enumerate(request["probes"]):
        if problems:
            break
        check = item["check"]
        send("probe", index=index)
        functions = {name: namespace[name] for name in item["functions"] if callable(namespace.get(name))}
        missing = [name for name in item["functions"] if name not in functions]
        if missing:
            send("probe failed", error=f"function {', '.join(missing)} is not defined "
                                       "(answer cell deleted, renamed or failing)")
            continue
        probe, traced = probes[check]
        clean_memory()
        result, err = isolated(probe, functions, inputs[check])
        problems = tampering(guard)
        if err is not None:
            send("probe failed", error=describe(err))
        elif problems:
            break
        elif traced:
            send("result", json.dumps(result).encode())
        else:
            buffer = io.BytesIO()
            np.savez(buffer, **to_arrays(result))
            send("result", buffer.getvalue())
    if problems:
        send("tampered", what=problems)
    send("end")


def _text(value, limit: int = 400) -> str:
    return str(value)[:limit] if isinstance(value, (str, int, float)) else ""


GUARD_PHRASES = ("installed a trace or profile hook", "started a thread", "set a timer", "changed a signal handler",
                 "changed the import system", "installed a garbage-collector callback", "changed the sandbox's Guard")


def guard_words(what) -> str:
    """A Guard finding from the child in the parent's own words: one of its phrases, or
    a module and attribute that exist here (the child's text is never passed on)."""
    if what in GUARD_PHRASES:
        return what
    for verb in ("replaced the module ", "changed "):
        if isinstance(what, str) and what.startswith(verb):
            name = what[len(verb):]
            modules = [m for m in sys.modules if name == m or name.startswith(m + ".")]
            if modules:
                module = max(modules, key=len)
                attribute = re.match(r"[A-Za-z_]\w*", name[len(module) + 1:])
                if attribute and attribute.group() in vars(sys.modules[module]):
                    return f"{verb}{module}.{attribute.group()}"
                return verb + module
    return "changed what the grader relies on"


def relay(fd: int, request: dict):
    """In the parent: the child's frames onto the grader's channel, only those that
    fit the request in order (cells, then probes, one at a time), named from the
    request. What the child's code wrote can reach the grader only as an error
    message, a result to be judged, or a claim that it tampered."""
    from autograder.probes import TRACED
    cells = [grade_id for grade_id, _ in request["cells"]]
    checks = [(p["check"], "program" if p["probe"] in TRACED else "numbers") for p in request["probes"]]
    cell = probe = -1
    current = None                                 # "cell" or "probe" while one runs
    ready = False                                  # the child has loaded everything and confined itself
    with os.fdopen(fd, "rb") as stream:
        for frame in read_frames(stream, MAX_FRAME * 2):
            event, index = frame.get("event"), frame.get("index")
            if not ready:
                if event != "ready":
                    return
                ready = True
                send("ready")
            elif event == "cell" and current is None and probe < 0 and type(index) is int \
                    and cell < index < len(cells):
                cell, current = index, "cell"
                send("cell", cell=cells[cell])
            elif event in ("cell done", "cell failed") and current == "cell":
                current = None
                send(event, cell=cells[cell], **({"error": _text(frame.get("error"))} if event == "cell failed" else {}))
            elif event == "probe" and current is None and type(index) is int and probe < index < len(checks):
                probe, current = index, "probe"
                send("probe", check=checks[probe][0])
            elif event in ("result", "probe failed") and current == "probe":
                current = None
                check, kind = checks[probe]
                if event == "result":
                    send("result", frame["blob"], check=check, kind=kind)
                else:
                    send("probe failed", check=check, error=_text(frame.get("error")))
            elif event == "tampered" and isinstance(frame.get("what"), list):
                send("tampered", what=[guard_words(w) for w in frame["what"][:4]])
            elif event == "garbled":
                send("garbled")
                return
            elif event == "end":
                return


def run_child(request: dict, inputs: dict, workdir: Path, confining: bool) -> int:
    """Fork the child that runs student code (see the module's doc); confine this
    process and relay the child's frames; the child's exit status, as this process's own."""
    global _channel
    from autograder import landlock  # noqa: F401  (confine's, imported while files can be read)
    from autograder.probes import TRACED  # noqa: F401  (relay's)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:                                   # the child: the grader's channel is closed here
        try:
            os.close(read)
            os.close(_channel)
            _channel = write
            probes = preload(request)
            if confining:
                confine(workdir, quiet=True)       # the parent says whether Landlock is there
            send("ready")
            run_submission(request, inputs, probes)
            code = 0
        except MemoryError:
            code = OUT_OF_MEMORY
        except BaseException:
            code = 1
        os._exit(code)
    os.close(write)
    if confining:
        confine(workdir)                           # a domain of its own, out of the child's reach
    reader = threading.Thread(target=relay, args=(read, request), daemon=True)
    reader.start()
    _, status = os.waitpid(pid, 0)
    reader.join(timeout=5)                         # frames written before it ended
    return os.waitstatus_to_exitcode(status)


def run_replay(request: dict, inputs: dict):
    """Programs traced in another sandbox, run here without any student code."""
    from autograder.probes import clean_memory, to_arrays, trace
    import numpy as np
    for item in request["replay"]:
        check = item["check"]
        clean_memory()
        try:
            numbers = trace.replay(item["program"], inputs[check])
        except Exception as err:
            send("probe failed", check=check, error="the step's DyNet operations could not be replayed "
                                                    f"({type(err).__name__}: {str(err)[:200]})")
            continue
        buffer = io.BytesIO()
        np.savez(buffer, **to_arrays(numbers))
        send("result", buffer.getvalue(), check=check, kind="numbers")


def main(workdir: str, fd: str) -> int:
    global _channel
    _channel = int(fd)
    workdir = Path(workdir).resolve()
    request = json.loads((workdir / "request.json").read_text())
    with open(workdir / "inputs.pkl", "rb") as f:
        inputs = pickle.load(f)                    # written by the trusted grader
    for name in ("request.json", "inputs.pkl"):    # the grader's inputs are not left for student code
        (workdir / name).unlink()
    workdir = scratch_space(workdir, int(request.get("disk_mb", 256)))
    confining = request.get("confine", True)
    if "replay" in request:                        # no student code: DyNet in this process
        preload(request)
        if confining:
            confine(workdir)
        send("ready")
        run_replay(request, inputs)
    else:
        code = run_child(request, inputs, workdir, confining)
        if code != 0:
            os._exit(code if code > 0 else 128 - code)   # as the shell reports a signal: 137, 139, ...
    send("finished")
    return 0


# -- the sandbox from the grader's side: starting it, reading its frames, its limits ----------
MAX_OUTPUT = 256 << 20         # everything one sandbox may send
START_S = 90                   # loading DyNet, NumPy and the course in a fresh process
REPLAY_GRACE_S = 10            # a replay that starts after the submission's time is up gets this
NAMESPACES = ["unshare", "--user", "--map-root-user", "--pid", "--fork", "--kill-child",
              "--mount-proc", "--net", "--ipc"]


@dataclass
class Limits:
    cell_s: int = 30           # one answer cell
    check_s: int = 30          # one check's probe, unless the check declares its own (Check.seconds)
    wall_s: int = 300          # everything one submission may take
    cpu_s: int = 120           # CPU seconds of one sandbox process
    memory_mb: int = 4096      # address space of the sandbox process (its data segment on the GPU)
    file_mb: int = 64          # largest file it may write
    disk_mb: int = 256         # everything it may write (a tmpfs; the copied model files count)


_namespaces: tuple | None = None


def namespaces() -> tuple:
    """(usable, why not): whether new user, PID and network namespaces can be made here."""
    global _namespaces
    if _namespaces is None:
        try:
            run = subprocess.run(NAMESPACES + ["true"], capture_output=True, text=True, timeout=20)
            _namespaces = (run.returncode == 0, run.stderr.strip()[:200])
        except (OSError, subprocess.TimeoutExpired) as err:
            _namespaces = (False, str(err)[:200])
    return _namespaces


PR_SET_PDEATHSIG = 1           # prctl(2)


def _limit(limits: Limits):
    # On the GPU (COURSE_GPU=1) CUDA reserves far more address space than memory_mb when it
    # starts, so the cap is on the data segment there (private writable memory: what NumPy
    # and Python allocate); elsewhere on the address space, which shared mappings count in too.
    import resource                    # the grader's side only: the confined process loads what it did
    from course import runtime
    memory = resource.RLIMIT_DATA if runtime.gpu_requested() else resource.RLIMIT_AS
    # The sandbox's first process is killed when the grading process dies (an nbgrader run killed at
    # its time, a Dask worker killed): in its own session, it would otherwise run on, orphaned, for as
    # long as the submission keeps it busy; unshare's --kill-child then ends the whole namespace.
    # prctl is looked up here, before the fork: the child only calls it.
    prctl = ctypes.CDLL(None, use_errno=True).prctl if sys.platform == "linux" else None
    grader = os.getpid()

    def apply():
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != grader:            # the grader died before the line above
                os._exit(1)
        resource.setrlimit(memory, (limits.memory_mb << 20,) * 2)
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 5))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_mb << 20,) * 2)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return apply


_compiled = False


def _write_bytecode():
    """The course's and the grader's bytecode, written once per grading process by the trusted side:
    a sandbox writes none (PYTHONDONTWRITEBYTECODE, and Landlock), so where nothing else wrote it, each
    sandbox compiled every module it loads from source (about 0.1 s of CPU, twice per submission).
    A checkout this process may not write is left as it is."""
    global _compiled
    if not _compiled:
        import compileall
        for package in ("course", "autograder", "autograder/probes", "autograder/reference"):   # not work/
            compileall.compile_dir(ROOT / package, maxlevels=0, quiet=2)
        _compiled = True


class SandboxProcess:
    """One sandbox process (:func:`main`, started by :data:`LAUNCHER`) and the frames it sends."""

    def __init__(self, request: dict, inputs: dict, limits: Limits, artifacts=()):
        from autograder.intake import copy_regular_files
        _write_bytecode()
        self.workdir = Path(tempfile.mkdtemp(prefix="sandbox-"))
        (self.workdir / "request.json").write_text(json.dumps(request))
        with open(self.workdir / "inputs.pkl", "wb") as f:
            pickle.dump(inputs, f)
        for folder in artifacts:
            copy_regular_files(folder, self.workdir / folder.name)
        read, write = os.pipe()
        command = [sys.executable, "-c", LAUNCHER, str(self.workdir), str(write)]
        isolated, _ = namespaces()
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(self.workdir), "MPLCONFIGDIR": str(self.workdir),
               "MPLBACKEND": "Agg",
               "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1",
               "COURSE_GPU": os.environ.get("COURSE_GPU", "")}
        self.process = subprocess.Popen((NAMESPACES if isolated else []) + command, cwd=self.workdir, env=env,
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, pass_fds=(write,),
                                        preexec_fn=_limit(limits), start_new_session=True)
        os.close(write)
        self.frames: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, args=(read,), daemon=True).start()

    def _read(self, fd: int):
        """Frames into the queue; None at the end. A malformed or oversized stream ends it."""
        with os.fdopen(fd, "rb") as stream:
            for frame in read_frames(stream, MAX_OUTPUT):
                self.frames.put(frame)
        self.frames.put(None)

    def next(self, seconds: float):
        """The next frame, None when the process has closed the channel, "timeout"."""
        try:
            return self.frames.get(timeout=max(seconds, 0.01))
        except queue.Empty:
            return "timeout"

    def stop(self, wait: float = 0) -> str:
        """End it and everything it started (after ``wait`` seconds for it to end by
        itself); how it ended, in words."""
        try:
            self.process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            pass
        killed = self.process.poll() is None
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        code = self.process.wait()
        shutil.rmtree(self.workdir, ignore_errors=True)
        if killed:
            return "was stopped"
        return {-signal.SIGKILL: "was killed (memory or CPU limit)", -signal.SIGXCPU: "used up its CPU time",
                -signal.SIGSEGV: "crashed (segmentation fault)", -signal.SIGABRT: "crashed (aborted)",
                OUT_OF_MEMORY: "exhausted the memory limit", 137: "was killed (memory or CPU limit)",
                152: "used up its CPU time", 139: "crashed (segmentation fault)", 134: "crashed (aborted)",
                }.get(code, f"ended the process (exit code {code})")


def _message(text) -> str:
    """A message from the sandbox as a student may read it: text, one line, bounded."""
    return re.sub(r"[\x00-\x1f\x7f]+", " ", str(text))[:400]


def _decode(frame: dict, traced: bool):
    import numpy as np
    from autograder.probes import from_arrays
    blob = frame.get("blob", b"")
    if traced:
        return json.loads(blob)
    with np.load(io.BytesIO(blob), allow_pickle=False) as data:
        return from_arrays({k: data[k] for k in data.files})


def run_code(cells: list, probes: list, inputs: dict, limits: Limits, confine: bool = True,
             artifacts: list = (), replay_inputs: dict | None = None):
    """Run the answer cells and the probes; return (numbers per check, errors per
    check or ``cell:<grade_id>``, notes, whether anything was stopped). Traced
    programs are replayed on ``replay_inputs`` (default: the inputs they were traced on).

    Each cell and each probe has its own time limit (``limits``; a probe's ``seconds``,
    from its check, when given). When one runs past it (or
    crashes, or exhausts memory), the sandbox is stopped and started again for
    the checks still to do: without the cell (its functions are then missing), or
    without the probe (its check fails with the reason)."""
    from autograder.probes import TRACED
    numbers, errors, notes, programs = {}, {}, [], {}
    todo = list(probes)
    cells = list(cells)
    aborted = False
    isolated, why = namespaces()
    if not isolated:
        notes.append(f"sandbox without namespaces ({why or 'unshare unavailable'}): processes it starts "
                     "are stopped by process group only, and UDP is not blocked")
    deadline = time.monotonic() + limits.wall_s
    for _ in range(len(probes) + len(cells) + 1):
        if not todo:
            break
        box = SandboxProcess({"cells": cells, "probes": todo, "confine": confine, "disk_mb": limits.disk_mb},
                      {p["check"]: inputs[p["check"]] for p in todo}, limits, artifacts)
        phase, name, until = "start", None, time.monotonic() + START_S
        ending = None
        while True:
            frame = box.next(min(until, deadline) - time.monotonic())
            if frame is None or frame == "timeout":
                ending = frame
                break
            event = frame.get("event")
            check = frame.get("check")
            if phase == "start":                   # no student code has run yet
                if event == "not confined":
                    notes.append("sandbox not confined: " + _message(frame.get("why")))
                elif event == "ready":
                    phase = "between"
                elif event == "garbled":
                    ending = "garbled"
                    break
            elif event == "cell" and phase == "between" and frame.get("cell") in dict(cells):
                phase, name, until = "cell", frame["cell"], time.monotonic() + limits.cell_s
            elif event in ("cell done", "cell failed") and phase == "cell":
                if event == "cell failed":
                    errors[f"cell:{name}"] = _message(frame.get("error"))
                phase, name, until = "between", None, time.monotonic() + limits.cell_s
            elif event == "probe" and phase == "between" and any(p["check"] == check for p in todo):
                seconds = next(p for p in todo if p["check"] == check).get("seconds") or limits.check_s
                phase, name, until = "probe", check, time.monotonic() + seconds
            elif event in ("result", "probe failed") and phase == "probe" and check == name:
                item = next(p for p in todo if p["check"] == check)
                todo.remove(item)
                if event == "probe failed":
                    errors[check] = _message(frame.get("error"))
                else:
                    traced = item["probe"] in TRACED
                    try:
                        (programs if traced else numbers)[check] = _decode(frame, traced)
                    except Exception as err:
                        errors[check] = f"unreadable result ({type(err).__name__})"
                phase, name, until = "between", None, time.monotonic() + limits.check_s
            elif event == "tampered":
                what = "; ".join(_message(w) for w in frame.get("what", []))[:400]
                notes.append(f"the submission's code {what}: the grader's own code must not be changed, "
                             "so the checks after that point were not graded")
                for item in todo:
                    errors[item["check"]] = "not graded: the submission changed the grader's code or environment"
                todo, aborted = [], True
            elif event == "finished":
                ending = "finished"
                break
            elif event == "garbled":
                ending = "garbled"
                break
        how = box.stop(wait=5 if ending in ("finished", None) else 0)
        if ending == "finished":
            break
        aborted = True
        if time.monotonic() >= deadline:
            notes.append(f"the submission used up its {limits.wall_s} s; what was left was not graded")
            break
        why = {"timeout": "ran past its time limit (an endless loop?)",
               "garbled": "wrote over the grader's channel"}.get(ending, how)
        if phase == "cell":
            cells = [c for c in cells if c[0] != name]
            errors[f"cell:{name}"] = f"the cell {why}"
            notes.append(f"answer cell {name} {why}; the checks were run without it")
        elif phase == "probe":
            todo = [p for p in todo if p["check"] != name]
            errors[name] = f"stopped: the code it calls {why}"
        else:
            notes.append(f"the sandbox {why} ({phase})")
            break
    for item in todo:
        errors.setdefault(item["check"], "not graded (see the notes)")
    if programs:
        numbers.update(replay_programs(programs, replay_inputs or inputs, limits, errors, deadline))
    return numbers, errors, notes, aborted


def replay_programs(programs: dict, inputs: dict, limits: Limits, errors: dict, deadline: float) -> dict:
    """Traced programs into numbers, in a sandbox that runs no student code. The
    replay is the submission's work: it runs within the submission's time (its
    process's start aside), or REPLAY_GRACE_S when it starts after that time."""
    numbers = {}
    box = SandboxProcess({"replay": [{"check": c, "program": p} for c, p in programs.items()],
                   "disk_mb": limits.disk_mb}, {c: inputs[c] for c in programs}, limits)
    until = time.monotonic() + START_S
    while True:
        frame = box.next(until - time.monotonic())
        if not isinstance(frame, dict) or frame.get("event") in ("finished", "garbled"):
            break
        if frame.get("event") == "ready":          # its start is not the submission's time; the rest is
            until = max(deadline, time.monotonic() + REPLAY_GRACE_S)
        check = frame.get("check")
        if check in programs and frame.get("event") == "result":
            try:
                numbers[check] = _decode(frame, traced=False)
            except Exception as err:
                errors[check] = f"unreadable result ({type(err).__name__})"
        elif check in programs and frame.get("event") == "probe failed":
            errors[check] = _message(frame.get("error"))
    how = box.stop(wait=5)
    for check in programs:
        if check not in numbers:
            errors.setdefault(check, f"the step's operations could not be replayed (the replay {how})")
    return numbers
