#include "gpu/fused_mlp.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <type_traits>

namespace fusedngp::gpu {

// ---- Width dispatch ----------------------------------------------------------------

namespace {

template <typename F>
decltype(auto) with_width(uint32_t width, F&& f) {
    switch (width) {
    case 16: return f(std::integral_constant<int, 16>{});
    case 32: return f(std::integral_constant<int, 32>{});
    case 64: return f(std::integral_constant<int, 64>{});
    case 128: return f(std::integral_constant<int, 128>{});
    case 256: return f(std::integral_constant<int, 256>{});
    }
    throw std::invalid_argument("FusedMlp: width must be 16, 32, 64, 128 or 256, got " + std::to_string(width));
}

void validate(const FusedMlpConfig& c) {
    if (c.width != 16 && c.width != 32 && c.width != 64 && c.width != 128 && c.width != 256)
        throw std::invalid_argument("FusedMlp: width must be 16, 32, 64, 128 or 256, got " + std::to_string(c.width));
    if (c.n_hidden_layers < 1 || c.n_hidden_layers > 16)
        throw std::invalid_argument("FusedMlp: n_hidden_layers must be in 1..16, got " +
                                    std::to_string(c.n_hidden_layers));
    if (c.n_input_dims == 0 || c.n_output_dims == 0)
        throw std::invalid_argument("FusedMlp: n_input_dims and n_output_dims must be positive");
}

uint32_t ceil_div(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

} // namespace

// ---- FusedMlp -----------------------------------------------------------------------

FusedMlp::FusedMlp(const FusedMlpConfig& config, const FusedMlpTuning& tuning) : config_(config), tuning_(tuning) {
    validate(config);
    shape_.n_in = config.n_input_dims;
    shape_.n_in_pad = round_up16(config.n_input_dims);
    shape_.width = config.width;
    shape_.n_hidden = config.n_hidden_layers;
    shape_.n_out = config.n_output_dims;
    shape_.n_out_pad = round_up16(config.n_output_dims);
    shape_.hidden_act = config.hidden_activation;
    shape_.output_act = config.output_activation;

    int device = 0, value = 0;
    FUSEDNGP_CUDA_CHECK(cudaGetDevice(&device));
    FUSEDNGP_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device));
    FUSEDNGP_CUDA_CHECK(cudaDeviceGetAttribute(&value, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    device_smem_per_block_ = (size_t)value;
    FUSEDNGP_CUDA_CHECK(cudaDeviceGetAttribute(&value, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
    smem_per_sm_ = (size_t)value;
    FUSEDNGP_CUDA_CHECK(cudaDeviceGetAttribute(&value, cudaDevAttrReservedSharedMemoryPerBlock, device));
    reserved_smem_per_block_ = (size_t)value;
    max_smem_per_block_ = device_smem_per_block_;
    if (tuning_.smem_per_block_cap != 0) max_smem_per_block_ = std::min(max_smem_per_block_, tuning_.smem_per_block_cap);
    if (tuning_.smem_per_sm_cap != 0) {
        if (tuning_.smem_per_sm_cap <= reserved_smem_per_block_)
            throw std::invalid_argument("FusedMlp: smem_per_sm_cap leaves no shared memory for a block");
        max_smem_per_block_ = std::min(max_smem_per_block_, tuning_.smem_per_sm_cap - reserved_smem_per_block_);
    }

    if (tuning_.tile_inference || !plan_warp_inference(inference_plan_)) inference_plan_ = plan_pass(false);
    if (tuning_.tile_training || !plan_warp_training(training_plan_)) training_plan_ = plan_pass(true);

    const size_t padded = n_params_padded(shape_);
    master_ = DeviceMemory(n_params() * sizeof(float));
    w_fwd_ = DeviceMemory(padded / 4 * sizeof(uint2));
    w_bwd_ = DeviceMemory(padded / 4 * sizeof(uint2));
    partial_ = DeviceMemory((size_t)training_plan_.max_blocks * padded * sizeof(float));
}

size_t FusedMlp::n_params() const { return fusedngp::gpu::n_params(shape_); }

// Chooses the block tile (rows) and slab height (16 * mt). Candidates:
//  - fit in shared memory (one block's share of the 227 KB);
//  - balanced: the row-phase work items (slabs x column chunks) are a
//    multiple of the 8 warps, so no warp idles through a layer (skipped only
//    if no candidate is balanced).
// Among them, the most rows resident per SM (blocks/SM x rows) wins: the
// kernels are latency-bound and another block's warps fill each barrier. Ties
// go to more blocks (measured on the H200: W=128 inference 0.264 vs 0.362 ms,
// W=128 training 1.42 vs 1.59 ms, both at 256 rows per SM), then to 32-row
// slabs (half the weight-fragment traffic). occupancy_first = false just
// takes the largest tile.
FusedMlp::PassPlan FusedMlp::plan_pass(bool training) const {
    const size_t row_bytes = smem_halves_per_row(shape_, training) * 2;
    const uint32_t cap = tuning_.rows_per_tile ? std::min<uint32_t>(tuning_.rows_per_tile, 256) : 256;
    const uint32_t chunks = hidden_column_chunks(shape_.width);

    const int carveout = carveout_percent();
    auto evaluate = [&](int mt, uint32_t rows) {
        PassPlan p;
        p.rows_per_tile = rows;
        p.row_tiles_per_warp = mt;
        p.smem_bytes = smem_bytes(shape_, rows, training);
        // The dynamic-smem limit is always set to the device maximum, so
        // objects of one width with different plans never conflict.
        with_width(shape_.width, [&](auto w) {
            FUSEDNGP_CUDA_CHECK((prepare_fused_kernel<decltype(w)::value>(training, mt, device_smem_per_block_, carveout,
                                                                          p.smem_bytes, &p.kernel)));
            return 0;
        });
        finish_plan(p);
        return p;
    };
    auto better = [&](const PassPlan& a, const PassPlan& b) {  // is a better than b?
        if (!tuning_.occupancy_first) {
            if (a.rows_per_tile != b.rows_per_tile) return a.rows_per_tile > b.rows_per_tile;
            return a.row_tiles_per_warp > b.row_tiles_per_warp;
        }
        const uint64_t ra = (uint64_t)a.kernel.blocks_per_sm * a.rows_per_tile;
        const uint64_t rb = (uint64_t)b.kernel.blocks_per_sm * b.rows_per_tile;
        if (ra != rb) return ra > rb;
        if (a.kernel.blocks_per_sm != b.kernel.blocks_per_sm) return a.kernel.blocks_per_sm > b.kernel.blocks_per_sm;
        return a.row_tiles_per_warp > b.row_tiles_per_warp;
    };

    for (bool require_balance : {true, false}) {
        bool found = false;
        PassPlan best;
        for (int mt : {2, 1}) {
            if (tuning_.row_tiles_per_warp != 0 && tuning_.row_tiles_per_warp != mt) continue;
            const uint32_t unit = 16u * mt;
            const uint32_t max_rows = std::min<uint32_t>((uint32_t)(max_smem_per_block_ / row_bytes), cap) / unit * unit;
            for (uint32_t rows = max_rows; rows >= unit; rows -= unit) {
                if (tuning_.rows_per_tile != 0 && rows != max_rows) break;  // fixed by the caller
                if (require_balance && (rows / unit) * chunks % kBlockWarps != 0) continue;
                const PassPlan p = evaluate(mt, rows);
                if (p.kernel.blocks_per_sm < 1) continue;
                if (!found || better(p, best)) best = p;
                found = true;
            }
        }
        if (found) return best;
    }
    throw std::invalid_argument("FusedMlp: one 16-row tile needs " + std::to_string(row_bytes * 16) +
                                " bytes of shared memory, more than the " +
                                std::string(max_smem_per_block_ < device_smem_per_block_ ? "capped " : "device's ") +
                                std::to_string(max_smem_per_block_) + " (input or depth too large)");
}

// A carve-out in percent of the SM's shared-memory maximum, rounded down:
// the driver rounds up to the next configuration it supports (100 KB of 228
// -> 43 % -> the 100 KB configuration). -1: the driver's default.
int FusedMlp::carveout_percent() const {
    return tuning_.smem_per_sm_cap != 0 ? (int)(tuning_.smem_per_sm_cap * 100 / smem_per_sm_) : -1;
}

// Completes a candidate plan whose kernel was just prepared: the study's
// restrictions (FusedMlpTuning) cap the resident blocks, whatever the
// occupancy calculator makes of the carve-out hint, and the persistent grid
// is sized to the resident blocks (at least one per SM).
void FusedMlp::finish_plan(PassPlan& p) const {
    if (tuning_.smem_per_sm_cap != 0) {
        const size_t per_block = p.smem_bytes + p.kernel.static_smem_bytes + reserved_smem_per_block_;
        p.kernel.blocks_per_sm = std::min(p.kernel.blocks_per_sm, (int)(tuning_.smem_per_sm_cap / per_block));
    }
    if (tuning_.max_blocks_per_sm > 0) p.kernel.blocks_per_sm = std::min(p.kernel.blocks_per_sm, tuning_.max_blocks_per_sm);
    p.max_blocks = (uint32_t)std::max(1, p.kernel.blocks_per_sm) * (uint32_t)sm_count_;
}

// The warp kernels' input-tile template (1, 2 or 4 k16 tiles; a 3-tile input
// runs the 4-tile kernel), or 0 when n_in is too wide for them.
int FusedMlp::warp_input_tiles() const {
    const uint32_t kt = shape_.n_in_pad / 16u;
    if (kt > kMaxWarpInputTiles) return 0;
    return kt <= 1 ? 1 : (kt <= 2 ? 2 : 4);
}

// The register-resident warp kernel (kernels/fused_mlp_warp_device.cuh) for
// W <= 64 and n_in <= 64 (wider inputs would not fit in registers one slab
// ahead: they fall back to the block-tile kernel, as does W >= 128, whose
// activations would not fit either). Candidates in order of preference:
// 32-row slabs (half the weight loads per row, two independent mma chains)
// before 16-row slabs, weights in shared memory (when they take at most
// kWarpSmemWeightsMax) before L1. The first candidate that keeps at least
// kMinWarpBlocks blocks (16 warps) per SM wins, else the one with the most
// rows resident per SM. H200 run 1 (32 -> W x 2 -> 16, batch 2^20): W16 and
// W32 fastest with 32-row slabs (5 and 4 blocks/SM), W64 with 16-row slabs
// and weights in shared memory (12.5 G/s against 10.3 for 32-row slabs at
// 3 blocks/SM: the mma chains need the warps).
bool FusedMlp::plan_warp_inference(PassPlan& plan) const {
    constexpr size_t kWarpSmemWeightsMax = 48 * 1024;
    constexpr int kMinWarpBlocks = 4;
    const int kt_in = warp_input_tiles();
    if (shape_.width > 64 || kt_in == 0) return false;
    const size_t weight_bytes = n_params_padded(shape_) * 2;
    auto rows_per_sm = [](const PassPlan& p) {
        return (uint64_t)p.kernel.blocks_per_sm * p.warps_per_block() * p.rows_per_tile;
    };
    bool found = false;
    for (int mt : {2, 1}) {
        if (tuning_.row_tiles_per_warp != 0 && tuning_.row_tiles_per_warp != mt) continue;
        for (bool in_smem : {true, false}) {
            if (tuning_.warp_weights_in_smem >= 0 && in_smem != (tuning_.warp_weights_in_smem == 1)) continue;
            if (in_smem && tuning_.warp_weights_in_smem < 0 && weight_bytes > kWarpSmemWeightsMax) continue;
            if (in_smem && weight_bytes > max_smem_per_block_) continue;
            PassPlan p;
            p.warp = true;
            p.warp_variant = {mt, kt_in, in_smem};
            p.rows_per_tile = 16u * mt;
            p.row_tiles_per_warp = mt;
            p.smem_bytes = in_smem ? weight_bytes : 0;
            with_width(shape_.width, [&](auto w) {
                if constexpr (decltype(w)::value <= 64)
                    FUSEDNGP_CUDA_CHECK((prepare_warp_inference<decltype(w)::value>(
                        p.warp_variant, device_smem_per_block_, carveout_percent(), p.smem_bytes, &p.kernel)));
                return 0;
            });
            finish_plan(p);
            if (p.kernel.blocks_per_sm < 1) continue;
            if (p.kernel.blocks_per_sm >= kMinWarpBlocks) {
                plan = p;
                return true;
            }
            if (!found || rows_per_sm(p) > rows_per_sm(plan)) plan = p;
            found = true;
        }
    }
    return found;
}

// The warp training kernel (kernels/fused_mlp_warp_train_device.cuh) for
// W = 16 and 32 and n_in <= 64: 16-row slabs, weights in shared memory, and
// per warp an fp32 weight-gradient sum and fp16 activation slots in shared
// memory (warp_train_smem_bytes). That memory grows with depth (W32 D2:
// 62 KB per block of 4 warps, W16 D16: 126 KB), so deep networks keep fewer
// warps per SM: below kMinWarpTrainBlocks blocks per SM the block-tile
// kernel (8 warps per block, activations in shared memory) runs instead,
// unless FusedMlpTuning::force_warp_training.
bool FusedMlp::plan_warp_training(PassPlan& plan) const {
    constexpr int kMinWarpTrainBlocks = 2;
    const int kt_in = warp_input_tiles();
    if ((shape_.width != 16 && shape_.width != 32) || kt_in == 0) return false;
    PassPlan p;
    p.warp = true;
    p.warp_variant = {1, kt_in, true};
    p.rows_per_tile = 16;
    p.row_tiles_per_warp = 1;
    p.smem_bytes = warp_train_smem_bytes(shape_, (uint32_t)kt_in);
    if (p.smem_bytes > max_smem_per_block_) return false;
    with_width(shape_.width, [&](auto w) {
        if constexpr (decltype(w)::value == 16 || decltype(w)::value == 32)
            FUSEDNGP_CUDA_CHECK((prepare_warp_train<decltype(w)::value>(p.warp_variant, device_smem_per_block_,
                                                                        carveout_percent(), p.smem_bytes, &p.kernel)));
        return 0;
    });
    finish_plan(p);
    const int min_blocks = tuning_.force_warp_training ? 1 : kMinWarpTrainBlocks;
    if (p.kernel.blocks_per_sm < min_blocks) return false;
    plan = p;
    return true;
}

void FusedMlp::set_params(const float* host_params) {
    FUSEDNGP_CUDA_CHECK(cudaMemcpy(master_.as<float>(), host_params, n_params() * sizeof(float), cudaMemcpyHostToDevice));
    FUSEDNGP_CUDA_CHECK(launch_convert_weights(master_.as<float>(), w_fwd_.as<uint2>(), w_bwd_.as<uint2>(), shape_, 0));
    FUSEDNGP_CUDA_CHECK(cudaDeviceSynchronize());
}

void FusedMlp::set_params_device(const float* d_params, cudaStream_t stream) {
    if (d_params != master_.as<float>())
        FUSEDNGP_CUDA_CHECK(cudaMemcpyAsync(master_.as<float>(), d_params, n_params() * sizeof(float),
                                            cudaMemcpyDeviceToDevice, stream));
    FUSEDNGP_CUDA_CHECK(launch_convert_weights(master_.as<float>(), w_fwd_.as<uint2>(), w_bwd_.as<uint2>(), shape_,
                                               stream));
}

void FusedMlp::set_loss_scale(float scale) {
    if (!(scale > 0.f)) throw std::invalid_argument("FusedMlp: loss scale must be positive");
    loss_scale_ = scale;
}

uint32_t FusedMlp::rows_per_tile_for(uint32_t batch, const PassPlan& plan) const {
    if (!tuning_.fill_gpu || tuning_.rows_per_tile != 0) return plan.rows_per_tile;
    // The smallest whole number of warp slabs that gives each resident block
    // at most one tile; never more than the plan's tile.
    const uint32_t unit = 16u * (uint32_t)plan.row_tiles_per_warp;
    const uint32_t per_block = ceil_div(std::max(batch, 1u), plan.max_blocks);
    return std::min(plan.rows_per_tile, ceil_div(per_block, unit) * unit);
}

KernelArgs FusedMlp::base_args(const float* d_in, uint32_t batch, const PassPlan& plan) const {
    KernelArgs a;
    a.shape = shape_;
    a.w_fwd = w_fwd_.as<uint2>();
    a.w_bwd = w_bwd_.as<uint2>();
    a.in = d_in;
    a.batch = batch;
    a.rows_per_tile = rows_per_tile_for(batch, plan);
    a.n_tiles = ceil_div(batch, a.rows_per_tile);
    a.loss_scale = loss_scale_;
    a.inv_loss_scale = 1.f / loss_scale_;
    a.l2_prefetch = tuning_.l2_prefetch;
    return a;
}

void FusedMlp::inference(const float* d_in, float* d_out, uint32_t batch, cudaStream_t stream) const {
    if (batch == 0) return;
    KernelArgs args = base_args(d_in, batch, inference_plan_);
    args.out = d_out;
    if (inference_plan_.warp) {
        // Persistent grid: at most the resident blocks, each warp one slab
        // per step (n_tiles counts slabs here).
        const uint32_t warps_per_block = kWarpKernelThreads / 32;
        const uint32_t grid = std::min(ceil_div(args.n_tiles, warps_per_block), inference_plan_.max_blocks);
        with_width(shape_.width, [&](auto w) {
            if constexpr (decltype(w)::value <= 64)
                FUSEDNGP_CUDA_CHECK(launch_warp_inference<decltype(w)::value>(
                    args, inference_plan_.warp_variant, grid, inference_plan_.smem_bytes, stream));
            return 0;
        });
        return;
    }
    const uint32_t grid = std::min(args.n_tiles, inference_plan_.max_blocks);
    with_width(shape_.width, [&](auto w) {
        FUSEDNGP_CUDA_CHECK(launch_fused_inference<decltype(w)::value>(
            args, inference_plan_.row_tiles_per_warp, grid, inference_plan_.smem_bytes, stream));
        return 0;
    });
}

void FusedMlp::forward(const float* d_in, float* d_out, uint32_t batch, cudaStream_t stream) {
    inference(d_in, d_out, batch, stream);
}

void FusedMlp::run_training_kernel(KernelArgs args, float* d_dweights, cudaStream_t stream, bool accumulate) {
    if (args.batch == 0) {
        if (d_dweights != nullptr && !accumulate)
            FUSEDNGP_CUDA_CHECK(cudaMemsetAsync(d_dweights, 0, n_params() * sizeof(float), stream));
        return;
    }
    const size_t stride = n_params_padded(shape_);
    args.partial = partial_.as<float>();
    args.partial_stride = stride;
    uint32_t grid = 0;
    if (training_plan_.warp) {
        // Persistent grid of warps, one 16-row slab per warp and step
        // (n_tiles counts slabs); every launched block writes its partial.
        grid = std::min(ceil_div(args.n_tiles, kWarpKernelThreads / 32), training_plan_.max_blocks);
        with_width(shape_.width, [&](auto w) {
            if constexpr (decltype(w)::value == 16 || decltype(w)::value == 32)
                FUSEDNGP_CUDA_CHECK(launch_warp_train<decltype(w)::value>(args, training_plan_.warp_variant, grid,
                                                                          training_plan_.smem_bytes, stream));
            return 0;
        });
    } else {
        grid = std::min(args.n_tiles, training_plan_.max_blocks);
        with_width(shape_.width, [&](auto w) {
            FUSEDNGP_CUDA_CHECK(launch_fused_train<decltype(w)::value>(args, training_plan_.row_tiles_per_warp, grid,
                                                                       training_plan_.smem_bytes, stream));
            return 0;
        });
    }
    if (d_dweights != nullptr)
        FUSEDNGP_CUDA_CHECK(launch_reduce_weight_gradients(partial_.as<float>(), grid, stride, shape_,
                                                           1.f / loss_scale_, accumulate, d_dweights, stream));
}

void FusedMlp::backward(const float* d_in, const float* d_dout, float* d_din, float* d_dweights, uint32_t batch,
                        cudaStream_t stream, bool accumulate) {
    KernelArgs args = base_args(d_in, batch, training_plan_);
    args.loss = LossKind::FromGradient;
    args.dout = d_dout;
    args.din = d_din;
    run_training_kernel(args, d_dweights, stream, accumulate);
}

void FusedMlp::train_step(const float* d_in, const float* d_target, LossKind loss, float* d_out, float* d_din,
                          float* d_dweights, uint32_t batch, cudaStream_t stream, bool accumulate) {
    if (loss == LossKind::FromGradient) throw std::invalid_argument("FusedMlp::train_step: loss must be L1 or L2");
    KernelArgs args = base_args(d_in, batch, training_plan_);
    args.loss = loss;
    args.target = d_target;
    args.out = d_out;
    args.din = d_din;
    args.loss_norm = batch > 0 ? 1.f / ((float)batch * (float)shape_.n_out) : 0.f;
    run_training_kernel(args, d_dweights, stream, accumulate);
}

std::string FusedMlp::describe() const {
    std::ostringstream os;
    auto pass = [&](const char* name, const PassPlan& p) {
        if (p.warp && &p == &training_plan_) {
            os << name << ": warp training kernel (activations in registers, dW per warp in smem), "
               << 16 * p.row_tiles_per_warp << " rows/warp slab, " << p.smem_bytes / 1024.0 << " KiB smem, "
               << p.kernel.registers << " regs, " << p.kernel.local_bytes << " B local, " << p.kernel.blocks_per_sm
               << " blocks/SM of " << kWarpKernelThreads << " threads";
            return;
        }
        if (p.warp) {
            os << name << ": warp kernel (activations in registers), " << 16 * p.row_tiles_per_warp
               << " rows/warp slab, weights in " << (p.warp_variant.weights_in_smem ? "smem" : "L1") << ", "
               << p.smem_bytes / 1024.0 << " KiB smem, " << p.kernel.registers << " regs, " << p.kernel.local_bytes
               << " B local, " << p.kernel.blocks_per_sm << " blocks/SM of " << kWarpKernelThreads << " threads";
            return;
        }
        os << name << ": " << p.rows_per_tile << " rows/tile, " << 16 * p.row_tiles_per_warp << " rows/warp slab, "
           << p.smem_bytes / 1024.0 << " KiB smem, " << p.kernel.registers << " regs, " << p.kernel.local_bytes
           << " B local, " << p.kernel.blocks_per_sm << " blocks/SM";
    };
    os << "FusedMlp " << shape_.n_in << " -> " << shape_.n_hidden << " x " << shape_.width << " -> " << shape_.n_out
       << " (activations " << (int)shape_.hidden_act << "/" << (int)shape_.output_act << "); ";
    pass("inference", inference_plan_);
    os << "; ";
    pass("training", training_plan_);
    return os.str();
}

} // namespace fusedngp::gpu
