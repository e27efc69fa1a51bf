// Host entry points of the multi-resolution grid encoding kernels.
// The arithmetic follows docs/ENCODINGS.md ("Grid") exactly; level scales,
// resolutions and offsets come from the CPU GridEncoding<float>::levels().
#pragma once

#include "gpu/components/device_rows.h"

#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace fusedngp::gpu {

// How a level maps a grid vertex to a table row (values of GridIndexing).
enum class GridRowIndexing : uint32_t { Dense = 0, Tiled = 1, Hash = 2 };
// Values of GridInterpolation.
enum class GridWeights : uint32_t { Linear = 0, Nearest = 1, Smoothstep = 2 };

// One level, as the kernels read it (an array of these lives on the device,
// a copy on the host for planning the launches).
struct GridLevelInfo {
    float scale = 0;            // (float) of the CPU level's scale: the same value
    GridRowIndexing indexing = GridRowIndexing::Dense;
    uint32_t stride = 0;        // Dense: resolution; Tiled: base_resolution
    uint32_t hash_mask = 0;     // Hash: rows - 1 (rows is a power of two)
    uint32_t rows = 0;          // rows of the level's table
    unsigned long long param_offset = 0;  // first element of the level's table
};

// The resolved GridKernelOptions (gpu_encoding.h): no kAuto left.
struct GridKernelConfig {
    uint32_t forward_group_log2 = 0;      // forward: 2^this levels per sample run
    uint32_t gradient_smem_bytes = 0;     // largest table summed in shared memory (0: none)
    uint32_t gradient_flush_ratio = 32;
    uint32_t gradient_max_samples_per_thread = 8;
    bool gradient_interleave_levels = true;
    // Interleave only while the global levels' gradient tables together take
    // at most this many bytes (set from the L2 size).
    uint32_t gradient_interleave_max_bytes = 0xFFFFFFFFu;
    bool gradient_pair_corners = true;
    bool forward_chunk_loads = true;  // fp16 tables, F <= 4: corner pairs from one 16-byte load
    // Shared-memory levels: a warp first sums its lanes' contributions to the
    // same row, one shared atomic per distinct row.
    bool gradient_warp_aggregate_shared = false;
    // Global-atomic levels: samples per thread, taken in order at one level
    // (1: one sample per thread).
    uint32_t gradient_sample_run = 1;
};

struct GridShape {
    uint32_t n_dims = 0;       // 2 or 3
    uint32_t n_features = 0;   // 1, 2, 4 or 8
    uint32_t n_levels = 0;     // <= 65535
    GridWeights weights = GridWeights::Linear;
    const GridLevelInfo* levels = nullptr;       // device, n_levels entries
    const GridLevelInfo* host_levels = nullptr;  // host copy of the same (launch planning)
    GridKernelConfig config;
};

// Threads per block of the parameter-gradient kernel.
constexpr uint32_t kGridGradientThreads = 512;

// gradient_smem_bytes meaning "the largest table that keeps the gradient
// kernel's occupancy" (GridKernelOptions::kAuto).
constexpr uint32_t kGridSmemAuto = 0xFFFFFFFFu;

// Lets the gradient kernel of this shape's (n_dims, n_features) use the
// device's whole per-block shared memory and returns shape.config with the
// device-dependent parts resolved: gradient_smem_bytes (kGridSmemAuto
// resolved, clamped to that maximum) and gradient_interleave_max_bytes.
// Host-only and idempotent; the encoding's constructor calls it, before any
// launch (not during stream capture).
GridKernelConfig prepare_grid_gradient_kernel(const GridShape& shape);

// out[s][l*F + f] for every sample s < batch and level l. `table` is the
// whole parameter block (fp16 copy or fp32 master).
void launch_grid_forward(const GridShape& shape, const __half* table, ConstDeviceRows in, DeviceRows out,
                         uint32_t batch, cudaStream_t stream);
void launch_grid_forward(const GridShape& shape, const float* table, ConstDeviceRows in, DeviceRows out,
                         uint32_t batch, cudaStream_t stream);

// dparams[row of corner k][f] += weight_k * dout[s][l*F + f] (atomicAdd; the
// caller zeroes dparams first unless it accumulates).
void launch_grid_param_gradient(const GridShape& shape, ConstDeviceRows in, ConstDeviceRows dout, float* dparams,
                                uint32_t batch, cudaStream_t stream);

// din[s][i] = dL/dx_i, overwritten (zeros for Nearest).
void launch_grid_input_gradient(const GridShape& shape, const __half* table, ConstDeviceRows in,
                                ConstDeviceRows dout, DeviceRows din, uint32_t batch, cudaStream_t stream);
void launch_grid_input_gradient(const GridShape& shape, const float* table, ConstDeviceRows in,
                                ConstDeviceRows dout, DeviceRows din, uint32_t batch, cudaStream_t stream);

} // namespace fusedngp::gpu
