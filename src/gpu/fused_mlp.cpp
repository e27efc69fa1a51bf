#include "gpu/fused_mlp.h"

#include "core/env.h"
#include "fused_mlp_wgmma_launch.h"

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
    shape_ = mlp_shape(config.n_input_dims, config.width, config.n_hidden_layers, config.n_output_dims,
                       config.hidden_activation, config.output_activation);

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

    if (!plan_wgmma_inference(inference_plan_, false) &&
        (tuning_.tile_inference || !plan_warp_inference(inference_plan_)))
        inference_plan_ = plan_pass(false);
    if (!plan_wgmma_inference(inference_half_plan_, true)) inference_half_plan_ = half_io_plan(inference_plan_);
    // Training: both kernels' plans, each call picks one by its batch
    // (choose_warp_training). A network the tile kernel cannot hold (its
    // 16-row tile exceeds shared memory) but the warp kernel can runs the
    // warp kernel for every batch.
    has_warp_training_ = !tuning_.tile_training && plan_warp_training(warp_training_plan_);
    try {
        tile_training_plan_ = plan_pass(true);
        has_tile_training_ = true;
    } catch (const std::invalid_argument&) {
        if (!has_warp_training_) throw;
    }
    if (has_warp_training_)
        warp_min_batch_ = has_tile_training_ ? warp_training_min_batch_for(shape_.width, tuning_) : 0;
    has_wgmma_training_ = plan_wgmma_training(wgmma_training_plan_);

    const size_t padded = n_params_padded(shape_);
    master_ = DeviceMemory(n_params() * sizeof(float));
    w_fwd_ = DeviceMemory(padded / 4 * sizeof(uint2));
    w_bwd_ = DeviceMemory(padded / 4 * sizeof(uint2));
    // One partial per block of whichever training kernel runs more blocks.
    uint32_t partials = 0;
    if (has_tile_training_) partials = std::max(partials, tile_training_plan_.max_blocks);
    if (has_warp_training_) partials = std::max(partials, warp_training_plan_.max_blocks);
    if (has_wgmma_training_) partials = std::max(partials, wgmma_training_plan_.max_blocks);
    partial_ = DeviceMemory((size_t)partials * padded * sizeof(float));
    loss_partial_ = DeviceMemory((size_t)std::max(partials, 1u) * sizeof(double));
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

// The warp kernel's flavour bits (WarpFlavor) for a weight placement: the
// automatic choice or FusedMlpTuning::warp_flavor, less what the shape or
// placement cannot use: kWarpRelu needs hidden ReLU and output None,
// kWarpVec4 weights in smem, kWarpStage kWarpVec4 and n_in == 16 * kt_in
// (contiguous slab rows); weights through L1 run flavour 0 only (the others
// are not compiled for it: warp_flavor_compiled). Automatic: ReLU and 16-byte
// I/O, no cp.async ring. H200 A/B at eca1e18 (32 -> W x 2 -> 16, 2^20 rows):
// flavour 3 19.2 / 18.6 / 15.2 G/s at W 16 / 32 / 64 against 17.2 / 16.2 /
// 12.6 for flavour 0; the ring (7) 18.9 / 18.3 / 15.0, and 3-4 % behind 3 at
// 2^22 rows (docs/FUSED_MLP_DESIGN.md, "Warp inference flavours").
constexpr int kAutoWarpFlavor = kWarpRelu | kWarpVec4;
// kWarpRelu's condition, for the inference and the training kernels alike:
// the activations it compiles in.
bool FusedMlp::relu_flavor_fits() const {
    return shape_.hidden_act == Activation::ReLU && shape_.output_act == Activation::None;
}
int FusedMlp::warp_flavor_for(bool weights_in_smem, int kt_in) const {
    if (!weights_in_smem) return 0;
    int eligible = kWarpVec4;
    if (relu_flavor_fits()) eligible |= kWarpRelu;
    if (shape_.n_in == 16u * (uint32_t)kt_in) eligible |= kWarpStage;
    const int wanted = tuning_.warp_flavor >= 0 ? tuning_.warp_flavor : kAutoWarpFlavor;
    return wanted & eligible;
}

// The register-resident warp kernel (kernels/fused_mlp_warp_device.cuh) for
// W <= 64 and n_in <= 64 (wider inputs would not fit in registers one slab
// ahead: they fall back to the block-tile kernel, as does W >= 128, whose
// activations would not fit either). Candidates in order of preference:
// 32-row slabs (half the weight loads per row, two independent mma chains)
// before 16-row slabs, weights in shared memory (when they take at most
// kWarpSmemWeightsMax) before L1. The first candidate that keeps at least
// kMinWarpBlocks blocks (16 warps) per SM wins, else the one with the most
// rows resident per SM. On the H200 (5f48d88, 32 -> W x 2 -> 16, 2^20): W16 and
// W32 fastest with 32-row slabs (5 and 4 blocks/SM), W64 with 16-row slabs
// and weights in shared memory (12.5 G/s against 10.3 for 32-row slabs at
// 3 blocks/SM: the mma chains need the warps). The flavour bits come from
// warp_flavor_for; the cp.async ring's shared memory (when forced) counts
// towards the blocks per SM like the weights.
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
            p.block_warps = kWarpKernelThreads / 32;
            p.warp_variant = {mt, kt_in, in_smem, warp_flavor_for(in_smem, kt_in)};
            p.rows_per_tile = 16u * mt;
            p.row_tiles_per_warp = mt;
            p.smem_bytes = in_smem ? weight_bytes : 0;
            if (p.warp_variant.flavor & kWarpStage)
                p.smem_bytes += (size_t)p.block_warps * warp_stage_bytes_per_warp(mt, kt_in);
            if (p.smem_bytes > max_smem_per_block_) continue;
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

// The fp16-I/O twin of an inference plan. The block-tile kernel reads and
// writes fp16 behind a run-time check, so its plan serves both. The warp
// kernel's flavour gains kWarpHalfIo and loses the cp.async ring (fp32 only:
// its shared memory goes too); kWarpRelu stays only with kWarpVec4 (the
// flavours compiled, warp_flavor_compiled).
FusedMlp::PassPlan FusedMlp::half_io_plan(const PassPlan& fp32_plan) const {
    if (!fp32_plan.warp) return fp32_plan;
    PassPlan p = fp32_plan;
    WarpKernelVariant& v = p.warp_variant;
    if (v.flavor & kWarpStage) p.smem_bytes -= (size_t)p.block_warps * warp_stage_bytes_per_warp(v.mt, v.kt_in);
    v.flavor = (v.flavor & (kWarpRelu | kWarpVec4)) | kWarpHalfIo;
    if (!(v.flavor & kWarpVec4)) v.flavor &= ~kWarpRelu;
    with_width(shape_.width, [&](auto w) {
        if constexpr (decltype(w)::value <= 64)
            FUSEDNGP_CUDA_CHECK((prepare_warp_inference<decltype(w)::value>(v, device_smem_per_block_, carveout_percent(),
                                                                             p.smem_bytes, &p.kernel)));
        return 0;
    });
    finish_plan(p);
    return p;
}

// The warp training kernel's flavour: kWarpRelu (hidden ReLU and output
// None compiled in) for exactly those networks unless
// FusedMlpTuning::warp_train_flavor asks for 0; anything else runs flavour 0.
int FusedMlp::warp_train_flavor_for() const {
    const int eligible = relu_flavor_fits() ? (int)kWarpRelu : 0;
    const int wanted = tuning_.warp_train_flavor >= 0 ? tuning_.warp_train_flavor : (int)kWarpRelu;
    return wanted & eligible;
}

// The warp training kernel (kernels/fused_mlp_warp_train_device.cuh) for
// W = 16, 32, 64 and n_in <= 64: 16-row slabs, weights in shared memory, and
// fp16 activation slots per warp in shared memory. The fp32 weight-gradient
// sums are either one per warp (4P bytes each: W32 D2 62 KB per block of 4
// warps, W64 D2 164 KB) or one per block, added to in a fixed warp order
// (WarpDwMode::Shared; 4P bytes per block), which keeps W = 64 and deeper
// networks resident. Candidates: per-warp sums (4 warps per block), shared
// sums with 2 to 12 warps per block, and at W = 64 shared sums at 128
// registers with 4 or 8 warps (2 blocks per SM). Choice, from the H200 A/B
// (docs/FUSED_MLP_DESIGN.md, "How a kernel is chosen"):
//  - per-warp sums wherever they keep kPerWarpMinWarps warps per SM: no
//    turns, no input staging (W16 D2 at 2^20 rows: 8.50 G/s with 20 warps,
//    8.15-8.52 for the shared variants with 12-24; W32 D1: 7.64 vs 7.58);
//  - else the shared variant keeping the most warps per SM, counted up to
//    kPerWarpMinWarps (16), ties to larger blocks (W32 D2: 2 x 8 warps 5.63
//    G/s, 4 x 4 warps 5.41; W64 D1: 2 x 8 at 128 registers 5.31, 4 x 4 5.19;
//    W32 D2 in the ReLU flavour, 89 registers, at 05fa695: 2 x 8 warps 6.24,
//    3 x 6 6.10, 5 x 4 5.99: past 16 warps, more warps from smaller blocks
//    lost), then to the kernel without the 128-register cap (earlier in the
//    list).
// (choose_warp_train_variant). Below kMinWarpTrainWarps resident warps the
// block-tile kernel runs instead (W64 D4 with 8 warps was still 6 % faster
// than it; D5/D6 fit only 4/2), unless FusedMlpTuning::force_warp_training.
bool FusedMlp::plan_warp_training(PassPlan& plan) const {
    constexpr int kMinWarpTrainWarps = 8;
    const int kt_in = warp_input_tiles();
    const uint32_t width = shape_.width;
    if ((width != 16 && width != 32 && width != 64) || kt_in == 0) return false;
    const int fl = warp_train_flavor_for();
    const WarpTrainVariant variants[] = {
        {kt_in, WarpDwMode::PerWarp, kWarpKernelThreads / 32, fl},
        {kt_in, WarpDwMode::Shared, 12, fl},
        {kt_in, WarpDwMode::Shared, 8, fl},
        {kt_in, WarpDwMode::Shared, 6, fl},
        {kt_in, WarpDwMode::Shared, 4, fl},
        {kt_in, WarpDwMode::Shared, 2, fl},  // deep networks (forced only: too few warps)
        {kt_in, WarpDwMode::Shared128, 8, fl},
        {kt_in, WarpDwMode::Shared128, 4, fl},
    };
    std::vector<WarpTrainCandidate> candidates;
    std::vector<PassPlan> plans;
    for (const WarpTrainVariant& v : variants) {
        if (tuning_.warp_train_dw_mode >= 0 && (int)v.dw_mode != tuning_.warp_train_dw_mode) continue;
        if (tuning_.warp_train_warps > 0 && v.dw_mode != WarpDwMode::PerWarp && v.warps != tuning_.warp_train_warps)
            continue;
        if (!warp_train_variant_compiled(width, v)) continue;
        PassPlan p;
        p.warp = true;
        p.warp_train = v;
        p.warp_train.always_extras = tuning_.warp_train_extras == 1;
        p.block_warps = v.warps;
        p.rows_per_tile = 16;
        p.row_tiles_per_warp = 1;
        p.smem_bytes = warp_train_smem_bytes(shape_, v);
        if (p.smem_bytes > max_smem_per_block_) continue;
        with_width(width, [&](auto w) {
            constexpr int kW = decltype(w)::value;
            if constexpr (kW == 16 || kW == 32 || kW == 64)
                FUSEDNGP_CUDA_CHECK((prepare_warp_train<kW>(v, device_smem_per_block_, carveout_percent(), p.smem_bytes,
                                                            &p.kernel)));
            return 0;
        });
        finish_plan(p);
        candidates.push_back({v, std::max(0, p.kernel.blocks_per_sm) * v.warps});
        plans.push_back(p);
    }
    const int chosen = choose_warp_train_variant(candidates, tuning_.force_warp_training ? 1 : kMinWarpTrainWarps);
    if (chosen < 0) return false;
    plan = plans[(size_t)chosen];
    return true;
}

int choose_warp_train_variant(const std::vector<WarpTrainCandidate>& candidates, int min_warps) {
    constexpr int kPerWarpMinWarps = 16;
    int per_warp = -1, shared = -1;
    for (size_t i = 0; i < candidates.size(); ++i) {
        const WarpTrainCandidate& c = candidates[i];
        if (c.resident_warps < 1) continue;
        if (c.variant.dw_mode == WarpDwMode::PerWarp) {
            if (per_warp < 0) per_warp = (int)i;
        } else if (shared < 0) {
            shared = (int)i;
        } else {
            // Resident warps count up to kPerWarpMinWarps; ties go to larger
            // blocks, then to the earlier candidate.
            const WarpTrainCandidate& s = candidates[(size_t)shared];
            const int cw = std::min(c.resident_warps, kPerWarpMinWarps);
            const int sw = std::min(s.resident_warps, kPerWarpMinWarps);
            if (cw > sw || (cw == sw && c.variant.warps > s.variant.warps)) shared = (int)i;
        }
    }
    int chosen = shared;
    if (per_warp >= 0) {
        const int pw = candidates[(size_t)per_warp].resident_warps;
        if (pw >= kPerWarpMinWarps || shared < 0 || pw > candidates[(size_t)shared].resident_warps) chosen = per_warp;
    }
    if (chosen < 0 || candidates[(size_t)chosen].resident_warps < min_warps) return -1;
    return chosen;
}

bool wgmma_train_requested(const FusedMlpTuning& tuning) {
    if (tuning.wgmma_train) return true;
    if (tuning.tile_training || tuning.force_warp_training) return false;
    return !env_equals("FUSEDNGP_WGMMA_TRAIN", "0");
}

// A wgmma plan's launch shape: threads per block, rows per tile, shared memory.
static FusedMlp::PassPlan wgmma_pass_plan(int threads, uint32_t rows_per_tile, size_t smem_bytes) {
    FusedMlp::PassPlan p;
    p.block_warps = threads / 32;
    p.rows_per_tile = rows_per_tile;
    p.smem_bytes = smem_bytes;
    return p;
}

bool wgmma_train_forced(const FusedMlpTuning& tuning) {
    return tuning.wgmma_train || env_equals("FUSEDNGP_WGMMA_TRAIN", "1");
}

WgmmaSplit wgmma_split_choice(const FusedMlpTuning& tuning) {
    if (tuning.tile_training || tuning.force_warp_training) return WgmmaSplit::Never;
    if (tuning.wgmma_split >= 0) return tuning.wgmma_split == 1 ? WgmmaSplit::Always : WgmmaSplit::Never;
    if (env_equals("FUSEDNGP_WGMMA_SPLIT", "0")) return WgmmaSplit::Never;
    if (env_equals("FUSEDNGP_WGMMA_SPLIT", "1")) return WgmmaSplit::Always;
    if (env_equals("FUSEDNGP_WGMMA_TRAIN", "0")) return WgmmaSplit::Never;
    return WgmmaSplit::WhereOnlyItFits;
}

bool wgmma_train_wins_by_default(const MlpShape& shape) { return !(shape.width == 128 && shape.n_hidden == 1); }

// The wgmma training kernel (kernels/fused_mlp_wgmma_device.cuh): one plan,
// 128-row tiles of 2 warpgroups; one block per SM at W = 128 (its images take
// ~200 KB of shared memory at D = 2), two at W = 64 with n_in <= 32 (~100 KB).
// Only where its sm_90a binary runs (compute capability 9.0) and for the
// shapes it implements.
bool FusedMlp::plan_wgmma_training(PassPlan& plan) const {
    const WgmmaSplit split = wgmma_split_choice(tuning_);
    const bool row128_fits = wgmma_train_shape_supported(shape_) && wgmma_train_smem_bytes(shape_) <= max_smem_per_block_;
    if ((split == WgmmaSplit::Always || (split == WgmmaSplit::WhereOnlyItFits && !row128_fits)) &&
        wgmma_split_shape_supported(shape_)) {
        PassPlan p = wgmma_pass_plan(kWgmmaTrainThreads, kWgmmaSplitRows, wgmma_split_smem_bytes(shape_));
        p.wgmma = p.wgmma_split = true;
        if (finish_wgmma_plan(p, prepare_wgmma_split, plan)) return true;
    }
    if (!wgmma_train_requested(tuning_) || !wgmma_train_shape_supported(shape_)) return false;
    if (!wgmma_train_forced(tuning_) && !wgmma_train_wins_by_default(shape_)) return false;
    PassPlan p = wgmma_pass_plan(kWgmmaTrainThreads, kWgmmaTrainRows, wgmma_train_smem_bytes(shape_));
    p.wgmma = true;
    return finish_wgmma_plan(p, prepare_wgmma_train, plan);
}

// What both wgmma plans check: a device their sm_90a binary runs on, their
// shared memory within the (capped) limit, and at least one resident block.
bool FusedMlp::finish_wgmma_plan(PassPlan& p, WgmmaPrepare prepare, PassPlan& plan) const {
    int device = 0;
    FUSEDNGP_CUDA_CHECK(cudaGetDevice(&device));
    if (!wgmma_train_device_ok(device) || p.smem_bytes > max_smem_per_block_) return false;
    p.row_tiles_per_warp = 1;
    FUSEDNGP_CUDA_CHECK(prepare(shape_, device_smem_per_block_, p.smem_bytes, &p.kernel));
    finish_plan(p);
    if (p.kernel.blocks_per_sm < 1) return false;
    plan = p;
    return true;
}

bool wgmma_inference_requested(const FusedMlpTuning& tuning, uint32_t width, uint32_t hidden_layers, bool half_io) {
    if (tuning.tile_inference) return false;
    if (tuning.wgmma_inference >= 0) return tuning.wgmma_inference == 1;
    if (env_equals("FUSEDNGP_WGMMA_INFERENCE", "0")) return false;
    if (env_equals("FUSEDNGP_WGMMA_INFERENCE", "1")) return true;
    return wgmma_inference_wins(width, hidden_layers, half_io);
}

bool wgmma_inference_wins(uint32_t width, uint32_t hidden_layers, bool half_io) {
    if (width == 128) return half_io || hidden_layers >= 2;
    if (width == 64) return half_io && hidden_layers >= 3;
    return false;
}

// The wgmma inference kernel: one plan, kWgmmaInferenceWarpgroups
// warpgroups per block over one copy of the weight images.
bool FusedMlp::plan_wgmma_inference(PassPlan& plan, bool half_io) const {
    if (!wgmma_inference_requested(tuning_, shape_.width, shape_.n_hidden, half_io) ||
        !wgmma_inference_shape_supported(shape_))
        return false;
    PassPlan p = wgmma_pass_plan(kWgmmaInferenceThreads, kWgmmaInferenceRows, wgmma_inference_smem_bytes(shape_));
    p.wgmma_inference = true;
    return finish_wgmma_plan(p, prepare_wgmma_inference, plan);
}

// Crossover batches of the warp and block-tile training kernels, measured on
// the H200 (docs/FUSED_MLP_DESIGN.md, "How a kernel is chosen"): the
// warp kernel has fixed per-call costs (staging both weight copies per block,
// zeroing and writing the per-block sums, more partials to reduce) worth
// ~10-13 us, which its lower per-row cost repays from ~2^17 rows at W = 16
// and 32 (-6 to +15 % against the tile kernel at 2^17, 14-32 % faster at
// 2^18) and from ~1.5 x 2^17 at W = 64 (3-8 % slower at 2^17, -1 to +10 %
// at 2^18).
uint32_t warp_training_min_batch_for(uint32_t width, const FusedMlpTuning& tuning) {
    if (tuning.force_warp_training) return 0;
    if (tuning.warp_training_min_batch != 0) return tuning.warp_training_min_batch;
    return width >= 64 ? 1u << 18 : 1u << 17;
}

bool choose_warp_training(bool has_warp_plan, const FusedMlpTuning& tuning, uint32_t min_batch, uint32_t batch) {
    if (!has_warp_plan || tuning.tile_training) return false;
    if (tuning.force_warp_training) return true;
    return batch >= min_batch;
}

const FusedMlp::PassPlan& FusedMlp::training_plan_for(uint32_t batch) const {
    if (has_wgmma_training_) return wgmma_training_plan_;
    if (!has_tile_training_) return warp_training_plan_;
    return choose_warp_training(has_warp_training_, tuning_, warp_min_batch_, batch) ? warp_training_plan_
                                                                                     : tile_training_plan_;
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

MlpFragmentTargets FusedMlp::fragment_targets() {
    MlpFragmentTargets t;
    t.master = master_.as<float>();
    t.w_fwd = reinterpret_cast<uint16_t*>(w_fwd_.as<uint2>());
    t.w_bwd = reinterpret_cast<uint16_t*>(w_bwd_.as<uint2>());
    t.shape = shape_;
    return t;
}

void FusedMlp::set_loss_scale(float scale) {
    if (!(scale > 0.f)) throw std::invalid_argument("FusedMlp: loss scale must be positive");
    loss_scale_ = scale;
}

uint32_t FusedMlp::rows_per_tile_for(uint32_t batch, const PassPlan& plan) const {
    if (plan.wgmma || plan.wgmma_inference) return plan.rows_per_tile;  // the kernels' fixed tiles
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

void FusedMlp::run_inference_kernel(const KernelArgs& args, const PassPlan& plan, cudaStream_t stream) const {
    if (plan.wgmma_inference) {
        // Persistent grid; each warpgroup takes one 64-row chunk at a time.
        const uint32_t all = ceil_div(args.n_tiles, (uint32_t)kWgmmaInferenceWarpgroups);
        FUSEDNGP_CUDA_CHECK(launch_wgmma_inference(args, std::min(all, plan.max_blocks), plan.smem_bytes, stream));
        return;
    }
    if (plan.warp) {
        // Persistent grid: at most the resident blocks, each warp one slab
        // per step (n_tiles counts slabs here).
        const uint32_t warps_per_block = (uint32_t)plan.warps_per_block();
        const uint32_t all = ceil_div(args.n_tiles, warps_per_block);
        const uint32_t grid = tuning_.warp_full_grid ? all : std::min(all, plan.max_blocks);
        with_width(shape_.width, [&](auto w) {
            if constexpr (decltype(w)::value <= 64)
                FUSEDNGP_CUDA_CHECK(
                    launch_warp_inference<decltype(w)::value>(args, plan.warp_variant, grid, plan.smem_bytes, stream));
            return 0;
        });
        return;
    }
    const uint32_t grid = std::min(args.n_tiles, plan.max_blocks);
    with_width(shape_.width, [&](auto w) {
        FUSEDNGP_CUDA_CHECK(
            launch_fused_inference<decltype(w)::value>(args, plan.row_tiles_per_warp, grid, plan.smem_bytes, stream));
        return 0;
    });
}

void FusedMlp::inference(const float* d_in, float* d_out, uint32_t batch, cudaStream_t stream) const {
    if (batch == 0) return;
    KernelArgs args = base_args(d_in, batch, inference_plan_);
    args.out = d_out;
    run_inference_kernel(args, inference_plan_, stream);
}

void FusedMlp::inference_half(const __half* d_in, __half* d_out, uint32_t batch, cudaStream_t stream) const {
    if (batch == 0) return;
    KernelArgs args = base_args(nullptr, batch, inference_half_plan_);
    args.in_half = d_in;
    args.out_half = d_out;
    run_inference_kernel(args, inference_half_plan_, stream);
}

void FusedMlp::forward(const float* d_in, float* d_out, uint32_t batch, cudaStream_t stream) {
    inference(d_in, d_out, batch, stream);
}

void FusedMlp::run_training_kernel(KernelArgs args, const PassPlan& plan, float* d_dweights, cudaStream_t stream,
                                   bool accumulate, float* d_mean_loss) {
    if (args.batch == 0) {
        if (d_dweights != nullptr && !accumulate)
            FUSEDNGP_CUDA_CHECK(cudaMemsetAsync(d_dweights, 0, n_params() * sizeof(float), stream));
        if (d_mean_loss != nullptr) FUSEDNGP_CUDA_CHECK(cudaMemsetAsync(d_mean_loss, 0, sizeof(float), stream));
        return;
    }
    if (d_mean_loss != nullptr) args.loss_partial = loss_partial_.as<double>();
    const size_t stride = n_params_padded(shape_);
    args.partial = partial_.as<float>();
    args.partial_stride = stride;
    uint32_t grid = 0;
    if (plan.wgmma) {
        grid = std::min(args.n_tiles, plan.max_blocks);
        if (plan.wgmma_split)
            FUSEDNGP_CUDA_CHECK(launch_wgmma_split(args, grid, plan.smem_bytes, stream));
        else
            FUSEDNGP_CUDA_CHECK(launch_wgmma_train(args, grid, plan.smem_bytes, stream));
    } else if (plan.warp) {
        // Persistent grid of warps, one 16-row slab per warp and step
        // (n_tiles counts slabs); every launched block writes its partial.
        grid = std::min(ceil_div(args.n_tiles, (uint32_t)plan.warps_per_block()), plan.max_blocks);
        with_width(shape_.width, [&](auto w) {
            constexpr int kW = decltype(w)::value;
            if constexpr (kW == 16 || kW == 32 || kW == 64)
                FUSEDNGP_CUDA_CHECK(launch_warp_train<kW>(args, plan.warp_train, grid, plan.smem_bytes, stream));
            return 0;
        });
    } else {
        grid = std::min(args.n_tiles, plan.max_blocks);
        with_width(shape_.width, [&](auto w) {
            FUSEDNGP_CUDA_CHECK(launch_fused_train<decltype(w)::value>(args, plan.row_tiles_per_warp, grid,
                                                                       plan.smem_bytes, stream));
            return 0;
        });
    }
    if (d_dweights != nullptr)
        FUSEDNGP_CUDA_CHECK(launch_reduce_weight_gradients(partial_.as<float>(), grid, stride, shape_,
                                                           1.f / loss_scale_, accumulate, d_dweights, stream));
    if (d_mean_loss != nullptr)
        FUSEDNGP_CUDA_CHECK(launch_finish_fused_loss(loss_partial_.as<double>(), grid,
                                                     (size_t)args.batch * shape_.n_out, d_mean_loss, stream));
}

void FusedMlp::backward(const float* d_in, const float* d_dout, float* d_din, float* d_dweights, uint32_t batch,
                        cudaStream_t stream, bool accumulate) {
    backward(d_in, d_dout, d_din, d_dweights, batch, stream, accumulate, nullptr);
}

void FusedMlp::backward(const float* d_in, const float* d_dout, float* d_din, float* d_dweights, uint32_t batch,
                        cudaStream_t stream, bool accumulate, unsigned int* d_din_nonfinite) {
    const PassPlan& plan = training_plan_for(batch);
    KernelArgs args = base_args(d_in, batch, plan);
    args.loss = LossKind::FromGradient;
    args.dout = d_dout;
    args.din = d_din;
    args.nonfinite_flag = d_din != nullptr ? d_din_nonfinite : nullptr;
    run_training_kernel(args, plan, d_dweights, stream, accumulate, nullptr);
}

KernelArgs FusedMlp::fused_loss_args(const float* d_in, const PassPlan& plan, const float* d_target, LossKind loss,
                                    float* d_out, float* d_din, uint32_t batch, unsigned int* d_din_nonfinite) const {
    if (loss == LossKind::FromGradient)
        throw std::invalid_argument("FusedMlp::train_step: loss must be L1, L2 or RelativeL2");
    KernelArgs args = base_args(d_in, batch, plan);
    args.loss = loss;
    args.target = d_target;
    args.out = d_out;
    args.din = d_din;
    args.nonfinite_flag = d_din_nonfinite;
    // As the GPU loss's 1 / n (exact for n < 2^24 either way).
    args.loss_norm = batch > 0 ? 1.f / (float)((size_t)batch * shape_.n_out) : 0.f;
    return args;
}

void FusedMlp::train_step(const float* d_in, const float* d_target, LossKind loss, float* d_out, float* d_din,
                          float* d_dweights, uint32_t batch, cudaStream_t stream, bool accumulate,
                          float* d_mean_loss, unsigned int* d_din_nonfinite) {
    const PassPlan& plan = training_plan_for(batch);
    KernelArgs args = fused_loss_args(d_in, plan, d_target, loss, d_out, d_din, batch, d_din_nonfinite);
    run_training_kernel(args, plan, d_dweights, stream, accumulate, d_mean_loss);
}

// The warp training kernel has fp16-input kernels for its lean ReLU kernels
// only (warp_train_half_compiled); a call that would run another warp kernel
// runs the block-tile kernel, which reads either type.
const FusedMlp::PassPlan& FusedMlp::training_half_plan_for(uint32_t batch, bool extras) const {
    const PassPlan& plan = training_plan_for(batch);
    if (!plan.warp || (warp_train_half_compiled(plan.warp_train) && !extras) || !has_tile_training_) return plan;
    return tile_training_plan_;
}

void FusedMlp::train_step_half(const __half* d_in, const float* d_target, LossKind loss, float* d_out, float* d_din,
                               float* d_dweights, uint32_t batch, cudaStream_t stream, bool accumulate,
                               float* d_mean_loss, unsigned int* d_din_nonfinite) {
    const bool extras = fused_loss_extras(loss, d_mean_loss != nullptr, d_din_nonfinite != nullptr);
    const PassPlan& plan = training_half_plan_for(batch, extras);
    if (plan.warp && !(warp_train_half_compiled(plan.warp_train) && !extras))
        throw std::invalid_argument("FusedMlp::train_step_half: no kernel takes fp16 input for this network and call "
                                    "(the warp training kernel only, without the block-tile one)");
    KernelArgs args = fused_loss_args(nullptr, plan, d_target, loss, d_out, d_din, batch, d_din_nonfinite);
    args.in_half = d_in;
    run_training_kernel(args, plan, d_dweights, stream, accumulate, d_mean_loss);
}

std::string FusedMlp::describe() const {
    std::ostringstream os;
    auto pass = [&](const char* name, const PassPlan& p, bool training) {
        if (p.wgmma) {
            os << name << ": wgmma training kernel (sm_90a, 2 warpgroups" << (p.wgmma_split ? ", column-split" : "")
               << "), " << p.rows_per_tile << " rows/tile, "
               << p.smem_bytes / 1024.0 << " KiB smem, " << p.kernel.registers << " regs, " << p.kernel.local_bytes
               << " B local, " << p.kernel.blocks_per_sm << " blocks/SM";
            return;
        }
        if (p.wgmma_inference) {
            os << name << ": wgmma inference kernel (sm_90a, " << kWgmmaInferenceWarpgroups << " warpgroups), "
               << p.rows_per_tile << " rows/warpgroup chunk, " << p.smem_bytes / 1024.0 << " KiB smem, "
               << p.kernel.registers << " regs, " << p.kernel.local_bytes << " B local, " << p.kernel.blocks_per_sm
               << " blocks/SM";
            return;
        }
        if (p.warp && training) {
            static const char* const kModes[] = {"dW per warp", "dW per block", "dW per block, 128 regs"};
            os << name << ": warp training kernel (activations in registers, " << kModes[(int)p.warp_train.dw_mode]
               << " in smem), flavour " << p.warp_train.flavor << ((p.warp_train.flavor & kWarpRelu) ? " relu" : "")
               << ", " << 16 * p.row_tiles_per_warp << " rows/warp slab, " << p.smem_bytes / 1024.0
               << " KiB smem, " << p.kernel.registers << " regs, " << p.kernel.local_bytes << " B local, "
               << p.kernel.blocks_per_sm << " blocks/SM of " << p.warp_train.warps * 32 << " threads";
            return;
        }
        if (p.warp) {
            os << name << ": warp kernel (activations in registers), " << 16 * p.row_tiles_per_warp
               << " rows/warp slab, weights in " << (p.warp_variant.weights_in_smem ? "smem" : "L1") << ", flavour "
               << p.warp_variant.flavor << ((p.warp_variant.flavor & kWarpRelu) ? " relu" : "")
               << ((p.warp_variant.flavor & kWarpVec4) ? " vec4" : "") << ((p.warp_variant.flavor & kWarpStage) ? " stage" : "")
               << ((p.warp_variant.flavor & kWarpHalfIo) ? " fp16-io" : "")
               << (tuning_.warp_full_grid ? ", full grid" : "") << ", "
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
    pass("inference", inference_plan_, false);
    if (has_wgmma_training_) {
        os << "; ";
        pass("training", wgmma_training_plan_, true);
    } else if (has_tile_training_ && has_warp_training_) {
        if (warp_min_batch_ > 0) {
            os << "; training below " << warp_min_batch_ << " rows";
            pass("", tile_training_plan_, true);
            os << "; training from " << warp_min_batch_ << " rows";
        } else {
            os << "; training";
        }
        pass("", warp_training_plan_, true);
    } else {
        os << "; ";
        pass("training", training_plan(), true);
    }
    return os.str();
}

} // namespace fusedngp::gpu
