// The wgmma inference kernel at W = 64 and 128 and its host entry points.
// Built for sm_90a only, like the training kernel beside it.
#include "fused_mlp_wgmma_inference_device.cuh"
#include "fused_mlp_wgmma_launch.h"

namespace fusedngp::gpu {

namespace {

// n_in_pad <= 32 runs the 2-k-step input variant, up to 64 the 4-step one.
const void* inference_kernel_for(const MlpShape& shape) {
    constexpr int G = kWgmmaInferenceWarpgroups;
    const bool narrow_input = wgmma_train::input_width_for(shape.n_in_pad) == 32;
    if (shape.width == 64) {
        if (narrow_input) return (const void*)wgmma_inference::fused_mlp_wgmma_inference_kernel<64, 32, G>;
        return (const void*)wgmma_inference::fused_mlp_wgmma_inference_kernel<64, 64, G>;
    }
    if (narrow_input) return (const void*)wgmma_inference::fused_mlp_wgmma_inference_kernel<128, 32, G>;
    return (const void*)wgmma_inference::fused_mlp_wgmma_inference_kernel<128, 64, G>;
}

} // namespace

bool wgmma_inference_shape_supported(const MlpShape& s) {
    return (s.width == 64 || s.width == 128) && s.hidden_act == Activation::ReLU && s.n_in >= 1 &&
           s.n_in_pad <= 64 && s.n_out >= 1 && s.n_out_pad == (uint32_t)wgmma_inference::kOutPad && s.n_hidden >= 1;
}

size_t wgmma_inference_smem_bytes(const MlpShape& s) {
    return wgmma_inference::inference_smem_bytes_for((int)s.width, (int)s.n_hidden);
}

cudaError_t prepare_wgmma_inference(const MlpShape& shape, size_t max_dynamic_smem, size_t smem_bytes,
                                    KernelInfo* info) {
    return prepare_kernel(inference_kernel_for(shape), kWgmmaInferenceThreads, max_dynamic_smem, -1, smem_bytes, info);
}

cudaError_t launch_wgmma_inference(const KernelArgs& args, uint32_t grid, size_t smem_bytes, cudaStream_t stream) {
    if (args.rows_per_tile != kWgmmaInferenceRows || grid == 0) return cudaErrorInvalidValue;
    void* params[] = {const_cast<KernelArgs*>(&args)};
    return cudaLaunchKernel(inference_kernel_for(args.shape), dim3(grid), dim3(kWgmmaInferenceThreads), params,
                            smem_bytes, stream);
}

} // namespace fusedngp::gpu
