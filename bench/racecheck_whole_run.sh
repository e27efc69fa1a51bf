#!/usr/bin/env bash
# One device call for the sanitizer rows of issue #4 (session 7):
#  - racecheck over the whole component test binary, in gtest shards
#    (scripts/gpu-check SANITIZE_SHARDS; FUSEDNGP_TEST_UNDER_SANITIZER=1 keeps
#    the grid tests' batches small enough for one call);
#  - CudaBackend.FusedStepTrainsLikeTheUnfusedPath under racecheck without the
#    conditional graph, which died with exit 9 and no report at afb58a0: as is,
#    with FUSEDNGP_UNFUSED_UPDATE=1, with CUDA_LAUNCH_BLOCKING=1, each under
#    /usr/bin/time -v (peak host memory), and the host's free memory sampled
#    every 5 s, so a kill by the out-of-memory killer shows.
# Files back: summary.txt, gc.tgz (gpu-check's logs), diag.tgz.
#
#   FUSEDNGP_COMMIT=<hash> bench/racecheck_whole_run.sh OUTDIR
# Knobs: SHARDS (default 8), SANITIZE_TIMEOUT (default 420), T_DIAG (default 300).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/one_call_common.sh" "${1:-}" bench/racecheck_whole_run.sh
GC=/tmp/racecheck_whole_gc
DIAG=/tmp/racecheck_whole_diag
rm -rf "$DIAG" && mkdir -p "$DIAG"
( while sleep 5; do echo "$(date +%T) $(free -m | awk '/Mem:/{print "used " $3 " MiB, available " $7 " MiB"}')"; done ) \
  > "$DIAG/free.log" 2>&1 &
FREE_PID=$!

SANITIZE_SHARDS="${SHARDS:-8}" SANITIZE_TOOLS=racecheck SANITIZE_FILTER='*' SANITIZE_TIMEOUT="${SANITIZE_TIMEOUT:-420}" \
TEST_FILTER_MLP=- TEST_FILTER_COMPONENTS=- TEST_FILTER_BACKEND=- BACKEND_SANITIZE_FILTER=- SKIP_MLP_BENCH=1 SKIP_TRAIN=1 \
NINJA_TARGETS="kernels/components/fusedngp_gpu_component_tests fusedngp_cuda_backend_tests" \
  scripts/gpu-check "$GC" > /dev/null 2>&1 &
GC_PID=$!

# The backend binary exists once gpu-check's build is done.
for _ in $(seq 1 60); do grep -q '^build:' "$GC/summary.txt" 2>/dev/null && break; sleep 5; done
note "build: $(grep '^build:' "$GC/summary.txt" 2>/dev/null)"
BIN="$BUILD/fusedngp_cuda_backend_tests"
TIME=(); [ -x /usr/bin/time ] && TIME=(/usr/bin/time -v)
diag() {  # name env...
  local name=$1; shift
  ( env FUSEDNGP_NO_CONDITIONAL_GRAPH=1 FUSEDNGP_TEST_UNDER_SANITIZER=1 "$@" timeout "${T_DIAG:-300}" "${TIME[@]}" \
      compute-sanitizer --tool racecheck --error-exitcode 99 "$BIN" --gtest_filter='*FusedStepTrainsLike*' \
      > "$DIAG/$name.log" 2>&1; echo $? > "$DIAG/$name.rc" ) &
}
if [ -x "$BIN" ]; then
  diag as_is
  diag unfused_update FUSEDNGP_UNFUSED_UPDATE=1
  diag launch_blocking CUDA_LAUNCH_BLOCKING=1
fi
wait "$GC_PID"
note "gpu-check (component racecheck, whole set): exit $?"
cat "$GC/summary.txt" >> "$OUT/summary.txt" 2>/dev/null
wait $(jobs -p | grep -v "^$FREE_PID$") 2> /dev/null
kill "$FREE_PID" 2> /dev/null
for f in "$DIAG"/*.log; do
  n=$(basename "$f" .log); [ "$n" = free ] && continue
  note "diag $n: exit $(cat "$DIAG/$n.rc" 2>/dev/null), $(grep -cE '^\[       OK \]' "$f") ok," \
    "$(grep -E 'RACECHECK SUMMARY|Maximum resident|Exit status|signal' "$f" | tr -s ' ' | tr '\n' ' ')"
done
dmesg 2>/dev/null | tail -20 > "$DIAG/dmesg.txt"
note "lowest available memory: $(awk '{print $(NF-1), $0}' "$DIAG/free.log" | sort -n | head -1 | cut -d' ' -f2-)"
tar -C /tmp -czf "$OUT/gc.tgz" "$(basename "$GC")" 2>/dev/null
tar -C /tmp -czf "$OUT/diag.tgz" "$(basename "$DIAG")" 2>/dev/null
note "done"
