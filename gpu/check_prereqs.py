"""Check what building the GPU DyNet needs, and say what is missing and how to get it.

Run by ``gpu/build.sh`` before anything is downloaded or compiled; also usable on its own::

    python gpu/check_prereqs.py                  # table, exit 1 if something required is missing
    python gpu/check_prereqs.py --env-file F     # also write the findings as shell variables to F

Checked: nvcc (CUDA toolkit) and the GPU architectures it accepts, the CUDA runtime library,
cuBLAS and cuRAND (from the toolkit, or else from the PyPI wheels nvidia-cublas /
nvidia-curand), CMake, a C++ compiler, make, the Python used for the build environment, and
Eigen (downloaded by build.sh from PyPI unless EIGEN3_INCLUDE_DIR names one).

The logic takes the PATH and the environment as arguments so that the tests can run it
against fake tools in a temporary folder.
"""
from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass

# Architectures the course's GPU build targets: Volta (70) to Hopper (90). Only those the
# installed nvcc accepts are built (CUDA 13 dropped sm_70). The newest is also kept as PTX.
WANTED_ARCHS = (70, 75, 80, 86, 89, 90)

MIN_CMAKE = (3, 18)
MIN_CUDA = (11, 8)          # first CUDA that knows sm_89 and sm_90
MIN_EIGEN = (3, 4, 1)       # 3.4.0 fails in ptxas (register limit), see gpu/README.md
MIN_PYTHON = (3, 11)       # the course itself (pyproject.toml) needs 3.11+
MAX_TESTED_PYTHON = (3, 11)

EIGEN_PACKAGE = "cmeel-eigen==3.4.1"


@dataclass
class Check:
    name: str
    ok: bool
    detail: str            # version and location when found, what is wrong when not
    fix: str = ""          # how to get it when it is missing
    required: bool = True
    note: str = ""         # said even when ok (e.g. "will be installed from PyPI")


def _run(argv: list[str], env: dict | None = None) -> str:
    """stdout+stderr of a command, or '' when it cannot run."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
    except (OSError, subprocess.SubprocessError):
        return ""
    return (done.stdout or "") + (done.stderr or "")


def _version(text: str, pattern: str) -> tuple[int, ...] | None:
    match = re.search(pattern, text)
    if not match:
        return None
    return tuple(int(part) for part in match.group(1).split("."))


def _dotted(version: tuple[int, ...] | None) -> str:
    return ".".join(map(str, version)) if version else "unknown version"


# --- CUDA ---------------------------------------------------------------------------------

def nvcc_version(nvcc: str) -> tuple[int, ...] | None:
    """(major, minor) from ``nvcc --version`` ('... release 13.0, V13.0.88')."""
    return _version(_run([nvcc, "--version"]), r"release (\d+\.\d+)")


def cuda_root(nvcc: str, environ: dict) -> str:
    """The toolkit root: CUDA_HOME / CUDA_PATH, else where nvcc really lives.

    nvcc on PATH may be a wrapper script, so nvcc is asked (``--dryrun`` prints ``_HERE_``,
    its own bin directory) before falling back to the parent of nvcc's directory.
    """
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if environ.get(var):
            return environ[var]
    here = re.search(r"_HERE_=(\S+)", _run([nvcc, "--dryrun", "-E", "-x", "cu", os.devnull]))
    bin_dir = here.group(1) if here else os.path.dirname(os.path.realpath(nvcc))
    return os.path.realpath(os.path.join(bin_dir, os.pardir))


def supported_archs(nvcc: str) -> list[int]:
    """Real architectures nvcc can compile for ('sm_75' lines of ``--list-gpu-code``)."""
    return sorted({int(n) for n in re.findall(r"\bsm_(\d+)\b", _run([nvcc, "--list-gpu-code"]))})


def choose_archs(supported: list[int], requested: str | None = None) -> tuple[list[int], list[int]]:
    """(archs to build, wanted archs this nvcc rejects).

    ``requested`` is DYNET_CUDA_ARCHS ("75;90" or "75 90"); without it the course's list
    WANTED_ARCHS is used.
    """
    wanted = [int(a) for a in re.split(r"[;, ]+", requested.strip()) if a] if requested else list(WANTED_ARCHS)
    return [a for a in wanted if a in supported], [a for a in wanted if a not in supported]


def _toolkit_lib_dirs(root: str) -> list[str]:
    return [os.path.join(root, "lib64"), os.path.join(root, "lib"),
            os.path.join(root, "targets", "x86_64-linux", "lib")]


def find_library(root: str, stem: str) -> str | None:
    """Path of lib<stem>.so or lib<stem>.a in the toolkit, or None."""
    for folder in _toolkit_lib_dirs(root):
        for pattern in (f"lib{stem}.so", f"lib{stem}.so.*", f"lib{stem}.a"):
            hits = sorted(glob.glob(os.path.join(folder, pattern)))
            if hits:
                return hits[0]
    return None


def cuda_wheels(cuda: tuple[int, ...]) -> dict[str, str]:
    """pip requirements providing cuBLAS / cuRAND for this CUDA version.

    cuBLAS follows the toolkit's numbering (pinned to major.minor); cuRAND has its own
    (10.4.0 came with CUDA 13.0, 10.4.x belongs to CUDA 13, 10.3.x to CUDA 12). CUDA 12
    wheels carry a -cu12 suffix. The CUDA 13.0 pair is the one this build was tested with.
    """
    major, minor = cuda[0], cuda[1]
    if major >= 13:
        curand = "nvidia-curand==10.4.0.*" if (major, minor) == (13, 0) else "nvidia-curand==10.4.*"
        return {"cublas": f"nvidia-cublas=={major}.{minor}.*", "curand": curand}
    return {"cublas": f"nvidia-cublas-cu{major}=={major}.{minor}.*",
            "curand": f"nvidia-curand-cu{major}==10.3.*"}


# --- other tools ---------------------------------------------------------------------------

def eigen_version(include_dir: str) -> tuple[int, ...] | None:
    """(world, major, minor) from Eigen/src/Core/util/Macros.h, or None if it is not Eigen."""
    macros = os.path.join(include_dir, "Eigen", "src", "Core", "util", "Macros.h")
    try:
        with open(macros, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return None
    parts = [re.search(rf"#define EIGEN_{name}_VERSION\s+(\d+)", text) for name in ("WORLD", "MAJOR", "MINOR")]
    if not all(parts):
        return None
    return tuple(int(p.group(1)) for p in parts)


def find_cxx(path: str, environ: dict) -> str | None:
    candidates = [environ["CXX"]] if environ.get("CXX") else ["g++", "c++", "clang++"]
    for name in candidates:
        found = shutil.which(name, path=path) if not os.path.isabs(name) else (name if os.access(name, os.X_OK) else None)
        if found:
            return found
    return None


# --- the checks ----------------------------------------------------------------------------

def check_all(path: str, environ: dict, python: str = sys.executable) -> tuple[list[Check], dict[str, str]]:
    """Every check, plus the shell variables build.sh needs (only meaningful when all pass)."""
    checks: list[Check] = []
    found: dict[str, str] = {}
    cuda_fix = ("install the CUDA toolkit >= 11.8 (conda: `conda env create -f environment-gpu.yml`; "
                "NVIDIA's installer or your distribution's package) and put its nvcc on PATH, "
                "or set CUDA_HOME to the toolkit folder")

    nvcc = shutil.which("nvcc", path=path)
    if environ.get("CUDA_HOME") and not nvcc:
        candidate = os.path.join(environ["CUDA_HOME"], "bin", "nvcc")
        nvcc = candidate if os.access(candidate, os.X_OK) else None
    cuda = nvcc_version(nvcc) if nvcc else None
    if not nvcc:
        checks.append(Check("nvcc (CUDA compiler)", False, "not found on PATH", cuda_fix))
    elif cuda is None or cuda < MIN_CUDA:
        checks.append(Check("nvcc (CUDA compiler)", False, f"{nvcc}: CUDA {_dotted(cuda)}, need >= {_dotted(MIN_CUDA)}", cuda_fix))
    else:
        root = cuda_root(nvcc, environ)
        checks.append(Check("nvcc (CUDA compiler)", True, f"CUDA {_dotted(cuda)} at {root}"))
        found.update(NVCC=nvcc, CUDA_ROOT=root, CUDA_VERSION=_dotted(cuda))

        archs, rejected = choose_archs(supported_archs(nvcc), environ.get("DYNET_CUDA_ARCHS"))
        note = f"nvcc {_dotted(cuda)} rejects " + ", ".join(f"sm_{a}" for a in rejected) if rejected else ""
        if archs:
            checks.append(Check("GPU architectures", True, " ".join(f"sm_{a}" for a in archs), note=note))
            found["CUDA_ARCHS"] = ";".join(map(str, archs))
        else:
            checks.append(Check("GPU architectures", False, note or "nvcc lists no architecture",
                                "set DYNET_CUDA_ARCHS to architectures listed by `nvcc --list-gpu-code` "
                                "(e.g. DYNET_CUDA_ARCHS='75;80;90')"))

        cudart = find_library(root, "cudart_static") or find_library(root, "cudart")
        checks.append(Check("CUDA runtime (cudart)", bool(cudart), cudart or f"no libcudart in {root}",
                            "install the CUDA runtime of the same version (part of the toolkit; "
                            f"pip: nvidia-cuda-runtime=={_dotted(cuda)}.*)"))
        wheels = cuda_wheels(cuda)
        for stem, label in (("cublas", "cuBLAS"), ("curand", "cuRAND")):
            library = find_library(root, stem)
            if library:
                checks.append(Check(label, True, library))
                found[f"{stem.upper()}_LIBRARY"] = library
            else:
                # Not a failure: build.sh installs the wheel into .venv-gpu.
                checks.append(Check(label, True, "not in the toolkit",
                                    note=f"build.sh installs the PyPI wheel {wheels[stem]}"))
                found[f"{stem.upper()}_WHEEL"] = wheels[stem]

    cmake = shutil.which("cmake", path=path)
    cmake_version = _version(_run([cmake, "--version"]), r"cmake version (\d+\.\d+(?:\.\d+)?)") if cmake else None
    cmake_fix = f"pip install 'cmake>={_dotted(MIN_CMAKE)}' (or apt-get install cmake / conda install cmake)"
    if not cmake:
        checks.append(Check("cmake", False, "not found on PATH", cmake_fix))
    elif cmake_version is None or cmake_version < MIN_CMAKE:
        checks.append(Check("cmake", False, f"{cmake}: {_dotted(cmake_version)}, need >= {_dotted(MIN_CMAKE)}", cmake_fix))
    else:
        note = "CMake 4: build.sh passes -DCMAKE_POLICY_VERSION_MINIMUM=3.5" if cmake_version >= (4,) else ""
        checks.append(Check("cmake", True, f"{_dotted(cmake_version)} at {cmake}", note=note))
        found["CMAKE"] = cmake

    cxx = find_cxx(path, environ)
    if cxx:
        first_line = _run([cxx, "--version"]).strip().splitlines()
        checks.append(Check("C++ compiler", True, f"{first_line[0] if first_line else '?'} at {cxx}"))
        found["CXX"] = cxx
    else:
        checks.append(Check("C++ compiler", False, "no g++, c++ or clang++ on PATH (or CXX is not executable)",
                            "apt-get install g++ (conda: conda install gxx_linux-64), or set CXX"))

    make = shutil.which("make", path=path)
    checks.append(Check("make", bool(make), make or "not found on PATH", "apt-get install make (conda: conda install make)"))
    if make:
        found["MAKE"] = make

    py_version = _version(_run([python, "--version"]), r"Python (\d+\.\d+)")
    has_venv = bool(py_version) and not _run([python, "-c", "import venv, ensurepip"]).strip()
    if not py_version:
        checks.append(Check("Python", False, f"{python} does not run", "set PYTHON to a Python 3.11 interpreter"))
    elif py_version < MIN_PYTHON or not has_venv:
        problem = f"is older than {_dotted(MIN_PYTHON)}" if py_version < MIN_PYTHON else "has no venv/ensurepip module"
        checks.append(Check("Python", False, f"{python}: {_dotted(py_version)} {problem}",
                            "set PYTHON to a Python 3.11 with venv (Debian: apt-get install python3.11-venv)"))
    else:
        note = (f"untested above {_dotted(MAX_TESTED_PYTHON)} (DyNet's setup.py imports distutils)"
                if py_version > MAX_TESTED_PYTHON else "")
        checks.append(Check("Python", True, f"{_dotted(py_version)} at {python}", note=note))
        found["PYTHON"] = python

    eigen_dir = environ.get("EIGEN3_INCLUDE_DIR")
    if eigen_dir:
        version = eigen_version(eigen_dir)
        if version and version >= MIN_EIGEN:
            checks.append(Check("Eigen", True, f"{_dotted(version)} at {eigen_dir} (EIGEN3_INCLUDE_DIR)"))
            found["EIGEN3_INCLUDE_DIR"] = eigen_dir
        else:
            what = f"{_dotted(version)} at {eigen_dir}" if version else f"no Eigen headers in {eigen_dir}"
            checks.append(Check("Eigen", False, f"{what} (EIGEN3_INCLUDE_DIR), need >= {_dotted(MIN_EIGEN)}",
                                f"unset EIGEN3_INCLUDE_DIR (build.sh then fetches {EIGEN_PACKAGE} from PyPI) "
                                f"or point it at Eigen >= {_dotted(MIN_EIGEN)}"))
    else:
        checks.append(Check("Eigen", True, "EIGEN3_INCLUDE_DIR not set",
                            note=f"build.sh fetches {EIGEN_PACKAGE} (headers only) from PyPI"))
        found["EIGEN_PACKAGE"] = EIGEN_PACKAGE
    return checks, found


def format_table(checks: list[Check]) -> str:
    width = max(len(c.name) for c in checks)
    lines = [f"{'prerequisite':<{width}}  status   details", f"{'-' * width}  -------  -------"]
    for check in checks:
        status = "found" if check.ok else ("MISSING" if check.required else "absent")
        lines.append(f"{check.name:<{width}}  {status:<7}  {check.detail}")
        if check.note:
            lines.append(f"{'':<{width}}           note: {check.note}")
        if not check.ok and check.fix:
            lines.append(f"{'':<{width}}           fix:  {check.fix}")
    return "\n".join(lines)


def write_env_file(found: dict[str, str], target: str) -> None:
    """Shell assignments that build.sh sources (values single-quoted)."""
    with open(target, "w", encoding="utf-8") as handle:
        for key, value in sorted(found.items()):
            handle.write(f"{key}='{value}'\n")


def main(argv: list[str] | None = None, path: str | None = None, environ: dict | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env-file", help="write the findings as shell variables to this file")
    parser.add_argument("--python", default=os.environ.get("PYTHON") or sys.executable,
                        help="the Python that the build environment .venv-gpu is made with")
    args = parser.parse_args(argv)
    environ = dict(os.environ) if environ is None else environ
    path = environ.get("PATH", os.defpath) if path is None else path

    checks, found = check_all(path, environ, args.python)
    print(format_table(checks))
    missing = [c.name for c in checks if c.required and not c.ok]
    if missing:
        print(f"\nMissing: {', '.join(missing)}. Fix the lines marked MISSING above, then run gpu/build.sh again.")
        return 1
    print("\nAll prerequisites found.")
    if args.env_file:
        write_env_file(found, args.env_file)
    return 0


if __name__ == "__main__":
    sys.exit(main())
