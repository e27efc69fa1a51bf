// Width-independent helper kernels: weight conversion and the deterministic
// reduction of per-block weight-gradient partials.
#include "fused_mlp_launch.h"

#include <cuda_fp16.h>

namespace fusedngp::gpu {
namespace {

// Layer that owns padded element `e` (layers are few: a linear scan is fine).
__device__ uint32_t layer_of_padded(const MlpShape& s, size_t e) {
    uint32_t l = 0;
    while (l < s.n_hidden && e >= padded_offset(s, l + 1)) ++l;
    return l;
}

__device__ float weight_or_zero(const float* master, const MlpShape& s, uint32_t l, uint32_t out, uint32_t in) {
    if (out >= fan_out(s, l) || in >= fan_in(s, l)) return 0.f;
    return master[param_offset(s, l) + (size_t)out * fan_in(s, l) + in];
}

// One thread per fragment entry (4 halves). For a K x N operand B in
// fragment order, entry ((nt * KT + kt) * 32 + lane) holds
//   B[k0][n], B[k0+1][n], B[k0+8][n], B[k0+9][n]
// with n = nt*8 + lane/4, k0 = kt*16 + 2*(lane%4): the m16n8k16 B layout.
// Forward uses B = W_l^T (K = fan_in), backward B = W_l (K = fan_out).
__global__ void convert_weights_kernel(const float* __restrict__ master, uint2* __restrict__ w_fwd,
                                       uint2* __restrict__ w_bwd, const MlpShape s) {
    const size_t entry = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (entry >= n_params_padded(s) / 4) return;
    const uint32_t l = layer_of_padded(s, entry * 4);
    const size_t local = entry - frag_offset(s, l);
    const uint32_t lane = (uint32_t)(local % 32), t = (uint32_t)(local / 32);
    const uint32_t fi = fan_in_pad(s, l), fo = fan_out_pad(s, l);
    {
        const uint32_t kt_count = fi / 16, nt = t / kt_count, kt = t % kt_count;
        const uint32_t n = nt * 8 + lane / 4, k0 = kt * 16 + 2 * (lane % 4);
        auto b = [&](uint32_t k) { return weight_or_zero(master, s, l, n, k); };  // B[k][n] = W[n][k]
        __half2 lo = __floats2half2_rn(b(k0), b(k0 + 1)), hi = __floats2half2_rn(b(k0 + 8), b(k0 + 9));
        w_fwd[entry] = make_uint2(*reinterpret_cast<uint32_t*>(&lo), *reinterpret_cast<uint32_t*>(&hi));
    }
    {
        const uint32_t kt_count = fo / 16, nt = t / kt_count, kt = t % kt_count;
        const uint32_t n = nt * 8 + lane / 4, k0 = kt * 16 + 2 * (lane % 4);
        auto b = [&](uint32_t k) { return weight_or_zero(master, s, l, k, n); };  // B[k][n] = W[k][n]
        __half2 lo = __floats2half2_rn(b(k0), b(k0 + 1)), hi = __floats2half2_rn(b(k0 + 8), b(k0 + 9));
        w_bwd[entry] = make_uint2(*reinterpret_cast<uint32_t*>(&lo), *reinterpret_cast<uint32_t*>(&hi));
    }
}

// Threads (x, y) of a 1024-thread block: x picks one of kReduceThreads / L
// consecutive caller-layout parameters, y one of L interleaved subsets of
// the blocks' partials (subset y holds blocks y, y + L, ...). Each subset is
// summed in ascending block order, then the L subset sums by a fixed
// pairwise tree in shared memory: a fixed order for a given (n_blocks, L),
// so deterministic run to run. L grows with n_blocks (16 / 32 / 64 lanes)
// so that a thread walks at most ~8-16 partials, and the loads go out 8 at a
// time: the reduce is a chain of L2 latencies, not a bandwidth problem (W16
// D2, 792 partials of 1024 params: 9.8 us with 16 lanes and 4 loads in flight
// per thread under Nsight Compute, most of the fixed cost of a 2^20-row step).
constexpr uint32_t kReduceThreads = 1024, kReduceBatch = 8;

uint32_t reduce_lanes(uint32_t n_blocks) {
    return n_blocks > 256 ? 64u : n_blocks > 128 ? 32u : 16u;
}

__global__ void __launch_bounds__(kReduceThreads) reduce_weight_gradients_kernel(const float* __restrict__ partial,
        uint32_t n_blocks, size_t partial_stride, const MlpShape s, float scale, bool accumulate,
        float* __restrict__ dweights) {
    __shared__ float sums[kReduceThreads];
    const uint32_t lanes = blockDim.y, params = blockDim.x;
    const uint32_t x = threadIdx.x, y = threadIdx.y;
    const size_t p = (size_t)blockIdx.x * params + x;
    float sum = 0.f;
    if (p < n_params(s)) {
        uint32_t l = 0;
        while (l < s.n_hidden && p >= param_offset(s, l + 1)) ++l;
        const size_t local = p - param_offset(s, l);
        const uint32_t out = (uint32_t)(local / fan_in(s, l)), in = (uint32_t)(local % fan_in(s, l));
        const float* src = partial + padded_offset(s, l) + (size_t)out * fan_in_pad(s, l) + in;
        for (uint32_t b0 = y; b0 < n_blocks; b0 += kReduceBatch * lanes) {
            float v[kReduceBatch];
#pragma unroll
            for (uint32_t j = 0; j < kReduceBatch; ++j) {
                const uint32_t b = b0 + j * lanes;
                v[j] = b < n_blocks ? src[(size_t)b * partial_stride] : 0.f;
            }
#pragma unroll
            for (uint32_t j = 0; j < kReduceBatch; ++j) sum += v[j];
        }
    }
    sums[y * params + x] = sum;
    __syncthreads();
    for (uint32_t half = lanes / 2; half > 0; half /= 2) {
        if (y < half) sums[y * params + x] += sums[(y + half) * params + x];
        __syncthreads();
    }
    if (y != 0 || p >= n_params(s)) return;
    const float total = sums[x] * scale;
    dweights[p] = accumulate ? dweights[p] + total : total;
}

} // namespace

cudaError_t launch_convert_weights(const float* master, uint2* w_fwd, uint2* w_bwd, const MlpShape& shape,
                                   cudaStream_t stream) {
    const size_t entries = n_params_padded(shape) / 4;
    const uint32_t threads = 256;
    convert_weights_kernel<<<(uint32_t)((entries + threads - 1) / threads), threads, 0, stream>>>(master, w_fwd, w_bwd,
                                                                                               shape);
    return cudaGetLastError();
}

cudaError_t launch_reduce_weight_gradients(const float* partial, uint32_t n_blocks, size_t partial_stride,
                                           const MlpShape& shape, float scale, bool accumulate, float* dweights,
                                           cudaStream_t stream) {
    const size_t n = n_params(shape);
    const uint32_t lanes = reduce_lanes(n_blocks), params = kReduceThreads / lanes;
    const dim3 block(params, lanes);
    reduce_weight_gradients_kernel<<<(uint32_t)((n + params - 1) / params), block, 0, stream>>>(
        partial, n_blocks, partial_stride, shape, scale, accumulate, dweights);
    return cudaGetLastError();
}

cudaError_t prepare_kernel(const void* kernel, int threads, size_t max_dynamic_smem, int carveout_percent,
                           size_t smem_bytes, KernelInfo* info) {
    cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)max_dynamic_smem);
    if (err != cudaSuccess) return err;
    err = cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, carveout_percent);
    if (err != cudaSuccess) return err;
    cudaFuncAttributes attr{};
    if ((err = cudaFuncGetAttributes(&attr, kernel)) != cudaSuccess) return err;
    info->registers = attr.numRegs;
    info->local_bytes = attr.localSizeBytes;
    info->static_smem_bytes = attr.sharedSizeBytes;
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(&info->blocks_per_sm, kernel, threads, smem_bytes);
}

} // namespace fusedngp::gpu
