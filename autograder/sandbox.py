"""The confined process: a submission's answer cells and the probes; data out only.

The trusted grader (:mod:`autograder.trusted`) starts this module in a fresh
process, inside new user, PID, network and IPC namespaces where the system allows
them (every process it starts dies with it; no network at all, UDP included):

    python -m autograder.sandbox WORKDIR FD

WORKDIR holds ``request.json`` and ``inputs.pkl``, written by the trusted side and
deleted here once read. The process loads DyNet, NumPy, every ``course`` module
and the probes, then confines itself with Landlock (:mod:`autograder.landlock`:
read access to Python's own files only, the course's and the grader's code
included no longer; write access to WORKDIR only; no TCP; no signals or abstract
sockets outside), and only then executes student code. It reports through the
pipe FD as frames (:func:`send`): events as they happen, and each check's result.

Two kinds of request:

* ``cells`` + ``probes``: run the answer cells, then each probe. A step check's
  probe is traced (:mod:`autograder.probes.trace`): its result is a program, not
  numbers. Other probes return numbers. After the cells and after each probe,
  :class:`Guard` looks for code that patched the probes, the course, NumPy or
  DyNet, started threads or installed hooks; a submission that did is stopped.
* ``replay``: run programs traced in another sandbox (no student code at all).
"""
from __future__ import annotations

import importlib
import io
import json
import os
import pickle
import pkgutil
import signal
import sys
import sysconfig
import threading
import traceback
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT_OF_MEMORY = 75          # exit code: an answer cell exhausted the memory limit
MAX_FRAME = 128 << 20       # the most one frame may carry (a capstone's weights)
_channel = -1


def send(event: str, blob: bytes = b"", **fields):
    """One frame: header length, JSON header, blob length, blob."""
    header = json.dumps({"event": event, **fields}).encode()
    data = len(header).to_bytes(4, "big") + header + len(blob).to_bytes(4, "big") + blob
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
    """Import everything student code or a probe may need while files can still be read."""
    import matplotlib
    matplotlib.use("Agg")
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
    probes = {}                                    # check -> (probe, whether it is traced)
    for item in request.get("probes", []):
        dotted = autograder.probes.TRACED.get(item["probe"], item["probe"])
        module, _, function = dotted.partition(":")
        if not module.startswith("autograder.probes"):
            raise ValueError(f"probe {dotted} is not in autograder/probes")
        probes[item["check"]] = (getattr(importlib.import_module(module), function),
                                 item["probe"] in autograder.probes.TRACED)
    return probes


def confine(workdir: Path):
    from autograder import landlock
    if landlock.available():
        landlock.restrict(read=readable_paths(), write=[str(workdir)])
        send("confined")
    else:
        send("not confined", why="Landlock is unavailable on this system")


class Guard:
    """What the grader's own code relies on, as it was before student code ran."""

    TRUSTED = ("autograder", "course", "numpy", "dynet", "_dynet", "builtins", "os", "json", "io")

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
    def _namespace(module) -> dict:
        """Attribute -> identity, and the code of every function and method defined there."""
        out = {}
        for key, value in list(vars(module).items()):
            out[key] = id(value)
            if isinstance(value, types.FunctionType):
                out[key + ".__code__"] = id(value.__code__)
                out[key + ".__defaults__"] = id(value.__defaults__)
            elif isinstance(value, type) and value.__module__ == getattr(module, "__name__", None):
                for attr, member in list(vars(value).items()):
                    out[f"{key}.{attr}"] = id(member)
                    if isinstance(member, types.FunctionType):
                        out[f"{key}.{attr}.__code__"] = id(member.__code__)
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


def describe(err: BaseException) -> str:
    """The error's type and message and the last student frame, briefly: never a
    line of the grader's code or a traceback."""
    frames = [f for f in traceback.extract_tb(err.__traceback__) if f.filename.startswith("<answer cell")]
    where = f" ({frames[-1].filename[1:-1]}, line {frames[-1].lineno})" if frames else ""
    from course.runtime import explain           # e.g. `1 - z` on a DyNet that refuses it: the fix
    hint = explain(err)
    return f"{type(err).__name__}: {str(err)[:300]}{where}" + (f". {hint}" if hint else "")


def run_submission(request: dict, inputs: dict, probes: dict):
    from autograder.probes import to_arrays
    import numpy as np
    guard = Guard()
    namespace = {"__name__": "__student__", "__builtins__": __builtins__}
    for grade_id, source in request["cells"]:
        send("cell", cell=grade_id)
        try:
            exec(compile(source, f"<answer cell {grade_id}>", "exec"), namespace)
            send("cell done", cell=grade_id)
        except MemoryError:                        # resource abuse ends the run, like a timeout
            os._exit(OUT_OF_MEMORY)
        except BaseException as err:               # SystemExit, KeyboardInterrupt too
            send("cell failed", cell=grade_id, error=describe(err))
    problems = guard.problems()
    for item in request["probes"]:
        if problems:
            send("tampered", what=problems)
            return
        check = item["check"]
        send("probe", check=check)
        functions = {name: namespace[name] for name in item["functions"] if callable(namespace.get(name))}
        missing = [name for name in item["functions"] if name not in functions]
        if missing:
            send("probe failed", check=check, error=f"function {', '.join(missing)} is not defined "
                                                    "(answer cell deleted, renamed or failing)")
            continue
        probe, traced = probes[check]
        try:
            result = probe(functions, inputs[check])
        except BaseException as err:
            problems = guard.problems()
            send("probe failed", check=check, error=describe(err))
            continue
        problems = guard.problems()
        if problems:
            continue
        if traced:
            send("result", json.dumps(result).encode(), check=check, kind="program")
        else:
            buffer = io.BytesIO()
            np.savez(buffer, **to_arrays(result))
            send("result", buffer.getvalue(), check=check, kind="numbers")
    if problems:
        send("tampered", what=problems)


def run_replay(request: dict, inputs: dict):
    """Programs traced in another sandbox, run here without any student code."""
    from autograder.probes import to_arrays, trace
    import numpy as np
    for item in request["replay"]:
        check = item["check"]
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
    probes = preload(request)
    if request.get("confine", True):
        confine(workdir)
    send("ready")
    if "replay" in request:
        run_replay(request, inputs)
    else:
        run_submission(request, inputs, probes)
    send("finished")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
