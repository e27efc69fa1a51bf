// make_gpu_encoding / create_gpu_encoding (declared in gpu_encoding.h).
#include "encodings/composite.h"
#include "encodings/factory.h"
#include "encodings/grid.h"
#include "gpu/components/gpu_composite_encoding.h"
#include "gpu/components/gpu_encoding.h"
#include "gpu/components/gpu_grid_encoding.h"
#include "gpu/components/gpu_simple_encodings.h"

#include <stdexcept>

namespace fusedngp::gpu {

std::unique_ptr<GpuEncoding> make_gpu_encoding(const Encoding<float>& cpu, const GpuEncodingOptions& options) {
    if (auto* grid = dynamic_cast<const GridEncoding<float>*>(&cpu)) {
        return std::make_unique<GpuGridEncoding>(*grid, options.grid_precision, options.grid_kernels);
    }
    if (auto* composite = dynamic_cast<const CompositeEncoding<float>*>(&cpu)) {
        return std::make_unique<GpuCompositeEncoding>(*composite, options);
    }
    if (GpuParameterFreeEncoding::supports(cpu)) return std::make_unique<GpuParameterFreeEncoding>(cpu);
    throw std::invalid_argument("no GPU implementation of encoding " + cpu.otype());
}

GpuEncodingPair create_gpu_encoding(uint32_t n_input_dims, const json& config, const std::string& path,
                                    const GpuEncodingOptions& options) {
    GpuEncodingPair pair;
    pair.cpu = create_encoding<float>(n_input_dims, config, path);
    pair.gpu = make_gpu_encoding(*pair.cpu, options);
    return pair;
}

} // namespace fusedngp::gpu
