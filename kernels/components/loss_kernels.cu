// Elementwise losses: ports of src/losses/*.h, with the same stop-gradient
// denominators and the same float expressions. The mean is reduced
// deterministically: each thread sums a fixed strided set of elements in
// double, each block reduces its threads in a fixed tree into one partial, and
// one block then reduces the kLossPartialBlocks partials the same way.
//
// Compiled with --fmad=false (kernels/components/CMakeLists.txt): like the
// CPU build (ISO C++, no contraction) every product is rounded before it is
// added, so the per-element gradients equal the CPU's bit for bit.

#include "block_sum_device.cuh"
#include "component_device.cuh"
#include "launch_losses.h"

namespace fusedngp::gpu {

namespace {

constexpr float kRelativeEpsilon = (float)0.01;  // kRelativeLossEpsilon of the CPU, rounded once

__device__ inline float sign_of(float x) { return (float)((x > 0.f) - (x < 0.f)); }

struct ElementLoss {
    float value;
    float gradient;  // d value / d p, denominator held constant
};

// `d` is the stop-gradient input: the element's own prediction, or the row's
// luminance for RelativeL2Luminance.
template <GpuLossKind K>
__device__ inline ElementLoss element_loss(float p, float t, float d, float huber_delta) {
    const float r = p - t;
    if constexpr (K == GpuLossKind::L2) {
        return {r * r, 2.f * r};
    } else if constexpr (K == GpuLossKind::L1) {
        return {fabsf(r), sign_of(r)};
    } else if constexpr (K == GpuLossKind::RelativeL2 || K == GpuLossKind::RelativeL2Luminance) {
        const float denominator = d * d + kRelativeEpsilon;
        return {r * r / denominator, 2.f * r / denominator};
    } else if constexpr (K == GpuLossKind::RelativeL1) {
        const float denominator = fabsf(d) + kRelativeEpsilon;
        return {fabsf(r) / denominator, sign_of(r) / denominator};
    } else if constexpr (K == GpuLossKind::MAPE) {
        const float denominator = fabsf(t) + kRelativeEpsilon;
        return {fabsf(r) / denominator, sign_of(r) / denominator};
    } else if constexpr (K == GpuLossKind::SMAPE) {
        const float denominator = fabsf(d) + fabsf(t) + kRelativeEpsilon;
        return {2.f * fabsf(r) / denominator, 2.f * sign_of(r) / denominator};
    } else if constexpr (K == GpuLossKind::Huber) {
        const float a = fabsf(r);
        if (a <= huber_delta) return {0.5f * r * r, r};
        return {huber_delta * (a - 0.5f * huber_delta), huber_delta * sign_of(r)};
    } else {  // CrossEntropy: 0 log 0 = 0, no clamping (see cross_entropy.h)
        if (t == 0.f) return {0.f, 0.f};
        return {-t * logf(p), -t / p};
    }
}

template <GpuLossKind K>
__global__ void __launch_bounds__(kThreadsPerBlock)
    loss_kernel(GpuLossArgs args, const float* __restrict__ pred, const float* __restrict__ target, uint32_t n_dims,
                size_t n, float inv_n, float loss_scale, float* __restrict__ dpred, double* __restrict__ partials) {
    double sum = 0.0;
    const size_t n_threads = (size_t)gridDim.x * blockDim.x;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += n_threads) {
        const float p = pred[i], t = target[i];
        float d = p;
        if constexpr (K == GpuLossKind::RelativeL2Luminance) {
            if (n_dims >= 3) {
                const float* row = pred + (i / n_dims) * n_dims;
                d = 0.299f * row[0] + 0.587f * row[1] + 0.114f * row[2];
            }
        }
        const ElementLoss e = element_loss<K>(p, t, d, args.huber_delta);
        sum += (double)e.value;
        if (dpred) dpred[i] = e.gradient * inv_n * loss_scale;
    }
    if (!partials) return;
    const double block_total = block_sum<kThreadsPerBlock>(sum);
    if (threadIdx.x == 0) partials[blockIdx.x] = block_total;
}

__global__ void __launch_bounds__(kThreadsPerBlock)
    finish_mean_kernel(const double* __restrict__ partials, size_t n, float* __restrict__ mean_loss) {
    double sum = 0.0;
    for (uint32_t i = threadIdx.x; i < kLossPartialBlocks; i += kThreadsPerBlock) sum += partials[i];
    const double total = block_sum<kThreadsPerBlock>(sum);
    if (threadIdx.x == 0) *mean_loss = (float)(total / (double)n);
}

template <GpuLossKind K>
void launch_kind(const GpuLossArgs& args, const float* pred, const float* target, uint32_t n_dims, size_t n,
                 float loss_scale, float* dpred, double* partials, cudaStream_t stream) {
    const float inv_n = 1.f / (float)n;  // as the CPU: T(1) / T(n_elements)
    loss_kernel<K><<<kLossPartialBlocks, kThreadsPerBlock, 0, stream>>>(args, pred, target, n_dims, n, inv_n,
                                                                        loss_scale, dpred, partials);
}

} // namespace

void launch_loss(const GpuLossArgs& args, const float* pred, const float* target, uint32_t batch, uint32_t n_dims,
                 float loss_scale, float* dpred, float* mean_loss, double* partials, cudaStream_t stream) {
    const size_t n = (size_t)batch * n_dims;
    if (n == 0) {
        if (mean_loss) FUSEDNGP_GPU_CHECK(cudaMemsetAsync(mean_loss, 0, sizeof(float), stream));  // CPU: 0
        return;
    }
    if (!dpred && !mean_loss) return;
    double* used_partials = mean_loss ? partials : nullptr;
    switch (args.kind) {
        case GpuLossKind::L2: launch_kind<GpuLossKind::L2>(args, pred, target, n_dims, n, loss_scale, dpred, used_partials, stream); break;
        case GpuLossKind::L1: launch_kind<GpuLossKind::L1>(args, pred, target, n_dims, n, loss_scale, dpred, used_partials, stream); break;
        case GpuLossKind::RelativeL2: launch_kind<GpuLossKind::RelativeL2>(args, pred, target, n_dims, n, loss_scale, dpred, used_partials, stream); break;
        case GpuLossKind::RelativeL1: launch_kind<GpuLossKind::RelativeL1>(args, pred, target, n_dims, n, loss_scale, dpred, used_partials, stream); break;
        case GpuLossKind::RelativeL2Luminance: launch_kind<GpuLossKind::RelativeL2Luminance>(args, pred, target, n_dims, n, loss_scale, dpred, used_partials, stream); break;
        case GpuLossKind::MAPE: launch_kind<GpuLossKind::MAPE>(args, pred, target, n_dims, n, loss_scale, dpred, used_partials, stream); break;
        case GpuLossKind::SMAPE: launch_kind<GpuLossKind::SMAPE>(args, pred, target, n_dims, n, loss_scale, dpred, used_partials, stream); break;
        case GpuLossKind::Huber: launch_kind<GpuLossKind::Huber>(args, pred, target, n_dims, n, loss_scale, dpred, used_partials, stream); break;
        case GpuLossKind::CrossEntropy: launch_kind<GpuLossKind::CrossEntropy>(args, pred, target, n_dims, n, loss_scale, dpred, used_partials, stream); break;
    }
    FUSEDNGP_GPU_CHECK_LAUNCH();
    if (mean_loss) {
        finish_mean_kernel<<<1, kThreadsPerBlock, 0, stream>>>(partials, n, mean_loss);
        FUSEDNGP_GPU_CHECK_LAUNCH();
    }
}

} // namespace fusedngp::gpu
