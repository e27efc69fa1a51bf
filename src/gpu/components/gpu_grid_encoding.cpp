#include "gpu/components/gpu_grid_encoding.h"

#include "launch_common.h"
#include "launch_grid.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>
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
        info.rows = level.rows;
        info.param_offset = level.param_offset;
        infos.push_back(info);
    }
    return infos;
}

// FUSEDNGP_GRID_KERNELS="key=value,..." overrides GridKernelOptions fields
// (forward_level_group, gradient_smem_bytes, gradient_flush_ratio,
// gradient_max_samples_per_thread, gradient_interleave_levels,
// gradient_pair_corners, forward_chunk_loads,
// gradient_warp_aggregate_shared, gradient_sample_run; booleans as 0/1): a developer
// knob for timing `fusedngp train` under other kernel settings; not a stable
// interface. Unknown keys or bad values throw.
GridKernelOptions with_environment_overrides(GridKernelOptions options) {
    const char* env = std::getenv("FUSEDNGP_GRID_KERNELS");
    if (!env || !*env) return options;
    std::istringstream items(env);
    std::string item;
    while (std::getline(items, item, ',')) {
        if (item.empty()) continue;
        const size_t eq = item.find('=');
        const std::string key = item.substr(0, eq == std::string::npos ? item.size() : eq);
        const std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
        char* end = nullptr;
        const unsigned long v = std::strtoul(value.c_str(), &end, 10);
        if (value.empty() || *end != '\0' || v > 0xFFFFFFFFul) {
            throw std::invalid_argument("FUSEDNGP_GRID_KERNELS: bad value in \"" + item + "\"");
        }
        if (key == "forward_level_group") {
            options.forward_level_group = (uint32_t)v;
        } else if (key == "gradient_smem_bytes") {
            options.gradient_smem_bytes = (uint32_t)v;
        } else if (key == "gradient_flush_ratio") {
            options.gradient_flush_ratio = (uint32_t)v;
        } else if (key == "gradient_max_samples_per_thread") {
            options.gradient_max_samples_per_thread = (uint32_t)v;
        } else if (key == "gradient_interleave_levels") {
            options.gradient_interleave_levels = v != 0;
        } else if (key == "gradient_pair_corners") {
            options.gradient_pair_corners = v != 0;
        } else if (key == "forward_chunk_loads") {
            options.forward_chunk_loads = v != 0;
        } else if (key == "gradient_warp_aggregate_shared") {
            options.gradient_warp_aggregate_shared = v != 0;
        } else if (key == "gradient_sample_run") {
            options.gradient_sample_run = (uint32_t)v;
        } else {
            throw std::invalid_argument("FUSEDNGP_GRID_KERNELS: unknown key \"" + key + "\"");
        }
    }
    return options;
}

uint32_t ceil_log2(uint32_t v) {
    uint32_t log2 = 0;
    while ((1u << log2) < v) ++log2;
    return log2;
}

GridKernelConfig resolve(const GridKernelOptions& options, uint32_t n_dims, uint32_t n_features, uint32_t n_levels) {
    GridKernelConfig config;
    uint32_t group = options.forward_level_group;
    if (group == GridKernelOptions::kAuto) {
        // Whole 32-byte sectors of each output row per run (F = 2: 4 levels).
        // 2D with the chunk loads: whole 128-byte lines (F = 2: 16 levels;
        // image-fit grid on the H200: 0.064 ms at 8 floats, 0.058 at 32). 3D
        // keeps 8 floats (default 3D grid: 0.148 ms at 8, 0.147 at 16).
        const uint32_t floats = n_dims == 2 && options.forward_chunk_loads ? 32u : 8u;
        group = std::max(1u, floats / n_features);
    }
    if (group == 0 || group > 64 || (group & (group - 1)) != 0) {
        throw std::invalid_argument("GridKernelOptions::forward_level_group must be a power of two in 1..64, got " +
                                    std::to_string(group));
    }
    // No wider than the levels there are (rounded up to a power of two).
    config.forward_group_log2 = std::min(ceil_log2(group), ceil_log2(std::max(n_levels, 1u)));
    // kAuto stays kGridSmemAuto: prepare_grid_gradient_kernel resolves it.
    static_assert(GridKernelOptions::kAuto == kGridSmemAuto);
    config.gradient_smem_bytes = options.gradient_smem_bytes;
    if (options.gradient_flush_ratio == 0 || options.gradient_max_samples_per_thread == 0) {
        throw std::invalid_argument("GridKernelOptions: gradient_flush_ratio and gradient_max_samples_per_thread "
                                    "must be positive");
    }
    config.gradient_flush_ratio = options.gradient_flush_ratio;
    config.gradient_max_samples_per_thread = options.gradient_max_samples_per_thread;
    config.gradient_interleave_levels = options.gradient_interleave_levels;
    config.gradient_pair_corners = options.gradient_pair_corners;
    config.forward_chunk_loads = options.forward_chunk_loads;
    config.gradient_warp_aggregate_shared = options.gradient_warp_aggregate_shared;
    if (options.gradient_sample_run == 0 || options.gradient_sample_run > 64) {
        throw std::invalid_argument("GridKernelOptions::gradient_sample_run must be in 1..64, got " +
                                    std::to_string(options.gradient_sample_run));
    }
    config.gradient_sample_run = options.gradient_sample_run;
    return config;
}

} // namespace

GpuGridEncoding::GpuGridEncoding(const GridEncoding<float>& cpu, GridParamPrecision precision,
                                 const GridKernelOptions& kernel_options)
    : otype_(cpu.otype()),
      describe_(cpu.describe()),
      n_dims_(cpu.n_input_dims()),
      n_features_(cpu.options().n_features_per_level),
      n_levels_(cpu.options().n_levels),
      interpolation_(cpu.options().interpolation),
      n_params_(cpu.n_params()),
      precision_(precision) {
    if (n_levels_ > 65535) {
        // The forward's levels are a grid dimension (gridDim.y).
        throw std::invalid_argument("GpuGridEncoding: at most 65535 levels, got " + std::to_string(n_levels_));
    }
    host_levels_ = level_infos(cpu);
    levels_.resize(host_levels_.size());
    FUSEDNGP_GPU_CHECK(cudaMemcpy(levels_.data(), host_levels_.data(), host_levels_.size() * sizeof(GridLevelInfo),
                                  cudaMemcpyHostToDevice));
    if (precision_ == GridParamPrecision::Half) half_params_.resize(n_params_);
    set_kernel_options(with_environment_overrides(kernel_options));
}

void GpuGridEncoding::set_kernel_options(const GridKernelOptions& options) {
    GridShape shape = this->shape();
    shape.config = resolve(options, n_dims_, n_features_, n_levels_);
    config_ = std::make_unique<GridKernelConfig>(prepare_grid_gradient_kernel(shape));
}

uint32_t GpuGridEncoding::gradient_smem_bytes() const { return config_->gradient_smem_bytes; }

GridShape GpuGridEncoding::shape() const {
    GridShape shape{n_dims_, n_features_, n_levels_, to_weights(interpolation_), levels_.data(), host_levels_.data(),
                    {}};
    if (config_) shape.config = *config_;
    return shape;
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
    const GridShape shape = this->shape();
    if (precision_ == GridParamPrecision::Half) {
        launch_grid_forward(shape, half_params_.data(), in, out, batch, stream);
    } else {
        launch_grid_forward(shape, master_, in, out, batch, stream);
    }
}

void GpuGridEncoding::backward(ConstDeviceRows in, ConstDeviceRows dout, float* d_dparams, DeviceRows din,
                               uint32_t batch, cudaStream_t stream, bool accumulate) const {
    const GridShape shape = this->shape();
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
