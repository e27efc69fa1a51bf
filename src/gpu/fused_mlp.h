// FusedMlp: a fully fused MLP on tensor cores (host side).
//
// Same function and parameter layout as the CPU Mlp: n_in -> D hidden layers
// of width W -> n_out, no biases; weight l is [fan_out][fan_in] row-major,
// layers consecutive, fp32 master copy. The kernels use fp16 copies of the
// weights (fp32 accumulation) made by set_params*.
//
// Data: batch-major fp32 device arrays, row = sample ([batch][n_in] in,
// [batch][n_out] out), any batch size; inference and train_step also on fp16
// input (inference_half, also fp16 out; train_step_half).
//
// Training API. forward() stores nothing: the training kernel recomputes the
// forward pass on chip for each tile of rows instead of keeping activations
// in device memory, so backward() takes the input again:
//   forward(in, out)                               -> out (for the loss)
//   backward(in, dL/dout, dL/din, dL/dW)           -> gradients
// or, when the loss is elementwise L1/L2/RelativeL2, one fused call that needs no
// separate forward:
//   train_step(in, target, loss, out, dL/din, dL/dW)
// All calls are asynchronous on the given stream, never synchronize the host
// and never allocate, so they can be captured in a CUDA graph. Calls that
// produce weight gradients share this object's scratch buffer: do not run
// two of them concurrently on different streams.
#pragma once

#include "gpu/cuda_check.h"
#include "gpu/device_memory.h"
#include "gpu/gpu_mlp.h"
#include "gpu/mlp_fragment_slots.h"
#include "fused_mlp_args.h"
#include "fused_mlp_launch.h"
#include "fused_mlp_warp_launch.h"
#include "networks/activation.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fusedngp::gpu {

// FusedMlp supports widths 16, 32, 64, 128, 256 and 1..16 hidden layers.
using FusedMlpConfig = GpuMlpConfig;

// Optional overrides of the launch shape (benchmarking); 0 = automatic.
struct FusedMlpTuning {
    int row_tiles_per_warp = 0;     // 1 or 2 (16 or 32 rows per warp slab; both inference kernels)
    uint32_t rows_per_tile = 0;     // rows per block tile (rounded down to the slab)
    // true: pick the tile that keeps the most rows resident per SM (then more
    // blocks for inference, larger tiles for training); false: largest tile.
    bool occupancy_first = true;
    // Prefetch the next tile's input (and this tile's dL/dout or target)
    // into L2 at the start of each tile.
    bool l2_prefetch = true;
    // Shrink the row tile (down to one warp slab) for batches too small to
    // give every resident block a full tile, so small batches spread over
    // the SMs instead of queueing on a few (batch 1 at W = 256 went from one
    // 192-row tile on one SM to one 32-row tile). Off when rows_per_tile is set.
    bool fill_gpu = true;

    // Resource restrictions, to emulate a GPU with less on-chip memory or
    // fewer resident blocks per SM (the fused-MLP study, docs/FUSED_MLP_STUDY.md).
    // 0 = the device's own limit.
    // Shared memory one block may use (an RTX 3090 allows 99 KB).
    size_t smem_per_block_cap = 0;
    // Shared memory per SM (RTX 3090: 100 KB, A100: 164 KB). Also sets the
    // kernels' preferred carve-out, so the rest of the SM's 256 KB serves as L1
    // as it would on a GPU configured this way.
    size_t smem_per_sm_cap = 0;
    // Resident blocks per SM (the grid is sized to this many per SM).
    int max_blocks_per_sm = 0;

    // Inference at W <= 64 (n_in <= 64) runs the register-resident warp
    // kernel (kernels/fused_mlp_warp_device.cuh); true forces the block-tile
    // kernel that W >= 128 uses (A/B tests and benchmarks).
    bool tile_inference = false;
    // Warp kernel: weights staged in shared memory once per block (1), read
    // through L1 (0), or chosen automatically (-1).
    int warp_weights_in_smem = -1;
    // Warp kernel flavour bits (WarpFlavor in kernels/fused_mlp_warp_launch.h;
    // -1 = automatic). Bits the shape or the weight placement cannot use are
    // dropped (FusedMlp::warp_flavor_for).
    int warp_flavor = -1;
    // Warp training: 1 runs the kernels with the fused loss's extras
    // (RelativeL2, loss sums, dL/dinput flag) for every call; -1 (default)
    // only for calls that use them, the ReLU flavour's lean kernels otherwise.
    int warp_train_extras = -1;
    // Warp kernel grid of one slab per warp (every slab's warp launched at
    // once) instead of the persistent grid of resident blocks.
    bool warp_full_grid = false;
    // Training (backward, train_step) at W = 16/32/64 (n_in <= 64) has a
    // register-resident warp training kernel
    // (kernels/fused_mlp_warp_train_device.cuh) when it keeps at least 8
    // warps per SM; a call runs it from warp_training_min_batch rows on
    // (faster there) and the block-tile kernel below (fewer fixed costs).
    // true: the block-tile kernel for every batch (A/B tests and benchmarks).
    bool tile_training = false;
    // The warp training kernel for every batch, and whenever it fits at all
    // (1 block per SM), e.g. deep networks whose weight-gradient sums leave
    // room for fewer warps (A/B tests and benchmarks).
    bool force_warp_training = false;
    // Smallest batch that runs the warp training kernel; 0 = the measured
    // crossover (warp_training_crossover).
    uint32_t warp_training_min_batch = 0;
    // Warp training kernel variant: weight-gradient sums per warp (0), one
    // per block (1), one per block at 128 registers (2, W = 64 only), or
    // chosen automatically (-1); and the warps per block of the shared modes
    // (0 = automatic).
    int warp_train_dw_mode = -1;
    int warp_train_warps = 0;
    // Warp training kernel flavour (WarpTrainVariant::flavor): 0 = the
    // activations switched at run time, kWarpRelu (1) = hidden ReLU and
    // output None compiled in, -1 = automatic (kWarpRelu where the network
    // has exactly those activations). kWarpRelu on another network is
    // dropped (FusedMlp::warp_train_flavor_for): it never runs the wrong
    // activations.
    int warp_train_flavor = -1;
    // Training through the Hopper wgmma kernel (kernels/fused_mlp_wgmma_device.cuh)
    // for every batch, where it applies: a compute capability 9.0 device, W =
    // 64 or 128, hidden ReLU, output None, n_in <= 64, n_out <= 16, the depth
    // within shared memory (1-3 hidden layers at W = 128, up to 8 at W = 64);
    // elsewhere the usual choice. Planned by default where it applies (H200,
    // 32 -> W x 2 -> 16 at 2^20: W = 128 1.72 G samples/s against the tile
    // kernel's 1.00, W = 64 3.90 against the warp kernel's 3.23):
    // wgmma_train_requested. true forces it even where FUSEDNGP_WGMMA_TRAIN=0
    // turns it off.
    bool wgmma_train = false;
    // Inference through the Hopper wgmma kernel
    // (kernels/fused_mlp_wgmma_inference_device.cuh) where it applies: a
    // compute capability 9.0 device, W = 64 or 128, hidden ReLU, n_in <= 64,
    // n_out <= 16, the weights within shared memory (up to 7 hidden layers at
    // W = 128). -1 (default): where it measured faster than the other
    // kernels (wgmma_inference_requested, wgmma_inference_wins); 1:
    // wherever it applies; 0: never.
    // tile_inference takes precedence.
    int wgmma_inference = -1;
    // Training through the column-split wgmma kernel
    // (kernels/fused_mlp_wgmma_split_device.cuh: W = 128, 64-row tiles, 1-4
    // hidden layers, otherwise the wgmma training kernel's shapes) instead
    // of the 128-row one. -1 (default): where the 128-row kernel does not
    // fit (wgmma_split_choice); 1: wherever it applies; 0: never.
    int wgmma_split = -1;
};

// Whether an object with this tuning plans the wgmma training kernel (where
// the device and shape allow it): always with tuning.wgmma_train; otherwise
// unless the tuning forces the tile or the warp training kernel or
// FUSEDNGP_WGMMA_TRAIN=0 is set (an A/B and escape knob).
bool wgmma_train_requested(const FusedMlpTuning& tuning);

// Whether the tuning or the environment asks for the wgmma training kernel
// wherever it applies (tuning.wgmma_train, FUSEDNGP_WGMMA_TRAIN=1), also
// where another kernel measured faster (wgmma_train_wins_by_default).
bool wgmma_train_forced(const FusedMlpTuning& tuning);

// Where an object with this tuning plans the column-split wgmma training
// kernel: never when the tuning forces the tile or warp training kernel;
// else as FusedMlpTuning::wgmma_split says (0 never, 1 wherever it applies),
// else as FUSEDNGP_WGMMA_SPLIT (0 / 1) says, else never with
// FUSEDNGP_WGMMA_TRAIN=0, else only where the 128-row wgmma kernel does not
// fit (W = 128 with 4 hidden layers). H100, e237f83: there 1.6-2.0x the
// block-tile kernel; at 1-3 hidden layers 0.6-0.9x the 128-row kernel.
enum class WgmmaSplit { Never, WhereOnlyItFits, Always };
WgmmaSplit wgmma_split_choice(const FusedMlpTuning& tuning);

// W = 128 with one hidden layer trains faster on the block-tile kernel than on
// the 128-row wgmma kernel (H100, e237f83: 1.04-1.15x at 2^16-2^20), so the
// wgmma kernel is planned there only when forced (wgmma_train_forced). The
// depths that take it with deltas in place (W = 128 at 3 hidden layers, W =
// 64 from 6, or 5 with n_in > 32) measured 2.1-2.6x the kernels they replace.
bool wgmma_train_wins_by_default(const MlpShape& shape);

// Whether an object of this shape and tuning plans the wgmma inference
// kernel for fp32 or (half_io) fp16 I/O, where the device and shape allow
// it: FusedMlpTuning::wgmma_inference when set, else FUSEDNGP_WGMMA_INFERENCE
// (0 or 1) when set, else where it measured faster (docs/FUSED_MLP_DESIGN.md,
// "How a kernel is chosen", wgmma_inference_wins). Never with tile_inference.
bool wgmma_inference_requested(const FusedMlpTuning& tuning, uint32_t width, uint32_t hidden_layers, bool half_io);
// Where the wgmma inference kernel measured faster than the kernel it would
// replace at every batch from 2^14 to 2^20 rows (H100, e237f83): W = 128
// with fp16 I/O at every depth (1.2-2.8x the block-tile kernel) and with
// fp32 I/O from 2 hidden layers (1.1-2.2x; 0.78-0.99x at 1); W = 64 with
// fp16 I/O from 3 hidden layers (1.07-1.52x the warp kernel; with fp32 I/O
// 0.5-0.7x from 2^18 rows).
bool wgmma_inference_wins(uint32_t width, uint32_t hidden_layers, bool half_io);

// Which training kernel a call runs: host logic only (no device), so it is
// unit-tested on the CPU. The warp kernel (when the object has a plan for it)
// from min_batch rows on, the block-tile kernel below; force_warp_training
// takes the warp kernel for every batch, tile_training the tile kernel.
bool choose_warp_training(bool has_warp_plan, const FusedMlpTuning& tuning, uint32_t min_batch, uint32_t batch);
// Smallest batch at which the warp training kernel beats the block-tile one
// (tuning.warp_training_min_batch when set, else the crossover measured on
// the H200 for this width, 2^17 or 2^18 rows; 0 with force_warp_training).
// See docs/FUSED_MLP_DESIGN.md, "How a kernel is chosen".
uint32_t warp_training_min_batch_for(uint32_t width, const FusedMlpTuning& tuning);

// One evaluated variant of the warp training kernel: its warps resident per
// SM (occupancy API), 0 when it does not fit.
struct WarpTrainCandidate {
    WarpTrainVariant variant;
    int resident_warps = 0;
};
// The variant FusedMlp plans (index into `candidates`, or -1 for none, then
// the block-tile kernel runs): per-warp sums where they keep at least 16
// warps per SM, else the per-block-sum variant with the most resident warps
// (ties to the earlier candidate: list larger blocks first), and only with at
// least min_warps resident. Host logic, tested on the CPU.
int choose_warp_train_variant(const std::vector<WarpTrainCandidate>& candidates, int min_warps);

class FusedMlp final : public GpuMlp {
public:
    // Launch plan of one kernel (inference or training).
    struct PassPlan {
        uint32_t rows_per_tile = 0;
        int row_tiles_per_warp = 0;
        size_t smem_bytes = 0;
        uint32_t max_blocks = 0;    // resident blocks on the whole GPU
        KernelInfo kernel;
        // The register-resident warp kernel (inference: fused_mlp_warp_device.cuh,
        // training: fused_mlp_warp_train_device.cuh); rows_per_tile is then one
        // warp's slab, 16 * row_tiles_per_warp.
        bool warp = false;
        WarpKernelVariant warp_variant;
        // The warp training kernel's variant (training plans only).
        WarpTrainVariant warp_train;
        // Warps per block; a block (tile kernels) or a warp (warp kernels)
        // takes one rows_per_tile unit of the batch at a time.
        int block_warps = kBlockWarps;
        int warps_per_block() const { return block_warps; }
        // The Hopper wgmma training kernel (training plans only; 128-row
        // tiles of 2 warpgroups, FusedMlpTuning::wgmma_train).
        bool wgmma = false;
        // With wgmma: its column-split form (64-row tiles, each warpgroup 64
        // hidden columns; FusedMlpTuning::wgmma_split).
        bool wgmma_split = false;
        // The Hopper wgmma inference kernel (inference plans only; 64-row
        // chunks, one per warpgroup, FusedMlpTuning::wgmma_inference).
        bool wgmma_inference = false;
    };

    explicit FusedMlp(const FusedMlpConfig& config, const FusedMlpTuning& tuning = {});

    const char* kernel_name() const override { return "FullyFusedMLP"; }
    const FusedMlpConfig& config() const { return config_; }
    const MlpShape& shape() const { return shape_; }
    size_t n_params() const override;
    void reserve(uint32_t) override {}  // no per-sample storage

    // Copies fp32 weights from the host and converts them (synchronous).
    void set_params(const float* host_params) override;
    // Same from device memory, asynchronous on `stream`.
    void set_params_device(const float* d_params, cudaStream_t stream) override;
    // The fp32 master copy on the device (n_params() floats).
    const float* params_device() const { return master_.as<float>(); }
    // The fp32 master and the fp16 fragment buffers (w_fwd, w_bwd) with their
    // layout, for an optimizer that writes each updated weight into them
    // itself (GpuOptimizer::set_fragment_outputs) instead of a
    // set_params_device after the step. Padding slots are never written
    // there: they stay the zeros the conversion wrote.
    MlpFragmentTargets fragment_targets();

    // dL/dout (or the L1/L2 gradient) is multiplied by this before it is
    // rounded to fp16, and the gradients are divided by it again in fp32, so
    // small loss gradients (mean over 2^20 samples) do not underflow fp16.
    void set_loss_scale(float scale) override;
    float loss_scale() const override { return loss_scale_; }

    void inference(const float* d_in, float* d_out, uint32_t batch, cudaStream_t stream) const override;
    // Inference on fp16 data ([batch][n_in] halves in, [batch][n_out] out),
    // read and written by the kernels themselves: the input halves are the
    // first layer's operand as they are, each output is the fp32 result
    // rounded once. Half the bytes per sample of inference(), as a fused
    // encoding -> network pipeline passes them.
    void inference_half(const __half* d_in, __half* d_out, uint32_t batch, cudaStream_t stream) const;
    // Training forward: the same computation as inference (nothing is stored).
    void forward(const float* d_in, float* d_out, uint32_t batch, cudaStream_t stream) override;
    // d_din and d_dweights may be null. d_dweights gets dL/dW in the caller's
    // parameter layout, overwritten (or added to when accumulate is true).
    void backward(const float* d_in, const float* d_dout, float* d_din, float* d_dweights, uint32_t batch,
                  cudaStream_t stream, bool accumulate = false) override;
    // The same, setting *d_din_nonfinite to 1 when a stored dL/din value is
    // inf or NaN (as train_step's).
    void backward(const float* d_in, const float* d_dout, float* d_din, float* d_dweights, uint32_t batch,
                  cudaStream_t stream, bool accumulate, unsigned int* d_din_nonfinite);
    // Fused forward + elementwise loss (mean over batch * n_out) + backward.
    // d_out, d_din, d_dweights may be null. d_mean_loss (optional): the mean
    // loss, unscaled, as a device float (deterministic; the value GpuLoss's
    // evaluate writes). d_din_nonfinite (optional, needs d_din): set to 1
    // when a stored dL/din value is inf or NaN, left alone otherwise.
    void train_step(const float* d_in, const float* d_target, LossKind loss, float* d_out, float* d_din,
                    float* d_dweights, uint32_t batch, cudaStream_t stream, bool accumulate = false,
                    float* d_mean_loss = nullptr, unsigned int* d_din_nonfinite = nullptr);

    // train_step on fp16 input (d_in: [batch][n_in] halves, read by the
    // kernels as they are, the first layer's operand; the target and every
    // other array fp32). Same results as train_step on the same values in
    // fp32 (the kernels round that input to fp16 at the same point).
    void train_step_half(const __half* d_in, const float* d_target, LossKind loss, float* d_out, float* d_din,
                         float* d_dweights, uint32_t batch, cudaStream_t stream, bool accumulate = false,
                         float* d_mean_loss = nullptr, unsigned int* d_din_nonfinite = nullptr);

    const PassPlan& inference_plan() const { return inference_plan_; }
    const PassPlan& inference_half_plan() const { return inference_half_plan_; }
    // The training plan of large batches: the wgmma kernel's where it
    // applies, else the warp training kernel's when there is one, else the
    // block-tile kernel's.
    const PassPlan& training_plan() const {
        if (has_wgmma_training_) return wgmma_training_plan_;
        return has_warp_training_ ? warp_training_plan_ : tile_training_plan_;
    }
    // The training plan a call with this batch runs (choose_warp_training).
    const PassPlan& training_plan_for(uint32_t batch) const;
    // The plan a train_step_half call runs (extras: it asks for a mean loss,
    // the dL/dinput flag or RelativeL2, needs_fused_loss_extras).
    const PassPlan& training_half_plan_for(uint32_t batch, bool extras) const;
    // Smallest batch that runs the warp training kernel (UINT32_MAX: never).
    uint32_t warp_training_min_batch() const { return warp_min_batch_; }
    // Rows per tile a call with this batch uses (the plan's, or fewer, see
    // FusedMlpTuning::fill_gpu).
    uint32_t rows_per_tile_for(uint32_t batch, const PassPlan& plan) const;
    std::string describe() const override;

private:
    PassPlan plan_pass(bool training) const;
    PassPlan half_io_plan(const PassPlan& fp32_plan) const;
    void run_inference_kernel(const KernelArgs& args, const PassPlan& plan, cudaStream_t stream) const;
    // The warp kernel's plan, or false when the network does not suit it.
    bool plan_warp_inference(PassPlan& plan) const;
    bool relu_flavor_fits() const;
    int warp_flavor_for(bool weights_in_smem, int kt_in) const;
    int warp_train_flavor_for() const;
    // The warp training kernel's plan, or false (then the block-tile kernel).
    bool plan_warp_training(PassPlan& plan) const;
    // The wgmma training kernel's plan, or false where it does not apply.
    bool plan_wgmma_training(PassPlan& plan) const;
    // The wgmma inference kernel's plan, or false where it does not apply.
    bool plan_wgmma_inference(PassPlan& plan, bool half_io) const;
    using WgmmaPrepare = cudaError_t (*)(const MlpShape&, size_t, size_t, KernelInfo*);
    bool finish_wgmma_plan(PassPlan& p, WgmmaPrepare prepare, PassPlan& plan) const;
    int carveout_percent() const;
    void finish_plan(PassPlan& plan) const;
    int warp_input_tiles() const;
    KernelArgs base_args(const float* d_in, uint32_t batch, const PassPlan& plan) const;
    KernelArgs fused_loss_args(const float* d_in, const PassPlan& plan, const float* d_target, LossKind loss,
                               float* d_out, float* d_din, uint32_t batch, unsigned int* d_din_nonfinite) const;
    void run_training_kernel(KernelArgs args, const PassPlan& plan, float* d_dweights, cudaStream_t stream,
                             bool accumulate, float* d_mean_loss);

    FusedMlpConfig config_;
    FusedMlpTuning tuning_;
    MlpShape shape_;
    int sm_count_ = 0;
    size_t max_smem_per_block_ = 0;  // the device's, lowered by the tuning caps
    size_t device_smem_per_block_ = 0;
    size_t smem_per_sm_ = 0;
    size_t reserved_smem_per_block_ = 0;
    float loss_scale_ = 128.f;
    PassPlan inference_plan_, inference_half_plan_, tile_training_plan_, warp_training_plan_, wgmma_training_plan_;
    bool has_tile_training_ = false, has_warp_training_ = false, has_wgmma_training_ = false;
    uint32_t warp_min_batch_ = UINT32_MAX;
    DeviceMemory master_;    // fp32 weights, caller layout
    DeviceMemory w_fwd_;     // fp16 fragments of W^T
    DeviceMemory w_bwd_;     // fp16 fragments of W
    DeviceMemory partial_;   // per-block weight-gradient partials
    DeviceMemory loss_partial_;  // per-block loss sums (double)
};

} // namespace fusedngp::gpu
