#include "nerf/occlusion_mask.h"

#include "core/errors.h"
#include "nerf/occupancy_grid.h"

#include <algorithm>
#include <string>

namespace fusedngp::nerf {

OcclusionMask::OcclusionMask(int n_cascades) : n_cascades_(n_cascades) {
    const size_t bytes = (size_t)n_cascades * kGridCells / 8;
    culled_.assign(bytes, 0);
    visited_.assign(bytes, 0);
    seen_.assign(bytes, 0);
    recent_.assign(bytes * 8, kOcclusionMemory);
}

void OcclusionMask::note_sample(Vec3 p, float dt, bool seen) {
    const uint32_t i = marched_cell(p, dt, n_cascades_);
    if (i == kNoGridCell) return;
    const uint8_t bit = (uint8_t)(1u << (i & 7u));
    visited_[i >> 3] |= bit;
    if (seen) seen_[i >> 3] |= bit;
}

void OcclusionMask::update() {
    for (size_t b = 0; b < culled_.size(); ++b)
        culled_[b] = next_culled_cells(culled_[b], visited_[b], seen_[b], &recent_[8 * b]);
    clear_marks();
}

void OcclusionMask::clear_marks() {
    std::fill(visited_.begin(), visited_.end(), 0);
    std::fill(seen_.begin(), seen_.end(), 0);
}

void OcclusionMask::training_bits(const std::vector<uint8_t>& occupied, std::vector<uint8_t>& out) const {
    out.resize(occupied.size());
    for (size_t b = 0; b < occupied.size(); ++b) out[b] = training_march_cells(occupied[b], culled_[b]);
}

void OcclusionMask::set_culled(const std::vector<uint8_t>& culled) {
    if (culled.size() != culled_.size())
        throw InputError("occlusion mask: " + std::to_string(culled.size()) + " bytes, expected " +
                         std::to_string(culled_.size()));
    culled_ = culled;
}

float OcclusionMask::fraction_culled() const { return fraction_of_set_bits(culled_.data(), culled_.size()); }

} // namespace fusedngp::nerf
