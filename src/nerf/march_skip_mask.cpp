#include "nerf/march_skip_mask.h"

#include "core/errors.h"

#include <string>

namespace fusedngp::nerf {

std::vector<uint8_t> march_skip_mask(const std::vector<uint8_t>& bits, int n_cascades) {
    const size_t expected = (size_t)n_cascades * kGridCells / 8;
    if (bits.size() != expected)
        throw InputError("march_skip_mask: " + std::to_string(bits.size()) + " bytes of bits, expected " +
                         std::to_string(expected));
    std::vector<uint8_t> mask((size_t)n_cascades * kSkipBlocks);
    for (uint32_t i = 0; i < (uint32_t)mask.size(); ++i) mask[i] = skip_mask_byte(bits.data(), i);
    return mask;
}

} // namespace fusedngp::nerf
