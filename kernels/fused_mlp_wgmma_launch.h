// Host side of the wgmma training kernel (kernels/fused_mlp_wgmma_device.cuh,
// compiled for sm_90a only in kernels/sm90a/). FusedMlp selects it by default
// (wgmma_train_requested: not when FUSEDNGP_WGMMA_TRAIN=0 or the tuning forces
// another training kernel), on a compute capability 9.0 device, for a shape
// it supports.
#pragma once

#include "fused_mlp_args.h"
#include "fused_mlp_launch.h"

#include <cuda_runtime.h>

namespace fusedngp::gpu {

// Rows per block tile (2 warpgroups of 64) and threads per block.
constexpr uint32_t kWgmmaTrainRows = 128;
constexpr int kWgmmaTrainThreads = 256;

// The shapes the kernel implements: W = 64 or 128, hidden ReLU, output None,
// n_in <= 64, n_out <= 16, at least one hidden layer. Whether the depth fits
// in shared memory is wgmma_train_smem_bytes against the device's limit (at
// W = 128: 1 to 3 hidden layers within 227 KB, at W = 64: 1 to 8; from 3 and
// from 6 (5 with n_in > 32) on, with deltas in place).
bool wgmma_train_shape_supported(const MlpShape& shape);
// Dynamic shared memory of one block for this shape (supported shapes only).
size_t wgmma_train_smem_bytes(const MlpShape& shape);
// Whether this shape runs with deltas in place (every image does not fit).
bool wgmma_train_deltas_in_place(const MlpShape& shape);
// Whether `device` can run the kernel: the sm_90a binary runs on compute
// capability 9.0 only.
bool wgmma_train_device_ok(int device);

// prepare_kernel (fused_mlp_launch.h) for this shape's kernel.
// The in-place kernel for width 64 or 128 and input width kin (32 or 64)
// (kernels/sm90a/fused_mlp_wgmma_train_in_place.cu).
const void* wgmma_train_in_place_kernel(int width, int kin);
cudaError_t prepare_wgmma_train(const MlpShape& shape, size_t max_dynamic_smem, size_t smem_bytes, KernelInfo* info);
// args.rows_per_tile must be kWgmmaTrainRows; grid <= args.n_tiles (every
// block writes its partial).
cudaError_t launch_wgmma_train(const KernelArgs& args, uint32_t grid, size_t smem_bytes, cudaStream_t stream);

// The column-split wgmma training kernel (kernels/fused_mlp_wgmma_split_device.cuh):
// the same contract at W = 128 on 64-row tiles, each warpgroup owning 64
// hidden columns, deltas in place: 1-4 hidden layers in shared memory
// (196 / 208 KB at 4 with n_in <= 32 / 64).
constexpr uint32_t kWgmmaSplitRows = 64;
bool wgmma_split_shape_supported(const MlpShape& shape);
size_t wgmma_split_smem_bytes(const MlpShape& shape);
cudaError_t prepare_wgmma_split(const MlpShape& shape, size_t max_dynamic_smem, size_t smem_bytes, KernelInfo* info);
// args.rows_per_tile must be kWgmmaSplitRows; grid <= args.n_tiles.
cudaError_t launch_wgmma_split(const KernelArgs& args, uint32_t grid, size_t smem_bytes, cudaStream_t stream);

// The wgmma inference kernel (kernels/fused_mlp_wgmma_inference_device.cuh):
// 64-row chunks, one per warpgroup at a time, kWgmmaInferenceWarpgroups
// warpgroups per block sharing the weight images.
constexpr uint32_t kWgmmaInferenceRows = 64;
constexpr int kWgmmaInferenceWarpgroups = 4;
constexpr int kWgmmaInferenceThreads = kWgmmaInferenceWarpgroups * 128;

// The shapes it implements: W = 64 or 128, hidden ReLU (any output
// activation), n_in <= 64, n_out <= 16, at least one hidden layer; the depth
// within shared memory is wgmma_inference_smem_bytes against the device's
// limit (W = 128: up to 7 hidden layers in 227 KB).
bool wgmma_inference_shape_supported(const MlpShape& shape);
size_t wgmma_inference_smem_bytes(const MlpShape& shape);
cudaError_t prepare_wgmma_inference(const MlpShape& shape, size_t max_dynamic_smem, size_t smem_bytes,
                                    KernelInfo* info);
// args.rows_per_tile must be kWgmmaInferenceRows (n_tiles: 64-row chunks).
cudaError_t launch_wgmma_inference(const KernelArgs& args, uint32_t grid, size_t smem_bytes, cudaStream_t stream);

} // namespace fusedngp::gpu
