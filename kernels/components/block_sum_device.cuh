// A block's sum in a fixed pairwise tree: the order of the additions depends
// only on the thread index, so a reduction built from it gives the same bits
// every run. Shared by the loss kernels and the SDF metric kernels.
#pragma once

#include <cstdint>

namespace fusedngp::gpu {

// kBlockThreads must be blockDim.x and a power of two; every thread of the
// block calls it, and every thread gets the total.
template <uint32_t kBlockThreads>
__device__ inline double block_sum(double value) {
    __shared__ double shared[kBlockThreads];
    shared[threadIdx.x] = value;
    __syncthreads();
    for (uint32_t half = kBlockThreads / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) shared[threadIdx.x] += shared[threadIdx.x + half];
        __syncthreads();
    }
    return shared[0];
}

} // namespace fusedngp::gpu
