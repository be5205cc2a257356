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
import secrets
import sys
import tempfile
import threading

GPU_HELP = ('See the README section "GPU DyNet": the dyNET38 wheel is CPU-only; '
            "build a CUDA DyNet with `make dynet-gpu` and run the course from .venv-gpu.")

config: dict | None = None   # the settings DyNet was started with
banner = ""                  # what DyNet printed at import
_lock = threading.RLock()    # two threads starting DyNet at once must not both import it


class GPUUnavailable(RuntimeError):
    """A GPU was requested but this DyNet cannot use one."""


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes", "on"}


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
    mem:       MB DyNet may allocate (default 512; on a GPU too, so a notebook
               leaves the card to others).
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
    mem = 512 if mem is None else int(mem)
    autobatch = bool(autobatch)
    gpu = _truthy(os.environ.get("COURSE_GPU")) if gpu is None else bool(gpu)
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
    return dynet


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


def describe() -> str:
    """One line with the versions and the device, for a notebook's first cell."""
    import numpy
    from importlib.metadata import PackageNotFoundError, version
    try:
        dynet_version = version("dyNET38")
    except PackageNotFoundError:
        dynet_version = version("dynet") if _has_dist("dynet") else "unknown"
    settings = "DyNet not started in this process" if config is None else (
        f"seed {config['seed']}, {config['mem']} MB, autobatch {'on' if config['autobatch'] else 'off'}")
    where = f" on {device()}" if config is not None else ""
    return (f"Python {platform.python_version()} | DyNet {dynet_version}{where} | "
            f"NumPy {numpy.__version__} | {settings}")


def _has_dist(name: str) -> bool:
    from importlib.metadata import PackageNotFoundError, version
    try:
        version(name)
        return True
    except PackageNotFoundError:
        return False
