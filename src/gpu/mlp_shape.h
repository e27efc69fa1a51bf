// The fused MLP's shape and where each weight matrix sits in the caller's
// fp32 parameter vector and in the padded layouts (gradient partials, fp16
// fragments). Shared by the kernels (kernels/fused_mlp_args.h), the host
// wrapper and code that writes the fragments itself
// (gpu/mlp_fragment_slots.h); plain C++, no CUDA headers, so CPU tests use it.
//
// Vocabulary (same as the CPU Mlp):
//   D = n_hidden layers of width W, so D + 1 weight matrices:
//   layer 0: W x n_in, layers 1..D-1: W x W, layer D: n_out x W.
//   Each matrix is [fan_out][fan_in] row-major; layers are consecutive.
// The kernels pad n_in and n_out to multiples of 16 ("_pad") because one
// tensor-core step consumes 16 values along K. Padding is zero-filled.
#pragma once

#include "networks/activation.h"

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define FUSEDNGP_HD __host__ __device__ __forceinline__
#else
#define FUSEDNGP_HD inline
#endif

namespace fusedngp::gpu {

struct MlpShape {
    uint32_t n_in = 0, n_in_pad = 0;
    uint32_t width = 0;
    uint32_t n_hidden = 0;  // D
    uint32_t n_out = 0, n_out_pad = 0;
    Activation hidden_act = Activation::ReLU;
    Activation output_act = Activation::None;
};

constexpr uint32_t round_up16(uint32_t x) { return (x + 15u) / 16u * 16u; }

// The shape of n_in -> n_hidden x width -> n_out, inputs and outputs padded.
inline MlpShape mlp_shape(uint32_t n_in, uint32_t width, uint32_t n_hidden, uint32_t n_out,
                          Activation hidden_act = Activation::ReLU, Activation output_act = Activation::None) {
    MlpShape s;
    s.n_in = n_in;
    s.n_in_pad = round_up16(n_in);
    s.width = width;
    s.n_hidden = n_hidden;
    s.n_out = n_out;
    s.n_out_pad = round_up16(n_out);
    s.hidden_act = hidden_act;
    s.output_act = output_act;
    return s;
}

// Real (unpadded) fan-in / fan-out of weight matrix l (0..D).
FUSEDNGP_HD uint32_t fan_in(const MlpShape& s, uint32_t l) { return l == 0 ? s.n_in : s.width; }
FUSEDNGP_HD uint32_t fan_out(const MlpShape& s, uint32_t l) { return l == s.n_hidden ? s.n_out : s.width; }
FUSEDNGP_HD uint32_t fan_in_pad(const MlpShape& s, uint32_t l) { return l == 0 ? s.n_in_pad : s.width; }
FUSEDNGP_HD uint32_t fan_out_pad(const MlpShape& s, uint32_t l) { return l == s.n_hidden ? s.n_out_pad : s.width; }

// Offset of matrix l in the caller's fp32 parameter vector (unpadded layout).
FUSEDNGP_HD size_t param_offset(const MlpShape& s, uint32_t l) {
    return l == 0 ? 0 : (size_t)s.n_in * s.width + (size_t)(l - 1) * s.width * s.width;
}
FUSEDNGP_HD size_t n_params(const MlpShape& s) { return param_offset(s, s.n_hidden) + (size_t)s.width * s.n_out; }

// Offset of matrix l in the padded layouts (fp32 gradient partials; the fp16
// fragment buffers use the same count divided by 4, one uint2 = 4 halves).
FUSEDNGP_HD size_t padded_offset(const MlpShape& s, uint32_t l) {
    return l == 0 ? 0 : (size_t)s.n_in_pad * s.width + (size_t)(l - 1) * s.width * s.width;
}
FUSEDNGP_HD size_t n_params_padded(const MlpShape& s) {
    return padded_offset(s, s.n_hidden) + (size_t)s.width * s.n_out_pad;
}
FUSEDNGP_HD size_t frag_offset(const MlpShape& s, uint32_t l) { return padded_offset(s, l) / 4; }

} // namespace fusedngp::gpu
