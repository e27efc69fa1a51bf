// The GPU side of `fusedngp bench mlp`: times one (kernel, pass, width,
// depth, batch) case of the benchmark MLP n_in -> W x depth -> n_out (no
// bias, ReLU, fp16 operands with fp32 accumulation; fp32 data in and out,
// or fp16 input (MlpBenchCase::io, the fused kernel; fp16 output in inference).
//
// What a case times (CUDA events, median of `iters` after `warmup` calls,
// inputs rotated over kDefaultRotations buffers, see mlp_timing.h):
//   inference, any kernel: inference(in -> out); io "fp16": the fused
//                  kernel's inference_half (fp16 in, fp16 out).
//   train, fused:  FusedMlp::train_step with the L2 loss: forward, loss
//                  gradient, backward and the weight gradients dL/dW in one
//                  fused launch sequence; no dL/dinput, no optimizer.
//                  io "fp16": train_step_half (fp16 input, fp32 target).
//   train, cublas: CublasMlp forward + backward with dL/dW (no dL/dinput,
//                  no optimizer). dL/dout comes from a precomputed buffer:
//                  the elementwise loss-gradient kernel is not counted.
#pragma once

#include "gpu/fused_mlp.h"
#include "gpu/mlp_timing.h"

#include <cuda_fp16.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fusedngp::gpu {

struct MlpBenchCase {
    std::string kernel;  // "fused" or "cublas"
    std::string pass;    // "inference" or "train"
    std::string io = "fp32";  // the data's type in and out: "fp32" or "fp16"
    uint32_t width = 0, depth = 0, batch = 0;
    FusedMlpTuning fused_tuning;  // resource restrictions of the fused kernel (study)
};

// Resource use of the fused kernel that ran a case (from
// cudaFuncGetAttributes and the occupancy calculator, after the caps of the
// case's tuning). Unknown (cuBLAS: opaque library kernels) when !known.
struct MlpKernelResources {
    bool known = false;
    int registers = 0;           // per thread
    size_t smem_per_block = 0;   // dynamic + static bytes
    int blocks_per_sm = 0;       // resident, after the caps
    double occupancy = 0;        // resident warps / the SM's maximum
    double waves = 0;            // work units per resident worker: row tiles per block, or warp
                                 // slabs per warp for the warp kernel (the grids are persistent)
    uint32_t rows_per_tile = 0;  // the tile, or the warp kernel's slab
};

struct MlpBenchResult {
    double ms = 0;  // median of one call
    MlpKernelResources resources;
};

struct MlpBenchSettings {
    uint32_t n_in = 32, n_out = 16;
    int warmup = 5, iters = 20;
};

class MlpBenchRunner {
public:
    // Allocates the rotated inputs, targets and dL/dout for batches up to
    // max_batch (the largest planned batch).
    MlpBenchRunner(const MlpBenchSettings& settings, uint32_t max_batch);

    // Empty when the case can run, else why not (one line).
    std::string unsupported_reason(const MlpBenchCase& c) const;
    // Median milliseconds of one call (see the file comment for what a call
    // is) and, for the fused kernel, its resources.
    MlpBenchResult measure(const MlpBenchCase& c);

private:
    MlpBenchSettings settings_;
    uint32_t max_batch_;
    RotatedBuffers inputs_, targets_, douts_;
    DeviceMemory out_;
    // fp16 inputs (inputs_ rounded) and output, made by the first fp16 case.
    std::unique_ptr<RotatedHalfBuffers> inputs_half_;
    DeviceMemory out_half_;
    int max_warps_per_sm_ = 64;
    int sm_count_ = 0;
};

} // namespace fusedngp::gpu
