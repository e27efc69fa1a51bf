// Small helpers shared by the optimizers: how far the parameter groups reach,
// and renaming a nested optimizer's state buffers.
#pragma once

#include "optimizers/optimizer.h"

#include <algorithm>
#include <string>
#include <vector>

namespace fusedngp {

// One past the last element any group covers. Optimizers size their state
// buffers to this so a buffer index equals a parameter index.
inline size_t params_extent(const std::vector<ParamGroup>& groups) {
    size_t extent = 0;
    for (const ParamGroup& g : groups) extent = std::max(extent, g.offset + g.size);
    return extent;
}

// Rows of a group (row_size elements each, the last one possibly short).
inline size_t rows_of(const ParamGroup& g) {
    const size_t row_size = std::max<size_t>(g.row_size, 1);
    return (g.size + row_size - 1) / row_size;
}

// Prepends `prefix` + "." to every buffer name, so that a wrapper's state
// names say which nested optimizer a buffer belongs to (mirroring the config
// path, e.g. "nested.first_moment").
template <typename T>
std::vector<StateBuffer<T>> prefixed_state(const std::string& prefix, std::vector<StateBuffer<T>> buffers) {
    for (StateBuffer<T>& b : buffers) b.name = prefix + "." + b.name;
    return buffers;
}

// Whether Adam's l2_reg applies to a group. As in tiny-cuda-nn, only the
// network's weights are decayed, never encoding parameters: a grid row's
// gradient is a few samples' share of a batch mean (1e-8 and below at batch
// 2^18), so even l2_reg 1e-6 outweighs it and pulls the grid towards zero;
// on albert.exr that capped PSNR near 44 dB.
inline bool takes_l2_reg(const ParamGroup& group) { return group.name != "encoding"; }

} // namespace fusedngp
