// The mean of the fused losses (KernelArgs::loss_partial): the training
// kernels leave one double per block; this sums them in a fixed order.
#include "fused_mlp_launch.h"

namespace fusedngp::gpu {
namespace {

constexpr uint32_t kFinishThreads = 256;

__global__ void __launch_bounds__(kFinishThreads)
    finish_fused_loss_kernel(const double* __restrict__ partials, uint32_t n_partials, size_t n_elements,
                             float* __restrict__ mean_loss) {
    __shared__ double s[kFinishThreads];
    double sum = 0.0;
    for (uint32_t i = threadIdx.x; i < n_partials; i += kFinishThreads) sum += partials[i];
    s[threadIdx.x] = sum;
    __syncthreads();
    for (uint32_t half = kFinishThreads / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) s[threadIdx.x] += s[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0) *mean_loss = n_elements == 0 ? 0.f : (float)(s[0] / (double)n_elements);
}

} // namespace

cudaError_t launch_finish_fused_loss(const double* partials, uint32_t n_partials, size_t n_elements,
                                     float* mean_loss, cudaStream_t stream) {
    if (mean_loss == nullptr) return cudaSuccess;
    finish_fused_loss_kernel<<<1, kFinishThreads, 0, stream>>>(partials, n_partials, n_elements, mean_loss);
    return cudaGetLastError();
}

} // namespace fusedngp::gpu
