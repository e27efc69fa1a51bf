#include "gpu/mlp_timing.h"

#include <algorithm>
#include <cstdio>
#include <random>

namespace fusedngp::gpu {

double time_median_ms(int warmup, int iters, const std::function<void(int)>& f, cudaStream_t stream) {
    iters = std::max(iters, 1);
    for (int i = 0; i < warmup; ++i) f(i);
    FUSEDNGP_CUDA_CHECK(cudaStreamSynchronize(stream));
    // All events are recorded up front and read after one synchronization,
    // so the host never stalls the launch queue between timed calls.
    std::vector<cudaEvent_t> events(2 * (size_t)iters);
    for (auto& e : events) FUSEDNGP_CUDA_CHECK(cudaEventCreate(&e));
    for (int i = 0; i < iters; ++i) {
        FUSEDNGP_CUDA_CHECK(cudaEventRecord(events[2 * i], stream));
        f(warmup + i);
        FUSEDNGP_CUDA_CHECK(cudaEventRecord(events[2 * i + 1], stream));
    }
    FUSEDNGP_CUDA_CHECK(cudaStreamSynchronize(stream));
    FUSEDNGP_CUDA_CHECK(cudaGetLastError());
    std::vector<double> ms(iters);
    for (int i = 0; i < iters; ++i) {
        float t = 0;
        FUSEDNGP_CUDA_CHECK(cudaEventElapsedTime(&t, events[2 * i], events[2 * i + 1]));
        ms[i] = t;
    }
    for (auto& e : events) cudaEventDestroy(e);
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

std::vector<float> random_floats(size_t n, float scale, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-scale, scale);
    std::vector<float> v(n);
    for (auto& x : v) x = u(rng);
    return v;
}

DeviceMemory upload(const std::vector<float>& host) {
    DeviceMemory d(host.size() * sizeof(float));
    FUSEDNGP_CUDA_CHECK(cudaMemcpy(d.as<float>(), host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
    return d;
}

// Each buffer is one random block of at most 2^22 floats (16 MB), repeated:
// generating 2^22-row inputs on the host took seconds per benchmark call, and
// a timing only needs values that look random within a row and addresses that
// do not repeat (what keeps a rotation out of L2).
namespace {

// n elements on the device: a block of random values (at most 2^22, see
// random_floats, converted to T) repeated until the buffer is full.
template <typename T>
DeviceMemory repeated_random(size_t n, float scale, uint64_t seed) {
    constexpr size_t kBlock = size_t(1) << 22;
    const std::vector<float> values = random_floats(std::min(n, kBlock), scale, seed);
    const std::vector<T> block(values.begin(), values.end());
    DeviceMemory d(n * sizeof(T));
    T* dst = d.as<T>();
    if (!block.empty())
        FUSEDNGP_CUDA_CHECK(cudaMemcpy(dst, block.data(), block.size() * sizeof(T), cudaMemcpyHostToDevice));
    // Double the filled prefix until the buffer is full.
    for (size_t filled = block.size(); filled < n && filled > 0;) {
        const size_t k = std::min(filled, n - filled);
        FUSEDNGP_CUDA_CHECK(cudaMemcpy(dst + filled, dst, k * sizeof(T), cudaMemcpyDeviceToDevice));
        filled += k;
    }
    return d;
}

} // namespace

RotatedBuffers::RotatedBuffers(int count, size_t floats_each, float scale, uint64_t seed) {
    for (int r = 0; r < std::max(count, 1); ++r) buffers_.push_back(repeated_random<float>(floats_each, scale, seed + r));
}

RotatedHalfBuffers::RotatedHalfBuffers(int count, size_t halves_each, float scale, uint64_t seed) {
    for (int r = 0; r < std::max(count, 1); ++r) buffers_.push_back(repeated_random<__half>(halves_each, scale, seed + r));
}

double mlp_macs_per_sample(uint32_t n_in, uint32_t width, uint32_t n_hidden_layers, uint32_t n_out) {
    return (double)n_in * width + (double)(n_hidden_layers - 1) * width * width + (double)width * n_out;
}

double mlp_flop_per_sample(uint32_t n_in, uint32_t width, uint32_t n_hidden_layers, uint32_t n_out, bool training) {
    return (training ? 6.0 : 2.0) * mlp_macs_per_sample(n_in, width, n_hidden_layers, n_out);
}

namespace {

// nvidia-smi's driver version ("580.159.04"); empty when it is not there.
std::string smi_driver_version() {
    FILE* p = popen("nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null", "r");
    if (p == nullptr) return "";
    char buf[128] = {};
    std::string line = std::fgets(buf, sizeof(buf), p) ? buf : "";
    pclose(p);
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r' || line.back() == ' ')) line.pop_back();
    return line;
}

} // namespace

GpuIdentity gpu_identity(int device) {
    cudaDeviceProp prop{};
    FUSEDNGP_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    GpuIdentity id;
    id.name = prop.name;
    id.sm_count = prop.multiProcessorCount;
    int khz = 0;
    FUSEDNGP_CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device));
    id.sm_clock_mhz = khz / 1000;
    FUSEDNGP_CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, device));
    id.mem_clock_mhz = khz / 1000;
    id.driver = smi_driver_version();
    if (id.driver.empty()) {
        int v = 0;
        FUSEDNGP_CUDA_CHECK(cudaDriverGetVersion(&v));
        id.driver = "CUDA driver API " + std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
    }
    return id;
}

} // namespace fusedngp::gpu
