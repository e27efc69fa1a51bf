#!/usr/bin/env bash
# One device call that reads Nsight Compute's counters where the speed
# targets are missed (docs/FUSED_MLP_DESIGN.md, "What limits each width"):
# build (scripts/gpu-check, no tests), then `ncu --clock-control none` on
#   1. the training step (fused L2) of 32 -> W x 2 -> 16 at 2^20 rows,
#      W in TRAIN_WIDTHS (16 and 64), the planned training kernel and the reduce;
#   2. one image-fit step (configs/examples/image_fit_tcnn.json, batch 2^18)
#      on IMAGE (an .exr/.png), every kernel of one step after warm-up.
#   3. every section on the grid gradient and the optimizer's kernels in that run.
# Files back: summary.txt, ncu_train.txt, ncu_image.txt, ncu_detail.txt.
#
#   FUSEDNGP_COMMIT=<hash> bench/ncu_profile_run.sh OUTDIR [IMAGE]
# Knobs: SECTIONS (ncu --section list), TRAIN_WIDTHS (default "16 64"),
# TRAIN_VARIANTS (the bench's --train-variants, default warp; tile for W >= 128),
# TRAIN_KERNELS / TRAIN_SKIP / TRAIN_COUNT (ncu's kernel regex, launches skipped / profiled),
# IMAGE_SKIP / IMAGE_COUNT (kernel launches skipped / profiled in the image run),
# DETAIL_KERNELS / DETAIL_SKIP / DETAIL_COUNT (part 3).
set -uo pipefail
IMAGE="${2:-}"
source "$(dirname "${BASH_SOURCE[0]}")/one_call_common.sh" "${1:-}" bench/ncu_profile_run.sh
GC=/tmp/ncu_profile_gc

NINJA_TARGETS="${NINJA_TARGETS:-fusedngp kernels/fusedngp_mlp_bench}" \
TEST_FILTER_MLP=- TEST_FILTER_COMPONENTS=- TEST_FILTER_BACKEND=- SANITIZE_TOOLS=none SKIP_MLP_BENCH=1 SKIP_TRAIN=1 \
  timeout "${T_BUILD:-120}" scripts/gpu-check "$GC" > /dev/null 2>&1
note "gpu-check (build): exit $?"
cat "$GC/summary.txt" >> "$OUT/summary.txt" 2>/dev/null
NCU="$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)"
[ -n "$NCU" ] || { note "ncu not found"; exit 1; }
SECTIONS="${SECTIONS:-SpeedOfLight LaunchStats Occupancy SchedulerStats WarpStateStats MemoryWorkloadAnalysis ComputeWorkloadAnalysis}"
SEC_ARGS=()
for s in $SECTIONS; do SEC_ARGS+=(--section "$s"); done

# ---- 1. training step kernels -------------------------------------------------------
for w in ${TRAIN_WIDTHS:-16 64}; do
  # Warm-up launches first (the bench's 3 warm-ups), then one step: the training
  # kernel and its reduce.
  timeout 120 "$NCU" --clock-control none --target-processes all "${SEC_ARGS[@]}" \
    -k regex:"${TRAIN_KERNELS:-mlp_.*train|reduce_weight}" --launch-skip "${TRAIN_SKIP:-6}" --launch-count "${TRAIN_COUNT:-2}" \
    "$BUILD/kernels/fusedngp_mlp_bench" --train-ab --widths "$w" --depths 2 --batches 1048576 \
    --train-variants "${TRAIN_VARIANTS:-warp}" --reps 3 > "$OUT/ncu_train_w$w.txt" 2>&1
  note "ncu training W$w: exit $?, $(grep -c ')x(' "$OUT/ncu_train_w$w.txt") kernels"
done
cat "$OUT"/ncu_train_w*.txt > "$OUT/ncu_train.txt" && rm -f "$OUT"/ncu_train_w*.txt

# ---- 2. image-fit step kernels ---------------------------------------------------------
# ncu_image OUTFILE STEPS NCU_ARGS...: the image-fit run under ncu, then each
# profiled launch's duration and kernel into the summary.
ncu_image() {
  local file=$1 steps=$2; shift 2
  timeout 200 "$NCU" --clock-control none "$@" \
    "$BUILD/fusedngp" train --backend cuda --data "$IMAGE" --config configs/examples/image_fit_tcnn.json \
    --batch 262144 --steps "$steps" --out "/tmp/ncu_$(basename "$file" .txt)" > "$file" 2>&1
  note "ncu $(basename "$file" .txt): exit $?"
  awk '/\)x\(/ { k = substr($0, 1, 110) } /Duration/ { print $(NF-1), $(NF), k }' "$file" >> "$OUT/summary.txt"
}
if [ -n "$IMAGE" ] && [ -f "$IMAGE" ]; then
  ncu_image "$OUT/ncu_image.txt" 60 --section SpeedOfLight --section LaunchStats --section Occupancy \
    --launch-skip "${IMAGE_SKIP:-300}" --launch-count "${IMAGE_COUNT:-16}"
  # 3. Every section on the kernels named by DETAIL_KERNELS (default: the grid's
  # parameter gradient and the optimizer graph's kernels) after warm-up.
  ncu_image "$OUT/ncu_detail.txt" 40 "${SEC_ARGS[@]}" --graph-profiling node \
    -k regex:"${DETAIL_KERNELS:-grid_param_gradient|adam|convert_weights|float_to_half}" \
    --launch-skip "${DETAIL_SKIP:-20}" --launch-count "${DETAIL_COUNT:-8}"
fi
note "done"
