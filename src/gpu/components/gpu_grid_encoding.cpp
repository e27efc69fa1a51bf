#include "gpu/components/gpu_grid_encoding.h"

#include "launch_common.h"
#include "launch_grid.h"

#include <stdexcept>
#include <vector>

namespace fusedngp::gpu {

namespace {

GridRowIndexing to_row_indexing(GridIndexing indexing) {
    switch (indexing) {
        case GridIndexing::Hash: return GridRowIndexing::Hash;
        case GridIndexing::Tiled: return GridRowIndexing::Tiled;
        case GridIndexing::Dense: break;
    }
    return GridRowIndexing::Dense;
}

GridWeights to_weights(GridInterpolation interpolation) {
    switch (interpolation) {
        case GridInterpolation::Nearest: return GridWeights::Nearest;
        case GridInterpolation::Smoothstep: return GridWeights::Smoothstep;
        case GridInterpolation::Linear: break;
    }
    return GridWeights::Linear;
}

std::vector<GridLevelInfo> level_infos(const GridEncoding<float>& cpu) {
    std::vector<GridLevelInfo> infos;
    for (const GridLevel& level : cpu.levels()) {
        GridLevelInfo info;
        // levels()[l].scale is the float the CPU kernels use, widened to
        // double: narrowing it back is exact.
        info.scale = (float)level.scale;
        info.indexing = to_row_indexing(level.indexing);
        info.stride = level.indexing == GridIndexing::Tiled ? cpu.options().base_resolution : level.resolution;
        info.hash_mask = level.rows - 1;
        info.param_offset = level.param_offset;
        infos.push_back(info);
    }
    return infos;
}

} // namespace

GpuGridEncoding::GpuGridEncoding(const GridEncoding<float>& cpu, GridParamPrecision precision)
    : otype_(cpu.otype()),
      describe_(cpu.describe()),
      n_dims_(cpu.n_input_dims()),
      n_features_(cpu.options().n_features_per_level),
      n_levels_(cpu.options().n_levels),
      interpolation_(cpu.options().interpolation),
      n_params_(cpu.n_params()),
      precision_(precision) {
    if (n_levels_ > 65535) {
        // One row of blocks per level (gridDim.y).
        throw std::invalid_argument("GpuGridEncoding: at most 65535 levels, got " + std::to_string(n_levels_));
    }
    const std::vector<GridLevelInfo> infos = level_infos(cpu);
    levels_.resize(infos.size());
    FUSEDNGP_GPU_CHECK(cudaMemcpy(levels_.data(), infos.data(), infos.size() * sizeof(GridLevelInfo),
                                  cudaMemcpyHostToDevice));
    if (precision_ == GridParamPrecision::Half) half_params_.resize(n_params_);
}

GpuGridEncoding::~GpuGridEncoding() = default;

void GpuGridEncoding::set_params(const float* d_params, cudaStream_t stream) {
    master_ = d_params;
    if (precision_ == GridParamPrecision::Half) launch_float_to_half(d_params, half_params_.data(), n_params_, stream);
}

void GpuGridEncoding::require_params(const char* call) const {
    if (!master_) throw std::logic_error(otype_ + "::" + call + ": set_params() was never called");
}

void GpuGridEncoding::forward(ConstDeviceRows in, DeviceRows out, uint32_t batch, cudaStream_t stream) const {
    require_params("forward");
    const GridShape shape{n_dims_, n_features_, n_levels_, to_weights(interpolation_), levels_.data()};
    if (precision_ == GridParamPrecision::Half) {
        launch_grid_forward(shape, half_params_.data(), in, out, batch, stream);
    } else {
        launch_grid_forward(shape, master_, in, out, batch, stream);
    }
}

void GpuGridEncoding::backward(ConstDeviceRows in, ConstDeviceRows dout, float* d_dparams, DeviceRows din,
                               uint32_t batch, cudaStream_t stream, bool accumulate) const {
    const GridShape shape{n_dims_, n_features_, n_levels_, to_weights(interpolation_), levels_.data()};
    if (d_dparams) {
        if (!accumulate) FUSEDNGP_GPU_CHECK(cudaMemsetAsync(d_dparams, 0, n_params_ * sizeof(float), stream));
        launch_grid_param_gradient(shape, in, dout, d_dparams, batch, stream);
    }
    if (din.data) {
        require_params("backward");
        if (precision_ == GridParamPrecision::Half) {
            launch_grid_input_gradient(shape, half_params_.data(), in, dout, din, batch, stream);
        } else {
            launch_grid_input_gradient(shape, master_, in, dout, din, batch, stream);
        }
    }
}

} // namespace fusedngp::gpu
