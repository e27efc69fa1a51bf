#include "nerf/march_skip_mask.h"

#include "core/errors.h"

#include <string>

namespace fusedngp::nerf {

// Two passes (each block's occupancy, then the neighbourhoods) instead of
// skip_mask_byte per block, which reads every block 27 times: the CPU grid
// rebuilds the mask at every update.
std::vector<uint8_t> march_skip_mask(const std::vector<uint8_t>& bits, int n_cascades) {
    const size_t expected = (size_t)n_cascades * kGridCells / 8;
    if (bits.size() != expected)
        throw InputError("march_skip_mask: " + std::to_string(bits.size()) + " bytes of bits, expected " +
                         std::to_string(expected));
    const uint32_t n_blocks = (uint32_t)n_cascades * kSkipBlocks;
    std::vector<uint8_t> occupied(n_blocks);
    for (uint32_t i = 0; i < n_blocks; ++i) occupied[i] = skip_block_occupied(bits.data(), i);
    std::vector<uint8_t> mask(n_blocks, 0);
    const int n = (int)kSkipBlocksPerAxis;
    for (uint32_t i = 0; i < n_blocks; ++i) {
        if (!occupied[i]) continue;
        const int k = (int)(i / kSkipBlocks);
        const Cell3 c = morton3_decode(i % kSkipBlocks);
        for (int z = (int)c.z - 1; z <= (int)c.z + 1; ++z)
            for (int y = (int)c.y - 1; y <= (int)c.y + 1; ++y)
                for (int x = (int)c.x - 1; x <= (int)c.x + 1; ++x)
                    if (x >= 0 && y >= 0 && z >= 0 && x < n && y < n && z < n)
                        mask[skip_block_index(k, Cell3{(uint32_t)x, (uint32_t)y, (uint32_t)z})] = 1;
    }
    return mask;
}

} // namespace fusedngp::nerf
