#!/usr/bin/env bash
# One short device call for the warp training kernel's ReLU flavour
# (kWarpRelu; docs/FUSED_MLP_DESIGN.md, "Warp training: ReLU flavour"):
# build (scripts/gpu-check, no tests there), the training A/B with the ReLU
# flavour ("warp", the planner's automatic pick) against the same variant
# with runtime activations ("f0") and the tile kernel, every variant twice in
# interleaved order, then the training tests, then compute-sanitizer memcheck
# and racecheck on a few ReLU-flavour cases, each phase under its own timeout
# so the whole fits one command's limit. At most 8 files come back: summary.txt,
# train_ab.log, train_ab.csv, tests.log, ptxas.txt, sanitize.txt, all.tgz.
#
#   FUSEDNGP_COMMIT=<hash> bench/warp_train_relu_run.sh OUTDIR
# Knobs: BENCH_ARGS, TEST_FILTER, MEMCHECK_FILTER, RACECHECK_FILTER,
# T_BUILD / T_BENCH / T_TESTS / T_MEMCHECK / T_RACECHECK (seconds).
set -uo pipefail
OUT="${1:?usage: bench/warp_train_relu_run.sh OUTDIR}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
GC=/tmp/warp_train_relu_gc
BUILD="$ROOT/build-gpu"
T0=$(date +%s)
note() { echo "[$(( $(date +%s) - T0 )) s] $*" | tee -a "$OUT/summary.txt"; }

# ---- build only (gpu-check: deps, configure, ninja) ---------------------------
NINJA_TARGETS="${NINJA_TARGETS:-kernels/fusedngp_gpu_tests kernels/fusedngp_mlp_bench}" \
TEST_FILTER_MLP=- TEST_FILTER_COMPONENTS=- TEST_FILTER_BACKEND=- SANITIZE_TOOLS=none SKIP_MLP_BENCH=1 SKIP_TRAIN=1 \
  timeout "${T_BUILD:-110}" scripts/gpu-check "$GC" > /dev/null 2>&1
note "gpu-check (build): exit $?"
cat "$GC/summary.txt" >> "$OUT/summary.txt" 2>/dev/null
# The warp training kernels' registers and spills (ptxas), one line per kernel
# (the last template argument: 0 = flavour 0, 1 = the ReLU flavour).
awk '/Compiling entry function/{f=$0} /bytes stack frame/{s=$0} /Used [0-9]+ registers/{ if (f ~ /warp_train/) print f " :: " s " :: " $0 }' \
  "$GC/build.log" 2>/dev/null | sed -E "s/.*detail[0-9]+(fused_mlp_warp_train[a-z0-9_]*)IL(i[0-9]+)EL(i[0-9]+)EL(b[01])E.*:: +([0-9]+ bytes stack frame, [0-9]+ bytes spill stores, [0-9]+ bytes spill loads).*:: +ptxas info +: /\1 W\2 KTIN\3 RELU\4 :: \5 :: /" \
  | sort -u > "$OUT/ptxas.txt"
[ -x "$BUILD/kernels/fusedngp_gpu_tests" ] || { note "no test binary: stop"; tail -30 "$GC/build.log"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader >> "$OUT/summary.txt" 2>&1

# ---- training A/B ------------------------------------------------------------------
# shellcheck disable=SC2086
timeout "${T_BENCH:-45}" "$BUILD/kernels/fusedngp_mlp_bench" ${BENCH_ARGS:---train-ab --widths 16,32,64 --depths 2 \
  --batches 262144,1048576} --csv "$OUT/train_ab.csv" > "$OUT/train_ab.log" 2>&1
note "train A/B: exit $?, $(grep -c ' train ' "$OUT/train_ab.log") rows"

# ---- training tests --------------------------------------------------------------
timeout "${T_TESTS:-70}" "$BUILD/kernels/fusedngp_gpu_tests" --gtest_brief=1 \
  --gtest_filter="${TEST_FILTER:-WarpTraining/*:*Training*:*Deterministic*}" > "$OUT/tests.log" 2>&1
note "gpu tests: exit $?, $(grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]+ test' "$OUT/tests.log" | tr '\n' ' ')"

# ---- sanitizers -----------------------------------------------------------------------
: > "$OUT/sanitize.txt"
if command -v compute-sanitizer > /dev/null; then
  timeout "${T_MEMCHECK:-15}" compute-sanitizer --tool memcheck --error-exitcode 99 "$BUILD/kernels/fusedngp_gpu_tests" \
    --gtest_brief=1 --gtest_filter="${MEMCHECK_FILTER:-WarpTraining/*/bwd_din_relu_W16_D2_B127_*:WarpTraining/*/l2_acc_relu_sh12_W32_D2_B1001_*:WarpTraining/*/l1_din_relu_W64_D3_B5001_*}" \
    > "$GC/memcheck.log" 2>&1
  note "memcheck: exit $?, $(grep -E 'ERROR SUMMARY' "$GC/memcheck.log" | tail -1), $(grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]+ test' "$GC/memcheck.log" | tr '\n' ' ')"
  timeout "${T_RACECHECK:-15}" compute-sanitizer --tool racecheck --error-exitcode 99 "$BUILD/kernels/fusedngp_gpu_tests" \
    --gtest_brief=1 --gtest_filter="${RACECHECK_FILTER:-WarpTraining/*/l2_acc_relu_sh12_W32_D2_B1001_*}" > "$GC/racecheck.log" 2>&1
  note "racecheck: exit $?, $(grep -E 'RACECHECK SUMMARY' "$GC/racecheck.log" | tail -1)"
  for f in "$GC/memcheck.log" "$GC/racecheck.log"; do echo "== $f"; grep -vE '^\[|^Running|^$' "$f" | head -40; tail -5 "$f"; done \
    >> "$OUT/sanitize.txt"
else
  note "sanitizers: compute-sanitizer not found"
fi

tar -C /tmp -czf "$OUT/all.tgz" "$(basename "$GC")" 2>/dev/null
note "done"
cat "$OUT/summary.txt"
