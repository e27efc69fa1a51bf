// The wgmma training kernel at W = 64 and 128 and its host entry points. Built for
// sm_90a only (kernels/CMakeLists.txt, target fusedngp_gpu_sm90a): it lives
// in its own directory so the kernels/*.cu glob, built for the project's
// architectures, does not pick it up.
#include "fused_mlp_wgmma_device.cuh"
#include "fused_mlp_wgmma_launch.h"

namespace fusedngp::gpu {

namespace {

static_assert(wgmma_train::kTileRows == (int)kWgmmaTrainRows && wgmma_train::kThreads == kWgmmaTrainThreads,
              "launch constants out of step with the kernel");
static_assert(wgmma_train::act_addressing_matches<64>(), "the activation-image addressing is wrong at W = 64");
static_assert(wgmma_train::act_addressing_matches<128>(), "the activation-image addressing is wrong at W = 128");

// W = 64 with n_in <= 32: two blocks per SM fit in shared memory, and the
// kernel's registers are budgeted for two (128 per thread; ptxas spills 48
// bytes). Measured on the H200 at 3c085a3: 3.90 G samples/s at 2^20 against 3.49 with
// registers for one block (196, no spill). n_in > 32 needs 200 and one block.
// Deeper networks (deltas_in_place) take the in-place instantiations of
// fused_mlp_wgmma_train_in_place.cu: one block per SM whatever n_in.
const void* kernel_for(const MlpShape& shape) {
    const int kin = wgmma_train::input_width_for(shape.n_in_pad);
    if (wgmma_train_deltas_in_place(shape)) return wgmma_train_in_place_kernel((int)shape.width, kin);
    if (shape.width == 64) {
        if (kin == 32) return (const void*)wgmma_train::fused_mlp_wgmma_train_kernel<64, 32, 2>;
        return (const void*)wgmma_train::fused_mlp_wgmma_train_kernel<64, 64>;
    }
    if (kin == 32) return (const void*)wgmma_train::fused_mlp_wgmma_train_kernel<128, 32>;
    return (const void*)wgmma_train::fused_mlp_wgmma_train_kernel<128, 64>;
}

} // namespace

bool wgmma_train_shape_supported(const MlpShape& s) {
    return (s.width == 64 || s.width == 128) && s.hidden_act == Activation::ReLU && s.output_act == Activation::None &&
           s.n_in >= 1 && s.n_in_pad <= 64 && s.n_out >= 1 && s.n_out_pad == (uint32_t)wgmma_train::kOutPad &&
           s.n_hidden >= 1;
}

bool wgmma_train_deltas_in_place(const MlpShape& s) {
    return wgmma_train::deltas_in_place((int)s.width, wgmma_train::input_width_for(s.n_in_pad), (int)s.n_hidden);
}

size_t wgmma_train_smem_bytes(const MlpShape& s) {
    return wgmma_train::smem_bytes_for((int)s.width, wgmma_train::input_width_for(s.n_in_pad), (int)s.n_hidden,
                                       wgmma_train_deltas_in_place(s));
}

bool wgmma_train_device_ok(int device) {
    int major = 0, minor = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) return false;
    if (cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) return false;
    return major == 9 && minor == 0;
}

cudaError_t prepare_wgmma_train(const MlpShape& shape, size_t max_dynamic_smem, size_t smem_bytes, KernelInfo* info) {
    return prepare_kernel(kernel_for(shape), kWgmmaTrainThreads, max_dynamic_smem, -1, smem_bytes, info);
}

cudaError_t launch_wgmma_train(const KernelArgs& args, uint32_t grid, size_t smem_bytes, cudaStream_t stream) {
    if (args.rows_per_tile != kWgmmaTrainRows || grid == 0 || grid > args.n_tiles) return cudaErrorInvalidValue;
    void* params[] = {const_cast<KernelArgs*>(&args)};
    return cudaLaunchKernel(kernel_for(args.shape), dim3(grid), dim3(kWgmmaTrainThreads), params, smem_bytes, stream);
}

} // namespace fusedngp::gpu
