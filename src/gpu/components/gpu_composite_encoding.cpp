#include "gpu/components/gpu_composite_encoding.h"

namespace fusedngp::gpu {

GpuCompositeEncoding::GpuCompositeEncoding(const CompositeEncoding<float>& cpu, const GpuEncodingOptions& options)
    : describe_(cpu.describe()) {
    for (size_t i = 0; i < cpu.n_nested(); ++i) {
        Part part;
        part.encoding = make_gpu_encoding(cpu.nested(i), options);
        part.input_offset = n_input_dims_;
        part.output_offset = n_output_dims_;
        part.param_offset = n_params_;
        n_input_dims_ += part.encoding->n_input_dims();
        n_output_dims_ += part.encoding->n_output_dims();
        n_params_ += part.encoding->n_params();
        parts_.push_back(std::move(part));
    }
}

void GpuCompositeEncoding::set_params(const float* d_params, cudaStream_t stream) {
    for (Part& part : parts_) {
        if (part.encoding->n_params() > 0) part.encoding->set_params(d_params + part.param_offset, stream);
    }
}

void GpuCompositeEncoding::forward(ConstDeviceRows in, DeviceRows out, uint32_t batch, cudaStream_t stream) const {
    for (const Part& part : parts_) {
        part.encoding->forward({in.data + part.input_offset, in.stride}, {out.data + part.output_offset, out.stride},
                               batch, stream);
    }
}

const GpuCompositeEncoding::Part* GpuCompositeEncoding::copying_part(uint32_t column, uint32_t n) const {
    for (const Part& part : parts_) {
        if (part.input_offset == column && part.encoding->n_input_dims() == n && part.encoding->copies_input())
            return &part;
    }
    return nullptr;
}

int GpuCompositeEncoding::copied_output_column(uint32_t column, uint32_t n) const {
    const Part* part = copying_part(column, n);
    return part ? (int)part->output_offset : -1;
}

void GpuCompositeEncoding::forward_except_copy(ConstDeviceRows in, DeviceRows out, uint32_t batch, uint32_t column,
                                               uint32_t n, cudaStream_t stream) const {
    const Part* skipped = copying_part(column, n);
    for (const Part& part : parts_) {
        if (&part == skipped) continue;
        part.encoding->forward({in.data + part.input_offset, in.stride}, {out.data + part.output_offset, out.stride},
                               batch, stream);
    }
}

void GpuCompositeEncoding::backward(ConstDeviceRows in, ConstDeviceRows dout, float* d_dparams, DeviceRows din,
                                    uint32_t batch, cudaStream_t stream, bool accumulate) const {
    for (const Part& part : parts_) {
        float* part_dparams = d_dparams && part.encoding->n_params() > 0 ? d_dparams + part.param_offset : nullptr;
        const bool wanted = part.input_offset + part.encoding->n_input_dims() > skip_input_gradient_below_;
        DeviceRows part_din{din.data && wanted ? din.data + part.input_offset : nullptr, din.stride};
        part.encoding->backward({in.data + part.input_offset, in.stride},
                                {dout.data + part.output_offset, dout.stride}, part_dparams, part_din, batch,
                                stream, accumulate);
    }
}

} // namespace fusedngp::gpu
