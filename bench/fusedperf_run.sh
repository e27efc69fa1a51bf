#!/bin/bash
# One device call for the fused-MLP speed work: standalone kernels build
# (GoogleTest from the carried .deb), GPU tests, benchmark with variants,
# then memcheck/racecheck on two small tests. Logs under $OUT.
#   OUT=... DEPS=../.devdeps bench/fusedperf_run.sh
set -u
OUT=${OUT:-/tmp/fusedperf-out}
DEPS=${DEPS:-.devdeps}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv | tail -1
GT=/tmp/gtest-src
rm -rf $GT && dpkg -x "$DEPS"/googletest_*_all.deb $GT
t0=$(date +%s)
{ cmake -S kernels -B build-dev -G Ninja -DFUSEDNGP_GTEST_SOURCE_DIR=$GT/usr/src/googletest \
    -DFUSEDNGP_PTXAS_VERBOSE=ON && ninja -C build-dev -j16; } > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
grep -E "Compiling entry|Used [0-9]+ reg|spill stores" "$OUT/build.log" | grep -B2 "Used" | grep -v "^--" \
    | sed -E 's/.*(fused_mlp_[a-z]+_kernelILi[0-9]+ELi[0-9]).*/\1/' > "$OUT/ptxas.txt"
t0=$(date +%s)
timeout ${TEST_TIMEOUT:-200} build-dev/fusedngp_gpu_tests --gtest_brief=1 > "$OUT/tests.log" 2>&1
echo "tests exit $? in $(( $(date +%s) - t0 )) s"
grep -E '^\[  (FAILED|PASSED) |tests ran' "$OUT/tests.log" | head -20
grep -E 'Failure|Expected|Which is|which is|error' "$OUT/tests.log" | head -20
t0=$(date +%s)
timeout ${BENCH_TIMEOUT:-150} build-dev/fusedngp_mlp_bench ${BENCH_ARGS:---variants} --csv "$OUT/bench.csv" > "$OUT/bench.log" 2>&1
echo "bench exit $? in $(( $(date +%s) - t0 )) s"
if [ -n "${SANITIZE:-}" ]; then
    for tool in memcheck racecheck; do
        timeout ${SANITIZE_TIMEOUT:-60} compute-sanitizer --tool $tool --error-exitcode 99 build-dev/fusedngp_gpu_tests \
            --gtest_brief=1 --gtest_filter="$SANITIZE" > "$OUT/$tool.log" 2>&1
        echo "$tool exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.log" | tail -1)"
    done
fi
grep -E '^(auto|noprefet|slab16|slab32|max_rows|rows128|cublas) ' "$OUT/bench.log" | grep -v FusedMlp \
    | awk '{printf "%s %s %s %s %s %s|", $1,$2,$3,$4,$(NF-2),$(NF-1)} NR%3==0{print ""}'
