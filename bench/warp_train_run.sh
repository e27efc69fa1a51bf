#!/usr/bin/env bash
# One device call for the warp training kernel at W = 16/32/64 and the
# batch-dependent training-kernel choice (docs/FUSED_MLP_DESIGN.md, "Warp
# training kernel at W = 64"): build (scripts/gpu-check, no tests there), the
# training A/B benchmark, the fused-MLP GPU tests, compute-sanitizer memcheck
# on a few warp-training tests and racecheck on one, each phase under its own
# timeout so that the whole stays inside one command's limit and the results
# land in OUTDIR (at most 8 files come back from the device: summary.txt,
# tests.log, train_ab.log, train_ab.csv, ptxas.txt, sanitize.txt, all.tgz).
#
#   FUSEDNGP_COMMIT=<hash> bench/warp_train_run.sh OUTDIR
# Knobs: BENCH_ARGS (default: the --train-ab sweep below), TEST_FILTER,
# MEMCHECK_FILTER, RACECHECK_FILTER, T_BUILD / T_TESTS / T_BENCH / T_MEMCHECK /
# T_RACECHECK (seconds), GC_DIR (scratch). bench/warp_train_relu_run.sh runs
# it with the ReLU flavour's defaults.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/one_call_common.sh" "${1:-}" bench/warp_train_run.sh
GC="${GC_DIR:-/tmp/warp_train_gc}"

# ---- build only (gpu-check: deps, configure, ninja) ---------------------------
NINJA_TARGETS="${NINJA_TARGETS:-kernels/fusedngp_gpu_tests kernels/fusedngp_mlp_bench}" \
TEST_FILTER_MLP=- TEST_FILTER_COMPONENTS=- TEST_FILTER_BACKEND=- SANITIZE_TOOLS=none SKIP_MLP_BENCH=1 SKIP_TRAIN=1 \
  timeout "${T_BUILD:-100}" scripts/gpu-check "$GC" > /dev/null 2>&1
note "gpu-check (build): exit $?"
cat "$GC/summary.txt" >> "$OUT/summary.txt" 2>/dev/null
# The warp training kernels' registers and spills (ptxas), one line per kernel
# (RELU: the last template argument, 0 = runtime activations, 1 = the ReLU flavour).
awk '/Compiling entry function/{f=$0} /bytes stack frame/{s=$0} /Used [0-9]+ registers/{ if (f ~ /warp_train/) print f " :: " s " :: " $0 }' \
  "$GC/build.log" 2>/dev/null | sed -E "s/.*detail[0-9]+(fused_mlp_warp_train[a-z0-9_]*)IL(i[0-9]+)EL(i[0-9]+)E(L(b[01])E)?.*:: +([0-9]+ bytes stack frame, [0-9]+ bytes spill stores, [0-9]+ bytes spill loads).*:: +ptxas info +: /\1 W\2 KTIN\3 RELU\5 :: \6 :: /" \
  | sort -u > "$OUT/ptxas.txt"
[ -x "$BUILD/kernels/fusedngp_gpu_tests" ] || { note "no test binary: stop"; tail -30 "$GC/build.log"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader >> "$OUT/summary.txt" 2>&1

# ---- training A/B ------------------------------------------------------------------
# shellcheck disable=SC2086
timeout "${T_BENCH:-60}" "$BUILD/kernels/fusedngp_mlp_bench" ${BENCH_ARGS:---train-ab --widths 64,16,32 --depths 2,1,4 \
  --batches 65536,131072,262144,1048576,4194304} --csv "$OUT/train_ab.csv" > "$OUT/train_ab.log" 2>&1
note "train A/B: exit $?, $(grep -c ' train ' "$OUT/train_ab.log") rows"

# ---- fused-MLP GPU tests ---------------------------------------------------------
timeout "${T_TESTS:-120}" "$BUILD/kernels/fusedngp_gpu_tests" --gtest_brief=1 --gtest_filter="${TEST_FILTER:-*}" \
  > "$OUT/tests.log" 2>&1
note "gpu tests: exit $?, $(grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]+ test' "$OUT/tests.log" | tr '\n' ' ')"

# ---- sanitizers -----------------------------------------------------------------------
: > "$OUT/sanitize.txt"
if command -v compute-sanitizer > /dev/null; then
  timeout "${T_MEMCHECK:-35}" compute-sanitizer --tool memcheck --error-exitcode 99 "$BUILD/kernels/fusedngp_gpu_tests" \
    --gtest_brief=1 --gtest_filter="${MEMCHECK_FILTER:-WarpTraining/*bwd_din_W64_D2_B127_*:WarpTraining/*l2_din_acc_sh12_W64_D2_B1001_*:WarpTraining/*l1_acc_s128x8_W64_D3_B4097_*:WarpTraining/*l2_din_W16_D1_B200003_*:WarpTraining/*bwd_din_acc_W32_D4_B1_*}" \
    > "$GC/memcheck.log" 2>&1
  note "memcheck: exit $?, $(grep -E 'ERROR SUMMARY' "$GC/memcheck.log" | tail -1), $(grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]+ test' "$GC/memcheck.log" | tr '\n' ' ')"
  # The shared mode hands its weight-gradient stripes from warp to warp with
  # mbarriers, which racecheck models (bench/racecheck_run.sh has the wider
  # racecheck runs).
  timeout "${T_RACECHECK:-20}" compute-sanitizer --tool racecheck --error-exitcode 99 "$BUILD/kernels/fusedngp_gpu_tests" \
    --gtest_brief=1 --gtest_filter="${RACECHECK_FILTER:-WarpTraining/*bwd_din_W64_D2_B127_*}" > "$GC/racecheck.log" 2>&1
  note "racecheck: exit $?, $(grep -E 'RACECHECK SUMMARY' "$GC/racecheck.log" | tail -1)"
  for f in "$GC/memcheck.log" "$GC/racecheck.log"; do echo "== $f"; grep -vE '^\[|^Running|^$' "$f" | head -40; tail -5 "$f"; done \
    >> "$OUT/sanitize.txt"
else
  note "sanitizers: compute-sanitizer not found"
fi

tar -C /tmp -czf "$OUT/all.tgz" "$(basename "$GC")" 2>/dev/null
note "done"
grep -E "^(warp|tile|pw|sh|s128)" "$OUT/train_ab.log" | grep -E " (1048576|4194304) " | head -5
cat "$OUT/summary.txt"
