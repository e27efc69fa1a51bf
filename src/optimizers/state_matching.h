// Matching saved optimizer state (a snapshot's named buffers) to the buffers
// an optimizer has now, for every backend's load_state: by name, each size
// checked. Per-row step counts ("row_steps", Adam's per-row bias correction)
// may be missing from a snapshot written without them: those rows then
// restart their counts at zero.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace fusedngp {

struct StateBufferShape {
    std::string name;
    size_t size = 0;
};

using SavedStateBuffers = std::vector<std::pair<std::string, std::vector<float>>>;

// Whether a buffer may be absent from saved state ("row_steps", also nested
// as "nested.row_steps").
bool optional_state_buffer(const std::string& name);

// For each expected buffer, the saved values to restore, or null where an
// optional buffer is missing (fill it with zeros). Throws InputError naming
// `what` (e.g. "snapshot", "density optimizer") for a missing required buffer,
// a size mismatch or a saved buffer the optimizer does not have.
std::vector<const std::vector<float>*> match_state_buffers(const std::vector<StateBufferShape>& expected,
                                                           const SavedStateBuffers& saved, const std::string& what);

} // namespace fusedngp
