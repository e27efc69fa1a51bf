// The wgmma training kernel's in-place instantiations (deltas_in_place: W =
// 128 from 3 hidden layers, W = 64 from 6, or 5 with n_in > 32), in their own
// translation unit so that they compile beside the others. sm_90a only, as
// fused_mlp_wgmma_train.cu.
#include "fused_mlp_wgmma_device.cuh"
#include "fused_mlp_wgmma_launch.h"

namespace fusedngp::gpu {

const void* wgmma_train_in_place_kernel(int width, int kin) {
    using namespace wgmma_train;
    if (width == 64)
        return kin == 32 ? (const void*)fused_mlp_wgmma_train_kernel<64, 32, 1, true>
                         : (const void*)fused_mlp_wgmma_train_kernel<64, 64, 1, true>;
    return kin == 32 ? (const void*)fused_mlp_wgmma_train_kernel<128, 32, 1, true>
                     : (const void*)fused_mlp_wgmma_train_kernel<128, 64, 1, true>;
}

} // namespace fusedngp::gpu
