// Host-callable launchers of the fused-MLP kernels. Templated on the hidden
// width W and explicitly instantiated once per width (fused_mlp_w<W>.cu), so
// each width builds in its own translation unit.
#pragma once

#include "fused_mlp_args.h"

#include <cuda_runtime.h>

namespace fusedngp::gpu {

// What the compiler and the occupancy calculator say about one kernel.
struct KernelInfo {
    int registers = 0;
    size_t local_bytes = 0;      // stack frame / spills per thread
    int blocks_per_sm = 0;       // at the shared-memory size asked for
    size_t static_smem_bytes = 0;
};

// Prepares `kernel` (any of the fused-MLP kernels) for launches of `threads`
// threads: raises its dynamic shared-memory limit to max_dynamic_smem, sets
// its preferred carve-out (percent of the SM's shared-memory maximum; -1 =
// the driver's default) and fills `info` (registers, local and static memory,
// resident blocks at smem_bytes of dynamic shared memory). The carve-out is a
// property of the kernel, not of one FusedMlp: the last plan made wins.
cudaError_t prepare_kernel(const void* kernel, int threads, size_t max_dynamic_smem, int carveout_percent,
                           size_t smem_bytes, KernelInfo* info);

// Rows per warp slab is 16 * mt (mt = 1 or 2): two row tiles per warp halve
// the weight-fragment traffic; mt = 1 exists for very deep/wide networks
// whose per-row shared memory leaves room for fewer than 32 rows.
// prepare_kernel (above) for the block-tile kernel of this width and pass.
template <int W>
cudaError_t prepare_fused_kernel(bool training, int mt, size_t max_dynamic_smem, int carveout_percent,
                                 size_t smem_bytes, KernelInfo* info);
template <int W>
cudaError_t launch_fused_inference(const KernelArgs& args, int mt, uint32_t grid, size_t smem_bytes, cudaStream_t stream);
template <int W>
cudaError_t launch_fused_train(const KernelArgs& args, int mt, uint32_t grid, size_t smem_bytes, cudaStream_t stream);

#define FUSEDNGP_DECLARE_WIDTH(W)                                                                                 \
    extern template cudaError_t prepare_fused_kernel<W>(bool, int, size_t, int, size_t, KernelInfo*);                   \
    extern template cudaError_t launch_fused_inference<W>(const KernelArgs&, int, uint32_t, size_t, cudaStream_t); \
    extern template cudaError_t launch_fused_train<W>(const KernelArgs&, int, uint32_t, size_t, cudaStream_t);
FUSEDNGP_DECLARE_WIDTH(16)
FUSEDNGP_DECLARE_WIDTH(32)
FUSEDNGP_DECLARE_WIDTH(64)
FUSEDNGP_DECLARE_WIDTH(128)
FUSEDNGP_DECLARE_WIDTH(256)
#undef FUSEDNGP_DECLARE_WIDTH

// fp32 master weights (caller layout) -> fp16 fragment buffers for both passes.
cudaError_t launch_convert_weights(const float* master, uint2* w_fwd, uint2* w_bwd, const MlpShape& shape,
                                   cudaStream_t stream);

// dweights = scale * sum over blocks of partial (+ dweights if accumulate),
// in a fixed order (deterministic), unpadding to caller layout.
cudaError_t launch_reduce_weight_gradients(const float* partial, uint32_t n_blocks, size_t partial_stride,
                                           const MlpShape& shape, float scale, bool accumulate, float* dweights,
                                           cudaStream_t stream);

// The fused losses' mean: *mean_loss = (float)(sum of partials[0..n_partials)
// / n_elements), summed in double in a fixed order (deterministic); 0 when
// n_elements is 0. partials: KernelArgs::loss_partial of a training launch
// (one per block of its grid). One block; no host sync.
cudaError_t launch_finish_fused_loss(const double* partials, uint32_t n_partials, size_t n_elements,
                                     float* mean_loss, cudaStream_t stream);

} // namespace fusedngp::gpu
