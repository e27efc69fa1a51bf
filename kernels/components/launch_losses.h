// Host entry point of the loss kernels (docs/NETWORKS_AND_LOSSES.md, src/losses).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace fusedngp::gpu {

enum class GpuLossKind : uint32_t {
    L2,
    L1,
    RelativeL2,
    RelativeL1,
    RelativeL2Luminance,
    MAPE,
    SMAPE,
    Huber,
    CrossEntropy,
};

struct GpuLossArgs {
    GpuLossKind kind = GpuLossKind::L2;
    float huber_delta = 1.f;
};

// Blocks of the first reduction pass: fixed, so the summation order (and the
// loss value, bit for bit) does not depend on the GPU model.
constexpr uint32_t kLossPartialBlocks = 512;

// For n = batch * n_dims elements of pred/target ([batch][n_dims], dense):
//   dpred[i] = gradient_i * (1/n) * loss_scale           (when dpred != null)
//   *mean_loss = (float)(sum_i loss_i / n), summed in double (when mean_loss != null)
// `partials` is scratch for kLossPartialBlocks doubles. No host sync.
void launch_loss(const GpuLossArgs& args, const float* pred, const float* target, uint32_t batch, uint32_t n_dims,
                 float loss_scale, float* dpred, float* mean_loss, double* partials, cudaStream_t stream);

} // namespace fusedngp::gpu
