#!/usr/bin/env bash
# One device call for the warp inference flavours (docs/FUSED_MLP_DESIGN.md,
# "Warp inference flavours"): scripts/gpu-check (build, the inference tests)
# into a scratch folder, then the same-run A/B of every flavour against
# flavour 0 and the tile kernel at 2^20 and 2^22 rows with the I/O-only
# kernel and the copy ceiling, then memcheck and racecheck on the new paths
# (after the bench, so that a short lease keeps the numbers). Everything is
# tarred into OUTDIR/gc.tgz (the device returns at most 8 files).
#
#   FUSEDNGP_COMMIT=<hash> bench/warp_flavor_run.sh OUTDIR
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/one_call_common.sh" "${1:-}" bench/warp_flavor_run.sh
# A copy of the tree inside the checkout finds the carried packages one up.
[ -e .devdeps ] || { [ -d ../.devdeps ] && ln -s ../.devdeps .devdeps; }
GC=/tmp/flavor_gc
NINJA_TARGETS="fusedngp_gpu_tests fusedngp_mlp_bench" TEST_FILTER_MLP='WarpInference/*:*Inference*' \
TEST_FILTER_COMPONENTS=- TEST_FILTER_BACKEND=- SKIP_TRAIN=1 SKIP_MLP_BENCH=1 SANITIZE_TOOLS=none \
BACKEND_SANITIZE_FILTER=- TEST_TIMEOUT="${TEST_TIMEOUT:-120}" scripts/gpu-check "$GC"
rc=$?
summary() { :; }
source scripts/device-deps.sh > /dev/null 2>&1  # LD_LIBRARY_PATH of the carried packages
awk '/Compiling entry function/{f=$0} /Used [0-9]+ registers/{ if (f ~ /warp_inference/) print f " :: " $0 }' "$GC/build.log" \
  | sed -E "s/.*warp_inference_kernelIL(i[0-9]+)ELi([0-9])ELi([0-9])ELb([01])ELi([0-9])E.*:: +ptxas info +: /W\1 MT\2 KTIN\3 SMEM\4 F\5 /" \
  | sort -u > "$GC/ptxas_warp.txt"
if command -v cuobjdump > /dev/null; then
  for f in 0 7; do
    echo "== SASS opcode mix, W16 MT2 KTIN2 SMEM1 F$f" >> "$GC/ptxas_warp.txt"
    cuobjdump -sass -fun "_ZN8fusedngp3gpu6detail31fused_mlp_warp_inference_kernelILi16ELi2ELi2ELb1ELi${f}EEEvNS0_10KernelArgsE" \
      "$BUILD/kernels/libfusedngp_gpu.a" 2>&1 | grep -oE '^ +/\*[0-9a-f]{4}\*/ +[A-Z0-9_.]+' | awk '{print $2}' \
      | sort | uniq -c | sort -rn | head -30 >> "$GC/ptxas_warp.txt"
  done
fi
if [ -x "$BUILD/kernels/fusedngp_mlp_bench" ]; then
  timeout "${BENCH_TIMEOUT:-100}" "$BUILD/kernels/fusedngp_mlp_bench" --inference-ab --ceilings --widths 16,32,64 \
    --depth 2 --batches 1048576,4194304 --reps 30 --csv "$GC/infer_flavors.csv" > "$GC/infer_flavors.log" 2>&1
  echo "inference A/B: exit $?" >> "$GC/summary.txt"
  cp "$GC/infer_flavors.log" "$GC/infer_flavors.csv" "$OUT/" 2>/dev/null
fi
tar czf "$OUT/gc.tgz" -C "$GC" .
T="$BUILD/kernels/fusedngp_gpu_tests"
if [ -x "$T" ] && command -v compute-sanitizer > /dev/null; then
  timeout "${SANITIZE_TIMEOUT:-80}" compute-sanitizer --tool memcheck --error-exitcode 99 "$T" --gtest_brief=1 \
    --gtest_filter='WarpInference/*f7_W16_D2_B127_*:WarpInference/*f7s32_W32*:*MisalignedFlavors*' > "$GC/memcheck.log" 2>&1
  echo "memcheck: exit $?, $(grep 'ERROR SUMMARY' "$GC/memcheck.log" | tail -1)" >> "$GC/summary.txt"
  timeout "${RACECHECK_TIMEOUT:-60}" compute-sanitizer --tool racecheck --error-exitcode 99 "$T" --gtest_brief=1 \
    --gtest_filter='WarpInference/*f7s16_W16*:WarpInference/*f7pad_W32_D2_B1001_in64*' > "$GC/racecheck.log" 2>&1
  echo "racecheck: exit $?, $(grep 'RACECHECK SUMMARY' "$GC/racecheck.log" | tail -1)" >> "$GC/summary.txt"
  tar czf "$OUT/gc.tgz" -C "$GC" .
fi
cp "$GC/summary.txt" "$OUT/"
grep -E "^(io_only|warp|f[0-9]|tile|ceiling)" "$GC/infer_flavors.log" | grep -E "ceiling| 1048576 " | tail -110
cat "$GC/summary.txt"
exit $rc
