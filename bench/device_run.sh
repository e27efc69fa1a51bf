#!/bin/bash
# One call on the device machine: GPU tests, benchmark, sanitizers.
# Run from the repository root (or its .gpuwork copy). Logs go to $OUT.
# Uses prebuilt binaries from prebuilt/ when they run there, else builds
# (kernels/ standalone, GoogleTest from third_party/googletest).
set -u
OUT=${OUT:-/tmp/fusedngp-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw --format=csv > "$OUT/gpu.txt" 2>&1
head -3 "$OUT/gpu.txt"
BIN=prebuilt
if ! $BIN/fusedngp_gpu_tests --gtest_list_tests > /dev/null 2> "$OUT/prebuilt_err.txt"; then
    echo "prebuilt binaries do not run here ($(head -c 200 "$OUT/prebuilt_err.txt")); building"
    BIN=build-dev
    { cmake -S kernels -B $BIN -G Ninja -DFUSEDNGP_GTEST_SOURCE_DIR="$PWD/third_party/googletest" \
        -DFUSEDNGP_PTXAS_VERBOSE=ON && ninja -C $BIN -j16; } > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
fi
echo "== tests"
timeout ${TEST_TIMEOUT:-240} $BIN/fusedngp_gpu_tests ${TEST_FILTER:+--gtest_filter=$TEST_FILTER} > "$OUT/tests.log" 2>&1
echo "tests exit $?"
grep -E '^\[  (FAILED|PASSED) |tests ran|^\[  SKIPPED' "$OUT/tests.log" | head -40
grep -E 'Failure|Expected|Which is|which is' "$OUT/tests.log" | head -30
echo "== bench"
timeout ${BENCH_TIMEOUT:-240} $BIN/fusedngp_mlp_bench ${BENCH_ARGS:---ceilings --variants} --csv "$OUT/bench.csv" > "$OUT/bench.log" 2>&1
echo "bench exit $?"
grep -E '^ceiling|^auto ' "$OUT/bench.log"
grep -E '^(auto|cublas) ' "$OUT/bench.log" | grep -E 'GEMMs|inference|train|backward' | grep -v FusedMlp
if [ -n "${SANITIZE:-}" ]; then
    echo "== sanitizers"
    timeout 120 compute-sanitizer --tool memcheck $BIN/fusedngp_gpu_tests --gtest_filter="$SANITIZE" > "$OUT/memcheck.log" 2>&1
    echo "memcheck exit $?"; grep -E 'ERROR SUMMARY|Invalid' "$OUT/memcheck.log" | head -5
    timeout 120 compute-sanitizer --tool racecheck $BIN/fusedngp_gpu_tests --gtest_filter="$SANITIZE" > "$OUT/racecheck.log" 2>&1
    echo "racecheck exit $?"; grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|hazard' "$OUT/racecheck.log" | head -5
fi
