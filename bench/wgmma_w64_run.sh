#!/usr/bin/env bash
# One device call for the wgmma training kernel at W = 64 (session 8; its
# one-block A/B, FUSEDNGP_WGMMA_MIN_BLOCKS=1, was removed after the run;
# kernels/fused_mlp_wgmma_device.cuh, docs/HOPPER_WGMMA.md):
#  1. build everything (scripts/gpu-check, build only; ptxas lines of the
#     wgmma kernels into summary.txt);
#  2. bench/red_add_probe.cu alone on the GPU (~25 s; the W = 256 question);
#  3. at once: the MLP and backend test binaries natively (every test), and
#     memcheck + racecheck over the W = 64 wgmma cases (3 shards each);
#  4. alone on the GPU: the train A/B at W = 64 and 128 (warp / wgmma / tile,
#     batches 2^14..2^20), the image-fit step with the wgmma kernel
#     (the default) against FUSEDNGP_WGMMA_TRAIN=0, interleaved, and the
#     stable config's PSNR at 7.5 s.
# Files back: summary.txt, red_add.txt, train_ab.csv, logs.tgz.
#
#   FUSEDNGP_COMMIT=<hash> bench/wgmma_w64_run.sh OUTDIR IMAGE
# Knobs: SANITIZE_TIMEOUT (default 240), SANITIZE_TOOLS (default "memcheck
# racecheck"), SANITIZE_FILTER (default: the W = 64 wgmma cases), TEST_FILTER_MLP,
# TEST_FILTER_BACKEND (default *; "-" skips), BATCHES (the A/B's, default
# 16384,65536,262144,1048576), STEP_SECONDS (default 5), SKIP_RED_PROBE=1,
# SKIP_IMAGE=1 (no image step, no PSNR).
set -uo pipefail
IMAGE="${2:?usage: bench/wgmma_w64_run.sh OUTDIR IMAGE}"
source "$(dirname "${BASH_SOURCE[0]}")/one_call_common.sh" "${1:-}" bench/wgmma_w64_run.sh
IMAGE="$(cd "$(dirname "$IMAGE")" && pwd)/$(basename "$IMAGE")"
build_all_into /tmp/wgmma_w64 240
awk '/Compiling entry function/{f=$0} /bytes stack frame/{s=$0} /Used [0-9]+ registers/{ if (f ~ /wgmma_train_kernel/) print f " :: " s " :: " $0 }' \
  "$GC/build.log" | sort -u | sed -E 's/.*kernelILi([0-9]+)ELi([0-9]+)ELi([0-9]+).*:: +(.*) :: .*Used ([0-9]+) registers.*/wgmma W\1 KIN\2 min-blocks \3: \5 registers, \4/' >> "$OUT/summary.txt"

red_add_probe

NO_RUN="SKIP_MLP_BENCH=1 SKIP_TRAIN=1 IMAGE_BENCH_DATA= GPU_CHECK_NO_BUILD=1"
env $NO_RUN SANITIZE_TOOLS="${SANITIZE_TOOLS:-memcheck racecheck}" SANITIZE_SHARDS=3 \
  SANITIZE_FILTER_MLP="${SANITIZE_FILTER:-*WgmmaTrain*_W64_*:*WgmmaTrainSelection*}" \
  SANITIZE_FILTER_COMPONENTS=- BACKEND_SANITIZE_FILTER=- SANITIZE_TIMEOUT="${SANITIZE_TIMEOUT:-240}" \
  TEST_FILTER_MLP=- TEST_FILTER_COMPONENTS=- TEST_FILTER_BACKEND=- scripts/gpu-check "$L/sanitize" > /dev/null 2>&1 &
SAN=$!
env $NO_RUN SANITIZE_TOOLS=none TEST_FILTER_MLP="${TEST_FILTER_MLP:-*}" TEST_FILTER_COMPONENTS=- \
  TEST_FILTER_BACKEND="${TEST_FILTER_BACKEND:-*}" TEST_TIMEOUT=300 scripts/gpu-check "$L/native" > /dev/null 2>&1
note "native tests (MLP + backend binaries): exit $?"
grep -E "tests: exit" "$L/native/summary.txt" >> "$OUT/summary.txt"
grep -hE '^\[  FAILED  \] ' "$L/native/"*tests.log 2>/dev/null | head -20 >> "$OUT/summary.txt"
grep -hE '^\[ errors \] .*_W64_' "$L/native/gpu_mlp_tests.log" 2>/dev/null | head -8 >> "$OUT/summary.txt"
grep -hE 'Failure|Expected|Which is|vs ' "$L/native/"*tests.log 2>/dev/null | head -20 >> "$OUT/summary.txt"
wait "$SAN"
note "sanitizers over the W = 64 wgmma cases: exit $?"
grep -E "^(memcheck|racecheck|  )" "$L/sanitize/summary.txt" >> "$OUT/summary.txt"

# ---- alone on the GPU ------------------------------------------------------------------------
MB="$BUILD/kernels/fusedngp_mlp_bench"
timeout 120 "$MB" --train-ab --widths 64,128 --depths 2 --batches "${BATCHES:-16384,65536,262144,1048576}" \
  --train-variants warp,wgmma,tile --csv "$OUT/train_ab.csv" > "$L/train_ab.log" 2>&1
note "train A/B: exit $?"
grep -E '^row .*fused L2' "$L/train_ab.log" >> "$OUT/summary.txt"

if [ -n "${SKIP_IMAGE:-}" ]; then
  tar -C /tmp --exclude='*.fusedngp' --exclude='*.png' --exclude='*.exr' -czf "$OUT/logs.tgz" wgmma_w64 2>/dev/null
  note "done (SKIP_IMAGE)"
  exit 0
fi
step() {  # name wgmma(0/1)
  FUSEDNGP_WGMMA_TRAIN="$2" timeout 30 "$BUILD/fusedngp" train --backend cuda --data "$IMAGE" \
    --config configs/examples/image_fit_tcnn.json --batch 262144 --seconds "${STEP_SECONDS:-5}" \
    --out "$L/step_$1" > "$L/step_$1.log" 2>&1
  note "image step $1 (FUSEDNGP_WGMMA_TRAIN=$2): exit $?, $(tail -2 "$L/step_$1.log" | sed -E 's/-> .*//' | tr '\n' ' ')"
}
step wgmma_1 1
step off_1 0
step wgmma_2 1
step off_2 0
timeout 40 "$BUILD/fusedngp" train --backend cuda --data "$IMAGE" --config configs/examples/instant_ngp_image_stable.json \
  --batch 262144 --seconds 7.5 --eval-every 2.5 --out "$L/psnr" > "$L/psnr.log" 2>&1
note "PSNR at 7.5 s (stable config, default kernels): exit $?, $(tail -1 "$L/psnr.log" | sed -E 's/-> .*//')"
tar -C /tmp --exclude='*.fusedngp' --exclude='*.png' --exclude='*.exr' -czf "$OUT/logs.tgz" wgmma_w64 2>/dev/null
note "done"
