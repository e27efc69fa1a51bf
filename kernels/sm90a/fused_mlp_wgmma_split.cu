// The column-split wgmma training kernel at W = 128 (64-row tiles; 1-4
// hidden layers) and its host entry points. sm_90a only, as
// fused_mlp_wgmma_train.cu.
#include "fused_mlp_wgmma_launch.h"
#include "fused_mlp_wgmma_split_device.cuh"

namespace fusedngp::gpu {

namespace {

static_assert(wgmma_split::kRows == (int)kWgmmaSplitRows && wgmma_split::kThreads == kWgmmaTrainThreads,
              "launch constants out of step with the kernel");
static_assert(wgmma_split::slice_addressing_matches<128>(), "the slice addressing is wrong at W = 128");

// Two blocks per SM where their shared memory fits: 1-2 hidden layers.
bool two_blocks_fit(const MlpShape& shape) {
    return 2 * (wgmma_split_smem_bytes(shape) + wgmma_train::kSmemReservedPerBlock) <= wgmma_train::kSmemPerSm;
}

const void* split_kernel_for(const MlpShape& shape) {
    const bool narrow = wgmma_train::input_width_for(shape.n_in_pad) == 32;
    if (two_blocks_fit(shape))
        return narrow ? (const void*)wgmma_split::fused_mlp_wgmma_split_kernel<128, 32, 2>
                      : (const void*)wgmma_split::fused_mlp_wgmma_split_kernel<128, 64, 2>;
    return narrow ? (const void*)wgmma_split::fused_mlp_wgmma_split_kernel<128, 32>
                  : (const void*)wgmma_split::fused_mlp_wgmma_split_kernel<128, 64>;
}

} // namespace

bool wgmma_split_shape_supported(const MlpShape& s) {
    return s.width == (uint32_t)wgmma_split::kSplitWidth && s.hidden_act == Activation::ReLU &&
           s.output_act == Activation::None && s.n_in >= 1 && s.n_in_pad <= 64 && s.n_out >= 1 &&
           s.n_out_pad == (uint32_t)wgmma_split::kOutPad && s.n_hidden >= 1;
}

size_t wgmma_split_smem_bytes(const MlpShape& s) {
    return wgmma_split::split_smem_bytes_for((int)s.width, wgmma_train::input_width_for(s.n_in_pad), (int)s.n_hidden);
}

cudaError_t prepare_wgmma_split(const MlpShape& shape, size_t max_dynamic_smem, size_t smem_bytes, KernelInfo* info) {
    return prepare_kernel(split_kernel_for(shape), kWgmmaTrainThreads, max_dynamic_smem, -1, smem_bytes, info);
}

cudaError_t launch_wgmma_split(const KernelArgs& args, uint32_t grid, size_t smem_bytes, cudaStream_t stream) {
    if (args.rows_per_tile != kWgmmaSplitRows || grid == 0 || grid > args.n_tiles) return cudaErrorInvalidValue;
    void* params[] = {const_cast<KernelArgs*>(&args)};
    return cudaLaunchKernel(split_kernel_for(args.shape), dim3(grid), dim3(kWgmmaTrainThreads), params, smem_bytes,
                            stream);
}

} // namespace fusedngp::gpu
