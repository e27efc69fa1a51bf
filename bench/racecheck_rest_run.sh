#!/usr/bin/env bash
# One device call for what issue #4's racecheck row still lacks after
# session 7 (docs/CUDA_BACKEND.md, "Session 7"): racecheck only, one process
# per core at most, over
#  - the MLP binary's sanitizer set (scripts/gpu-check's default filter), in shards;
#  - the component tests the whole-set runs did not reach, and every
#    shared-level warp-aggregation case (its kernel recompiled when the
#    global-level path was removed): REST, one name per line, default
#    bench/results/h200_racecheck_components_rest_ae931c0.txt (280 tests), in shards;
#  - the backend's FusedStepTrainsLikeTheUnfusedPath alone (10 steps per loss
#    under the sanitizer; its host memory grows with every launch, so few
#    neighbours), without the conditional graph.
# Host memory is sampled every 10 s (the out-of-memory killer ended this
# test's run in session 7). First, alone on the GPU for ~25 s,
# bench/red_add_probe.cu (how fast a block's dW flush can go: the question
# a W = 256 wgmma kernel hinges on, docs/HOPPER_WGMMA.md).
# Files back: summary.txt, red_add.txt, logs.tgz.
#
#   FUSEDNGP_COMMIT=<hash> bench/racecheck_rest_run.sh OUTDIR
# Knobs: SHARDS (default 5), SANITIZE_TIMEOUT (default 450: with the probe
# and the ~70 s build the call stays under 600 s), REST (file), SKIP_RED_PROBE=1.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/one_call_common.sh" "${1:-}" bench/racecheck_rest_run.sh
GC=/tmp/racecheck_rest_gc
REST="${REST:-bench/results/h200_racecheck_components_rest_ae931c0.txt}"
red_add_probe
( while sleep 10; do echo "$(date +%T) $(free -m | awk '/Mem:/{print "used " $3 " MiB, available " $7 " MiB"}')"; done ) \
  > /tmp/racecheck_rest_free.log 2>&1 &
FREE_PID=$!
SANITIZE_TOOLS=racecheck SANITIZE_SHARDS="${SHARDS:-5}" SANITIZE_TIMEOUT="${SANITIZE_TIMEOUT:-450}" \
SANITIZE_FILTER_COMPONENTS="$(paste -sd: "$REST")" \
BACKEND_SANITIZE_FILTER='*FusedStepTrainsLike*' \
TEST_FILTER_MLP=- TEST_FILTER_COMPONENTS=- TEST_FILTER_BACKEND=- SKIP_MLP_BENCH=1 SKIP_TRAIN=1 \
NINJA_TARGETS="kernels/fusedngp_gpu_tests kernels/components/fusedngp_gpu_component_tests fusedngp_cuda_backend_tests" \
  scripts/gpu-check "$GC" > /dev/null 2>&1
note "gpu-check (racecheck): exit $?"
kill "$FREE_PID" 2> /dev/null
cat "$GC/summary.txt" >> "$OUT/summary.txt" 2>/dev/null
note "lowest available host memory: $(awk '{print $(NF-1), $0}' /tmp/racecheck_rest_free.log | sort -n | head -1 | cut -d' ' -f2-)"
cp /tmp/racecheck_rest_free.log "$GC/" 2>/dev/null
tar -C /tmp -czf "$OUT/logs.tgz" "$(basename "$GC")" 2>/dev/null
note "done"
