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

// Threads (x, y): x picks one of kReduceParams consecutive caller-layout
// parameters, y one of kReduceLanes interleaved subsets of the blocks'
// partials (subset y holds blocks y, y + kReduceLanes, ...). Each subset is summed in j order, then the subsets
// in y order through shared memory: a fixed order, so deterministic. The
// split over y keeps many loads in flight per parameter (a single thread
// walking hundreds of partials was a chain of L2 latencies).
constexpr uint32_t kReduceParams = 32, kReduceLanes = 16;

__global__ void reduce_weight_gradients_kernel(const float* __restrict__ partial, uint32_t n_blocks,
                                               size_t partial_stride, const MlpShape s, float scale, bool accumulate, float* __restrict__ dweights) {
    __shared__ float sums[kReduceLanes][kReduceParams];
    const size_t p = (size_t)blockIdx.x * kReduceParams + threadIdx.x;
    float sum = 0.f;
    if (p < n_params(s)) {
        uint32_t l = 0;
        while (l < s.n_hidden && p >= param_offset(s, l + 1)) ++l;
        const size_t local = p - param_offset(s, l);
        const uint32_t out = (uint32_t)(local / fan_in(s, l)), in = (uint32_t)(local % fan_in(s, l));
        const float* src = partial + padded_offset(s, l) + (size_t)out * fan_in_pad(s, l) + in;
#pragma unroll 4
        for (uint32_t b = threadIdx.y; b < n_blocks; b += kReduceLanes) sum += src[b * partial_stride];
    }
    sums[threadIdx.y][threadIdx.x] = sum;
    __syncthreads();
    if (threadIdx.y != 0 || p >= n_params(s)) return;
    float total = 0.f;
    for (uint32_t y = 0; y < kReduceLanes; ++y) total += sums[y][threadIdx.x];
    total *= scale;
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
    const dim3 block(kReduceParams, kReduceLanes);
    reduce_weight_gradients_kernel<<<(uint32_t)((n + kReduceParams - 1) / kReduceParams), block, 0, stream>>>(
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
