// The CPU side of `fusedngp bench mlp --kernels cpu`: times the CPU reference
// Mlp<float> on the benchmark network n_in -> W x depth -> n_out (no bias,
// ReLU, fp32 throughout). Needs no GPU and no CUDA build, so the sweep tooling
// (bench/study.py) and its CI test run anywhere.
//
// What a case times (std::chrono steady clock, median of `iters` calls after
// `warmup` untimed calls; one input buffer, since a CPU's caches are far
// smaller than any batch worth timing):
//   inference: Mlp::inference(in -> out).
//   train:     Mlp::forward, then Mlp::backward with dL/dW only (no
//              dL/dinput, no optimizer), dL/dout from a precomputed buffer,
//              as the cublas row. Zeroing dL/dW is part of the step.
#pragma once

#include <cstdint>
#include <string>

namespace fusedngp {

struct CpuMlpBenchCase {
    std::string pass;  // "inference" or "train"
    uint32_t width = 0, depth = 0, batch = 0;
};

struct CpuMlpBenchSettings {
    uint32_t n_in = 32, n_out = 16;
    int warmup = 5, iters = 20;
};

// Median milliseconds of one call (see the file comment for what a call is).
double cpu_mlp_median_ms(const CpuMlpBenchSettings& settings, const CpuMlpBenchCase& c);

// "cpu: <model name> (<n> threads)" from /proc/cpuinfo and OpenMP, for the
// CSV's device column.
std::string cpu_identity();

} // namespace fusedngp
