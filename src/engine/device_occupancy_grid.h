// DeviceOccupancyGrid: the GPU twin of nerf::OccupancyGrid (same layout,
// update rule, threshold and pooling; nerf/occupancy_grid.h documents them).
// The draws differ: cells and jitter come from counter-based numbers keyed by
// the step, and the occupied-cell half of an update is drawn from a compacted
// list of the occupied cells (CUB), uniform over them as on the CPU.
#pragma once

#include "gpu/components/device_buffer.h"
#include "nerf/occupancy_grid.h"
#include "nerf/ray_marching_math.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace fusedngp {

class DeviceOccupancyGrid {
public:
    // points (device, [n][3]) -> density (device, [n]) after the activation,
    // enqueued on the same stream.
    using DensityFn = std::function<void(const float* d_points, uint32_t n, float* d_density)>;

    DeviceOccupancyGrid(int n_cascades, nerf::OccupancyGridSettings settings, uint64_t key, cudaStream_t stream);

    int n_cascades() const { return n_cascades_; }
    size_t n_cells() const { return (size_t)n_cascades_ * nerf::kGridCells; }
    const uint8_t* bits() const { return bits_.data(); }
    // nerf/march_skip_mask.h's mask of the bits, rebuilt whenever they change.
    const uint8_t* skip_mask() const { return skip_mask_.data(); }
    std::vector<uint8_t> download_skip_mask(cudaStream_t stream) const;

    // One update (every occupancy_update_interval training steps).
    void update(const DensityFn& density_fn, uint32_t step, cudaStream_t stream);
    // Steps 3-5 of an update from given samples: fresh maxima of `values` at
    // `cells` of each cascade, the decay, threshold, bits and pooling (the
    // part a test compares with the CPU grid exactly).
    void apply(const std::vector<std::vector<uint32_t>>& cells, const std::vector<std::vector<float>>& values,
               cudaStream_t stream);

    // A host copy (synchronous), and restoring one.
    nerf::OccupancyGrid download(int aabb_scale, cudaStream_t stream) const;
    void upload(const std::vector<float>& density, const std::vector<uint8_t>& bits, cudaStream_t stream);

private:
    void finish_update(cudaStream_t stream);

    int n_cascades_;
    nerf::OccupancyGridSettings settings_;
    uint64_t key_;
    gpu::DeviceBuffer<float> density_, fresh_;
    gpu::DeviceBuffer<uint8_t> bits_, skip_mask_;
    gpu::DeviceBuffer<uint32_t> cells_, occupied_, n_occupied_;
    gpu::DeviceBuffer<float> points_, values_, threshold_;
    gpu::DeviceBuffer<double> sum_;  // cascade 0's densities
    gpu::DeviceBuffer<uint8_t> temp_;
};

} // namespace fusedngp
