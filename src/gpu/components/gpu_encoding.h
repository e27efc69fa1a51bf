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

struct GpuEncodingOptions {
    GridParamPrecision grid_precision = GridParamPrecision::Half;
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
