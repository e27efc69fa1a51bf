// The parameter-free encodings on the GPU: Identity, Frequency, TriangleWave,
// OneBlob and SphericalHarmonics (degree 1..8). One class: they differ only
// in a few constants, which are taken from the CPU encoding and computed on
// the host with the same expressions as the CPU code.
#pragma once

#include "gpu/components/gpu_encoding.h"

#include <memory>

namespace fusedngp::gpu {

struct SimpleEncodingArgs;

class GpuParameterFreeEncoding : public GpuEncoding {
public:
    // Throws std::invalid_argument when `cpu` is not one of the five types.
    explicit GpuParameterFreeEncoding(const Encoding<float>& cpu);
    ~GpuParameterFreeEncoding() override;

    std::string otype() const override { return otype_; }
    uint32_t n_input_dims() const override { return n_input_dims_; }
    uint32_t n_output_dims() const override { return n_output_dims_; }
    std::string describe() const override { return describe_; }
    bool copies_input() const override;

    void forward(ConstDeviceRows in, DeviceRows out, uint32_t batch, cudaStream_t stream) const override;
    // d_dparams and accumulate are ignored (no parameters).
    void backward(ConstDeviceRows in, ConstDeviceRows dout, float* d_dparams, DeviceRows din, uint32_t batch,
                  cudaStream_t stream, bool accumulate = false) const override;

    // True for the encodings this class implements.
    static bool supports(const Encoding<float>& cpu);

private:
    std::string otype_, describe_;
    uint32_t n_input_dims_, n_output_dims_;
    std::unique_ptr<SimpleEncodingArgs> args_;
};

} // namespace fusedngp::gpu
