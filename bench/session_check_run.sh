#!/usr/bin/env bash
# One device call that checks a session's main before it is handed on:
# scripts/gpu-check (build, every GPU test of the three binaries, memcheck and
# racecheck on the kernels the session changed, the image-fit step and PSNR
# against time on IMAGE), then the training A/B at W 16/32/64 (the issue's
# 2x target rows) and the grid kernel bench (2D and 3D). Files back:
# summary.txt, train_ab.csv, grid_bench.csv, gc.tgz (every gpu-check log).
#
#   FUSEDNGP_COMMIT=<hash> bench/session_check_run.sh OUTDIR IMAGE
# Knobs: SANITIZE_FILTER / BACKEND_SANITIZE_FILTER / SANITIZE_TIMEOUT /
# SANITIZE_TOOLS, TEST_FILTER_* (scripts/gpu-check's), T_GPU_CHECK, T_BENCH,
# TRAIN_VARIANTS (fusedngp_mlp_bench --train-variants, default warp),
# SKIP_GRID_BENCH=1.
set -uo pipefail
IMAGE="${2:?usage: bench/session_check_run.sh OUTDIR IMAGE}"
source "$(dirname "${BASH_SOURCE[0]}")/one_call_common.sh" "${1:-}" bench/session_check_run.sh
GC=/tmp/session_check_gc
IMAGE="$(cd "$(dirname "$IMAGE")" && pwd)/$(basename "$IMAGE")"

# Session 5 (2026-11-30) changed: the weight-gradient reduce (every training
# test), the fused loss sums and dL/dinput flag (FusedLoss*), the grid
# forward's chunk loads (GridForward*), the sampling kernel (Sampling*).
SANITIZE_FILTER="${SANITIZE_FILTER:-Kernels/FusedLoss.*B127*:FusedLossFlag.*:WarpTraining/*B127*:WarpTraining/*B1001*:FusedMlp.TrainingKernelChoice:FusedMlp.WarpTrainingLeanAndExtrasKernelsSameBits:GpuTest.GridForwardIsBitIdenticalForEveryMapping:GpuTest.GridsAtOddFloatOffsetsInCompositeMatchCpu}" \
BACKEND_SANITIZE_FILTER="${BACKEND_SANITIZE_FILTER:-*Sampling*:*OneStep*:*Overflow*:*FusedStepWhere*}" \
SANITIZE_TIMEOUT="${SANITIZE_TIMEOUT:-150}" \
IMAGE_BENCH_DATA="$IMAGE" IMAGE_PSNR_CONFIG=configs/examples/instant_ngp_image_stable.json IMAGE_PSNR_SECONDS=7.5 \
IMAGE_EVAL_EVERY=0.5 SKIP_MLP_BENCH=1 SKIP_TRAIN=1 \
  timeout "${T_GPU_CHECK:-480}" scripts/gpu-check "$GC" > /dev/null 2>&1
note "gpu-check: exit $?"
cat "$GC/summary.txt" >> "$OUT/summary.txt" 2>/dev/null
grep -hE '^\[  FAILED  \] ' "$GC"/*tests.log 2>/dev/null | head -20 >> "$OUT/summary.txt"
grep -h "last step" "$GC/image_step.log" >> "$OUT/summary.txt" 2>/dev/null

# The training step the 2x targets are about (fused L2, 32 -> W x 2 -> 16), twice each, interleaved.
timeout "${T_BENCH:-90}" "$BUILD/kernels/fusedngp_mlp_bench" --train-ab --widths 16,32,64 --depths 2 \
  --batches 262144,1048576,4194304 --train-variants "${TRAIN_VARIANTS:-warp}" --csv "$OUT/train_ab.csv" > "$GC/train_ab.log" 2>&1
note "train A/B: exit $?"
grep -E '^row .*fused L2' "$GC/train_ab.log" >> "$OUT/summary.txt"
grep -E '^warp W=(16|32|64) D=2 B=1048576' "$GC/train_ab.log" | sed 's/inference:.*training:/training:/' >> "$OUT/summary.txt"
if [ -z "${SKIP_GRID_BENCH:-}" ]; then
  timeout 60 "$BUILD/kernels/components/fusedngp_grid_bench" --csv "$OUT/grid_bench.csv" > "$GC/grid_bench.log" 2>&1
  note "grid bench: exit $?"
  grep -E 'forward' "$GC/grid_bench.log" >> "$OUT/summary.txt"
fi
tar -C /tmp -czf "$OUT/gc.tgz" "$(basename "$GC")" 2>/dev/null
note "done"
