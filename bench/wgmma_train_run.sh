#!/usr/bin/env bash
# One device call for the Hopper wgmma training kernel (issue #4;
# kernels/fused_mlp_wgmma_device.cuh, docs/HOPPER_WGMMA.md, "The wgmma
# training kernel"). The kernel is built on the probe's layout rules, so the
# probe runs first and gates the rest:
#  1. build the GPU tests and the MLP bench (scripts/gpu-check, build only,
#     ptxas -v) in the background, while
#  2. bench/wgmma_probe_run.sh runs (its own nvcc build, emulate, check, time;
#     no sanitizers). If its check fails, stop: the kernel's rules are wrong.
#  3. the new tests (*WgmmaTrain*: against the double reference and the tile
#     kernel, batches 1 / 127 / 1001 / 2^16), then the tile-kernel tests
#     nearby, then memcheck on two small cases (recorded, not judged: the
#     sanitizer may not model wgmma);
#  4. the train A/B: tile against wgmma at W = 128 and 256 (wgmma has no
#     W = 256 plan: tile only there), D = 2, batches 2^18 and 2^20.
# Files back (7): summary.txt, probe.txt (the probe's summary), ptxas.txt,
# tests.log, memcheck.log, bench.log, bench.csv. About 3-4 minutes.
#
#   bench/wgmma_train_run.sh OUTDIR
# Knobs: T_BUILD, T_PROBE, T_TESTS, T_MEMCHECK, T_BENCH (seconds), TEST_FILTER, GC_DIR.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/one_call_common.sh" "${1:-}" bench/wgmma_train_run.sh
GC="${GC_DIR:-/tmp/wgmma_train_gc}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader >> "$OUT/summary.txt" 2>&1

# ---- 1. build in the background ----------------------------------------------------------
# Its own process group (set -m), so that a failed probe can stop the whole
# build (ninja and its compilers) with one kill of that group.
set -m
( build_only "kernels/fusedngp_gpu_tests kernels/fusedngp_mlp_bench" "${T_BUILD:-200}" ) > /dev/null 2>&1 &
BUILD_PID=$!
set +m

# ---- 2. the probe gates everything --------------------------------------------------------
PROBE_SANITIZERS=0 timeout "${T_PROBE:-150}" bench/wgmma_probe_run.sh /tmp/wgmma_train_probe > /dev/null 2>&1
PROBE_RC=$?
cp /tmp/wgmma_train_probe/summary.txt "$OUT/probe.txt" 2>/dev/null
note "probe: exit $PROBE_RC, $(grep -E 'check:' "$OUT/probe.txt" | head -1)"
if [ $PROBE_RC -ne 0 ]; then
  note "STOP: the wgmma probe failed, and the training kernel is built on its rules (see probe.txt)"
  kill -- -"$BUILD_PID" 2> /dev/null
  wait "$BUILD_PID" 2> /dev/null
  exit 1
fi
wait "$BUILD_PID"
awk '/Compiling entry function/{f=$0} /bytes stack frame/{s=$0} /Used [0-9]+ registers/{ if (f ~ /wgmma_train|fused_mlp_train/) print f " :: " s " :: " $0 }' \
  "$GC/build.log" 2>/dev/null | sort -u > "$OUT/ptxas.txt"
# ptxas performance notes on the wgmma kernel (C7515: wgmma serialised; C7519: arrive injected): expect none.
echo "ptxas C75xx notes on the wgmma kernel: $(grep -E 'C75[0-9][0-9]' "$GC/build.log" 2>/dev/null | grep -c wgmma_train)" >> "$OUT/ptxas.txt"
grep -E 'C75[0-9][0-9]' "$GC/build.log" 2>/dev/null | grep wgmma_train | head -5 >> "$OUT/ptxas.txt"
TESTS="$BUILD/kernels/fusedngp_gpu_tests"
[ -x "$TESTS" ] || { note "no test binary: stop"; tail -30 "$GC/build.log" >> "$OUT/summary.txt"; exit 1; }
CUOBJDUMP="$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")/cuobjdump"
if [ -x "$CUOBJDUMP" ]; then
  "$CUOBJDUMP" -sass "$TESTS" 2> /dev/null | awk '/Function :/{f=$3} /HGMMA/{ if (f ~ /wgmma_train/) g[f]++ }
    END { for (k in g) printf "SASS %s: %d HGMMA\n", k, g[k] }' >> "$OUT/ptxas.txt"
fi

# ---- 3. tests ------------------------------------------------------------------------------
timeout "${T_TESTS:-90}" "$TESTS" --gtest_brief=1 --gtest_filter="${TEST_FILTER:-*WgmmaTrain*}" > "$OUT/tests.log" 2>&1
note "wgmma tests: exit $?, $(passed "$OUT/tests.log")"
grep -E "^\[ errors \]" "$OUT/tests.log" | head -12 >> "$OUT/summary.txt"
grep -E "Failure|Expected|Which is|vs |describe|FusedMlp " "$OUT/tests.log" | head -30 >> "$OUT/summary.txt"
timeout 40 "$TESTS" --gtest_brief=1 --gtest_filter="FusedMlp*:*FusedLoss*tile_W128_D2_B127*" > /tmp/wgmma_train_tests2.log 2>&1
note "tile-kernel tests nearby: exit $?, $(passed /tmp/wgmma_train_tests2.log)"
cat /tmp/wgmma_train_tests2.log >> "$OUT/tests.log"
if command -v compute-sanitizer > /dev/null; then
  timeout "${T_MEMCHECK:-40}" compute-sanitizer --tool memcheck --error-exitcode 99 "$TESTS" --gtest_brief=1 \
    --gtest_filter="*WgmmaTrain*l2_D2_B127_in32_out16*:*WgmmaTrain*grad_D1_B1001_in3_out1*" > "$OUT/memcheck.log" 2>&1
  note "memcheck (recorded, not judged): exit $?, $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1), $(passed "$OUT/memcheck.log")"
fi

# ---- 4. train A/B ----------------------------------------------------------------------------
timeout "${T_BENCH:-90}" "$BUILD/kernels/fusedngp_mlp_bench" --train-ab --widths 128,256 --depths 2 \
  --batches 262144,1048576 --train-variants tile,wgmma --csv "$OUT/bench.csv" > "$OUT/bench.log" 2>&1
note "train A/B: exit $?"
grep -E "^(tile|wgmma) " "$OUT/bench.log" | grep -v "W=" >> "$OUT/summary.txt"
note "done (targets: W = 128 >= 1.30 G samples/s at 2^20; W = 256 > 0.35)"
