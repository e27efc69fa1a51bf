#include "nerf/occupancy_grid.h"

#include "core/errors.h"
#include "nerf/march_skip_mask.h"
#include "nerf/ray_marching_math.h"

#include <algorithm>
#include <string>

namespace fusedngp::nerf {

OccupancyGrid::OccupancyGrid(int aabb_scale, OccupancyGridSettings settings) : settings_(settings) {
    n_cascades_ = cascades_for_aabb_scale(aabb_scale);
    if (n_cascades_ == 0)
        throw InputError("occupancy grid: aabb_scale " + std::to_string(aabb_scale) +
                         " is not a power of two in [1, 128]");
    density_.assign((size_t)n_cascades_ * kGridCells, 0.f);
    bits_.assign((size_t)n_cascades_ * kGridCells / 8, 0xFF);
    skip_mask_ = march_skip_mask(bits_, n_cascades_);
}

// The cells (Morton index within the cascade) to sample this update.
std::vector<uint32_t> OccupancyGrid::sample_cells(int cascade, bool warmup, Rng& rng) const {
    std::vector<uint32_t> cells;
    if (warmup) {
        cells.resize(kGridCells);
        for (uint32_t i = 0; i < kGridCells; ++i) cells[i] = i;
        return cells;
    }
    const uint32_t n_each = kGridCells / 4;
    std::vector<uint32_t> occupied_cells;
    const uint32_t base = (uint32_t)cascade * kGridCells;
    for (uint32_t i = 0; i < kGridCells; ++i)
        if (grid_bit(bits_.data(), base + i)) occupied_cells.push_back(i);
    cells.reserve(2 * n_each);
    for (uint32_t i = 0; i < n_each; ++i) cells.push_back((uint32_t)(rng.next_u64() % kGridCells));
    for (uint32_t i = 0; i < n_each; ++i) {
        const uint64_t r = rng.next_u64();
        cells.push_back(occupied_cells.empty() ? (uint32_t)(r % kGridCells)
                                               : occupied_cells[r % occupied_cells.size()]);
    }
    return cells;
}

void OccupancyGrid::update(const DensityBatchFn& density_fn, uint32_t step, Rng& rng) {
    const bool warmup = step < settings_.warmup_steps;
    std::vector<float> fresh(density_.size(), 0.f);
    for (int k = 0; k < n_cascades_; ++k) {
        const std::vector<uint32_t> cells = sample_cells(k, warmup, rng);
        const float side = cascade_scale(k) / (float)kGridResolution;
        Matrix<float> points((Eigen::Index)cells.size(), 3);
        for (size_t i = 0; i < cells.size(); ++i) {
            const Box3 box = cell_box(k, morton3_decode(cells[i]));
            for (int a = 0; a < 3; ++a) points((Eigen::Index)i, a) = box.lo[a] + rng.next_float() * side;
        }
        Matrix<float> values((Eigen::Index)cells.size(), 1);
        density_fn(points, values);
        float* out = fresh.data() + (size_t)k * kGridCells;
        for (size_t i = 0; i < cells.size(); ++i) out[cells[i]] = std::max(out[cells[i]], values((Eigen::Index)i, 0));
    }
    for (size_t i = 0; i < density_.size(); ++i) density_[i] = std::max(settings_.decay * density_[i], fresh[i]);
    update_bits();
}

void OccupancyGrid::assign_density(const std::vector<float>& density) {
    if (density.size() != density_.size())
        throw InputError("occupancy grid: density has " + std::to_string(density.size()) + " values, expected " +
                         std::to_string(density_.size()));
    density_ = density;
}

void OccupancyGrid::set_density(const std::vector<float>& density) {
    assign_density(density);
    update_bits();
}

void OccupancyGrid::set_state(const std::vector<float>& density, const std::vector<uint8_t>& bits) {
    if (bits.size() != bits_.size())
        throw InputError("occupancy grid: bitfield has " + std::to_string(bits.size()) + " bytes, expected " +
                         std::to_string(bits_.size()));
    assign_density(density);
    update_threshold();
    bits_ = bits;
    skip_mask_ = march_skip_mask(bits_, n_cascades_);
}

void OccupancyGrid::update_threshold() {
    double sum = 0;  // mean over cascade 0 (the scene's unit cube), fixed order
    for (uint32_t i = 0; i < kGridCells; ++i) sum += density_[i];
    threshold_ = std::min(kOccupancyDensity, (float)(sum / kGridCells));
}

void OccupancyGrid::update_bits() {
    update_threshold();
    std::fill(bits_.begin(), bits_.end(), 0);
    for (size_t i = 0; i < density_.size(); ++i)
        if (density_[i] > threshold_) bits_[i >> 3] |= (uint8_t)(1u << (i & 7));
    pool_cascade_bits(bits_, n_cascades_);
    skip_mask_ = march_skip_mask(bits_, n_cascades_);
}

void pool_cascade_bits(std::vector<uint8_t>& bits, int n_cascades) {
    for (int k = 1; k < n_cascades; ++k)
        for (uint32_t z = 32; z < 96; ++z)
            for (uint32_t y = 32; y < 96; ++y)
                for (uint32_t x = 32; x < 96; ++x) pool_cascade_bit(bits.data(), k, {x, y, z});
}

bool OccupancyGrid::occupied(Vec3 p) const { return grid_occupied(bits_.data(), n_cascades_, p); }

float fraction_of_set_bits(const uint8_t* bytes, size_t n_bytes) {
    size_t set = 0;
    for (size_t i = 0; i < n_bytes; ++i)
        for (int b = 0; b < 8; ++b) set += (bytes[i] >> b) & 1u;
    return (float)((double)set / (double)(n_bytes * 8));
}

float OccupancyGrid::fraction_occupied() const { return fraction_of_set_bits(bits_.data(), bits_.size()); }

float OccupancyGrid::fraction_occupied(int cascade) const {
    const size_t bytes_per_cascade = kGridCells / 8;
    return fraction_of_set_bits(bits_.data() + (size_t)cascade * bytes_per_cascade, bytes_per_cascade);
}

} // namespace fusedngp::nerf
