#!/usr/bin/env bash
# One device call that checks main with the wgmma-train branch merged in
# (session 7, issue #4) before the merge lands:
#  - the wgmma probe (bench/wgmma_probe_run.sh, its own nvcc build) in the
#    background while scripts/gpu-check builds;
#  - scripts/gpu-check: every GPU test of the three binaries natively (the
#    wgmma tests among them), memcheck + racecheck on SANITIZE_FILTER (default:
#    the wgmma tests' small cases) and on the backend's GPU tests without the
#    conditional graph, the image-fit step and the PSNR against time;
#  - the image-fit step A/B of the grid gradient: spread order / plain
#    gradient (the default) against tiled order + shared-level warp
#    aggregation, interleaved, twice each;
#  - the train A/B at W = 128 / 256: tile against wgmma.
# Files back (<= 8): summary.txt, image_ab.log, train_ab.csv, gc.tgz (every log),
# wgmma.tgz (the probe's files).
#
#   FUSEDNGP_COMMIT=<hash> bench/merge_check_run.sh OUTDIR IMAGE
# Knobs: scripts/gpu-check's, T_GPU_CHECK, STEP_SECONDS (default 5), T_BENCH, SKIP_PROBE=1.
set -uo pipefail
IMAGE="${2:?usage: bench/merge_check_run.sh OUTDIR IMAGE}"
source "$(dirname "${BASH_SOURCE[0]}")/one_call_common.sh" "${1:-}" bench/merge_check_run.sh
GC=/tmp/merge_check_gc
IMAGE="$(cd "$(dirname "$IMAGE")" && pwd)/$(basename "$IMAGE")"

# ---- the wgmma probe, beside the build ------------------------------------------------
if [ -z "${SKIP_PROBE:-}" ]; then
  ( timeout 200 bench/wgmma_probe_run.sh /tmp/merge_check_wgmma > /dev/null 2>&1 ) &
  PROBE_PID=$!
fi

# ---- every native test, the sanitizers, the image step -----------------------------------
SANITIZE_FILTER="${SANITIZE_FILTER:-*WgmmaTrain*B127*:*WgmmaTrain*B1001*}" \
BACKEND_SANITIZE_FILTER="${BACKEND_SANITIZE_FILTER:-*OneStep*:*Overflow*:*Unsupported*:*UpdateGraphNodes*:*FusedUpdateMatches*:*FusedStep*:*WithoutConditional*}" \
SANITIZE_TIMEOUT="${SANITIZE_TIMEOUT:-240}" \
IMAGE_BENCH_DATA="$IMAGE" IMAGE_PSNR_CONFIG=configs/examples/instant_ngp_image_stable.json IMAGE_PSNR_SECONDS=7.5 \
IMAGE_EVAL_EVERY=0.5 SKIP_MLP_BENCH=1 SKIP_TRAIN=1 \
  timeout "${T_GPU_CHECK:-420}" scripts/gpu-check "$GC" > /dev/null 2>&1
note "gpu-check: exit $?"
cat "$GC/summary.txt" >> "$OUT/summary.txt" 2>/dev/null
grep -hE '^\[  FAILED  \] ' "$GC"/*tests.log 2>/dev/null | head -20 >> "$OUT/summary.txt"
grep -h "last step" "$GC/image_step.log" >> "$OUT/summary.txt" 2>/dev/null
if [ -n "${PROBE_PID:-}" ]; then
  wait "$PROBE_PID"
  note "wgmma probe: $(grep -E 'check:|emulate:|build:' /tmp/merge_check_wgmma/summary.txt 2>/dev/null | tr '\n' ' ')"
  tar -C /tmp -czf "$OUT/wgmma.tgz" merge_check_wgmma 2>/dev/null
fi

# ---- image-fit step: spread + plain gradient vs tiled + shared-level aggregation ----------
: > "$OUT/image_ab.log"
step() {  # name order kernels
  echo "== $1: --sample-order $2 FUSEDNGP_GRID_KERNELS=$3" >> "$OUT/image_ab.log"
  FUSEDNGP_GRID_KERNELS="$3" timeout 30 "$BUILD/fusedngp" train --backend cuda --data "$IMAGE" \
    --config configs/examples/image_fit_tcnn.json --batch 262144 --seconds "${STEP_SECONDS:-5}" --sample-order "$2" \
    --out "/tmp/merge_check_step_$1" > "$GC/step_$1.log" 2>&1
  echo "exit $?: $(tail -2 "$GC/step_$1.log" | tr '\n' ' ')" >> "$OUT/image_ab.log"
}
if [ -x "$BUILD/fusedngp" ]; then
  for round in 1 2; do
    step "spread_plain_$round" spread ""
    step "tiled_shared_$round" tiled gradient_warp_aggregate_shared=1
  done
  grep -E "^exit" "$OUT/image_ab.log" | sed -E 's/-> .*//' >> "$OUT/summary.txt"
fi

# ---- train A/B at W = 128 / 256: tile vs wgmma ---------------------------------------------
timeout "${T_BENCH:-90}" "$BUILD/kernels/fusedngp_mlp_bench" --train-ab --widths 128,256 --depths 2 \
  --batches 262144,1048576 --train-variants tile,wgmma --csv "$OUT/train_ab.csv" > "$GC/train_ab.log" 2>&1
note "train A/B (W 128/256, tile vs wgmma): exit $?"
grep -E '^row ' "$GC/train_ab.log" >> "$OUT/summary.txt"
tar -C /tmp -czf "$OUT/gc.tgz" "$(basename "$GC")" 2>/dev/null
note "done"
