#include "gpu/gpu_mlp_factory.h"

#include "gpu/cublas_mlp.h"
#include "gpu/device_memory.h"
#include "gpu/fused_mlp.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <vector>

namespace fusedngp::gpu {

const char* mlp_kernel_name(MlpKernel kernel) {
    switch (kernel) {
    case MlpKernel::FullyFused: return "FullyFusedMLP";
    case MlpKernel::Cublas: return "CublasMLP";
    case MlpKernel::Auto: return "Auto";
    }
    return "?";
}

std::string fused_unsupported_reason(const GpuMlpConfig& c) {
    const uint32_t w = c.width;
    if (w != 16 && w != 32 && w != 64 && w != 128 && w != 256)
        return "n_neurons " + std::to_string(w) + " is not one of the fully fused widths 16, 32, 64, 128, 256";
    if (c.n_hidden_layers < 1 || c.n_hidden_layers > 16)
        return "n_hidden_layers " + std::to_string(c.n_hidden_layers) + " is outside the fully fused range 1..16";
    // Every Activation has a fused implementation; what remains is whether
    // one row tile fits in shared memory (very wide inputs), which only the
    // planner knows.
    try {
        FusedMlp probe(c);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return {};
}

std::unique_ptr<GpuMlp> create_gpu_mlp(const GpuMlpConfig& config, MlpKernel kernel, uint32_t max_batch) {
    switch (kernel) {
    case MlpKernel::FullyFused: return std::make_unique<FusedMlp>(config);
    case MlpKernel::Cublas: return std::make_unique<CublasMlp>(config, max_batch);
    case MlpKernel::Auto: break;
    }
    throw std::invalid_argument("create_gpu_mlp: resolve Auto first (time_mlp_kernels)");
}

std::string KernelTiming::summary() const {
    char buf[160];
    std::snprintf(buf, sizeof(buf), "FullyFusedMLP %.3f ms vs CublasMLP %.3f ms per training step at batch %u",
                  fused_ms, cublas_ms, batch);
    return buf;
}

namespace {

DeviceMemory upload_random(size_t n, float scale, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-scale, scale);
    std::vector<float> host(n);
    for (float& v : host) v = u(rng);
    DeviceMemory d(std::max<size_t>(n, 1) * sizeof(float));
    FUSEDNGP_CUDA_CHECK(cudaMemcpy(d.as<float>(), host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    return d;
}

double median_step_ms(GpuMlp& mlp, const float* in, const float* dout, float* out, float* din, float* dw,
                      uint32_t batch, cudaStream_t stream, int iterations) {
    auto step = [&] {
        mlp.forward(in, out, batch, stream);
        mlp.backward(in, dout, din, dw, batch, stream);
    };
    step();  // warm-up: plans, caches, clocks
    std::vector<cudaEvent_t> events(2 * iterations);
    for (auto& e : events) FUSEDNGP_CUDA_CHECK(cudaEventCreate(&e));
    for (int i = 0; i < iterations; ++i) {
        FUSEDNGP_CUDA_CHECK(cudaEventRecord(events[2 * i], stream));
        step();
        FUSEDNGP_CUDA_CHECK(cudaEventRecord(events[2 * i + 1], stream));
    }
    FUSEDNGP_CUDA_CHECK(cudaStreamSynchronize(stream));
    std::vector<double> ms(iterations);
    for (int i = 0; i < iterations; ++i) {
        float t = 0;
        FUSEDNGP_CUDA_CHECK(cudaEventElapsedTime(&t, events[2 * i], events[2 * i + 1]));
        ms[i] = t;
    }
    for (auto& e : events) cudaEventDestroy(e);
    std::sort(ms.begin(), ms.end());
    return ms[iterations / 2];
}

} // namespace

KernelTiming time_mlp_kernels(const GpuMlpConfig& config, uint32_t batch, cudaStream_t stream, int iterations) {
    iterations = std::max(iterations, 1);
    KernelTiming t;
    t.batch = batch;
    const size_t b = std::max<uint32_t>(batch, 1);
    DeviceMemory in = upload_random(b * config.n_input_dims, 1.f, 1);
    DeviceMemory dout = upload_random(b * config.n_output_dims, 1e-3f, 2);
    DeviceMemory out(b * config.n_output_dims * sizeof(float)), din(b * config.n_input_dims * sizeof(float));

    auto measure = [&](MlpKernel kernel) {
        std::unique_ptr<GpuMlp> mlp = create_gpu_mlp(config, kernel, batch);
        DeviceMemory params = upload_random(mlp->n_params(), 1.f / std::sqrt((float)config.width), 3);
        DeviceMemory dw(mlp->n_params() * sizeof(float));
        mlp->set_params_device(params.as<float>(), stream);
        return median_step_ms(*mlp, in.as<float>(), dout.as<float>(), out.as<float>(), din.as<float>(),
                              dw.as<float>(), batch, stream, iterations);
    };
    t.fused_ms = measure(MlpKernel::FullyFused);
    t.cublas_ms = measure(MlpKernel::Cublas);
    t.faster = t.cublas_ms < t.fused_ms ? MlpKernel::Cublas : MlpKernel::FullyFused;
    return t;
}

} // namespace fusedngp::gpu
