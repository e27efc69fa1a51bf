#include "cublas_mlp_kernels.h"

#include "activation_device.cuh"

#include <algorithm>

namespace fusedngp::gpu {
namespace {

constexpr int kThreads = 256;

// Grid-stride loops: a bounded grid works for any size (batch 2^20 x 256).
uint32_t blocks_for(size_t n) {
    return (uint32_t)std::min<size_t>((n + kThreads - 1) / kThreads, (size_t)65535 * 8);
}

__global__ void rows_to_half_padded(const float* __restrict__ src, uint32_t rows, uint32_t cols, uint32_t ld,
                                    __half* __restrict__ dst) {
    const size_t n = (size_t)rows * ld;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const size_t r = i / ld;
        const uint32_t c = (uint32_t)(i - r * ld);
        dst[i] = __float2half_rn(c < cols ? src[r * cols + c] : 0.f);
    }
}

__global__ void weights_to_half_padded(const float* __restrict__ src, uint32_t fan_out, uint32_t fan_in,
                                       uint32_t fan_out_pad, uint32_t fan_in_pad, __half* __restrict__ dst) {
    const size_t n = (size_t)fan_out_pad * fan_in_pad;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const uint32_t o = (uint32_t)(i / fan_in_pad), c = (uint32_t)(i % fan_in_pad);
        dst[i] = __float2half_rn(o < fan_out && c < fan_in ? src[(size_t)o * fan_in + c] : 0.f);
    }
}

__global__ void activation_half(Activation a, const __half* z, __half* h, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        h[i] = __float2half_rn(detail::activation_value(a, __half2float(z[i])));
}

__global__ void output_activation(Activation g, const float* __restrict__ z, uint32_t rows, uint32_t cols,
                                  uint32_t ld, float* __restrict__ out) {
    const size_t n = (size_t)rows * cols;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const size_t r = i / cols;
        const uint32_t c = (uint32_t)(i - r * cols);
        out[i] = detail::activation_value(g, z[r * ld + c]);
    }
}

__global__ void output_delta(Activation g, const float* __restrict__ z, const float* __restrict__ dout,
                             uint32_t rows, uint32_t cols, uint32_t ld, float scale, __half* __restrict__ delta) {
    const size_t n = (size_t)rows * ld;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const size_t r = i / ld;
        const uint32_t c = (uint32_t)(i - r * ld);
        const float d = c < cols ? scale * dout[r * cols + c] * detail::activation_derivative(g, z[i]) : 0.f;
        delta[i] = __float2half_rn(d);
    }
}

__global__ void hidden_delta(Activation f, const __half* __restrict__ pre, bool relu_from_output,
                             __half* __restrict__ delta, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const float x = __half2float(pre[i]);
        const float df = relu_from_output ? (x > 0.f ? 1.f : 0.f) : detail::activation_derivative(f, x);
        delta[i] = __float2half_rn(__half2float(delta[i]) * df);
    }
}

__global__ void unpad_rows(const float* __restrict__ src, uint32_t rows, uint32_t cols, uint32_t ld, bool accumulate,
                           float* __restrict__ dst) {
    const size_t n = (size_t)rows * cols;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const size_t r = i / cols;
        const uint32_t c = (uint32_t)(i - r * cols);
        const float v = src[r * ld + c];
        dst[i] = accumulate ? dst[i] + v : v;
    }
}

} // namespace

cudaError_t launch_rows_to_half_padded(const float* src, uint32_t rows, uint32_t cols, uint32_t ld, __half* dst,
                                       cudaStream_t stream) {
    const size_t n = (size_t)rows * ld;
    if (n == 0) return cudaSuccess;
    rows_to_half_padded<<<blocks_for(n), kThreads, 0, stream>>>(src, rows, cols, ld, dst);
    return cudaGetLastError();
}

cudaError_t launch_weights_to_half_padded(const float* src, uint32_t fan_out, uint32_t fan_in, uint32_t fan_out_pad,
                                          uint32_t fan_in_pad, __half* dst, cudaStream_t stream) {
    const size_t n = (size_t)fan_out_pad * fan_in_pad;
    weights_to_half_padded<<<blocks_for(n), kThreads, 0, stream>>>(src, fan_out, fan_in, fan_out_pad, fan_in_pad, dst);
    return cudaGetLastError();
}

cudaError_t launch_activation_half(Activation a, const __half* z, __half* h, size_t n, cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    activation_half<<<blocks_for(n), kThreads, 0, stream>>>(a, z, h, n);
    return cudaGetLastError();
}

cudaError_t launch_output_activation(Activation g, const float* z, uint32_t rows, uint32_t cols, uint32_t ld,
                                     float* out, cudaStream_t stream) {
    const size_t n = (size_t)rows * cols;
    if (n == 0) return cudaSuccess;
    output_activation<<<blocks_for(n), kThreads, 0, stream>>>(g, z, rows, cols, ld, out);
    return cudaGetLastError();
}

cudaError_t launch_output_delta(Activation g, const float* z, const float* dout, uint32_t rows, uint32_t cols,
                                uint32_t ld, float scale, __half* delta, cudaStream_t stream) {
    const size_t n = (size_t)rows * ld;
    if (n == 0) return cudaSuccess;
    output_delta<<<blocks_for(n), kThreads, 0, stream>>>(g, z, dout, rows, cols, ld, scale, delta);
    return cudaGetLastError();
}

cudaError_t launch_hidden_delta(Activation f, const __half* pre, bool relu_from_output, __half* delta, size_t n,
                                cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    hidden_delta<<<blocks_for(n), kThreads, 0, stream>>>(f, pre, relu_from_output, delta, n);
    return cudaGetLastError();
}

cudaError_t launch_unpad_rows(const float* src, uint32_t rows, uint32_t cols, uint32_t ld, bool accumulate,
                              float* dst, cudaStream_t stream) {
    const size_t n = (size_t)rows * cols;
    if (n == 0) return cudaSuccess;
    unpad_rows<<<blocks_for(n), kThreads, 0, stream>>>(src, rows, cols, ld, accumulate, dst);
    return cudaGetLastError();
}

} // namespace fusedngp::gpu
