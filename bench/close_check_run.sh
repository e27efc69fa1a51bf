#!/usr/bin/env bash
# One device call that checks main before issue #4 is closed (session 7):
#  1. build everything (scripts/gpu-check, build only);
#  2. at once, three scripts/gpu-check runs on that build (GPU_CHECK_NO_BUILD):
#     - every native GPU test of the three binaries;
#     - memcheck + racecheck over the MLP binary's sanitizer set in shards,
#       and the backend's GPU tests without the conditional graph;
#     - racecheck over the component tests listed in RACECHECK_REST (one
#       name per line: those earlier runs did not reach; SKIP_REST=1 drops it);
#  3. then, alone on the GPU: the image-fit step in the default order (tiled
#     + shared-level aggregation) against spread + plain, interleaved; the
#     stable config's PSNR at 7.5 s; the training A/B at W 16..256, 2^20.
# Files back: summary.txt, train_ab.csv, logs.tgz.
#
#   FUSEDNGP_COMMIT=<hash> bench/close_check_run.sh OUTDIR IMAGE
# Knobs: SANITIZE_TIMEOUT (default 300), STEP_SECONDS (default 5); the first
# sanitizer run's tools A_TOOLS (default "memcheck racecheck") and its
# component-test filter A_COMPONENTS (default "-": none); SKIP_REST=1 drops the
# second (racecheck over RACECHECK_REST, a file of test names).
set -uo pipefail
IMAGE="${2:?usage: bench/close_check_run.sh OUTDIR IMAGE}"
source "$(dirname "${BASH_SOURCE[0]}")/one_call_common.sh" "${1:-}" bench/close_check_run.sh
IMAGE="$(cd "$(dirname "$IMAGE")" && pwd)/$(basename "$IMAGE")"
build_all_into /tmp/close_check 200

NO_RUN="SKIP_MLP_BENCH=1 SKIP_TRAIN=1 IMAGE_BENCH_DATA= GPU_CHECK_NO_BUILD=1"
REST="${RACECHECK_REST:-bench/results/h200_racecheck_components_rest_ae931c0.txt}"
env $NO_RUN SANITIZE_TOOLS="${A_TOOLS:-memcheck racecheck}" SANITIZE_SHARDS=4 SANITIZE_FILTER_COMPONENTS="${A_COMPONENTS:--}" \
  BACKEND_SANITIZE_FILTER='*OneStep*:*Overflow*:*Unsupported*:*FusedUpdateMatches*:*FusedStep*:*WithoutConditional*' \
  SANITIZE_TIMEOUT="${SANITIZE_TIMEOUT:-300}" TEST_FILTER_MLP=- TEST_FILTER_COMPONENTS=- TEST_FILTER_BACKEND=- \
  scripts/gpu-check "$L/sanitize_mlp" > /dev/null 2>&1 &
SAN_A=$!
[ -n "${SKIP_REST:-}" ] || env $NO_RUN SANITIZE_TOOLS=racecheck SANITIZE_SHARDS=6 SANITIZE_FILTER_MLP=- BACKEND_SANITIZE_FILTER=- \
  SANITIZE_FILTER_COMPONENTS="$(paste -sd: "$REST")" \
  SANITIZE_TIMEOUT="${SANITIZE_TIMEOUT:-300}" TEST_FILTER_MLP=- TEST_FILTER_COMPONENTS=- TEST_FILTER_BACKEND=- \
  scripts/gpu-check "$L/racecheck_rest" > /dev/null 2>&1 &
SAN_B=$!
[ -n "${SKIP_REST:-}" ] && SAN_B=""
env $NO_RUN SANITIZE_TOOLS=none TEST_TIMEOUT=360 scripts/gpu-check "$L/native" > /dev/null 2>&1
note "native tests: exit $?"
grep -E "tests: exit" "$L/native/summary.txt" >> "$OUT/summary.txt"
grep -hE '^\[  FAILED  \] ' "$L/native/"*tests.log 2>/dev/null | head -20 >> "$OUT/summary.txt"
wait "$SAN_A"
note "sanitizers (${A_TOOLS:-memcheck racecheck}), MLP binary + backend${A_COMPONENTS:+ + components $A_COMPONENTS}: exit $?"
grep -E "^(memcheck|racecheck|  )" "$L/sanitize_mlp/summary.txt" >> "$OUT/summary.txt"
if [ -n "$SAN_B" ]; then
  wait "$SAN_B"
  note "racecheck over $REST ($(grep -c . "$REST") tests): exit $?"
  grep -E "^(racecheck|  )" "$L/racecheck_rest/summary.txt" >> "$OUT/summary.txt"
fi

# ---- alone on the GPU: image step A/B, PSNR, training throughput -----------------------------
step() {  # name order kernels
  FUSEDNGP_GRID_KERNELS="$3" timeout 30 "$BUILD/fusedngp" train --backend cuda --data "$IMAGE" \
    --config configs/examples/image_fit_tcnn.json --batch 262144 --seconds "${STEP_SECONDS:-5}" --sample-order "$2" \
    --out "$L/step_$1" > "$L/step_$1.log" 2>&1
  note "image step $1 (--sample-order $2 ${3:+FUSEDNGP_GRID_KERNELS=$3}): exit $?, $(tail -2 "$L/step_$1.log" | sed -E 's/-> .*//' | tr '\n' ' ')"
}
step default_1 tiled ""
step spread_plain spread ""
step default_2 tiled ""
timeout 40 "$BUILD/fusedngp" train --backend cuda --data "$IMAGE" --config configs/examples/instant_ngp_image_stable.json \
  --batch 262144 --seconds 7.5 --eval-every 2.5 --out "$L/psnr" > "$L/psnr.log" 2>&1
note "PSNR at 7.5 s (stable config, default order): exit $?, $(tail -1 "$L/psnr.log" | sed -E 's/-> .*//')"
timeout 90 "$BUILD/kernels/fusedngp_mlp_bench" --train-ab --widths 16,32,64,128,256 --depths 2 --batches 1048576 \
  --train-variants warp,wgmma,tile --csv "$OUT/train_ab.csv" > "$L/train_ab.log" 2>&1
note "train A/B at 2^20: exit $?"
grep -E '^row .*fused L2' "$L/train_ab.log" >> "$OUT/summary.txt"
# Logs only: the runs' snapshots (log2 T 24: ~100 MB) made the archive too large to come
# back, and packing them ran the session-7 call past its limit.
tar -C /tmp --exclude='*.fusedngp' --exclude='*.png' --exclude='*.exr' -czf "$OUT/logs.tgz" close_check 2>/dev/null
note "done"
