#!/usr/bin/env bash
# One device call for the fused training step (issue #4: the image-fit step's
# loss and overflow check inside the fused MLP training kernel; see
# docs/CUDA_BACKEND.md, "Fused training step"): build (scripts/gpu-check, no
# tests there), the image-fit step fused and unfused (FUSEDNGP_UNFUSED_STEP=1,
# the old path, same binary) in interleaved order, the new and nearby GPU
# tests, the backend tests, and memcheck on a few small new cases, each phase
# under its own timeout so the whole fits one 300 s command. At most 8 files
# come back: summary.txt, tests.log, backend.log, components.log,
# memcheck.log, image_step.log, ptxas.txt.
#
#   FUSEDNGP_COMMIT=<hash> IMAGE_BENCH_DATA=albert.exr bench/fused_loss_run.sh OUTDIR
# Knobs: TEST_FILTER, TEST_FILTER2, BACKEND_FILTER, BACKEND_FILTER2, COMPONENT_FILTER, MEMCHECK_FILTER,
# T_BUILD / T_TESTS / T_TESTS2 / T_BACKEND / T_BACKEND2 / T_MEMCHECK (seconds), IMAGE_STEP_SECONDS,
# GC_DIR (scratch).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/one_call_common.sh" "${1:-}" bench/fused_loss_run.sh
GC="${GC_DIR:-/tmp/fused_loss_gc}"

# ---- build only ---------------------------------------------------------------------
build_only "${NINJA_TARGETS:-kernels/fusedngp_gpu_tests fusedngp_cuda_backend_tests fusedngp kernels/components/fusedngp_gpu_component_tests}" \
  "${T_BUILD:-150}"
awk '/Compiling entry function/{f=$0} /bytes stack frame/{s=$0} /Used [0-9]+ registers/{ if (f ~ /warp_train|fused_mlp_train/) print f " :: " s " :: " $0 }' \
  "$GC/build.log" 2>/dev/null | sort -u > "$OUT/ptxas.txt"
[ -x "$BUILD/fusedngp" ] || { note "no fusedngp binary: stop"; tail -30 "$GC/build.log"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader >> "$OUT/summary.txt" 2>&1

# ---- image-fit step: fused, unfused, fused --------------------------------------------
if [ -n "${IMAGE_BENCH_DATA:-}" ]; then
  : > "$OUT/image_step.log"
  for mode in fused unfused fused; do
    env=(); [ "$mode" = unfused ] && env=(FUSEDNGP_UNFUSED_STEP=1)
    echo "== $mode" >> "$OUT/image_step.log"
    env "${env[@]}" timeout 40 "$BUILD/fusedngp" train --backend cuda --data "$IMAGE_BENCH_DATA" \
      --config configs/examples/image_fit_tcnn.json --batch 262144 --seconds "${IMAGE_STEP_SECONDS:-5}" \
      --out /tmp/fused_loss_image_$mode > /tmp/image_$mode.log 2>&1
    rc=$?
    tail -3 /tmp/image_$mode.log >> "$OUT/image_step.log"
    grep -E '"(loss|psnr|steps|seconds|steps_per_second)"' /tmp/fused_loss_image_$mode/summary.json >> "$OUT/image_step.log" 2>/dev/null
    note "image-fit step $mode: exit $rc, $(tail -1 /tmp/image_$mode.log)"
  done
fi

# ---- tests, by priority: the new kernel and backend tests, memcheck, then the
# nearby existing ones (the command's limit may cut the tail) ----------------------
timeout "${T_TESTS:-60}" "$BUILD/kernels/fusedngp_gpu_tests" --gtest_brief=1 \
  --gtest_filter="${TEST_FILTER:-*FusedLoss*}" > "$OUT/tests.log" 2>&1
note "gpu tests (new): exit $?, $(passed "$OUT/tests.log")"
grep -E "^\[ errors \]" "$OUT/tests.log" | grep B1000003 >> "$OUT/summary.txt"
timeout "${T_BACKEND:-45}" "$BUILD/fusedngp_cuda_backend_tests" --gtest_brief=1 \
  --gtest_filter="${BACKEND_FILTER:-*FusedStep*}" > "$OUT/backend.log" 2>&1
note "backend tests (new): exit $?, $(passed "$OUT/backend.log")"
grep -E "one step|50 steps" "$OUT/backend.log" >> "$OUT/summary.txt"
if command -v compute-sanitizer > /dev/null; then
  timeout "${T_MEMCHECK:-30}" compute-sanitizer --tool memcheck --error-exitcode 99 "$BUILD/kernels/fusedngp_gpu_tests" \
    --gtest_brief=1 --gtest_filter="${MEMCHECK_FILTER:-*FusedLoss*rel2_warp_W64_D2_B127_*:*FusedLoss*rel2_warp_W16_D2_B1_*:*FusedLoss*l1_tile_W128_D2_B127_*:*FusedLoss*rel2_warp_f0_W32_D2_B127_*:*FusedLossFlag.EmptyBatch*}" \
    > "$OUT/memcheck.log" 2>&1
  note "memcheck: exit $?, $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1), $(passed "$OUT/memcheck.log")"
fi
timeout "${T_BACKEND2:-60}" "$BUILD/fusedngp_cuda_backend_tests" --gtest_brief=1 \
  --gtest_filter="${BACKEND_FILTER2:-*CudaBackend*:-*FusedStep*}" > /tmp/backend2.log 2>&1
note "backend tests (the others): exit $?, $(passed /tmp/backend2.log)"
cat /tmp/backend2.log >> "$OUT/backend.log"
timeout "${T_TESTS2:-45}" "$BUILD/kernels/fusedngp_gpu_tests" --gtest_brief=1 \
  --gtest_filter="${TEST_FILTER2:-FusedMlp*:WarpTraining/*D2_B127*}" > /tmp/tests2.log 2>&1
note "gpu tests (FusedMlp*, WarpTraining D2 B127): exit $?, $(passed /tmp/tests2.log)"
cat /tmp/tests2.log >> "$OUT/tests.log"
timeout 20 "$BUILD/kernels/components/fusedngp_gpu_component_tests" --gtest_brief=1 \
  --gtest_filter="${COMPONENT_FILTER:-*Loss*}" > "$OUT/components.log" 2>&1
note "component tests: exit $?, $(passed "$OUT/components.log")"
note "done"
