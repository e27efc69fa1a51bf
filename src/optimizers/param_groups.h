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

// Prepends `prefix` + "." to every buffer name, so that a wrapper's state
// names say which nested optimizer a buffer belongs to (mirroring the config
// path, e.g. "nested.first_moment").
template <typename T>
std::vector<StateBuffer<T>> prefixed_state(const std::string& prefix, std::vector<StateBuffer<T>> buffers) {
    for (StateBuffer<T>& b : buffers) b.name = prefix + "." + b.name;
    return buffers;
}

} // namespace fusedngp
