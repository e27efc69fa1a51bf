#!/usr/bin/env bash
# One device call for the coherent sample order + warp-aggregated grid
# gradient (issue #4, branch grid-aggregate; docs/GPU_COMPONENTS.md, "Grid",
# "Warp aggregation"): build only (scripts/gpu-check knobs), the grid kernel
# bench's sample-order A/B (random vs tiled inputs; gradient kernel with
# shared-level aggregation off / on; forward), the image-fit step for
# spread vs tiled order x shared-level aggregation off/on, the new and the existing grid
# tests, memcheck and racecheck on a few new cases, the sampling tests, and
# the stable config's PSNR at 7.5 s for spread vs tiled. Each phase has its
# own timeout, in order of priority; the whole is ~250 s (~290 with the
# Nsight Compute pass at the end; every timeout hit: ~400).
# Files back (<= 8): summary.txt, grid_ab.csv, image_step.log, psnr.log,
# ptxas.txt, ncu.txt (Nsight Compute on the gradient kernel, tiled order,
# aggregation on and off; SKIP_NCU=1 skips), logs.tgz (every log).
# Session 7 removed the global-level aggregation (gradient_warp_aggregate: it
# never paid on the H200) and made shared-level aggregation the CUDA backend's
# default for image data in the tiled order, so every run below sets
# gradient_warp_aggregate_shared explicitly (0 or 1).
#
#   FUSEDNGP_COMMIT=<hash> bench/grid_aggregate_run.sh OUTDIR IMAGE
# Knobs: T_BUILD, T_BENCH, T_TESTS, T_TESTS2, T_MEMCHECK, T_RACECHECK, T_BACKEND (seconds),
# T_NCU, STEP_SECONDS (image step, default 5), PSNR_SECONDS (default 7.5), SKIP_PSNR=1, SKIP_NCU=1.
set -uo pipefail
IMAGE="${2:?usage: bench/grid_aggregate_run.sh OUTDIR IMAGE}"
source "$(dirname "${BASH_SOURCE[0]}")/one_call_common.sh" "${1:-}" bench/grid_aggregate_run.sh
IMAGE="$(cd "$(dirname "$IMAGE")" && pwd)/$(basename "$IMAGE")"
GC=/tmp/grid_aggregate_gc
LOGS=/tmp/grid_aggregate_logs
rm -rf "$LOGS" && mkdir -p "$LOGS"
COMPONENTS="$BUILD/kernels/components/fusedngp_gpu_component_tests"

# ---- build only ------------------------------------------------------------------
build_only "fusedngp kernels/components/fusedngp_gpu_component_tests kernels/components/fusedngp_grid_bench fusedngp_cuda_backend_tests" \
  "${T_BUILD:-150}"
cp "$GC/build.log" "$LOGS/" 2>/dev/null
# Registers of the grid gradient kernels (plain: 32 for 2D F=2; aggregated: 37 with nvcc 13.0 since session 7, was 40).
awk '/Compiling entry function/{f=$0} /bytes stack frame/{s=$0} /Used [0-9]+ registers/{ if (f ~ /grid_param_gradient/) print f " :: " s " :: " $0 }' \
  "$GC/build.log" 2>/dev/null | sed -E 's/.*grid_param_gradient_kernelILi([0-9])ELi([0-9])ELb([01])E[^:]*/gradient D=\1 F=\2 aggregated=\3/' \
  | sort -u > "$OUT/ptxas.txt"
grep -E "D=2 F=2" "$OUT/ptxas.txt" >> "$OUT/summary.txt"
[ -x "$BUILD/fusedngp" ] || { note "no fusedngp binary: stop"; tail -30 "$GC/build.log"; tar -C /tmp -czf "$OUT/logs.tgz" "$(basename "$LOGS")"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader >> "$OUT/summary.txt" 2>&1

# ---- grid bench: sample-order A/B -------------------------------------------------
timeout "${T_BENCH:-40}" "$BUILD/kernels/components/fusedngp_grid_bench" --order-ab-only --iters 20 \
  --csv "$OUT/grid_ab.csv" > "$LOGS/grid_ab.log" 2>&1
note "grid bench order A/B: exit $?"
grep -E "forward default|dparams kernel" "$LOGS/grid_ab.log" | sed -E 's/ +/ /g' >> "$OUT/summary.txt"

# ---- image-fit step: order x aggregation ---------------------------------------------
# off = gradient_warp_aggregate_shared=0; shared = gradient_warp_aggregate_shared=1 (the backend's
# default for the tiled order, 0 for spread; explicit here so each run is what its name says).
: > "$OUT/image_step.log"
run_step() {  # name order kernels
  local name=$1 order=$2 kernels=$3
  echo "== $name: --sample-order $order FUSEDNGP_GRID_KERNELS=$kernels" >> "$OUT/image_step.log"
  FUSEDNGP_GRID_KERNELS="$kernels" timeout 30 "$BUILD/fusedngp" train --backend cuda --data "$IMAGE" \
    --config configs/examples/image_fit_tcnn.json --batch 262144 --seconds "${STEP_SECONDS:-5}" --sample-order "$order" \
    --out "/tmp/grid_aggregate_$name" > "$LOGS/step_$name.log" 2>&1
  local rc=$?
  tail -2 "$LOGS/step_$name.log" >> "$OUT/image_step.log"
  note "image-fit step $name: exit $rc, $(tail -2 "$LOGS/step_$name.log" | tr '\n' ' ')"
}
OFF=gradient_warp_aggregate_shared=0
AGG=gradient_warp_aggregate_shared=1
run_step spread_off spread "$OFF"
run_step tiled_off tiled "$OFF"
run_step tiled_shared tiled "$AGG"
run_step spread_shared spread "$AGG"
run_step spread_off_again spread "$OFF"

# ---- tests: the new ones first, then memcheck, then the existing grid tests --------------
timeout "${T_TESTS:-75}" "$COMPONENTS" --gtest_brief=1 \
  --gtest_filter="${TEST_FILTER:-*WarpAggregat*:*GridKernelOptions*}" > "$LOGS/tests_new.log" 2>&1
note "component tests (new): exit $?, $(passed "$LOGS/tests_new.log")"
grep -E '^\[  FAILED  \] ' "$LOGS/tests_new.log" | head -20 >> "$OUT/summary.txt"
timeout "${T_BACKEND:-30}" "$BUILD/fusedngp_cuda_backend_tests" --gtest_brief=1 --gtest_filter="*Sampling*:*OneStep*" \
  > "$LOGS/backend.log" 2>&1
note "backend tests (sampling, one step): exit $?, $(passed "$LOGS/backend.log")"
grep -E '^\[  FAILED  \] ' "$LOGS/backend.log" | head -10 >> "$OUT/summary.txt"
if command -v compute-sanitizer > /dev/null; then
  MEMCHECK_CASES='WarpAggregate/GpuGridCoherentInputTest.MatchesCpu/WarpAggregateShared_HashLinear2DF2:WarpAggregate/GpuGridCoherentInputTest.MatchesCpu/WarpAggregateAllShared_TiledNearest3DF8:WarpAggregate/GpuGridCoherentInputTest.MatchesCpu/WarpAggregateSharedLevelMajorNoPairs_HashLinear3DF1:AllPaths/GpuGridKernelPathTest.MatchesCpu/WarpAggregateShared_TiledSmoothstep2DF4:GpuTest.GridWarpAggregationAtTheEndOfAnOddDenseTable'
  timeout "${T_MEMCHECK:-30}" compute-sanitizer --tool memcheck --error-exitcode 99 "$COMPONENTS" --gtest_brief=1 \
    --gtest_filter="${MEMCHECK_FILTER:-$MEMCHECK_CASES}" > "$LOGS/memcheck.log" 2>&1
  note "memcheck: exit $?, $(grep -E 'ERROR SUMMARY' "$LOGS/memcheck.log" | tail -1), $(passed "$LOGS/memcheck.log")"
  timeout "${T_RACECHECK:-20}" compute-sanitizer --tool racecheck --error-exitcode 99 "$COMPONENTS" --gtest_brief=1 \
    --gtest_filter="${RACECHECK_FILTER:-AllPaths/GpuGridKernelPathTest.MatchesCpu/WarpAggregateAllShared_HashLinear2DF2:AllPaths/GpuGridKernelPathTest.MatchesCpu/WarpAggregateShared_TiledLinear3DF1}" \
    > "$LOGS/racecheck.log" 2>&1
  note "racecheck: exit $?, $(grep -E 'RACECHECK SUMMARY' "$LOGS/racecheck.log" | tail -1), $(passed "$LOGS/racecheck.log")"
fi

# ---- quality: the stable config's PSNR at 7.5 s, spread vs tiled (aggregation on for tiled) ----
if [ -z "${SKIP_PSNR:-}" ]; then
  : > "$OUT/psnr.log"
  for order in spread tiled; do
    kernels="$OFF"; [ "$order" = tiled ] && kernels="$AGG"
    echo "== $order FUSEDNGP_GRID_KERNELS=$kernels" >> "$OUT/psnr.log"
    FUSEDNGP_GRID_KERNELS="$kernels" timeout 40 "$BUILD/fusedngp" train --backend cuda --data "$IMAGE" \
      --config configs/examples/instant_ngp_image_stable.json --batch 262144 --seconds "${PSNR_SECONDS:-7.5}" \
      --eval-every 2.5 --sample-order "$order" --out "/tmp/grid_aggregate_psnr_$order" > "$LOGS/psnr_$order.log" 2>&1
    rc=$?
    tail -2 "$LOGS/psnr_$order.log" >> "$OUT/psnr.log"
    cp "/tmp/grid_aggregate_psnr_$order/summary.json" "$LOGS/psnr_${order}_summary.json" 2>/dev/null
    grep -E 'PSNR|psnr' "$LOGS/psnr_$order.log" | tail -6 >> "$OUT/psnr.log"
    note "PSNR $order: exit $rc, $(tail -1 "$LOGS/psnr_$order.log")"
  done
fi

# ---- the existing grid tests (every path incl. the new cases), as time allows ------------
timeout "${T_TESTS2:-30}" "$COMPONENTS" --gtest_brief=1 --gtest_filter="${TEST_FILTER2:-*Grid*:-*WarpAggregat*}" \
  > "$LOGS/tests_grid.log" 2>&1
note "component tests (grid, the rest): exit $?, $(passed "$LOGS/tests_grid.log")"
grep -E '^\[  FAILED  \] ' "$LOGS/tests_grid.log" | head -20 >> "$OUT/summary.txt"

# ---- Nsight Compute on the gradient kernel inside the image-fit step, tiled order, aggregation on / off
# (one launch each after 20 warm-up launches): L2 throughput and duration, for when the numbers surprise.
NCU="$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)"
if [ -z "${SKIP_NCU:-}" ] && [ -n "$NCU" ]; then
  : > "$OUT/ncu.txt"
  for kernels in "$AGG" "$OFF"; do
    echo "== tiled, FUSEDNGP_GRID_KERNELS=$kernels" >> "$OUT/ncu.txt"
    FUSEDNGP_GRID_KERNELS="$kernels" timeout "${T_NCU:-40}" "$NCU" --clock-control none --section SpeedOfLight \
      --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --graph-profiling node -k regex:grid_param_gradient \
      --launch-skip 20 --launch-count 1 "$BUILD/fusedngp" train --backend cuda --data "$IMAGE" \
      --config configs/examples/image_fit_tcnn.json --batch 262144 --steps 30 --sample-order tiled \
      --out /tmp/grid_aggregate_ncu >> "$OUT/ncu.txt" 2>&1
    note "ncu gradient kernel (tiled, $kernels): exit $?, $(grep -E 'Duration|L2 Cache Throughput' "$OUT/ncu.txt" | tail -2 | sed -E 's/ +/ /g' | tr '\n' ' ')"
  done
fi

tar -C /tmp -czf "$OUT/logs.tgz" "$(basename "$LOGS")" 2>/dev/null
note "done"
