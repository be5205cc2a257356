"""The GPU DyNet build script's checks (gpu/check_prereqs.py) and its patches.

The build itself (an hour of nvcc) is never run here: the checks run against fake nvcc,
cmake, g++ and make in a temporary folder, and the patches are applied to the pristine
DyNet source when gpu/build.sh has cached it (else they are checked for well-formedness).
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from tests.conftest import ROOT

GPU = ROOT / "gpu"
PATCHES = sorted((GPU / "patches").glob("*.patch"))
BUILD_SH = GPU / "build.sh"
BASH = shutil.which("bash") or "/bin/bash"


def _load_check_prereqs():
    spec = importlib.util.spec_from_file_location("check_prereqs", GPU / "check_prereqs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module          # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


cp = _load_check_prereqs()

CUDA13_ARCHS = "sm_75 sm_80 sm_86 sm_87 sm_88 sm_89 sm_90 sm_100 sm_110 sm_103 sm_120 sm_121"


def _script(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def make_toolchain(tmp_path: Path, *, nvcc_release="13.0", archs=CUDA13_ARCHS, cmake_version="3.25.1",
                   with_nvcc=True, with_cmake=True, with_cxx=True, with_make=True,
                   toolkit_libs=("cudart_static",)) -> tuple[str, Path]:
    """A fake toolchain: (PATH, CUDA root). nvcc on PATH is a wrapper script, as on machines
    where the toolkit lives elsewhere; the real one answers --dryrun with its _HERE_."""
    bin_dir = tmp_path / "bin"
    cuda = tmp_path / "cuda-fake"
    (cuda / "bin").mkdir(parents=True)
    (cuda / "lib64").mkdir()
    bin_dir.mkdir()
    for stem in toolkit_libs:
        suffix = ".a" if stem.endswith("_static") else ".so"
        (cuda / "lib64" / f"lib{stem}{suffix}").write_text("")
    if with_nvcc:
        _script(cuda / "bin" / "nvcc", f"""case "$1" in
  --version) echo "Cuda compilation tools, release {nvcc_release}, V{nvcc_release}.88" ;;
  --list-gpu-code) for a in {archs}; do echo $a; done ;;
  --dryrun) echo "#$ _HERE_={cuda}/bin" >&2 ;;
esac
""")
        _script(bin_dir / "nvcc", f'exec "{cuda}/bin/nvcc" "$@"\n')
    if with_cmake:
        _script(bin_dir / "cmake", f'echo "cmake version {cmake_version}"\n')
    if with_cxx:
        _script(bin_dir / "g++", 'echo "g++ (Fake) 12.2.0"\n')
    if with_make:
        _script(bin_dir / "make", 'echo "GNU Make 4.3"\n')
    return str(bin_dir), cuda


def run_main(capsys, path: str, tmp_path: Path, extra_env: dict | None = None):
    env_file = tmp_path / "prereqs.env"
    environ = {"PATH": path, **(extra_env or {})}
    code = cp.main(["--env-file", str(env_file), "--python", sys.executable], path=path, environ=environ)
    found = {}
    if env_file.exists():
        for line in env_file.read_text().splitlines():
            key, value = line.split("=", 1)
            found[key] = value.strip("'")
    return code, capsys.readouterr().out, found


def row(output: str, name: str) -> str:
    """The table line of one prerequisite, with its note/fix lines."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(name))
    block = [lines[start]]
    for line in lines[start + 1:]:
        if line.strip().startswith(("note:", "fix:")):
            block.append(line)
        else:
            break
    return "\n".join(block)


# --- prerequisite checks --------------------------------------------------------------------

def test_all_present_is_ok_and_reports_what_build_sh_needs(tmp_path, capsys):
    path, cuda = make_toolchain(tmp_path)
    code, out, found = run_main(capsys, path, tmp_path)
    assert code == 0, out
    assert "MISSING" not in out and "All prerequisites found." in out
    assert "CUDA 13.0" in row(out, "nvcc")
    # The toolkit root comes from the real nvcc, not from the wrapper's folder on PATH.
    assert found["CUDA_ROOT"] == str(cuda.resolve())
    assert found["CUDA_ARCHS"] == "75;80;86;89;90"
    assert "rejects sm_70" in row(out, "GPU architectures")
    assert found["CXX"].endswith("/g++") and found["CMAKE"].endswith("/cmake")
    assert found["EIGEN_PACKAGE"] == "cmeel-eigen==3.4.1"


def test_missing_nvcc_is_reported_with_the_fix_and_exit_1(tmp_path, capsys):
    path, _ = make_toolchain(tmp_path, with_nvcc=False)
    code, out, found = run_main(capsys, path, tmp_path)
    assert code == 1
    nvcc = row(out, "nvcc")
    assert "MISSING" in nvcc and "not found on PATH" in nvcc
    assert "fix:" in nvcc and "CUDA toolkit" in nvcc and "CUDA_HOME" in nvcc
    assert "Missing: nvcc (CUDA compiler)" in out
    assert found == {}, "no env file may be written when something is missing"
    # The other tools are still checked and reported.
    assert "found" in row(out, "cmake") and "found" in row(out, "C++ compiler")


def test_nvcc_found_through_cuda_home_when_not_on_path(tmp_path, capsys):
    path, cuda = make_toolchain(tmp_path)
    (Path(path) / "nvcc").unlink()
    code, out, found = run_main(capsys, path, tmp_path, {"CUDA_HOME": str(cuda)})
    assert code == 0, out
    assert found["CUDA_ROOT"] == str(cuda)


def test_cuda_older_than_11_8_is_refused(tmp_path, capsys):
    path, _ = make_toolchain(tmp_path, nvcc_release="11.0")
    code, out, _ = run_main(capsys, path, tmp_path)
    assert code == 1
    assert "CUDA 11.0, need >= 11.8" in row(out, "nvcc")


def test_cublas_and_curand_come_from_wheels_when_the_toolkit_lacks_them(tmp_path, capsys):
    path, _ = make_toolchain(tmp_path)
    code, out, found = run_main(capsys, path, tmp_path)
    assert code == 0
    assert "nvidia-cublas==13.0.*" in row(out, "cuBLAS")
    assert found["CUBLAS_WHEEL"] == "nvidia-cublas==13.0.*"
    assert found["CURAND_WHEEL"] == "nvidia-curand==10.4.0.*"
    assert "CUBLAS_LIBRARY" not in found


def test_cublas_and_curand_from_the_toolkit_when_it_has_them(tmp_path, capsys):
    path, cuda = make_toolchain(tmp_path, toolkit_libs=("cudart_static", "cublas", "curand"))
    code, out, found = run_main(capsys, path, tmp_path)
    assert code == 0
    assert found["CUBLAS_LIBRARY"] == str(cuda.resolve() / "lib64" / "libcublas.so")
    assert found["CURAND_LIBRARY"] == str(cuda.resolve() / "lib64" / "libcurand.so")
    assert "CUBLAS_WHEEL" not in found


def test_missing_cuda_runtime_is_reported(tmp_path, capsys):
    path, _ = make_toolchain(tmp_path, toolkit_libs=())
    code, out, _ = run_main(capsys, path, tmp_path)
    assert code == 1
    assert "MISSING" in row(out, "CUDA runtime") and "nvidia-cuda-runtime==13.0.*" in row(out, "CUDA runtime")


@pytest.mark.parametrize("kind", ["missing", "too old"])
def test_cmake_missing_or_too_old(tmp_path, capsys, kind):
    path, _ = make_toolchain(tmp_path, with_cmake=kind != "missing", cmake_version="3.10.2")
    code, out, _ = run_main(capsys, path, tmp_path)
    assert code == 1
    cmake = row(out, "cmake")
    assert "MISSING" in cmake and "pip install 'cmake>=3.18'" in cmake
    if kind == "too old":
        assert "3.10.2, need >= 3.18" in cmake


def test_cmake_4_gets_the_policy_note(tmp_path, capsys):
    path, _ = make_toolchain(tmp_path, cmake_version="4.1.2")
    code, out, _ = run_main(capsys, path, tmp_path)
    assert code == 0
    assert "CMAKE_POLICY_VERSION_MINIMUM=3.5" in row(out, "cmake")


def test_missing_compiler_and_make(tmp_path, capsys):
    path, _ = make_toolchain(tmp_path, with_cxx=False, with_make=False)
    code, out, _ = run_main(capsys, path, tmp_path)
    assert code == 1
    assert "MISSING" in row(out, "C++ compiler") and "set CXX" in row(out, "C++ compiler")
    assert "MISSING" in row(out, "make")


def test_cxx_variable_is_honoured(tmp_path, capsys):
    path, _ = make_toolchain(tmp_path, with_cxx=False)
    clang = tmp_path / "my-clang++"
    _script(clang, 'echo "clang version 16.0.0"\n')
    code, out, found = run_main(capsys, path, tmp_path, {"CXX": str(clang)})
    assert code == 0, out
    assert found["CXX"] == str(clang) and "clang version 16.0.0" in row(out, "C++ compiler")


def _fake_eigen(folder: Path, version: tuple[int, int, int]) -> Path:
    macros = folder / "Eigen" / "src" / "Core" / "util" / "Macros.h"
    macros.parent.mkdir(parents=True)
    world, major, minor = version
    macros.write_text(f"#define EIGEN_WORLD_VERSION {world}\n#define EIGEN_MAJOR_VERSION {major}\n"
                      f"#define EIGEN_MINOR_VERSION {minor}\n")
    return folder


def test_eigen_3_4_0_is_refused_and_3_4_1_accepted(tmp_path, capsys):
    path, _ = make_toolchain(tmp_path)
    old = _fake_eigen(tmp_path / "eigen340", (3, 4, 0))
    code, out, _ = run_main(capsys, path, tmp_path, {"EIGEN3_INCLUDE_DIR": str(old)})
    assert code == 1
    eigen = row(out, "Eigen")
    assert "MISSING" in eigen and "3.4.0" in eigen and "need >= 3.4.1" in eigen
    assert "unset EIGEN3_INCLUDE_DIR" in eigen

    new = _fake_eigen(tmp_path / "eigen341", (3, 4, 1))
    code, out, found = run_main(capsys, path, tmp_path, {"EIGEN3_INCLUDE_DIR": str(new)})
    assert code == 0, out
    assert found["EIGEN3_INCLUDE_DIR"] == str(new) and "EIGEN_PACKAGE" not in found


def test_eigen_dir_without_eigen_is_refused(tmp_path, capsys):
    path, _ = make_toolchain(tmp_path)
    code, out, _ = run_main(capsys, path, tmp_path, {"EIGEN3_INCLUDE_DIR": str(tmp_path)})
    assert code == 1
    assert "no Eigen headers" in row(out, "Eigen")


def test_choose_archs():
    cuda13 = [75, 80, 86, 87, 88, 89, 90, 100, 120]
    cuda12 = [50, 52, 60, 61, 70, 75, 80, 86, 87, 89, 90]
    assert cp.choose_archs(cuda13) == ([75, 80, 86, 89, 90], [70])
    assert cp.choose_archs(cuda12) == ([70, 75, 80, 86, 89, 90], [])
    assert cp.choose_archs(cuda13, "80;90") == ([80, 90], [])
    assert cp.choose_archs(cuda13, "70, 90") == ([90], [70])


def test_dynet_cuda_archs_with_nothing_supported_is_missing(tmp_path, capsys):
    path, _ = make_toolchain(tmp_path)
    code, out, _ = run_main(capsys, path, tmp_path, {"DYNET_CUDA_ARCHS": "35;52"})
    assert code == 1
    archs = row(out, "GPU architectures")
    assert "MISSING" in archs and "sm_35" in archs and "DYNET_CUDA_ARCHS" in archs


def test_cuda_wheels_follow_the_toolkit_version():
    assert cp.cuda_wheels((13, 0)) == {"cublas": "nvidia-cublas==13.0.*", "curand": "nvidia-curand==10.4.0.*"}
    assert cp.cuda_wheels((13, 1))["cublas"] == "nvidia-cublas==13.1.*"
    assert cp.cuda_wheels((12, 4)) == {"cublas": "nvidia-cublas-cu12==12.4.*", "curand": "nvidia-curand-cu12==10.3.*"}


# --- build.sh -------------------------------------------------------------------------------

def test_build_sh_is_valid_bash():
    subprocess.run([BASH, "-n", str(BUILD_SH)], check=True)


def _build_sh_env(tmp_path: Path, path: str) -> dict:
    """PATH = the fake toolchain + only the basic commands build.sh uses before building (so a
    real nvcc or cmake of the machine running the tests cannot leak in)."""
    basics = tmp_path / "basics"
    basics.mkdir()
    for tool in ("dirname", "mkdir", "rm", "date", "nproc", "cat"):
        real = shutil.which(tool)
        if real:
            (basics / tool).symlink_to(real)
    return {"PATH": f"{path}:{basics}", "PYTHON": sys.executable, "HOME": str(tmp_path),
            "DYNET_GPU_WORK": str(tmp_path / "work")}


def test_build_sh_check_stops_before_building_when_nvcc_is_missing(tmp_path):
    path, _ = make_toolchain(tmp_path, with_nvcc=False)
    work = tmp_path / "work"
    env = _build_sh_env(tmp_path, path)
    done = subprocess.run([BASH, str(BUILD_SH)], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 1
    assert "nvcc (CUDA compiler)  MISSING" in done.stdout
    assert "prerequisites missing" in done.stderr and "nothing was built" in done.stderr
    assert not (work / "src").exists() and not (work / "cmake").exists()


def test_build_sh_check_only_exits_0_when_all_present(tmp_path):
    path, _ = make_toolchain(tmp_path)
    work = tmp_path / "work"
    env = _build_sh_env(tmp_path, path)
    done = subprocess.run([BASH, str(BUILD_SH), "--check"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "All prerequisites found." in done.stdout
    assert "CUDA_ARCHS='75;80;86;89;90'" in (work / "prereqs.env").read_text()
    assert not (work / "src").exists()


# --- patches --------------------------------------------------------------------------------

def _hunks(text: str):
    """(header line, old count, new count, body lines) of each hunk in a unified diff."""
    lines = text.splitlines()
    hunks = []
    for i, line in enumerate(lines):
        match = re.match(r"@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@", line)
        if not match:
            continue
        body = []
        for following in lines[i + 1:]:
            if following.startswith(("@@", "diff ", "--- ", "+++ ")):
                break
            body.append(following)
        hunks.append((line, int(match.group(1) or 1), int(match.group(2) or 1), body))
    return hunks


def test_there_are_patches_for_the_known_compile_errors():
    names = [p.name for p in PATCHES]
    assert any("architectures" in n for n in names) and any("memory-clock" in n for n in names)
    readme = (GPU / "README.md").read_text()
    for name in names:   # every patch is documented
        assert name in readme, f"{name} is not described in gpu/README.md"


@pytest.mark.parametrize("patch", PATCHES, ids=lambda p: p.name)
def test_patch_is_well_formed_and_explains_itself(patch):
    text = patch.read_text()
    header = text.split("diff --git", 1)[0]
    assert header.startswith("# ") and "Reason:" in header, "each patch starts with a comment giving its reason"
    assert all(line.startswith("#") or not line.strip() for line in header.splitlines())
    files = re.findall(r"^\+\+\+ b/(\S+)$", text, flags=re.M)
    assert files, "no file in the patch"
    hunks = _hunks(text)
    assert hunks
    for header_line, old_count, new_count, body in hunks:
        old = sum(1 for line in body if line[:1] in (" ", "-") or line == "")
        new = sum(1 for line in body if line[:1] in (" ", "+") or line == "")
        assert (old, new) == (old_count, new_count), f"{header_line}: counts do not match the hunk body"


def _cached_sdist() -> Path | None:
    """The sdist as gpu/build.sh keeps it (build/dynet-gpu/, or gpu/prepare_carry.sh's build/dynet-gpu-carry/)."""
    hits = sorted((ROOT / "build").glob("dynet-gpu*/downloads/[dD][yY][nN][eE][tT]-2.1.2.tar.gz"))
    return hits[0] if hits else None


@pytest.mark.skipif(_cached_sdist() is None or shutil.which("patch") is None,
                    reason="DyNet 2.1.2 source not cached by gpu/build.sh (the well-formedness tests still ran)")
def test_patches_apply_cleanly_to_the_pristine_source(tmp_path):
    sdist = _cached_sdist()
    pinned = re.search(r'DYNET_SDIST_SHA256="([0-9a-f]{64})"', BUILD_SH.read_text()).group(1)
    assert hashlib.sha256(sdist.read_bytes()).hexdigest() == pinned
    with tarfile.open(sdist) as archive:
        archive.extractall(tmp_path, filter="data")
    source = tmp_path / "dyNET-2.1.2"
    for patch in PATCHES:
        done = subprocess.run(["patch", "--directory", str(source), "--strip=1", "--forward", "--batch"],
                              input=patch.read_text(), capture_output=True, text=True)
        assert done.returncode == 0, f"{patch.name}: {done.stdout}{done.stderr}"
        assert "offset" not in done.stdout and "fuzz" not in done.stdout, f"{patch.name} applies only loosely"
    cmake = (source / "dynet" / "CMakeLists.txt").read_text()
    assert "arch=compute_30" not in cmake and "CUDA_ARCHS" in cmake and "if(NOT DEFINED CUDA_PTX OR CUDA_PTX)" in cmake
    top = (source / "CMakeLists.txt").read_text()
    assert "-O${RELEASE_OPT_LEVEL} -march=native" not in top and "-march=${DYNET_MARCH}" in top and 'set(DYNET_MARCH "native")' in top
    assert "prop.memoryClockRate" not in (source / "dynet" / "cuda.cc").read_text()


# --- the scripts for a lent GPU machine ----------------------------------------------------

ON_DEVICE = GPU / "on_device.sh"


@pytest.mark.parametrize("script", ["on_device.sh", "prepare_carry.sh"])
def test_device_scripts_are_valid_bash(script):
    subprocess.run([BASH, "-n", str(GPU / script)], check=True)


def _device_copy(tmp_path: Path) -> Path:
    """on_device.sh in an empty checkout (no .carry/), so that nothing of this one is touched."""
    (tmp_path / "gpu").mkdir()
    shutil.copy(ON_DEVICE, tmp_path / "gpu" / "on_device.sh")
    return tmp_path / "gpu" / "on_device.sh"


def test_on_device_without_the_carry_stops_at_setup_and_says_why(tmp_path):
    script, out = _device_copy(tmp_path), tmp_path / "out"
    done = subprocess.run([BASH, str(script)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "OUT": str(out)})
    assert done.returncode != 0
    summary = (out / "summary.md").read_text()
    assert "- setup: FAILED" in summary and "nothing else was run" in summary
    assert "not ok yet on this machine: setup smoke checks speed" in summary
    assert "run gpu/prepare_carry.sh" in done.stdout
    assert sorted(p.name for p in out.iterdir()) == ["logs.tar.gz", "summary.md"]
    assert not (tmp_path / "build" / "device" / "venv").exists()


def test_on_device_starts_no_step_that_the_time_left_cannot_hold(tmp_path):
    script, out = _device_copy(tmp_path), tmp_path / "out"
    done = subprocess.run([BASH, str(script), "speed"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "OUT": str(out), "DEVICE_BUDGET_S": "30"})
    assert done.returncode != 0
    summary = (out / "summary.md").read_text()
    assert "steps setup speed" in summary           # setup goes first by itself
    assert "- setup: not started, " in summary and "run `bash gpu/on_device.sh setup`" in summary


def test_on_device_refuses_an_unknown_step(tmp_path):
    done = subprocess.run([BASH, str(_device_copy(tmp_path)), "bench"], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "OUT": str(tmp_path / "out")})
    assert done.returncode == 2
    assert "unknown step 'bench': choose from setup smoke checks speed" in done.stdout
