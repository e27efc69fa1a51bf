// Composite encoding on the GPU: nested encodings on consecutive input
// column groups, outputs and parameter blocks concatenated in order (the
// layout of CompositeEncoding<float>). Nested encodings read and write their
// column slices in place through row strides: no copies.
#pragma once

#include "encodings/composite.h"
#include "gpu/components/gpu_encoding.h"

#include <memory>
#include <vector>

namespace fusedngp::gpu {

class GpuCompositeEncoding : public GpuEncoding {
public:
    GpuCompositeEncoding(const CompositeEncoding<float>& cpu, const GpuEncodingOptions& options);

    std::string otype() const override { return "Composite"; }
    uint32_t n_input_dims() const override { return n_input_dims_; }
    uint32_t n_output_dims() const override { return n_output_dims_; }
    size_t n_params() const override { return n_params_; }
    std::string describe() const override { return describe_; }

    void set_params(const float* d_params, cudaStream_t stream) override;
    void forward(ConstDeviceRows in, DeviceRows out, uint32_t batch, cudaStream_t stream) const override;
    void backward(ConstDeviceRows in, ConstDeviceRows dout, float* d_dparams, DeviceRows din, uint32_t batch,
                  cudaStream_t stream, bool accumulate = false) const override;

    // backward() leaves dL/din of input columns below `column` unwritten:
    // nested encodings that read only those columns skip their input
    // gradient (NeRF's colour network: the view direction is data, only the
    // density features need dL/din, and the SH backward was ~1.6 % of a step).
    void skip_input_gradient_below(uint32_t column) { skip_input_gradient_below_ = column; }

    // Input columns [column, column + n) that one nested encoding copies
    // unchanged (copies_input): the first output column they land in, or -1.
    int copied_output_column(uint32_t column, uint32_t n) const;
    // forward() but for that nested encoding (none skipped where
    // copied_output_column(column, n) is -1): for a caller that writes those
    // output columns itself (NeRF's trainer puts the density features
    // straight into the colour network's encoded rows instead of copying
    // them twice).
    void forward_except_copy(ConstDeviceRows in, DeviceRows out, uint32_t batch, uint32_t column, uint32_t n,
                             cudaStream_t stream) const;

    size_t n_nested() const { return parts_.size(); }
    const GpuEncoding& nested(size_t i) const { return *parts_.at(i).encoding; }

private:
    struct Part {
        std::unique_ptr<GpuEncoding> encoding;
        uint32_t input_offset = 0;
        uint32_t output_offset = 0;
        size_t param_offset = 0;
    };
    const Part* copying_part(uint32_t column, uint32_t n) const;

    std::vector<Part> parts_;
    std::string describe_;
    uint32_t n_input_dims_ = 0;
    uint32_t n_output_dims_ = 0;
    size_t n_params_ = 0;
    uint32_t skip_input_gradient_below_ = 0;
};

} // namespace fusedngp::gpu
