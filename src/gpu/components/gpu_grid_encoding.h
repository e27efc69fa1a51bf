// Multi-resolution grid encoding on the GPU (Hash/Dense/Tiled; Linear,
// Nearest, Smoothstep; 2D/3D; 1, 2, 4 or 8 features per level). The twin of
// GridEncoding<float>: level scales, resolutions, indexing and offsets are
// copied from its levels(), so both index the same rows with the same scale.
#pragma once

#include "encodings/grid.h"
#include "gpu/components/device_buffer.h"
#include "gpu/components/gpu_encoding.h"

#include <cuda_fp16.h>

#include <memory>
#include <vector>

namespace fusedngp::gpu {

struct GridLevelInfo;
struct GridKernelConfig;
struct GridShape;

class GpuGridEncoding : public GpuEncoding {
public:
    GpuGridEncoding(const GridEncoding<float>& cpu, GridParamPrecision precision,
                    const GridKernelOptions& kernel_options = {});
    ~GpuGridEncoding() override;

    std::string otype() const override { return otype_; }
    uint32_t n_input_dims() const override { return n_dims_; }
    uint32_t n_output_dims() const override { return n_levels_ * n_features_; }
    size_t n_params() const override { return n_params_; }
    std::string describe() const override { return describe_; }
    GridParamPrecision precision() const { return precision_; }
    // Changes how the kernels split the work (gpu_encoding.h); host-only, not
    // while a launch of this encoding may be captured.
    void set_kernel_options(const GridKernelOptions& options);
    // What the kernels get (kernels/components/launch_grid.h, private to the
    // library, its bench and its tests): levels on the device and the host,
    // the resolved kernel options.
    GridShape shape() const;
    // The resolved GridKernelOptions::gradient_smem_bytes: levels whose fp32
    // table (rows * F * 4 bytes) fits take the shared-memory gradient path.
    uint32_t gradient_smem_bytes() const;

    // Half: converts the master into the fp16 copy (one kernel). Float: only
    // records the pointer.
    void set_params(const float* d_params, cudaStream_t stream) override;
    // Half: the fp16 tables (the whole parameter block, same layout).
    __half* half_params_mirror() override {
        return precision_ == GridParamPrecision::Half && n_params_ > 0 ? half_params_.data() : nullptr;
    }
    void forward(ConstDeviceRows in, DeviceRows out, uint32_t batch, cudaStream_t stream) const override;
    // Parameter gradient: atomicAdd in fp32 (float-order dependent, not
    // bit-reproducible). Input gradient: deterministic, levels ascending.
    // Both read the same table as forward (the fp16 copy by default).
    void backward(ConstDeviceRows in, ConstDeviceRows dout, float* d_dparams, DeviceRows din, uint32_t batch,
                  cudaStream_t stream, bool accumulate = false) const override;

private:
    void require_params(const char* call) const;

    std::string otype_, describe_;
    uint32_t n_dims_, n_features_, n_levels_;
    GridInterpolation interpolation_;
    size_t n_params_;
    GridParamPrecision precision_;
    std::vector<GridLevelInfo> host_levels_;
    DeviceBuffer<GridLevelInfo> levels_;
    std::unique_ptr<GridKernelConfig> config_;
    DeviceBuffer<__half> half_params_;
    const float* master_ = nullptr;
};

} // namespace fusedngp::gpu
