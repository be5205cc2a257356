#!/usr/bin/env bash
# On a lent GPU machine (H100/H200, no network): install the CUDA DyNet that
# gpu/prepare_carry.sh built and carried in .carry/, run the course's GPU checks, and
# write every result to $OUT. See gpu/README.md, "On a lent GPU machine".
#
#   bash gpu/on_device.sh              the steps not yet done on this machine, in order
#   bash gpu/on_device.sh STEP ...     these steps (setup runs first whenever it is needed)
#
# Steps: setup   unpack libdynet.so, make the environment build/device/venv (the machine's
#                own Python 3.12 and its packages, plus the carried wheels), register the
#                libraries with ldconfig
#        smoke   DyNet computes on the GPU; machine, driver and versions
#        checks  tests and grading at once, with nvidia-smi's list of GPU processes every 5 s
#                (gpu-processes.log): the evidence that the grader's processes used the card
#        tests   tests/test_gpu.py and the cell, LM, sandbox, grading and capstone tests with COURSE_GPU=1
#        grading the sample class graded on the CPU and with COURSE_GPU=1, compared
#        speed   bench/gpu_speed.py (DyNet CPU, DyNet GPU, PyTorch nn.LSTM)
#
# One command may run 10 minutes. Each step runs under its own time limit, cut to what is
# left of DEVICE_BUDGET_S (default 560 s); a step starts only while at least 60 s are left,
# and the rest wait for the next call. Steps run are remembered in build/device/ (ignored
# by git), which a warm machine keeps between calls, so the same command run again
# continues (a cold machine starts bare: name the steps still wanted, and setup runs
# first by itself). $OUT gets, after every call: summary.md
# (every step so far, its status and time), logs.tar.gz (all logs), and the steps' tables
# (gpu_speed.md, gpu_speed.json, grading_compare.md) -- five files.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CARRY="$ROOT/.carry"
DEV="$ROOT/build/device"
VENV="$DEV/venv"
RES="$DEV/results"
OUT="${OUT:-$DEV/out}"
BUDGET="${DEVICE_BUDGET_S:-560}"
STARTED=$(date +%s)
ALL_STEPS=(setup smoke checks speed)
declare -A LIMIT=([setup]=150 [smoke]=60 [checks]=330 [tests]=300 [grading]=330 [speed]=420)

mkdir -p "$DEV/done" "$RES" "$OUT"
cd "$ROOT" || exit 1

note() { printf '%s\n' "$*" | tee -a "$RES/summary.md"; }
elapsed() { echo $(( $(date +%s) - STARTED )); }

# --------------------------------------------------------------------------- the steps
step_setup() {
  [ -d "$CARRY/dynet" ] && [ -d "$CARRY/wheels" ] || {
    echo "no .carry/dynet or .carry/wheels: run gpu/prepare_carry.sh on the build machine and name .carry in the run's carry list"; return 1; }
  # The machine's own python3 holds PyTorch, NumPy, Matplotlib, pytest: the new environment
  # sees its packages through a .pth file (after its own), and gets the carried ones itself.
  local image_python image_site
  image_python="$(command -v python3)"
  "$image_python" - <<'EOF' || return 1
import sys
assert sys.version_info[:2] == (3, 12), f"the carried DyNet module is built for Python 3.12, this python3 is {sys.version}"
EOF
  image_site="$("$image_python" -c 'import site; print("\n".join(site.getsitepackages()))')"
  rm -rf "$VENV"
  "$image_python" -m venv --without-pip "$VENV" || return 1
  local site
  site="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  printf '%s\n' "$image_site" > "$site/zz_device_image.pth"
  "$VENV/bin/python" -m pip install --quiet --no-index --no-deps --no-compile --ignore-installed \
    --disable-pip-version-check "$CARRY"/wheels/*.whl "$CARRY"/dynet/*.whl || return 1
  xz -dc "$CARRY/dynet/libdynet.so.xz" > "$VENV/lib/libdynet.so" || return 1
  # libdynet.so needs cuBLAS 13 and cuRAND 10: the machine has them (PyTorch's NVIDIA wheels,
  # or the CUDA toolkit). ldconfig, not LD_LIBRARY_PATH: the trusted grader's sandbox gets a
  # clean environment, and it imports DyNet too.
  local dirs=("$VENV/lib")
  for stem in libcublas.so.13 libcublasLt.so.13 libcurand.so.10; do
    found="$(find $image_site /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
             -name "$stem*" 2>/dev/null | head -n 1)"
    [ -n "$found" ] || { echo "no $stem on this machine"; return 1; }
    dirs+=("$(dirname "$found")")
  done
  printf '%s\n' "${dirs[@]}" | sort -u > /etc/ld.so.conf.d/zz-course-dynet-gpu.conf
  ldconfig
  echo "library folders: $(tr '\n' ' ' < /etc/ld.so.conf.d/zz-course-dynet-gpu.conf)"
  if ldd "$VENV/lib/libdynet.so" "$site"/_dynet*.so | grep "not found"; then
    echo "a library that DyNet needs is missing (above)"; return 1
  fi
  "$VENV/bin/python" -m pip check || echo "(pip check: the lines above name version mismatches; not fatal)"
  "$VENV/bin/python" -c "import dynet_config, nbgrader, nbclient, ipykernel, numpy, matplotlib, tqdm, pytest, xdist, nh3, latex2mathml; print('imports ok')"
}

step_smoke() {
  nvidia-smi || true
  "$VENV/bin/python" - <<'EOF'
import platform
from course import runtime
dy = runtime.init(seed=1, gpu=True)
print(runtime.banner)
x = dy.inputTensor([1.0, 2.0, 3.0])
value = dy.sum_elems(dy.cmult(x, x)).value()
assert abs(value - 14.0) < 1e-5, value
W = dy.inputTensor([[1.0, 2.0], [3.0, 4.0]])
assert abs(dy.sum_elems(W * dy.inputTensor([1.0, 1.0])).value() - 10.0) < 1e-5   # cuBLAS
assert (1 - x).value() == [0.0, -1.0, -2.0]      # a number on the left (the course's GRU): Cython < 3
print(f"GPU computation ok: {runtime.describe()} | {platform.platform()}")
import torch
print(f"PyTorch {torch.__version__}, CUDA {torch.version.cuda}, GPU {torch.cuda.get_device_name(0)}")
EOF
  # The grader's sandbox on the GPU: its memory cap is on the data segment (autograder/sandbox.py
  # _limit), at the tests' smallest (3000 MB): DyNet must start on the card under it, and a large
  # allocation must still fail.
  "$VENV/bin/python" - <<'EOF'
import resource
resource.setrlimit(resource.RLIMIT_DATA, (3000 << 20,) * 2)
from course import runtime
dy = runtime.init(seed=1, gpu=True)
assert abs(dy.sum_elems(dy.inputTensor([1.0, 2.0])).value() - 3.0) < 1e-6
try:
    bytearray(8 << 30)
    raise SystemExit("8 GB allocated under a 3000 MB data limit")
except MemoryError:
    print("DyNet on the GPU under the sandbox's data limit: ok; an 8 GB allocation fails there: ok")
EOF
}

step_tests() {
  # test_gpu.py runs the cell, LM and weight tests again in a process of their own, as it does anywhere.
  COURSE_GPU=1 "$VENV/bin/python" -m pytest -n 4 --dist loadgroup -p no:cacheprovider -rA \
    --junitxml="$RES/tests-junit.xml" tests/test_gpu.py tests/test_cells.py tests/test_lm.py \
    tests/test_weights.py tests/test_sandbox.py tests/test_grading.py tests/test_checks_ch10.py tests/test_checks_ch11.py
}

step_checks() {
  # The tests and the two grading passes at once (16 cores), with the GPU's processes listed every 5 s.
  ( while true; do date -u +%T; nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader
      sleep 5; done ) > "$RES/gpu-processes.log" 2>&1 &
  local watcher=$! status=0
  step_tests > "$RES/tests.log" 2>&1 &
  local tests=$!
  step_grading > "$RES/grading.log" 2>&1 || status=1
  wait "$tests" || status=1
  kill "$watcher" 2>/dev/null
  tail -n 15 "$RES/tests.log"
  tail -n 8 "$RES/grading.log"
  awk '/^[0-9][0-9]:/ {if (n > most) most = n; n = 0; next} {n++} END {if (n > most) most = n;
       print "at most " most+0 " processes on the GPU at once (nvidia-smi, every 5 s: gpu-processes.log)"}' \
    "$RES/gpu-processes.log"
  return $status
}

step_grading() {
  # Both passes at once, each with its own work folder and 8 workers: a pass lasts about as
  # long as its slowest submission (the endless loops run into the time limits), not longer.
  local status=0 device pids=()
  for device in cpu gpu; do
    rm -rf "$DEV/grading-$device"
    mkdir -p "$DEV/grading-$device"
    ( if [ "$device" = gpu ]; then export COURSE_GPU=1; else unset COURSE_GPU; fi
      "$VENV/bin/python" gpu/grade_class.py "$DEV/grading-$device" --workers 8 > "$RES/grading-$device.log" 2>&1
    ) &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
  tail -n 30 "$RES/grading-cpu.log" "$RES/grading-gpu.log"
  "$VENV/bin/python" gpu/compare_grading.py "$DEV/grading-cpu/records.json" "$DEV/grading-gpu/records.json" \
    "$RES/grading_compare.md" || status=1
  return $status
}

step_speed() {
  local ptb_args=()
  if [ -f "$CARRY/ptb.tar.xz" ]; then
    mkdir -p "$DEV/ptb" && tar -xJf "$CARRY/ptb.tar.xz" -C "$DEV/ptb" && ptb_args=(--ptb "$DEV/ptb")
  fi
  PYTHONPATH="$ROOT" PYTHONUNBUFFERED=1 "$VENV/bin/python" bench/gpu_speed.py --rounds 3 --out "$RES" "${ptb_args[@]}"
}

# --------------------------------------------------------------------------- running them
run_step() {
  local step="$1" left limit begun status took
  left=$(( BUDGET - $(elapsed) ))
  if [ "$left" -lt 60 ]; then
    note "- $step: not started, ${left} s of this call were left: run \`bash gpu/on_device.sh $step\`"
    return 2
  fi
  limit=$(( LIMIT[$step] < left ? LIMIT[$step] : left ))
  echo "==> $step (limit ${limit} s)"
  begun=$(date +%s)
  export -f step_setup step_smoke step_checks step_tests step_grading step_speed
  export VENV CARRY DEV RES ROOT
  timeout --kill-after=10 "$limit" bash -c "step_$step" > "$RES/$step.log" 2>&1
  status=$?
  tail -n 25 "$RES/$step.log"
  took=$(( $(date +%s) - begun ))
  case $status in
    0) echo ok > "$DEV/done/$step"; note "- $step: ok (${took} s)" ;;
    124|137) echo stopped > "$DEV/done/$step"; note "- $step: STOPPED at its limit of ${limit} s (log: $step.log)" ;;
    *) echo failed > "$DEV/done/$step"; note "- $step: FAILED, exit $status, ${took} s (log: $step.log)" ;;
  esac
  return $status
}

if [ $# -gt 0 ]; then
  requested=("$@")
  for step in "${requested[@]}"; do
    [ -n "${LIMIT[$step]:-}" ] || { echo "unknown step '$step': choose from ${ALL_STEPS[*]}"; exit 2; }
  done
else
  requested=()
  for step in "${ALL_STEPS[@]}"; do [ -f "$DEV/done/$step" ] || requested+=("$step"); done
fi
# Every other step needs the environment of this machine's setup.
if ! grep -qx ok "$DEV/done/setup" 2>/dev/null && [ "${requested[0]:-}" != setup ]; then
  requested=(setup "${requested[@]}")
fi

note ""
note "## Call at $(date -u '+%Y-%m-%d %H:%M:%S') UTC on $(hostname): steps ${requested[*]:-none (all done)}"
all_ok=1
for step in "${requested[@]}"; do
  run_step "$step"
  status=$?
  [ $status -eq 0 ] || all_ok=0
  if [ "$step" = setup ] && [ $status -ne 0 ]; then note "- setup did not succeed: nothing else was run"; break; fi
  [ $status -eq 2 ] && break
done
left=()
for step in "${ALL_STEPS[@]}"; do grep -qx ok "$DEV/done/$step" 2>/dev/null || left+=("$step"); done
note "- not ok yet on this machine: ${left[*]:-nothing}"

# What comes back: at most 8 files in $OUT.
tar -czf "$OUT/logs.tar.gz" -C "$RES" . 2>/dev/null
for file in summary.md gpu_speed.md gpu_speed.json grading_compare.md; do
  [ -f "$RES/$file" ] && cp "$RES/$file" "$OUT/$file"
done
cat "$RES/summary.md"
[ "$all_ok" = 1 ]      # exit 0 when every step this call asked for is ok
