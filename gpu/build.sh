#!/usr/bin/env bash
# Build DyNet 2.1.2 with its CUDA backend from the PyPI source release and install it into
# its own environment .venv-gpu/ (the CPU wheel dyNET38 and this build cannot share one:
# both install the modules dynet and _dynet). See gpu/README.md.
#
#   bash gpu/build.sh            check prerequisites, then download, patch, build, install
#   bash gpu/build.sh --check    only check the prerequisites (table of found / missing)
#   bash gpu/build.sh --clean    delete build/dynet-gpu/ and .venv-gpu/
#
# Environment (all optional):
#   DYNET_GPU_JOBS     parallel compile jobs (default: number of cores; each takes ~1 GB)
#   DYNET_CUDA_ARCHS   GPU architectures, e.g. "80;90" (default: those of sm_70..sm_90 that
#                      the installed nvcc accepts)
#   PYTHON             interpreter for .venv-gpu (default: python3.11, else python3.12, python3)
#   CUDA_HOME          CUDA toolkit folder (default: found from nvcc on PATH)
#   EIGEN3_INCLUDE_DIR Eigen >= 3.4.1 to use (default: Eigen 3.4.1 from the PyPI package cmeel-eigen)
#   CXX                host C++ compiler (default: g++)
#   DYNET_GPU_WORK     build folder (default: build/dynet-gpu)
#   DYNET_GPU_VENV     environment to install into (default: .venv-gpu)
#   DYNET_MARCH        host CPU target of the C++ code (default: native; x86-64-v3 for a
#                      build that runs on another machine, see gpu/prepare_carry.sh)
#   DYNET_CUDA_PTX     0: embed no PTX, only the machine code of DYNET_CUDA_ARCHS (smaller)
#
# Re-running resumes: the download, the patched source and the configured build folder are
# kept, so make continues where it stopped.
set -euo pipefail

# Everything runs inside main, which bash reads whole before running it: editing this file
# while a build runs cannot derail the build.
main() {
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="${DYNET_GPU_WORK:-$ROOT/build/dynet-gpu}"
VENV="${DYNET_GPU_VENV:-$ROOT/.venv-gpu}"
DYNET_VERSION="2.1.2"
DYNET_SDIST_SHA256="c1c1de7cdd3a60b6c6491868b0e096b38b88d4ce14ef8bd065cb76bcd9f5a8b9"
JOBS="${DYNET_GPU_JOBS:-$(nproc 2>/dev/null || echo 2)}"

step() { printf '\n==> %s\n' "$*"; }
die() { printf 'gpu/build.sh: %s\n' "$*" >&2; exit 1; }

case "${1:-}" in
  --clean) rm -rf "$WORK" "$VENV"; echo "removed $WORK and $VENV"; exit 0 ;;
  --check|"") ;;
  *) die "unknown argument '$1' (use --check, --clean or nothing)" ;;
esac

if [ -z "${PYTHON:-}" ]; then
  for candidate in python3.11 python3.12 python3; do
    if command -v "$candidate" >/dev/null 2>&1; then PYTHON="$candidate"; break; fi
  done
fi
[ -n "${PYTHON:-}" ] || die "no python3 found; set PYTHON to a Python 3.11 interpreter"

started=$(date +%s)
mkdir -p "$WORK/downloads"

step "Checking prerequisites"
rm -f "$WORK/prereqs.env"
"$PYTHON" "$ROOT/gpu/check_prereqs.py" --python "$PYTHON" --env-file "$WORK/prereqs.env" \
  || die "prerequisites missing (see the table above); nothing was built."
[ "${1:-}" = "--check" ] && exit 0
# shellcheck source=/dev/null
source "$WORK/prereqs.env"   # NVCC CUDA_ROOT CUDA_ARCHS CMAKE CXX MAKE PYTHON and library/Eigen sources

step "Build environment $VENV"
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip install --disable-pip-version-check --quiet)
# DyNet 2.1.2's _dynet.pyx predates Cython 3.
"${PIP[@]}" "cython>=0.29.24,<3" numpy setuptools wheel
SITE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"

# cuBLAS / cuRAND: from the toolkit when it has them, else from NVIDIA's PyPI wheels. The
# wheels carry only versioned files (libcublas.so.13): link them into .venv-gpu/lib under the
# names the linker wants. That folder is also the run-time search path of libdynet and _dynet.
EXTRA_INCLUDE=""
wheels=()
[ -n "${CUBLAS_WHEEL:-}" ] && wheels+=("$CUBLAS_WHEEL")
[ -n "${CURAND_WHEEL:-}" ] && wheels+=("$CURAND_WHEEL")
if [ ${#wheels[@]} -gt 0 ]; then
  "${PIP[@]}" "${wheels[@]}"
  for stem in cublas cublasLt curand; do
    lib="$(ls "$SITE"/nvidia/*/lib/lib"$stem".so.* 2>/dev/null | head -n 1 || true)"
    [ -n "$lib" ] || continue
    ln -sf "$lib" "$VENV/lib/$(basename "$lib")"
    ln -sf "$lib" "$VENV/lib/lib$stem.so"
    header_dir="$(cd "$(dirname "$lib")/../include" 2>/dev/null && pwd || true)"
    [ -n "$header_dir" ] && EXTRA_INCLUDE="$header_dir"
  done
  [ -n "${CUBLAS_WHEEL:-}" ] && CUBLAS_LIBRARY="$VENV/lib/libcublas.so"
  [ -n "${CURAND_WHEEL:-}" ] && CURAND_LIBRARY="$VENV/lib/libcurand.so"
  [ -e "${CUBLAS_LIBRARY:-}" ] || die "the cuBLAS wheel installed no libcublas.so.* under $SITE/nvidia"
  [ -e "${CURAND_LIBRARY:-}" ] || die "the cuRAND wheel installed no libcurand.so.* under $SITE/nvidia"
fi
echo "cuBLAS: $CUBLAS_LIBRARY"
echo "cuRAND: $CURAND_LIBRARY"

step "Eigen"
if [ -z "${EIGEN3_INCLUDE_DIR:-}" ]; then
  EIGEN3_INCLUDE_DIR="$WORK/eigen/cmeel.prefix/include/eigen3"
  if [ ! -f "$EIGEN3_INCLUDE_DIR/Eigen/Core" ]; then
    "$VENV/bin/python" -m pip download --disable-pip-version-check --quiet --no-deps \
      --only-binary :all: -d "$WORK/downloads" "$EIGEN_PACKAGE"
    "$VENV/bin/python" - "$WORK" <<'EOF'
import glob, sys, zipfile
work = sys.argv[1]
wheel = sorted(glob.glob(f"{work}/downloads/cmeel_eigen-*.whl"))[-1]
with zipfile.ZipFile(wheel) as archive:
    archive.extractall(f"{work}/eigen", [n for n in archive.namelist() if n.startswith("cmeel.prefix/include/")])
EOF
  fi
fi
echo "Eigen headers: $EIGEN3_INCLUDE_DIR"

step "DyNet $DYNET_VERSION source (PyPI sdist)"
sdist="$(ls "$WORK"/downloads/[dD][yY][nN][eE][tT]-"$DYNET_VERSION".tar.gz 2>/dev/null | head -n 1 || true)"
if [ -z "$sdist" ]; then
  "$VENV/bin/python" -m pip download --disable-pip-version-check --quiet --no-deps \
    --no-binary :all: "dynet==$DYNET_VERSION" -d "$WORK/downloads"
  sdist="$(ls "$WORK"/downloads/[dD][yY][nN][eE][tT]-"$DYNET_VERSION".tar.gz | head -n 1)"
fi
echo "$DYNET_SDIST_SHA256  $sdist" | sha256sum --check --quiet \
  || die "$sdist does not have the expected sha256 (the patches are made for that release); delete it and run again"

# The patched source is made again from the sdist whenever the patch set changes; only the
# files whose content changed are replaced, so make recompiles only what they touch.
SRC="$WORK/src/dyNET-$DYNET_VERSION"
BUILD="$WORK/cmake"
patch_id="$(cat "$ROOT"/gpu/patches/*.patch | sha256sum | cut -c1-16)"
if [ "$(cat "$WORK/src/.patched" 2>/dev/null || true)" != "$patch_id" ]; then
  rm -rf "$WORK/src.new"
  mkdir -p "$WORK/src.new" "$WORK/src"
  tar -xzf "$sdist" -C "$WORK/src.new"
  for patch_file in "$ROOT"/gpu/patches/*.patch; do
    echo "applying $(basename "$patch_file")"
    patch --directory="$WORK/src.new/dyNET-$DYNET_VERSION" --strip=1 --forward --batch --quiet < "$patch_file" \
      || die "$(basename "$patch_file") does not apply to dyNET-$DYNET_VERSION"
  done
  "$PYTHON" - "$WORK/src.new/dyNET-$DYNET_VERSION" "$SRC" <<'EOF'
import filecmp, os, shutil, sys
new, old = sys.argv[1], sys.argv[2]
if not os.path.isdir(old):
    shutil.move(new, old)
    sys.exit()
for folder, _, files in os.walk(new):
    for name in files:
        source = os.path.join(folder, name)
        target = os.path.join(old, os.path.relpath(source, new))
        if not os.path.exists(target) or not filecmp.cmp(source, target, shallow=False):
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copyfile(source, target)
            print("updated", os.path.relpath(target, old))
EOF
  rm -rf "$WORK/src.new"
  echo "$patch_id" > "$WORK/src/.patched"
fi

step "Configure (CUDA $CUDA_VERSION, architectures $CUDA_ARCHS)"
cmake_args=(
  "$SRC"
  -DBACKEND=cuda
  -DCUDA_TOOLKIT_ROOT_DIR="$CUDA_ROOT"
  -DCUDA_ARCHS="$CUDA_ARCHS"
  -DCUDA_HOST_COMPILER="$CXX"
  -DCMAKE_CXX_COMPILER="$CXX"
  -DCUDA_cublas_LIBRARY="$CUBLAS_LIBRARY"
  -DCUDA_curand_LIBRARY="$CURAND_LIBRARY"
  -DEIGEN3_INCLUDE_DIR="$EIGEN3_INCLUDE_DIR"
  -DPYTHON="$VENV/bin/python"
  -DCMAKE_INSTALL_PREFIX="$VENV"
  -DCMAKE_INSTALL_RPATH="$VENV/lib"
  -DCMAKE_POLICY_VERSION_MINIMUM=3.5   # CMake 4 rejects cmake_minimum_required(2.8) otherwise
  -DGPU_NUMFILES=0                     # one nvcc job per source file: finer -j, resumable
  -DDYNET_MARCH="${DYNET_MARCH:-native}"
  -DCUDA_PTX="$([ "${DYNET_CUDA_PTX:-1}" = 0 ] && echo OFF || echo ON)"
)
if [ -n "$EXTRA_INCLUDE" ]; then
  cmake_args+=(-DCMAKE_CXX_FLAGS="-I$EXTRA_INCLUDE" -DCUDA_NVCC_FLAGS="-I$EXTRA_INCLUDE")
fi
mkdir -p "$BUILD"
# Reconfiguring rewrites the generated gpu-*.cu files and so recompiles everything: only
# configure when the arguments changed. FindCUDA clears the library variables on its first
# run in a fresh folder (CUDA_cublas_LIBRARY-NOTFOUND), so the first configure runs twice.
if [ ! -f "$BUILD/Makefile" ] || [ "$(cat "$BUILD/.configure-args" 2>/dev/null || true)" != "${cmake_args[*]}" ]; then
  (cd "$BUILD" && "$CMAKE" "${cmake_args[@]}" > configure-1.log 2>&1) || true
  (cd "$BUILD" && "$CMAKE" "${cmake_args[@]}" > configure.log 2>&1) \
    || { tail -n 30 "$BUILD/configure.log"; die "cmake failed (log: $BUILD/configure.log)"; }
  printf '%s' "${cmake_args[*]}" > "$BUILD/.configure-args"
fi
grep -E "CUDA: CUBLAS|Eigen dir" "$BUILD/configure.log" || true

step "Compile with $JOBS jobs (long: the CUDA kernels are compiled once per architecture)"
(cd "$BUILD" && "$MAKE" -j"$JOBS") || die "compilation failed; the error is above (re-run to resume)"
(cd "$BUILD" && "$MAKE" install > install.log) || die "make install failed (log: $BUILD/install.log)"

step "Install the Python module into $VENV"
rm -rf "$WORK/wheel"
(cd "$BUILD/python" && "$VENV/bin/python" "$SRC/setup.py" build --build-dir=.. --skip-build \
   bdist_wheel --dist-dir "$WORK/wheel" > "$WORK/wheel.log" 2>&1) \
  || { tail -n 30 "$WORK/wheel.log"; die "packaging the Python module failed (log: $WORK/wheel.log)"; }
"${PIP[@]}" --no-deps --force-reinstall "$WORK"/wheel/*.whl

# The course itself, with its dependencies except the CPU wheel (it would replace dynet.py).
if [ -f "$ROOT/pyproject.toml" ]; then
  step "Install the course into $VENV (without dyNET38)"
  deps="$("$VENV/bin/python" - "$ROOT/pyproject.toml" <<'EOF'
import re, sys
try:
    import tomllib
except ImportError:          # Python < 3.11
    import tomli as tomllib
with open(sys.argv[1], "rb") as handle:
    requirements = tomllib.load(handle).get("project", {}).get("dependencies", [])
for requirement in requirements:
    name = re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower().replace("_", "-")
    if name not in ("dynet", "dynet38"):
        print(requirement)
EOF
)"
  if [ -n "$deps" ]; then
    mapfile -t dep_list <<< "$deps"
    "${PIP[@]}" "${dep_list[@]}"
  fi
  "${PIP[@]}" --no-deps -e "$ROOT"
fi

step "Smoke test (CPU computation with the CUDA build)"
"$VENV/bin/python" - <<'EOF'
import dynet_config
dynet_config.set(random_seed=1, mem=64)     # no GPU requested: DyNet runs on the CPU
import dynet as dy
assert dy.HAVE_CUDA, "the installed dynet was not built with CUDA"
x = dy.inputTensor([1.0, 2.0, 3.0])
value = dy.sum_elems(dy.cmult(x, x)).value()
assert abs(value - 14.0) < 1e-5, value
print(f"dynet {dy.__version__} (HAVE_CUDA={dy.HAVE_CUDA}): CPU computation ok (1+4+9 = {value})")
EOF
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  step "Smoke test on the GPU"
  "$VENV/bin/python" - <<'EOF'
import dynet_config
dynet_config.set(random_seed=1, mem=256, requested_gpus=1)
import dynet as dy
x = dy.inputTensor([1.0, 2.0, 3.0], device="GPU:0")
value = dy.sum_elems(dy.cmult(x, x)).value()
assert abs(value - 14.0) < 1e-5, value
print(f"GPU computation ok (1+4+9 = {value})")
EOF
else
  echo "no GPU visible (nvidia-smi lists none): GPU smoke test not run"
fi

elapsed=$(( $(date +%s) - started ))
printf 'GPU DyNet built and installed in %dm%02ds (%d jobs, architectures %s).\n' \
  $((elapsed / 60)) $((elapsed % 60)) "$JOBS" "$CUDA_ARCHS" | tee "$WORK/build-time.txt"
echo "Use it: $VENV/bin/python -m course ... --gpu   (or COURSE_GPU=1)"
}

main "$@"
