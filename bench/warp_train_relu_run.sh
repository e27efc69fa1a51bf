#!/usr/bin/env bash
# One short device call for the warp training kernel's ReLU flavour
# (kWarpRelu; docs/FUSED_MLP_DESIGN.md, "Warp training: ReLU flavour"):
# bench/warp_train_run.sh with this flavour's defaults: the training A/B with
# the ReLU flavour ("warp", the planner's automatic pick) against the same
# variant with runtime activations ("f0") and the tile kernel, every variant
# twice in interleaved order, then the training tests, then compute-sanitizer
# memcheck and racecheck on a few ReLU-flavour cases, each phase under its own
# timeout so the whole fits one command's limit. Every knob of
# bench/warp_train_run.sh still overrides these defaults.
#
#   FUSEDNGP_COMMIT=<hash> bench/warp_train_relu_run.sh OUTDIR
export GC_DIR="${GC_DIR:-/tmp/warp_train_relu_gc}"
export BENCH_ARGS="${BENCH_ARGS:---train-ab --widths 16,32,64 --depths 2 --batches 262144,1048576}"
export TEST_FILTER="${TEST_FILTER:-WarpTraining/*:*Training*:*Deterministic*}"
export MEMCHECK_FILTER="${MEMCHECK_FILTER:-WarpTraining/*/bwd_din_relu_W16_D2_B127_*:WarpTraining/*/l2_acc_relu_sh12_W32_D2_B1001_*:WarpTraining/*/l1_din_relu_W64_D3_B5001_*}"
export RACECHECK_FILTER="${RACECHECK_FILTER:-WarpTraining/*/l2_acc_relu_sh12_W32_D2_B1001_*}"
export T_BUILD="${T_BUILD:-110}" T_BENCH="${T_BENCH:-45}" T_TESTS="${T_TESTS:-70}"
export T_MEMCHECK="${T_MEMCHECK:-15}" T_RACECHECK="${T_RACECHECK:-15}"
exec "$(dirname "${BASH_SOURCE[0]}")/warp_train_run.sh" "$@"
