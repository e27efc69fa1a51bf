#!/usr/bin/env bash
# One device call for the MLP throughput table: builds fusedngp with CUDA
# (and fusedngp_mlp_bench, a quick check that it still runs on the shared
# timing code), then runs `fusedngp bench mlp` and, right after on the same
# GPU, bench/torch_mlp.py with the same shapes. CSVs and logs go to OUTDIR.
#
#   FUSEDNGP_COMMIT=$(git rev-parse --short HEAD) bench/bench_mlp_device.sh OUTDIR
#
# Environment: BENCH_ARGS (shapes for both programs; default widths 16..256,
# depth 2, batch 2^20). Dependencies as in scripts/gpu-check (.devdeps/).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:?usage: bench/bench_mlp_device.sh OUTDIR}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
cd "$ROOT"
BUILD="${FUSEDNGP_GPU_BUILD_DIR:-$ROOT/build-gpu}"
ARGS=(${BENCH_ARGS:---widths 16,32,64,128,256 --depths 2 --batches 2^20})

# Sets CMAKE_EXTRA (and the library paths) from installed packages or the carried .devdeps/.
summary() { echo "$*"; }
source "$ROOT/scripts/device-deps.sh"

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem --format=csv > "$OUT/gpu.csv" 2>&1
start=$(date +%s)
if ! { cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFUSEDNGP_CUDA=ON -DFUSEDNGP_GUI=OFF \
         -DFUSEDNGP_TESTS=OFF "${CMAKE_EXTRA[@]}" && ninja -C "$BUILD" -j"$(nproc)" fusedngp fusedngp_mlp_bench; } \
       > "$OUT/build.log" 2>&1; then
  echo "build FAILED"; tail -40 "$OUT/build.log"; exit 1
fi
echo "build ok in $(( $(date +%s) - start )) s, $(grep -c 'warning' "$OUT/build.log") warning lines"

"$BUILD/fusedngp" bench mlp "${ARGS[@]}" --csv "$OUT/fusedngp_bench_mlp.csv" --json "$OUT/fusedngp_bench_mlp.json" \
  2>&1 | tee "$OUT/bench_mlp.log"
echo "fusedngp bench mlp: exit ${PIPESTATUS[0]}"
PYTHONUNBUFFERED=1 timeout 240 python3 bench/torch_mlp.py "${ARGS[@]}" --csv "$OUT/torch_mlp.csv" 2>&1 | tee "$OUT/torch_mlp.log"
echo "torch_mlp.py: exit ${PIPESTATUS[0]}"
timeout 60 "$BUILD/kernels/fusedngp_mlp_bench" --widths 64 --reps 10 > "$OUT/mlp_bench_w64.log" 2>&1
echo "fusedngp_mlp_bench (W=64 check): exit $?"; grep -E "^(auto|CublasMLP) " "$OUT/mlp_bench_w64.log" | head -4
