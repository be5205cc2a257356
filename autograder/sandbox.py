"""Run a submission's answer cells and the probes, confined; write numbers only.

The trusted grader (autograder/trusted.py) starts this module in a fresh process:

    python -m autograder.sandbox WORKDIR

WORKDIR holds ``request.json`` (the answer cells' sources and which probes to run)
and ``inputs.pkl`` (the grader's inputs, written by the trusted side). This
process loads DyNet, the course package and the probes, then confines itself
(:mod:`autograder.landlock`: read-only access to Python, the course package and
the probes; write access to WORKDIR only; no network; no signals outside), and
only then executes the student's code. Results go to ``WORKDIR/results/*.npz``
(arrays only, read back with ``allow_pickle=False``) and a line per event to
``WORKDIR/progress.jsonl``. Reference solutions, held-out data, the gradebook and
other students' work are never loaded here and cannot be read.
"""
from __future__ import annotations

import importlib
import json
import os
import pickle
import sys
import sysconfig
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT_OF_MEMORY = 75          # exit code: an answer cell exhausted the memory limit


def log(workdir: Path, **event):
    with open(workdir / "progress.jsonl", "a") as f:
        f.write(json.dumps(event) + "\n")


def readable_paths() -> list:
    paths = {sys.prefix, sys.base_prefix, sysconfig.get_paths()["stdlib"],
             sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"],
             str(ROOT / "course"), str(ROOT / "autograder" / "__init__.py"),
             str(ROOT / "autograder" / "probes"),
             "/usr/lib", "/lib", "/lib64", "/usr/lib64", "/dev/null", "/dev/urandom",
             "/proc/self", "/proc/cpuinfo", "/sys/devices/system/cpu"}
    paths.update(p for p in sys.path if p and "site-packages" in p)
    return sorted(paths)


def main(workdir: str) -> int:
    workdir = Path(workdir).resolve()
    request = json.loads((workdir / "request.json").read_text())
    with open(workdir / "inputs.pkl", "rb") as f:
        inputs = pickle.load(f)                    # written by the trusted grader
    (workdir / "results").mkdir(exist_ok=True)

    from course import runtime
    runtime.init(seed=1)
    probes = {}
    for item in request["probes"]:
        module, _, function = item["probe"].partition(":")
        if not module.startswith("autograder.probes"):
            raise ValueError(f"probe {item['probe']} is not in autograder/probes")
        probes[item["check"]] = getattr(importlib.import_module(module), function)
    import numpy as np
    import matplotlib
    from autograder.probes import to_arrays
    matplotlib.use("Agg")

    if request.get("confine", True):
        from autograder import landlock
        if landlock.available():
            landlock.restrict(read=readable_paths(), write=[str(workdir)])
            log(workdir, event="confined")
        else:
            log(workdir, event="not confined", why="Landlock unavailable on this system")
    for name in [m for m in sys.modules if m.startswith("autograder.reference")]:
        del sys.modules[name]                      # (never imported here; belt and braces)

    namespace = {"__name__": "__student__"}
    for grade_id, source in request["cells"]:
        log(workdir, event="cell", cell=grade_id)
        try:
            exec(compile(source, f"<answer cell {grade_id}>", "exec"), namespace)
        except MemoryError as err:                # resource abuse ends the run, like a timeout
            log(workdir, event="cell failed", cell=grade_id, error=_describe(err))
            os._exit(OUT_OF_MEMORY)
        except BaseException as err:              # SystemExit, KeyboardInterrupt too
            log(workdir, event="cell failed", cell=grade_id, error=_describe(err))

    for item in request["probes"]:
        check = item["check"]
        log(workdir, event="probe", check=check)
        functions = {name: namespace[name] for name in item["functions"]
                     if callable(namespace.get(name))}
        missing = [name for name in item["functions"] if name not in functions]
        if missing:
            log(workdir, event="probe failed", check=check,
                error=f"function {', '.join(missing)} is not defined (answer cell deleted, renamed or failing)")
            continue
        try:
            numbers = probes[check](functions, inputs[check])
            np.savez(workdir / "results" / f"{check}.npz", **to_arrays(numbers))
            log(workdir, event="probe done", check=check)
        except BaseException as err:
            log(workdir, event="probe failed", check=check, error=_describe(err))
    log(workdir, event="finished")
    return 0


def _describe(err: BaseException) -> str:
    """The error's type and message and the last student frame, briefly."""
    frames = [f for f in traceback.extract_tb(err.__traceback__) if f.filename.startswith("<answer cell")]
    where = f" ({frames[-1].filename[1:-1]}, line {frames[-1].lineno})" if frames else ""
    return f"{type(err).__name__}: {str(err)[:300]}{where}"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
