#!/usr/bin/env bash
# One device call for the fused optimizer update (issue #4: the image-fit
# step's update graph with fewer kernels; docs/CUDA_BACKEND.md, "Update
# graph"): build (scripts/gpu-check, no tests there), the image-fit step on
# the fused update and on the launches before it (FUSEDNGP_UNFUSED_UPDATE=1,
# same binary), twice each, interleaved, with each run's step split; then the
# new optimizer and backend tests (the update graph's node list is printed in
# backend.log), memcheck and racecheck on a few, and the nearby existing tests.
# Each phase under its own timeout; about 200-250 s in all. Files back:
# summary.txt, image_step.log, components.log, backend.log, sanitizers.log.
#
#   FUSEDNGP_COMMIT=<hash> bench/optimizer_graph_run.sh OUTDIR IMAGE
# Knobs: T_BUILD / T_COMPONENTS / T_BACKEND / T_SANITIZE / T_SANITIZE_BACKEND / T_REST (seconds),
# SKIP_COMPONENT_SANITIZE=1,
# IMAGE_STEP_SECONDS (default 5), COMPONENT_FILTER, BACKEND_FILTER, BACKEND_FILTER2
# (the nearby backend tests at the end), GC_DIR. Worst case (every timeout)
# about 400 s; a fresh build of the three targets is most of it.
set -uo pipefail
IMAGE="${2:?usage: bench/optimizer_graph_run.sh OUTDIR IMAGE}"
source "$(dirname "${BASH_SOURCE[0]}")/one_call_common.sh" "${1:-}" bench/optimizer_graph_run.sh
IMAGE="$(cd "$(dirname "$IMAGE")" && pwd)/$(basename "$IMAGE")"
GC="${GC_DIR:-/tmp/optimizer_graph_gc}"
COMPONENTS="$BUILD/kernels/components/fusedngp_gpu_component_tests"
BACKEND="$BUILD/fusedngp_cuda_backend_tests"

# ---- build only ---------------------------------------------------------------------
build_only "fusedngp fusedngp_cuda_backend_tests kernels/components/fusedngp_gpu_component_tests" "${T_BUILD:-150}"
grep -A3 -E "Function properties for .*adam_fused_update_kernel" "$GC/build.log" 2>/dev/null | head -4 >> "$OUT/summary.txt"
[ -x "$BUILD/fusedngp" ] || { note "no fusedngp binary: stop"; tail -30 "$GC/build.log"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader >> "$OUT/summary.txt" 2>&1

# ---- image-fit step: fused, per-group, fused, per-group -------------------------------
# ms/step from the run's steps and seconds; the split is the last step's events
# (forward / backward / optimizer: the update graph plus zero_if_flagged).
: > "$OUT/image_step.log"
i=0
for mode in fused per_group fused per_group; do
  i=$((i + 1))
  env=(); [ "$mode" = per_group ] && env=(FUSEDNGP_UNFUSED_UPDATE=1)
  run_dir="/tmp/optimizer_graph_image_$i"
  echo "== $mode (run $i)" >> "$OUT/image_step.log"
  env "${env[@]}" timeout 40 "$BUILD/fusedngp" train --backend cuda --data "$IMAGE" \
    --config configs/examples/image_fit_tcnn.json --batch 262144 --seconds "${IMAGE_STEP_SECONDS:-5}" \
    --out "$run_dir" > "$run_dir.log" 2>&1
  rc=$?
  tail -3 "$run_dir.log" >> "$OUT/image_step.log"
  ms=$(python3 -c "import json,sys; s=json.load(open(sys.argv[1])); t=s['last_step_ms']; print('%.4f ms/step over %d steps, PSNR %.2f, last step fwd %.4f bwd %.4f opt %.4f ms' % (1000.0*s['seconds']/max(1,s['steps_this_run']), s['steps_this_run'], s['psnr'] or 0, t['forward'], t['backward'], t['optimizer']))" \
       "$run_dir/summary.json" 2>/dev/null || echo "no summary")
  note "image-fit step $mode: exit $rc, $ms"
done

# ---- the new tests first, then sanitizers, then the nearby ones ----------------------------
timeout "${T_COMPONENTS:-40}" "$COMPONENTS" --gtest_brief=1 \
  --gtest_filter="${COMPONENT_FILTER:-*FusedUpdate*:All/GpuOptimizerTest.*:GpuTest.Adam*:GpuTest.Optimizer*:GpuTest.SparseGroup*}" \
  > "$OUT/components.log" 2>&1
note "component tests (optimizers): exit $?, $(passed "$OUT/components.log")"
timeout "${T_BACKEND:-60}" "$BACKEND" --gtest_brief=0 \
  --gtest_filter="${BACKEND_FILTER:-*UpdateGraphNodes*:*FusedUpdate*:*Overflow*:*OneStep*}" > "$OUT/backend.log" 2>&1
note "backend tests (update graph): exit $?, $(passed "$OUT/backend.log")"
grep -E "^update graph|^  |^(kernel|conditional|memcpy|after)|PSNR after|^split" "$OUT/backend.log" >> "$OUT/summary.txt"
: > "$OUT/sanitizers.log"
# sanitize TOOL LABEL SECONDS BINARY FILTER [ENV=VALUE]: one tool over one filter, into sanitizers.log.
sanitize() {
  echo "== $1 $2" >> "$OUT/sanitizers.log"
  env ${6:-} timeout "$3" compute-sanitizer --tool "$1" --error-exitcode 99 "$4" --gtest_brief=1 \
    --gtest_filter="$5" >> "$OUT/sanitizers.log" 2>&1
  note "$1 ($2): exit $?, $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizers.log" | tail -1)"
}
if command -v compute-sanitizer > /dev/null; then
  # The backend's update tests run without the conditional graph: the tool
  # faults on any graph with an IF node (bench/conditional_graph_probe.cu),
  # and the plain launches run the same kernels (UpdateGraphNodes skips).
  for tool in memcheck racecheck; do
    [ -z "${SKIP_COMPONENT_SANITIZE:-}" ] && sanitize $tool "component fused-update tests" "${T_SANITIZE:-40}" \
      "$COMPONENTS" 'GpuTest.FusedUpdate*:All/GpuOptimizerTest.FusedUpdate*'
    sanitize $tool "backend update tests" "${T_SANITIZE_BACKEND:-120}" "$BACKEND" \
      '*UpdateGraphNodes*:*FusedUpdateMatches*' FUSEDNGP_NO_CONDITIONAL_GRAPH=1
  done
fi
timeout "${T_REST:-40}" "$BACKEND" --gtest_brief=1 \
  --gtest_filter="${BACKEND_FILTER2:-*Sampling*:*FusedStep*:*HotSwap*:*Snapshot*:*Cublas*}" > /tmp/optimizer_graph_backend2.log 2>&1
note "backend tests (the others): exit $?, $(passed /tmp/optimizer_graph_backend2.log)"
cat /tmp/optimizer_graph_backend2.log >> "$OUT/backend.log"
note "done"
