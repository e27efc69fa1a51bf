#!/usr/bin/env bash
# One device call that looks at one failing-under-a-sanitizer GPU test from
# several sides at once (they run in parallel: the sanitizers are bound by
# host-side instrumentation): natively (twice: GTEST_REPEAT=2), under memcheck and racecheck,
# and under memcheck with each environment setting in VARIANTS (e.g.
# FUSEDNGP_UNFUSED_UPDATE=1), so one call tells which path the fault follows.
# Natively also with CUDA_LAUNCH_BLOCKING=1. Every log is verbose (not
# brief). Files back: summary.txt, logs.tgz.
#
#   FUSEDNGP_COMMIT=<hash> BINARY=fusedngp_cuda_backend_tests FILTER='CudaBackend.X' \
#     VARIANTS='FUSEDNGP_UNFUSED_UPDATE=1' bench/sanitize_test_run.sh OUTDIR
# With CLI set (fusedngp's arguments, e.g. "train --backend cuda --data
# data/astronaut.png --steps 60 --batch 16384"; --out is added), the same CLI run
# also goes natively and under memcheck once per CLI_VARIANTS entry (an
# environment setting each; "-" for none): one backend in the training loop,
# to tell a test's setup from the step itself. Variants are separated by
# spaces; within one, commas join several settings (A=1,B=2).
# Knobs: T_BUILD, T_RUN (seconds per run, default 200), EXTRA_TARGETS (more
# ninja targets to build, e.g. for a later script in the same call).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/one_call_common.sh" "${1:-}" bench/sanitize_test_run.sh
GC=/tmp/sanitize_test_gc
LOGS=/tmp/sanitize_test_logs
rm -rf "$LOGS" && mkdir -p "$LOGS"
BINARY="${BINARY:-fusedngp_cuda_backend_tests}"
FILTER="${FILTER:?set FILTER (a gtest filter)}"
build_only "$BINARY ${CLI:+fusedngp} ${EXTRA_TARGETS:-}" "${T_BUILD:-150}"
BIN="$(find "$BUILD" -name "$BINARY" -type f -perm -u+x | head -1)"
[ -n "$BIN" ] || { note "no $BINARY: stop"; exit 1; }

# job NAME ENVS SECONDS COMMAND...: COMMAND in the background with ENVS set
# (comma-separated VAR=VALUE, or - for none), its output in NAME.log and its
# exit status in NAME.rc.
job() {
  local name=$1 envs=() seconds=$3
  [ "$2" != "-" ] && IFS=, read -ra envs <<< "$2"
  shift 3
  ( env "${envs[@]}" timeout "$seconds" "$@" > "$LOGS/$name.log" 2>&1; echo $? > "$LOGS/$name.rc" ) &
}
MEMCHECK=(compute-sanitizer --tool memcheck --error-exitcode 99)
TEST=("$BIN" --gtest_brief=0 --gtest_filter="$FILTER")
T="${T_RUN:-200}"
job native GTEST_REPEAT=2 "$T" "${TEST[@]}"
job native_blocking CUDA_LAUNCH_BLOCKING=1 "$T" "${TEST[@]}"
job memcheck - "$T" "${MEMCHECK[@]}" "${TEST[@]}"
job racecheck - "$T" compute-sanitizer --tool racecheck --error-exitcode 99 "${TEST[@]}"
i=0
for v in ${VARIANTS:-}; do
  i=$((i + 1))
  job "memcheck_variant$i" "$v" "$T" "${MEMCHECK[@]}" "${TEST[@]}"
  echo "memcheck_variant$i: $v" >> "$OUT/summary.txt"
done
if [ -n "${CLI:-}" ]; then
  # One backend in the training loop; each run its own --out.
  cli() { echo "$BUILD/fusedngp" $CLI --out "/tmp/sanitize_cli_$1"; }
  job cli_native - "$T" $(cli cli_native)
  job cli_native_blocking CUDA_LAUNCH_BLOCKING=1 "$T" $(cli cli_native_blocking)
  i=0
  for v in ${CLI_VARIANTS:--}; do
    i=$((i + 1))
    job "cli_memcheck$i" "$v" "$T" "${MEMCHECK[@]}" $(cli "cli_memcheck$i")
    echo "cli_memcheck$i: $v" >> "$OUT/summary.txt"
  done
fi
# PROBE=1: bench/conditional_graph_probe.cu (the update graph's shape alone,
# no fusedngp code) natively and under memcheck, each with and without
# CUDA_LAUNCH_BLOCKING=1: whether the tool itself runs a conditional graph.
if [ -n "${PROBE:-}" ]; then
  P=(/tmp/conditional_graph_probe 50 65536 7)
  "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" -std=c++17 -arch=sm_90 -lineinfo bench/conditional_graph_probe.cu \
    -o "${P[0]}" > "$LOGS/probe_build.log" 2>&1
  note "probe build: exit $?"
  job probe_native - 60 "${P[@]}"
  job probe_native_blocking CUDA_LAUNCH_BLOCKING=1 60 "${P[@]}"
  job probe_memcheck - 60 "${MEMCHECK[@]}" "${P[@]}"
  job probe_memcheck_blocking CUDA_LAUNCH_BLOCKING=1 60 "${MEMCHECK[@]}" "${P[@]}"
fi
wait
for rc in "$LOGS"/*.rc; do
  name="$(basename "$rc" .rc)"
  log="$LOGS/$name.log"
  note "$name: exit $(cat "$rc"), $(passed "$log") $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1)"
  # The first sanitizer report (what, where) and the test it came in.
  grep -m1 -B1 -A3 -E '^========= (Invalid|Program hit|Error|Race)' "$log" | sed 's/^/    /' >> "$OUT/summary.txt"
  grep -E '^\[  FAILED  \] |^ok: |^mismatch' "$log" | head -5 | sed 's/^/    /' >> "$OUT/summary.txt"
done
tar -C /tmp -czf "$OUT/logs.tgz" "$(basename "$LOGS")"
note "done"
