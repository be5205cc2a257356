"""Configure DyNet before it is imported: seed, memory, autobatch, CPU or GPU.

DyNet reads its settings once, when ``import dynet`` runs, so a notebook's first
cell (and every script) calls :func:`init` before anything imports DyNet::

    from course import runtime
    dy = runtime.init(seed=1)
    print(runtime.describe())

Three DyNet habits this module hides:

* seed 0 means "pick a random seed" in DyNet; here seed 0 is refused and
  ``seed=None`` asks for a random seed explicitly (and reports which one);
* the ``dyNET38`` wheel prints a ``[dynet] random seed ... allocating memory``
  banner on stderr at import; a graded notebook cell must not write to stderr
  (nbgrader scores such a cell 0), so the banner is captured and kept in
  :data:`banner` instead;
* the CPU wheel silently ignores a GPU request; here asking for a GPU on a
  DyNet built without CUDA raises :class:`GPUUnavailable`.
"""
from __future__ import annotations

import os
import platform
import re
import secrets
import sys
import tempfile
import threading

#: What a DyNet release cannot do that a student meets; describe() names it, explain() gives the fix.
KNOWN_LIMITS = {
    "2.2": "a number on the left of an expression (1 - x, 2 * x) raises TypeError: write -x + 1, x * 2",
}
_NUMBER_ON_LEFT = re.compile(r"unsupported operand type\(s\) for ([-+*/]): '(?:int|float|bool|numpy\.\w+)' "
                             r"and '_dynet\.\w*Expression'")
_FIXES = {"-": "write `-x + 1` for `1 - x` (or `dy.ones(x.dim()[0]) - x`)",
          "+": "write `x + 1` for `1 + x`",
          "*": "write `x * 2` for `2 * x`",
          "/": "write `dy.cdiv(dy.ones(x.dim()[0]), x)` for `1 / x`"}

GPU_HELP = ('See the README section "GPU DyNet": the dyNET38 wheel is CPU-only; '
            "build a CUDA DyNet with `make dynet-gpu` and run the course from .venv-gpu.")

#: MB DyNet's memory pools start with. DyNet zeroes them when it starts (512 MB cost 0.4 s of CPU and
#: 512 MB of memory in every process: each notebook, command and sandbox) and grows them as a graph
#: needs, with the same results: bench/dynet_start.py.
DEFAULT_MEM = 64

config: dict | None = None   # the settings DyNet was started with
banner = ""                  # what DyNet printed at import
_lock = threading.RLock()    # two threads starting DyNet at once must not both import it


class GPUUnavailable(RuntimeError):
    """A GPU was requested but this DyNet cannot use one."""


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes", "on"}


def gpu_requested() -> bool:
    """Whether the environment asks for the GPU (COURSE_GPU=1): what :func:`init` does by default."""
    return _truthy(os.environ.get("COURSE_GPU"))


def _import_dynet_quietly():
    """Import dynet with its stderr banner redirected into :data:`banner`
    (kept, and shown in the error, when the import fails: a CUDA build without a
    usable GPU says why there)."""
    global banner
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as sink:
        os.dup2(sink.fileno(), 2)
        try:
            import dynet
            error = None
        except Exception as err:          # e.g. RuntimeError: cudaGetDeviceCount(&nDevices)
            dynet, error = None, err
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        sink.seek(0)
        banner = sink.read().decode("utf-8", "replace")
    if error is not None:
        raise error
    return dynet


def _cache_float_limits():
    """DyNet switches the CPU to flush denormals to zero, after which NumPy's first
    ``np.finfo`` call warns ("smallest subnormal ... is zero") on stderr, wherever
    it happens to be, a graded cell included. NumPy caches finfo, so ask once, quietly."""
    import warnings
    import numpy
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for dtype in (numpy.float16, numpy.float32, numpy.float64, numpy.longdouble):
            numpy.finfo(dtype)


def init(seed: int | None = 1, mem: int | None = None, autobatch: bool | None = None,
         gpu: bool | None = None):
    """Configure and import DyNet; return the ``dynet`` module.

    seed:      a positive integer (reproducible runs), or None for a random seed
               that is chosen here and reported by :func:`describe`. 0 is refused
               because DyNet would silently treat it as "random".
    mem:       MB DyNet's memory starts with (default :data:`DEFAULT_MEM`); it grows
               as a graph needs (on a GPU too: a notebook takes of the card what it uses).
    autobatch: DyNet's automatic batching of independent operations (default off).
    gpu:       run on the GPU; None reads the environment variable COURSE_GPU.

    Called again after DyNet is imported, it re-seeds DyNet's random generator
    (so tests can restart from a known seed) and refuses any other change, which
    would need a fresh Python process; settings left as None keep their value.
    """
    with _lock:
        return _init(seed, mem, autobatch, gpu)


def _init(seed, mem, autobatch, gpu):
    global config
    if seed is None:
        seed = 1 + secrets.randbelow(2**31 - 2)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 1:
        raise ValueError(f"seed must be a positive integer, got {seed!r}: DyNet treats 0 as "
                         "'choose a random seed'. Pass seed=None to ask for a random seed.")
    if config is not None:
        given = {"mem": mem, "autobatch": autobatch, "gpu": gpu}
        changed = {k for k, v in given.items() if v is not None and type(config[k])(v) != config[k]}
        if changed:
            raise RuntimeError(
                f"DyNet is already running with {config}; {sorted(changed)} cannot change "
                "inside one process. Restart the kernel (or the script) and call "
                "course.runtime.init(...) before anything else.")
        import dynet
        dynet.reset_random_seed(seed)
        config["seed"] = seed
        return dynet
    mem = DEFAULT_MEM if mem is None else int(mem)
    autobatch = bool(autobatch)
    gpu = gpu_requested() if gpu is None else bool(gpu)
    if "dynet" in sys.modules:
        raise RuntimeError("dynet was imported before course.runtime.init(), so its settings "
                           "are unknown (and its seed may be random). Restart the kernel and "
                           "call course.runtime.init(...) first.")

    import dynet_config
    dynet_config.set(mem=str(mem), random_seed=seed, autobatch=int(autobatch))
    if gpu:
        dynet_config.set_gpu()
    try:
        dynet = _import_dynet_quietly()
    except Exception as err:
        if not gpu:
            raise
        reason = [line for line in banner.splitlines() if line.strip()][-1:] or [str(err)]
        raise GPUUnavailable(f"A GPU was requested but DyNet could not start on one: {reason[0]} "
                             f"({type(err).__name__}: {err}). " + GPU_HELP) from None
    _cache_float_limits()
    if gpu and not getattr(dynet, "HAVE_CUDA", False):
        raise GPUUnavailable("A GPU was requested (gpu=True, --gpu or COURSE_GPU=1) but this "
                             "DyNet was built without CUDA. " + GPU_HELP)
    config = {"seed": seed, "mem": mem, "autobatch": autobatch, "gpu": gpu}
    _explain_in_notebook()
    return dynet


def explain(error: BaseException) -> str | None:
    """The cause and the fix of DyNet's TypeError for a number on the left of an expression
    (dyNET38 2.2 refuses `1 - x`, which 2.1 computes), or None for any other error."""
    match = _NUMBER_ON_LEFT.search(str(error)) if isinstance(error, TypeError) else None
    if not match:
        return None
    return (f"This DyNet ({_dynet_version()}) cannot put a plain number on the left of an expression "
            f"(`{match.group(1)}`): {_FIXES[match.group(1)]}. The value is the same, and the course's "
            "checks accept both spellings.")


def _explain_in_notebook():
    """In Jupyter, add explain()'s fix to the error a student sees (the last line of the traceback)."""
    ipython = sys.modules.get("IPython")    # a kernel has loaded it; elsewhere its import alone costs 0.1 s
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None or not hasattr(shell, "set_custom_exc"):
        return

    def show(shell, etype, value, tb, tb_offset=None):
        hint = explain(value)
        if hint and value.args and hint not in str(value.args[0]):
            value.args = (f"{value.args[0]}\n{hint}",) + value.args[1:]
        shell.showtraceback((etype, value, tb), tb_offset=tb_offset)

    shell.set_custom_exc((TypeError,), show)


def clear_memory(megabytes: int | None = None):
    """Write zeros over the memory DyNet's next graphs compute in: its first ``megabytes``
    (default: all the forward memory it started with, a quarter of ``mem``); a new graph starts.

    DyNet's matrix product on the CPU computes 0 x (what its result's memory held) + A B
    (dynet/matrix-multiply.h), and each new graph reuses the memory of the last. A NaN or an
    infinity that an earlier graph left there (a run that diverged, a step that overflowed) is
    not removed by 0 x: it comes back in ``W * x`` of later graphs computed from sound numbers,
    until the process restarts. training.train calls this at a loss that is not finite, and the
    grader before each check; call it yourself after a cell of your own produced NaN. Memory that
    a larger graph made DyNet add past the start is not written (restart the kernel there)."""
    dy = dynet()
    start = max(config["mem"], 4) << 20 >> 2              # bytes: a quarter of mem (1 MB at least) is forward memory
    size = start if megabytes is None else min(start, megabytes << 20)
    dy.renew_cg()
    dy.zeros((size // 4,)).forward()                      # 4 bytes a float
    dy.renew_cg()


def dynet():
    """The dynet module, started with the defaults if nobody called :func:`init`."""
    with _lock:
        if config is None:
            return init()
    import dynet as dy
    return dy


def device() -> str:
    """'GPU' or 'CPU': where DyNet computes."""
    if config is None:
        return "not started"
    return "GPU" if config["gpu"] else "CPU"


def _dynet_version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("dyNET38")
    except PackageNotFoundError:
        return version("dynet") if _has_dist("dynet") else "unknown"


def describe() -> str:
    """One line with the versions and the device, for a notebook's first cell, and the
    DyNet release's known limit where it has one."""
    import numpy
    dynet_version = _dynet_version()
    limit = next((text for release, text in KNOWN_LIMITS.items()
                  if dynet_version == release or dynet_version.startswith(release + ".")), None)
    settings = "DyNet not started in this process" if config is None else (
        f"seed {config['seed']}, {config['mem']} MB, autobatch {'on' if config['autobatch'] else 'off'}")
    where = f" on {device()}" if config is not None else ""
    return (f"Python {platform.python_version()} | DyNet {dynet_version}{where} | "
            f"NumPy {numpy.__version__} | {settings}" + (f"\nDyNet {dynet_version}: {limit}" if limit else ""))


def _has_dist(name: str) -> bool:
    from importlib.metadata import PackageNotFoundError, version
    try:
        version(name)
        return True
    except PackageNotFoundError:
        return False
