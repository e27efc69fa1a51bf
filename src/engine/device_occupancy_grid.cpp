#include "engine/device_occupancy_grid.h"

#include "core/errors.h"
#include "nerf/launch_nerf.h"
#include "nerf/march_skip_mask.h"

#include <algorithm>
#include <string>

namespace fusedngp {

DeviceOccupancyGrid::DeviceOccupancyGrid(int n_cascades, nerf::OccupancyGridSettings settings, uint64_t key,
                                         cudaStream_t stream)
    : n_cascades_(n_cascades), settings_(settings), key_(key) {
    density_.resize(n_cells());
    fresh_.resize(n_cells());
    bits_.resize(n_cells() / 8);
    skip_mask_.resize((size_t)n_cascades * nerf::kSkipBlocks);
    cells_.resize(nerf::kGridCells);
    occupied_.resize(nerf::kGridCells);
    n_occupied_.resize(1);
    points_.resize(3 * (size_t)nerf::kGridCells);
    values_.resize(nerf::kGridCells);
    sum_.resize(1);
    threshold_.resize(1);
    density_.fill_bytes(0, stream);
    bits_.fill_bytes(0xFF, stream);  // before the first update every cell is marched
    gpu::launch_nerf_skip_mask(bits_.data(), n_cascades_, skip_mask_.data(), stream);
    size_t select_bytes = 0, sum_bytes = 0;
    gpu::nerf_occupied_cells(nullptr, 0, nullptr, nullptr, nullptr, select_bytes, stream);
    gpu::nerf_sum(nullptr, nerf::kGridCells, nullptr, nullptr, sum_bytes, stream);
    temp_.resize(std::max<size_t>(std::max(select_bytes, sum_bytes), 1));
}

void DeviceOccupancyGrid::update(const DensityFn& density_fn, uint32_t step, cudaStream_t stream) {
    const bool warmup = step < settings_.warmup_steps;
    const uint32_t n = warmup ? nerf::kGridCells : nerf::kGridCells / 2;
    fresh_.fill_bytes(0, stream);
    for (int k = 0; k < n_cascades_; ++k) {
        if (!warmup) {
            size_t bytes = temp_.size();
            gpu::nerf_occupied_cells(bits_.data(), k, occupied_.data(), n_occupied_.data(), temp_.data(), bytes,
                                     stream);
        }
        gpu::launch_nerf_grid_samples(key_, step, k, warmup, occupied_.data(), n_occupied_.data(), cells_.data(),
                                      points_.data(), stream);
        density_fn(points_.data(), n, values_.data());
        gpu::launch_nerf_grid_scatter_max(cells_.data(), values_.data(), n, k, fresh_.data(), stream);
    }
    finish_update(stream);
}

void DeviceOccupancyGrid::apply(const std::vector<std::vector<uint32_t>>& cells,
                                const std::vector<std::vector<float>>& values, cudaStream_t stream) {
    fresh_.fill_bytes(0, stream);
    for (int k = 0; k < n_cascades_ && k < (int)cells.size(); ++k) {
        const uint32_t n = (uint32_t)std::min(cells[k].size(), (size_t)nerf::kGridCells);
        FUSEDNGP_GPU_CHECK(cudaMemcpyAsync(cells_.data(), cells[k].data(), n * sizeof(uint32_t),
                                           cudaMemcpyHostToDevice, stream));
        FUSEDNGP_GPU_CHECK(cudaMemcpyAsync(values_.data(), values[k].data(), n * sizeof(float),
                                           cudaMemcpyHostToDevice, stream));
        gpu::launch_nerf_grid_scatter_max(cells_.data(), values_.data(), n, k, fresh_.data(), stream);
        FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream));  // the host vectors are read asynchronously
    }
    finish_update(stream);
}

void DeviceOccupancyGrid::finish_update(cudaStream_t stream) {
    gpu::launch_nerf_grid_decay(density_.data(), fresh_.data(), settings_.decay, n_cells(), stream);
    size_t bytes = temp_.size();
    gpu::nerf_sum(density_.data(), nerf::kGridCells, sum_.data(), temp_.data(), bytes, stream);
    gpu::launch_nerf_grid_threshold(sum_.data(), threshold_.data(), stream);
    gpu::launch_nerf_grid_bits(density_.data(), threshold_.data(), n_cells(), bits_.data(), stream);
    gpu::launch_nerf_grid_pool(bits_.data(), n_cascades_, stream);
    gpu::launch_nerf_skip_mask(bits_.data(), n_cascades_, skip_mask_.data(), stream);
}

nerf::OccupancyGrid DeviceOccupancyGrid::download(int aabb_scale, cudaStream_t stream) const {
    FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream));
    nerf::OccupancyGrid grid(aabb_scale, settings_);
    grid.set_state(density_.download(), bits_.download());
    return grid;
}

void DeviceOccupancyGrid::upload(const std::vector<float>& density, const std::vector<uint8_t>& bits,
                                 cudaStream_t stream) {
    if (density.size() != n_cells() || bits.size() != n_cells() / 8)
        throw InputError("occupancy grid: the state has " + std::to_string(density.size()) + " cells and " +
                         std::to_string(bits.size()) + " bytes of bits, expected " + std::to_string(n_cells()) +
                         " and " + std::to_string(n_cells() / 8));
    FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream));
    density_.upload(density);
    bits_.upload(bits);
    gpu::launch_nerf_skip_mask(bits_.data(), n_cascades_, skip_mask_.data(), stream);
}

std::vector<uint8_t> DeviceOccupancyGrid::download_skip_mask(cudaStream_t stream) const {
    FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream));
    return skip_mask_.download();
}

} // namespace fusedngp
