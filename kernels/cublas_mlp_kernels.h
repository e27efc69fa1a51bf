// Elementwise kernels around the cuBLASLt GEMMs of CublasMlp: conversions,
// activations and their derivatives, padding and unpadding. Every feature
// dimension is padded to a multiple of 8 halves (16 bytes) so the GEMM
// operands are aligned for tensor cores; padded entries are zero where a
// GEMM reads them as a reduction operand.
#pragma once

#include "networks/activation.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace fusedngp::gpu {

constexpr uint32_t round_up8(uint32_t x) { return (x + 7u) / 8u * 8u; }

// dst[r][c] = half(src[r][c]) for c < cols, 0 for cols <= c < ld.
cudaError_t launch_rows_to_half_padded(const float* src, uint32_t rows, uint32_t cols, uint32_t ld, __half* dst,
                                       cudaStream_t stream);
// One weight matrix: dst[o][i] (ld = fan_in_pad, fan_out_pad rows) =
// half(src[o][i]) inside, 0 in the padding.
cudaError_t launch_weights_to_half_padded(const float* src, uint32_t fan_out, uint32_t fan_in, uint32_t fan_out_pad,
                                          uint32_t fan_in_pad, __half* dst, cudaStream_t stream);
// h = f(z) over n halves (z and h may alias).
cudaError_t launch_activation_half(Activation a, const __half* z, __half* h, size_t n, cudaStream_t stream);
// out[r][c] = g(z[r][c]) for c < cols, z with row stride ld (fp32).
cudaError_t launch_output_activation(Activation g, const float* z, uint32_t rows, uint32_t cols, uint32_t ld,
                                     float* out, cudaStream_t stream);
// delta[r][c] = half(scale * dout[r][c] * g'(z[r][c])) for c < cols, 0 in
// the padding up to ld.
cudaError_t launch_output_delta(Activation g, const float* z, const float* dout, uint32_t rows, uint32_t cols,
                                uint32_t ld, float scale, __half* delta, cudaStream_t stream);
// delta *= f'(pre): pre is the pre-activation z, or (relu_from_output) the
// ReLU output h, whose sign tells the same for ReLU.
cudaError_t launch_hidden_delta(Activation f, const __half* pre, bool relu_from_output, __half* delta, size_t n,
                                cudaStream_t stream);
// dst[r][c] (= or +=) src[r][c] for c < cols, src with row stride ld.
cudaError_t launch_unpad_rows(const float* src, uint32_t rows, uint32_t cols, uint32_t ld, bool accumulate,
                              float* dst, cudaStream_t stream);

} // namespace fusedngp::gpu
