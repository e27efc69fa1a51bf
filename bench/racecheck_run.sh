#!/usr/bin/env bash
# One device call for the racecheck-clean shared-sum warp training kernel
# (docs/FUSED_MLP_DESIGN.md, "Warp training kernel at W = 64", "Racecheck"):
# build (scripts/gpu-check: all fusedngp_gpu_tests), the hand-off probe
# (bench/racecheck_probe.cu) under racecheck and synccheck and timed,
# racecheck / memcheck on the warp-training tests, and the training A/B
# benchmark of this tree against BASE (a checkout of the previous kernel,
# built bench-only while the tests run; interleaved base, new, new, base). Each phase has its own timeout;
# results land in OUTDIR (summary.txt, probe.txt, sanitize.txt, bench.txt,
# logs.tgz). The sanitizer runs come last and stop at DEADLINE_S seconds.
#
#   FUSEDNGP_COMMIT=<hash> BASE=<dir> bench/racecheck_run.sh OUTDIR
# Knobs: T_RACE (seconds per racecheck run), RACE_TESTS / RACE_TESTS_WARP
# (gtest filters: whole binary instrumented / only the warp training
# kernels), BENCH_ARGS_W64, BENCH_ARGS_NARROW.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/one_call_common.sh" "${1:-}" bench/racecheck_run.sh
LOGS=/tmp/racecheck_logs
mkdir -p "$LOGS"
DEADLINE=$(( T0 + ${DEADLINE_S:-300} ))
BIN="$ROOT/build-gpu/kernels"

# ---- build and all GPU tests (gpu-check; sanitizers below) ---------------------
NINJA_TARGETS="${NINJA_TARGETS:-fusedngp_gpu_tests fusedngp_mlp_bench}" TEST_FILTER_COMPONENTS=- TEST_FILTER_BACKEND=- \
  SKIP_TRAIN=1 SKIP_MLP_BENCH=1 SANITIZE_TOOLS=none BACKEND_SANITIZE_FILTER=- \
  timeout "${T_GPU_CHECK:-200}" scripts/gpu-check "$LOGS/gc" > /dev/null 2>&1 &
GC_PID=$!
# The base bench build starts once the main build is done (it would slow it
# down) and runs while the tests run.
( while [ ! -x "$BIN/fusedngp_mlp_bench" ] && kill -0 $GC_PID 2> /dev/null; do sleep 2; done
  if [ -n "${BASE:-}" ] && [ -d "$BASE/kernels" ]; then
    nice -n 10 cmake -S "$BASE/kernels" -B /tmp/base-build -G Ninja -DCMAKE_BUILD_TYPE=Release -DFUSEDNGP_TESTS=OFF \
      > "$LOGS/base_build.log" 2>&1 && nice -n 10 ninja -C /tmp/base-build fusedngp_mlp_bench >> "$LOGS/base_build.log" 2>&1
  fi ) &
BUILDS_PID=$!

# ---- the probe (needs only nvcc; runs while gpu-check builds) --------------------
P=/tmp/racecheck_probe
"$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" -std=c++17 -arch=sm_90 -lineinfo -I kernels bench/racecheck_probe.cu -o $P > "$LOGS/probe_build.log" 2>&1
note "probe build: exit $?"
{
  for m in none counter mbar32 mbar1 named; do
    for shape in "2 4 1" "8 3 1"; do
      # shellcheck disable=SC2086
      timeout 60 compute-sanitizer --tool racecheck $P $m $shape > "$LOGS/probe_race_${m}_${shape// /_}.log" 2>&1
      echo "racecheck $m (warps rounds blocks = $shape): exit $?, $(grep -E 'RACECHECK SUMMARY' "$LOGS/probe_race_${m}_${shape// /_}.log" | tail -1), $(grep -oE 'sums (right|WRONG)' "$LOGS/probe_race_${m}_${shape// /_}.log")"
    done
  done
  for m in mbar32 mbar1 named; do
    timeout 60 compute-sanitizer --tool synccheck $P $m 8 3 1 > "$LOGS/probe_sync_$m.log" 2>&1
    echo "synccheck $m: exit $?, $(grep -E 'ERROR SUMMARY' "$LOGS/probe_sync_$m.log" | tail -1)"
  done
} > "$OUT/probe.txt" 2>&1
note "probe sanitizers done"
wait $GC_PID
note "gpu-check: exit $?"
cat "$LOGS/gc/summary.txt" >> "$OUT/summary.txt" 2>/dev/null
# Timing of the hand-offs (no sanitizer; after the tests, the GPU to itself).
for m in counter mbar32 mbar1 named; do timeout 30 $P $m 8 20000 264; done >> "$OUT/probe.txt" 2>&1
[ -x "$BIN/fusedngp_gpu_tests" ] || { note "no test binary: stop"; tail -30 "$LOGS/gc/build.log"; exit 1; }

# ---- training A/B: base kernel (turn counters) vs this tree ----------------------
wait $BUILDS_PID
note "base build: $(tail -1 "$LOGS/base_build.log" 2>/dev/null)"
bench() {  # label binary args...
  local label=$1 bin=$2; shift 2
  [ -x "$bin" ] || { echo "== $label: no binary"; return; }
  echo "== $label $*"
  # shellcheck disable=SC2068
  timeout 60 "$bin" --train-ab $@ --csv "$LOGS/ab_${label}_$(echo "$*" | tr -c 'a-z0-9' '_').csv" 2>&1 \
    | grep -E '^(tile|warp|pw|sh[0-9]+|s128x[0-9]+|nopf) ' | grep -E ' (1048576|4194304) '
}
W64="${BENCH_ARGS_W64:---widths 64 --depths 2 --batches 1048576,4194304}"
NARROW="${BENCH_ARGS_NARROW:---widths 16,32 --depths 2 --batches 1048576}"
# shellcheck disable=SC2086
{
  bench base /tmp/base-build/fusedngp_mlp_bench $W64
  bench new "$BIN/fusedngp_mlp_bench" $W64
  bench new "$BIN/fusedngp_mlp_bench" $W64
  bench base /tmp/base-build/fusedngp_mlp_bench $W64
  bench base /tmp/base-build/fusedngp_mlp_bench $NARROW
  bench new "$BIN/fusedngp_mlp_bench" $NARROW
} > "$OUT/bench.txt" 2>&1
note "bench done"
# ---- sanitizers on the warp-training tests ----------------------------------------
KF=(--kernel-name kns=warp_train)
compute-sanitizer --help 2>&1 | grep -q -- '--kernel-name' || KF=(--kernel-regex kns=warp_train)
san() {  # tool name filter [extra args...]
  local tool=$1 name=$2 filter=$3; shift 3
  local s; s=$(date +%s)
  local left=$(( DEADLINE - $(date +%s) ))
  [ "$left" -gt 10 ] || { note "$tool $name: skipped (deadline)"; return; }
  [ "$left" -lt "${T_RACE:-45}" ] || left=${T_RACE:-45}
  timeout "$left" compute-sanitizer --tool "$tool" --error-exitcode 99 "$@" "$BIN/fusedngp_gpu_tests" \
    --gtest_brief=1 --gtest_filter="$filter" > "$LOGS/${tool}_$name.log" 2>&1
  local rc=$?
  note "$tool $name: exit $rc in $(( $(date +%s) - s )) s, $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$LOGS/${tool}_$name.log" | tail -1), $(grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]+ test' "$LOGS/${tool}_$name.log" | tr '\n' ' ')"
}
# Whole binary instrumented: the test that showed the 66 hazards, then small W64
# and W32 shared-mode cases (several variants, one round).
san racecheck small "${RACE_TESTS:-WarpTraining/*bwd_din_W64_D2_B127_*:WarpTraining/*l2_din_acc_sh12_W64_D2_B1001_*:WarpTraining/*l1_acc_s128x8_W64_D3_B4097_*:WarpTraining/*l2_din_acc_sh12_W32_D2_B1001_*}"
# Only the warp training kernels instrumented: several rounds per warp (the
# ring wraps from the last warp to warp 0), every shared variant, determinism.
san racecheck rounds "${RACE_TESTS_WARP:-WarpTraining/*bwd_din_sh8_W64_D3_B100003_*:WarpTraining/*bwd_din_sh8_W32_D3_B100003_*}" "${KF[@]}"
san memcheck w64 "WarpTraining/*bwd_din_W64_D2_B127_*:WarpTraining/*l2_din_acc_sh12_W64_D2_B1001_*:WarpTraining/*bwd_din_sh8_W64_D3_B100003_*" "${KF[@]}"
san racecheck large "${RACE_TESTS_LARGE:-WarpTraining/*bwd_din_s128x8_W64_D2_B300007_*:*DeterministicAndGraphCapturable*}" "${KF[@]}"
for f in "$LOGS"/racecheck_*.log "$LOGS"/memcheck_*.log; do
  echo "== $f"; grep -vE '^\[|^Running|^$' "$f" | head -30; tail -4 "$f"
done > "$OUT/sanitize.txt" 2>&1

cp "$LOGS/gc/gpu_mlp_tests.log" "$LOGS/gc/ptxas.txt" "$LOGS/" 2>/dev/null
tar -C /tmp -czf "$OUT/logs.tgz" "$(basename "$LOGS")" 2>/dev/null
note "done"
