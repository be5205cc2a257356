#!/usr/bin/env bash
# Prepare .carry/ (ignored by git): everything a lent GPU machine (H100/H200, Python 3.12,
# no network) needs to check the course on its GPU with gpu/on_device.sh. See gpu/README.md,
# "On a lent GPU machine".
#
#   bash gpu/prepare_carry.sh          build (or reuse) DyNet for sm_90 and Python 3.12, fill .carry/
#
# What goes into .carry/ (at most 64 MiB together with the working tree):
#   dynet/     libdynet.so (stripped, xz) and the dyNET wheel for Python 3.12, built here by
#              gpu/build.sh for sm_90 only (H100, H200), no PTX, host code for x86-64-v3
#   wheels/    the course's and the grader's Python dependencies for Python 3.12 that the machine's image lacks
#              (gpu/device_packages.txt lists what it has), less what neither the tests nor
#              the grader import (jupyterlab and its server, the debugger, editor completion)
#   ptb.tar.xz Penn Treebank, when a copy is beside the repository (for bench/gpu_speed.py)
#
# Environment: PYTHON312 a Python 3.12 with its headers (default: python3.12 on PATH, else
# pyenv's); DYNET_GPU_JOBS (default 2). The build runs under nice -n 19 and resumes when
# stopped; with the library built it is skipped.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CARRY="$ROOT/.carry"
WORK="$ROOT/build/dynet-gpu-carry"
VENV="$WORK/venv"
LIMIT_MIB=64
cd "$ROOT"

step() { printf '\n==> %s\n' "$*"; }
die() { printf 'gpu/prepare_carry.sh: %s\n' "$*" >&2; exit 1; }

usable_312() {   # a Python 3.12 that runs and has its headers (the DyNet module is compiled against them)
  "$1" -c 'import os, sys, sysconfig; assert sys.version_info[:2] == (3, 12)
assert os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))' 2>/dev/null
}
found=""
for candidate in ${PYTHON312:-} python3.12 "$HOME"/.pyenv/versions/3.12*/bin/python3.12; do
  if usable_312 "$candidate"; then found="$(command -v "$candidate")"; break; fi
done
[ -n "$found" ] || die "no Python 3.12 with its headers found (the GPU machine's Python is 3.12): set PYTHON312"
PYTHON312="$found"
echo "Python 3.12: $PYTHON312"

step "DyNet for sm_90 and Python 3.12 ($WORK)"
if [ -f "$VENV/lib/libdynet.so" ] && ls "$WORK"/wheel/*.whl >/dev/null 2>&1; then
  echo "already built: $VENV/lib/libdynet.so (bash gpu/build.sh with DYNET_GPU_WORK=$WORK to rebuild)"
else
  started=$(date +%s)
  DYNET_GPU_WORK="$WORK" DYNET_GPU_VENV="$VENV" PYTHON="$PYTHON312" DYNET_CUDA_ARCHS=90 DYNET_CUDA_PTX=0 \
    DYNET_MARCH=x86-64-v3 DYNET_GPU_JOBS="${DYNET_GPU_JOBS:-2}" nice -n 19 bash gpu/build.sh
  echo "build took $(( ($(date +%s) - started) / 60 )) min"
fi

step "Pre-flight: the build that travels, computing on this CPU"
# The same libdynet.so and module, without a GPU request. 1 - x is the check that the module
# was made by Cython < 3: the dyNET38 2.1 wheel for Python 3.12 (Cython 3) raises TypeError
# there, and the course's GRU is written that way.
"$VENV/bin/python" - <<'EOF'
import dynet_config
dynet_config.set(mem=64, random_seed=1)
import dynet as dy
assert dy.HAVE_CUDA, "this dynet was built without CUDA"
x = dy.inputTensor([1.0, 2.0])
assert (1 - x).value() == [0.0, -1.0]
print("CUDA build on the CPU: ok (HAVE_CUDA, 1 - x)")
EOF
"$VENV/bin/python" -m pytest -q -p no:cacheprovider tests/test_cells.py tests/test_lm.py tests/test_weights.py \
  || die "the course's cell, LM and weight tests fail with this build on the CPU: fix that before carrying it"

rm -rf "$CARRY"
mkdir -p "$CARRY/dynet" "$CARRY/wheels"

step "libdynet.so and the dyNET wheel"
strip --strip-unneeded -o "$WORK/libdynet.stripped.so" "$VENV/lib/libdynet.so"
xz -9 -T2 -c "$WORK/libdynet.stripped.so" > "$CARRY/dynet/libdynet.so.xz"
cp "$WORK"/wheel/*.whl "$CARRY/dynet/"
ls -l "$VENV/lib/libdynet.so" "$WORK/libdynet.stripped.so" "$CARRY"/dynet/*

step "Python 3.12 wheels the GPU machine lacks"
DOWNLOADS="$WORK/wheels-all"
mkdir -p "$DOWNLOADS"
mapfile -t pins < <("$PYTHON312" - "$ROOT/pyproject.toml" <<'EOF'
import re, sys, tomllib
with open(sys.argv[1], "rb") as handle:
    project = tomllib.load(handle)["project"]
# The course, the grader's extra (nh3 and latex2mathml are imported by every grading run) and
# the test runner's notebook client; not the hub, the book, the browser tests or uv.
wanted = project["dependencies"] + project["optional-dependencies"]["grader"] + [
    r for r in project["optional-dependencies"]["test"] if r.startswith("nbclient")]
for requirement in wanted:
    name = re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower()
    if name not in ("dynet", "dynet38"):
        print(requirement)
EOF
)
"$PYTHON312" -m pip download --quiet --disable-pip-version-check --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
  --platform manylinux_2_26_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  --platform manylinux1_x86_64 --platform manylinux_2_5_x86_64 -d "$DOWNLOADS" "${pins[@]}"
"$PYTHON312" - "$DOWNLOADS" "$CARRY/wheels" "$ROOT/gpu/device_packages.txt" <<'EOF'
import re, shutil, sys, zipfile
from pathlib import Path
downloads, target, provided_file = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
norm = lambda name: re.sub(r"[-_.]+", "-", name).lower()
provided = {norm(l.strip()) for l in provided_file.read_text().splitlines() if l.strip() and not l.startswith("#")}
# Imported by neither the tests nor the grader: JupyterLab / Notebook and their server side,
# the debugger (optional in ipykernel), editor completion (optional in IPython), widgets.
unused = {"jupyterlab", "notebook", "jupyterlab-server", "jupyter-lsp", "notebook-shim", "jupyter-builder",
          "async-lru", "json5", "babel", "debugpy", "jedi", "parso", "widgetsnbextension",
          "jupyterlab-widgets", "ipywidgets"}
carried, total = [], 0
for wheel in sorted(downloads.glob("*.whl")):
    name = norm(wheel.name.split("-")[0])
    if name in provided or name in unused:
        continue
    out = target / wheel.name
    if name == "nbgrader":
        # 11 MB, half of it its documentation (GIFs) and its own tests: dropped, and RECORD with them.
        with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as dst:
            drop = lambda n: n.startswith(("nbgrader/docs/", "nbgrader/tests/"))
            for item in src.infolist():
                if drop(item.filename):
                    continue
                data = src.read(item)
                if item.filename.endswith(".dist-info/RECORD"):
                    data = "".join(l + "\n" for l in data.decode().splitlines() if not drop(l)).encode()
                dst.writestr(item, data)
    else:
        shutil.copy(wheel, out)
    carried.append(wheel.name)
    total += out.stat().st_size
print(f"{len(carried)} wheels, {total / 2**20:.1f} MiB")
EOF

step "Penn Treebank (for bench/gpu_speed.py)"
PTB=""
for folder in "$ROOT/data/external/ptb" "$ROOT/../shared/data/ptb"; do
  [ -f "$folder/train.txt" ] && { PTB="$folder"; break; }
done
if [ -n "$PTB" ]; then
  tar -cJf "$CARRY/ptb.tar.xz" -C "$PTB" train.txt valid.txt test.txt
  ls -l "$CARRY/ptb.tar.xz"
else
  echo "no PTB copy found: bench/gpu_speed.py will use its generated stream there"
fi

step "Size of what travels (limit $LIMIT_MIB MiB)"
tree_bytes=$( { git ls-files -z; git ls-files -z --others --exclude-standard; } | xargs -0 -r stat -c %s -- 2>/dev/null | awk '{s+=$1} END {print s+0}')
carry_bytes=$(du -sb "$CARRY" | cut -f1)
total=$(( tree_bytes + carry_bytes ))
awk -v t="$tree_bytes" -v c="$carry_bytes" \
  'BEGIN {printf "working tree %.1f MiB + .carry %.1f MiB = %.1f MiB\n", t / 2^20, c / 2^20, (t + c) / 2^20}'
du -sh "$CARRY"/* | sort -h
[ "$total" -le $(( LIMIT_MIB * 1048576 )) ] || die "over the $LIMIT_MIB MiB that may travel"
echo "ready: name .carry in the run's carry list (gpu/README.md, \"On a lent GPU machine\")"
