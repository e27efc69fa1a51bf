// mlp_fragment_slots (src/gpu/mlp_fragment_slots.h), the slots GpuAdam's
// fused update writes a FusedMlp weight into, against the forward mapping of
// convert_weights_kernel (kernels/fused_mlp_common.cu), re-derived here on
// the CPU: every slot that kernel fills from weight p is the slot the inverse
// names for p, and no two weights share a slot. Runs without a device.
#include "gpu/mlp_fragment_slots.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace fusedngp::gpu {
namespace {

constexpr size_t kPadding = ~size_t(0);

// For each half of a fragment buffer, the weight convert_weights_kernel puts
// there (kPadding where it writes a zero): its loop, for B = W^T (forward)
// or B = W (backward).
std::vector<size_t> forward_mapping(const MlpShape& s, bool backward) {
    std::vector<size_t> source(n_params_padded(s), kPadding);
    for (uint32_t l = 0; l <= s.n_hidden; ++l) {
        const uint32_t fi = fan_in(s, l), fo = fan_out(s, l), fi_pad = fan_in_pad(s, l), fo_pad = fan_out_pad(s, l);
        const size_t first_entry = padded_offset(s, l) / 4;
        const size_t entries = (size_t)fi_pad * fo_pad / 4;
        for (size_t local = 0; local < entries; ++local) {
            const uint32_t lane = (uint32_t)(local % 32), t = (uint32_t)(local / 32);
            const uint32_t kt_count = (backward ? fo_pad : fi_pad) / 16, nt = t / kt_count, kt = t % kt_count;
            const uint32_t n = nt * 8 + lane / 4, k0 = kt * 16 + 2 * (lane % 4);
            const uint32_t ks[4] = {k0, k0 + 1, k0 + 8, k0 + 9};
            for (uint32_t h = 0; h < 4; ++h) {
                // Forward: B[k][n] = W[n][k]; backward: B[k][n] = W[k][n].
                const uint32_t out = backward ? ks[h] : n, in = backward ? n : ks[h];
                if (out >= fo || in >= fi) continue;
                source[(first_entry + local) * 4 + h] = param_offset(s, l) + (size_t)out * fi + in;
            }
        }
    }
    return source;
}

void check_shape(const MlpShape& s) {
    SCOPED_TRACE("n_in " + std::to_string(s.n_in) + " width " + std::to_string(s.width) + " D " +
                 std::to_string(s.n_hidden) + " n_out " + std::to_string(s.n_out));
    const size_t n = n_params(s);
    for (const bool backward : {false, true}) {
        const std::vector<size_t> source = forward_mapping(s, backward);
        std::vector<size_t> slot_of(n, kPadding);
        for (size_t slot = 0; slot < source.size(); ++slot) {
            if (source[slot] == kPadding) continue;
            ASSERT_LT(source[slot], n);
            ASSERT_EQ(slot_of[source[slot]], kPadding) << "weight " << source[slot] << " written twice";
            slot_of[source[slot]] = slot;
        }
        for (size_t p = 0; p < n; ++p) {
            const MlpFragmentSlots slots = mlp_fragment_slots(s, p);
            ASSERT_EQ(backward ? slots.bwd : slots.fwd, slot_of[p]) << (backward ? "w_bwd" : "w_fwd") << ", weight " << p;
        }
    }
}

TEST(MlpFragmentSlots, InverseOfTheWeightConversion) {
    // The image-fit network (32 encoded inputs, 64 x 2, 3 outputs), every
    // fused width, padded inputs and outputs, one and several hidden layers.
    check_shape({32, 32, 64, 2, 3, 16});
    check_shape({5, 16, 16, 1, 1, 16});
    check_shape({35, 48, 32, 3, 17, 32});
    check_shape({16, 16, 128, 2, 16, 16});
    check_shape({64, 64, 256, 1, 3, 16});
}

} // namespace
} // namespace fusedngp::gpu
