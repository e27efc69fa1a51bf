// GpuEncoding: the GPU twin of Encoding<float> (src/encodings/encoding.h).
//
// Data: batch-major fp32 device arrays viewed as rows (device_rows.h), so a
// component can read/write a column slice of a wider matrix in place.
// Parameters: the caller owns the flat fp32 master array (the model's
// encoding block), exactly as on the CPU, with the same layout. The encoding
// keeps only what its kernels read: an fp16 copy of the grid tables by
// default (see GridParamPrecision), refreshed by set_params().
//
// All calls are asynchronous on `stream`, never synchronise the host and
// never allocate (allocation happens in the constructor), so a training step
// can be captured in a CUDA graph.
#pragma once

#include "core/json_fields.h"
#include "encodings/encoding.h"
#include "gpu/components/device_rows.h"

#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace fusedngp::gpu {

// What the grid kernels read.
enum class GridParamPrecision {
    // fp16 copy of the fp32 master (made by set_params): half the memory
    // traffic of the random table reads that bound the grid's speed, and a
    // default-size hash grid (~14M params, 28 MB) fits in the H100/H200 L2.
    Half,
    // The fp32 master itself: exact agreement with the CPU reference.
    Float,
};

// How the grid kernels split their work (docs/GPU_COMPONENTS.md, "Grid", has
// the measurements behind the defaults). Tests and fusedngp_grid_bench change
// them to cover and compare every path. None of them changes the result
// beyond fp32 summation order (the forward is bit-identical for every
// setting).
struct GridKernelOptions {
    static constexpr uint32_t kAuto = 0xFFFFFFFFu;
    // Forward: consecutive threads encode G consecutive levels of one sample
    // (a power of two, 1..64), so a warp writes whole runs of G*F floats of
    // each output row. kAuto: G*F = 8 floats (one 32-byte sector); 2D grids
    // with forward_chunk_loads: 32 floats (one 128-byte line, measured).
    uint32_t forward_level_group = kAuto;
    // Parameter gradient: a level whose fp32 gradient table (rows rounded up
    // to even, times F floats) has at most this many bytes is summed per block
    // in shared memory and flushed to the gradient with one atomic per touched
    // row (pair); larger (hashed) levels use global atomics per corner. 0:
    // global atomics everywhere. kAuto: the largest table that keeps the
    // kernel at full occupancy on the device (56 KB on the H200).
    uint32_t gradient_smem_bytes = kAuto;
    // Shared-memory levels: samples per block are chosen so that a block's
    // corner contributions are about this many times the level's rows (its
    // flush), capped at gradient_max_samples_per_thread per thread (the cap
    // decides on the image-fit grid: short blocks overlap best).
    uint32_t gradient_flush_ratio = 32;
    uint32_t gradient_max_samples_per_thread = 8;
    // Global-atomic levels: consecutive threads take consecutive levels of
    // one sample (coalesced dL/dy reads; every level's rows are hit at once,
    // so the atomics spread over all of L2) instead of one level per block.
    // Applied only while those levels' gradient tables together fit in half
    // the L2; larger grids are updated one level at a time.
    bool gradient_interleave_levels = true;
    // F = 1, 2: a sample's two corners along x whose rows are an aligned
    // pair (2m, 2m+1; half the samples, dense and hashed levels alike) are
    // added with one 2F-float vector atomic instead of two, and shared-memory
    // levels flush rows in such pairs.
    bool gradient_pair_corners = true;
    // Forward with fp16 tables (F <= 4): a cell edge's two corners along x
    // are read with one 16-byte load where both rows sit in one aligned
    // chunk of the level's table (the forward is bound by L2 requests).
    bool forward_chunk_loads = true;
    // Shared-memory levels: lanes of a warp that add to the same row sum
    // first (__match_any_sync on the row, a shuffle reduction), and one lane
    // adds the sum with the shared-memory atomics (CAS loops on sm_90, which
    // serialise when a warp's samples share a row).
    // Pays with the tiled order only (H200, image-fit step: 0.346 ms against
    // 0.360 for spread + plain; on spread inputs the gradient kernel goes
    // 0.137 -> 0.157 ms), so off here: the CUDA backend turns it on for image
    // data in the tiled order, the default (encoding_options there).
    // There is no such option for the global-atomic levels: on the H200 it
    // never paid, on either sample order (docs/GPU_COMPONENTS.md, "Warp
    // aggregation").
    bool gradient_warp_aggregate_shared = false;
    // Global-atomic levels: each thread takes this many consecutive samples
    // of one level and sums their corner contributions in registers while
    // they stay in one cell, adding to the table once per cell visited
    // (1..64; 1: one sample per thread, the general order). Pays where
    // consecutive samples lie close together (NeRF's, ray by ray); turns
    // gradient_interleave_levels off. The NeRF trainer sets it for the
    // density grid.
    uint32_t gradient_sample_run = 1;
};

struct GpuEncodingOptions {
    GridParamPrecision grid_precision = GridParamPrecision::Half;
    GridKernelOptions grid_kernels;
};

class GpuEncoding {
public:
    virtual ~GpuEncoding() = default;

    virtual std::string otype() const = 0;  // as the CPU encoding's otype()
    virtual uint32_t n_input_dims() const = 0;
    virtual uint32_t n_output_dims() const = 0;
    virtual size_t n_params() const { return 0; }
    virtual std::string describe() const = 0;

    // Binds the fp32 master parameters (device, n_params() floats, CPU layout;
    // they must stay valid while the encoding is used) and refreshes the copy
    // the kernels read. Call again after every optimizer step. Must be called
    // once before forward/backward when n_params() > 0.
    virtual void set_params(const float* d_params, cudaStream_t stream) {
        (void)d_params;
        (void)stream;
    }

    // The fp16 copy that set_params() refreshes, as one array laid out like
    // the fp32 master (element i mirrors d_params[i]), when the encoding has
    // exactly that; null otherwise. An optimizer may then keep it current row
    // by row (GpuOptimizer::set_sparse_group) instead of set_params()
    // converting every parameter after every step.
    virtual __half* half_params_mirror() { return nullptr; }

    // out (batch x n_output_dims) = encode(in (batch x n_input_dims)).
    virtual void forward(ConstDeviceRows in, DeviceRows out, uint32_t batch, cudaStream_t stream) const = 0;

    // Given dout = dL/dout: writes dL/dparams into d_dparams (n_params()
    // floats; overwritten, or added to when `accumulate`; skipped when null)
    // and dL/din into din (overwritten; skipped when din.data is null).
    virtual void backward(ConstDeviceRows in, ConstDeviceRows dout, float* d_dparams, DeviceRows din, uint32_t batch,
                          cudaStream_t stream, bool accumulate = false) const = 0;

    // Whether forward() writes its input unchanged (out = in, column for
    // column) and backward()'s dL/din is dL/dout: an Identity with scale 1
    // and offset 0. A Composite can then leave such a part to its caller.
    virtual bool copies_input() const { return false; }
};

// The GPU twin of an existing CPU encoding (same function, same parameter
// layout): reads its public description (GridEncoding::levels(), ...), so
// CPU and GPU agree on every constant. Does not keep a reference to `cpu`.
std::unique_ptr<GpuEncoding> make_gpu_encoding(const Encoding<float>& cpu, const GpuEncodingOptions& options = {});

// Builds the CPU encoding from the config through create_encoding<float>
// (same validation and ConfigErrors), then its GPU twin. Use the CPU
// encoding's init_params() for the initial parameters.
struct GpuEncodingPair {
    std::unique_ptr<Encoding<float>> cpu;
    std::unique_ptr<GpuEncoding> gpu;
};
GpuEncodingPair create_gpu_encoding(uint32_t n_input_dims, const json& config, const std::string& path = "encoding",
                                    const GpuEncodingOptions& options = {});

} // namespace fusedngp::gpu
