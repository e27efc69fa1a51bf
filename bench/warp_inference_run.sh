#!/usr/bin/env bash
# One device call for the warp inference kernel (docs/FUSED_MLP_DESIGN.md,
# "Warp inference kernel"): scripts/gpu-check (build, GPU tests, sanitizers
# on a few tests, quick bench) into a scratch folder, then the same-run A/B
# of the inference kernels and `fusedngp bench mlp`, and the few files worth
# keeping copied to OUTDIR (the device returns at most 8).
#
#   FUSEDNGP_COMMIT=<hash> bench/warp_inference_run.sh OUTDIR
set -uo pipefail
OUT="${1:?usage: bench/warp_inference_run.sh OUTDIR}"
mkdir -p "$OUT"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
GC=/tmp/warp_gc
BUILD="$ROOT/build-gpu"
NINJA_TARGETS="${NINJA_TARGETS:-fusedngp_gpu_tests fusedngp_mlp_bench fusedngp}" \
TEST_FILTER_COMPONENTS=- TEST_FILTER_BACKEND=- SKIP_TRAIN=1 BACKEND_SANITIZE_FILTER=- GPU_CHECK_QUICK=1 \
BENCH_TIMEOUT="${BENCH_TIMEOUT:-100}" SANITIZE_TIMEOUT="${SANITIZE_TIMEOUT:-150}" \
SANITIZE_FILTER="${SANITIZE_FILTER:-WarpInference/*auto_W16_D2_B127_*:WarpInference/*s32smem_W64*:WarpInference/*pad_W32_D2_B1001_in40*}" \
  scripts/gpu-check "$GC"
rc=$?
# The warp kernels' registers (ptxas), one line per kernel, and the SASS
# instruction mix of the W16 default kernel.
awk '/Compiling entry function/{f=$0} /Used [0-9]+ registers/{ if (f ~ /warp_inference/) print f " :: " $0 }' "$GC/build.log" \
  | sed -E "s/.*warp_inference_kernelIL(i[0-9]+)ELi([0-9])ELi([0-9])ELb([01])ELi([0-9])E.*:: +ptxas info +: /W\1 MT\2 KTIN\3 SMEM\4 F\5 /" \
  | sort -u > "$OUT/ptxas_warp.txt"
echo "kernels with a ptxas report: $(grep -cE 'Used [0-9]+ registers' "$GC/build.log")" >> "$OUT/ptxas_warp.txt"
if command -v cuobjdump > /dev/null; then
  echo "== SASS opcode mix, W16 MT2 KTIN2 SMEM1 F0" >> "$OUT/ptxas_warp.txt"
  cuobjdump -sass -fun '_ZN8fusedngp3gpu6detail31fused_mlp_warp_inference_kernelILi16ELi2ELi2ELb1ELi0EEEvNS0_10KernelArgsE' \
    "$BUILD/kernels/libfusedngp_gpu.a" 2>&1 | grep -oE '^ +/\*[0-9a-f]{4}\*/ +[A-Z0-9_.]+' | awk '{print $2}' \
    | sort | uniq -c | sort -rn | head -40 >> "$OUT/ptxas_warp.txt"
fi
cp "$GC/summary.txt" "$GC/gpu_mlp_tests.log" "$OUT/" 2>/dev/null
for f in "$GC"/memcheck_*.log "$GC"/racecheck_*.log; do [ -f "$f" ] && { echo "== $f"; tail -4 "$f"; }; done > "$OUT/sanitize.txt"
[ -f "$GC/mlp_bench.log" ] && tail -45 "$GC/mlp_bench.log" > "$OUT/mlp_bench_tail.txt"
if [ -x "$BUILD/kernels/fusedngp_mlp_bench" ]; then
  timeout 150 "$BUILD/kernels/fusedngp_mlp_bench" --inference-ab --widths 16,32,64,128 --depth 2 \
    --csv "$OUT/infer_ab.csv" > "$OUT/infer_ab.log" 2>&1
  echo "inference A/B: exit $?" >> "$OUT/summary.txt"
fi
if [ -x "$BUILD/fusedngp" ]; then
  timeout 120 "$BUILD/fusedngp" bench mlp --widths 16,32,64,128 --depths 2 --batches 2^20 --kernels fused,cublas \
    --passes inference --csv "$OUT/infer.csv" > /tmp/bench_mlp.log 2>&1
  echo "fusedngp bench mlp: exit $?" >> "$OUT/summary.txt"
fi
tail -40 "$OUT/infer_ab.log" 2>/dev/null
cat "$OUT/summary.txt"
exit $rc
