// Helpers shared by the GPU MLP tests (FusedMlp, CublasMlp): the double
// reference on fp16-rounded weights and inputs, inputs kept away from ReLU
// kinks, poisoned device arrays and norm-wise errors.
#pragma once

#include "fused_mlp_wgmma_launch.h"
#include "gpu/device_memory.h"
#include "mlp_reference.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

namespace fusedngp::gpu::mlp_test {

inline bool have_gpu() {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

#define SKIP_WITHOUT_GPU() \
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device"

inline double round_to_half(double x) { return (double)__half2float(__float2half_rn((float)x)); }

// ||a - b|| / ||b|| over the given rows (all rows if `rows` is empty).
inline double relative_error(const std::vector<float>& gpu, const std::vector<double>& ref, uint32_t cols,
                      const std::vector<uint32_t>& rows) {
    double num = 0, den = 0;
    auto add = [&](size_t i) {
        const double d = (double)gpu[i] - ref[i];
        num += d * d;
        den += ref[i] * ref[i];
    };
    if (rows.empty()) {
        for (size_t i = 0; i < ref.size(); ++i) add(i);
    } else {
        for (uint32_t r : rows)
            for (uint32_t c = 0; c < cols; ++c) add((size_t)r * cols + c);
    }
    return std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
}

inline bool all_finite(const std::vector<float>& v) {
    return std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); });
}

// Device array that starts poisoned (all bits set: NaN in fp32 and fp16).
template <typename T>
struct PoisonedDevice {
    DeviceMemory mem;
    size_t n;
    explicit PoisonedDevice(size_t count) : mem(std::max<size_t>(count, 1) * sizeof(T)), n(count) { poison(); }
    PoisonedDevice(const std::vector<T>& host) : PoisonedDevice(host.size()) { upload(host); }
    T* ptr() const { return mem.as<T>(); }
    void poison() { FUSEDNGP_CUDA_CHECK(cudaMemset(ptr(), 0xFF, std::max<size_t>(n, 1) * sizeof(T))); }
    void upload(const std::vector<T>& host) {
        FUSEDNGP_CUDA_CHECK(cudaMemcpy(ptr(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
    }
    std::vector<T> download() const {
        std::vector<T> h(n);
        FUSEDNGP_CUDA_CHECK(cudaMemcpy(h.data(), ptr(), n * sizeof(T), cudaMemcpyDeviceToHost));
        return h;
    }
};
using DeviceFloats = PoisonedDevice<float>;
using DeviceHalves = PoisonedDevice<__half>;

inline uint16_t bits_of(__half h) {
    uint16_t b;
    std::memcpy(&b, &h, sizeof(b));
    return b;
}

// A device the sm_90a (wgmma) kernels run on: compute capability 9.0.
inline bool hopper_device() {
    int device = 0;
    return cudaGetDevice(&device) == cudaSuccess && wgmma_train_device_ok(device);
}

#define SKIP_WITHOUT_HOPPER()                                                                 \
    SKIP_WITHOUT_GPU();                                                                       \
    if (!hopper_device()) GTEST_SKIP() << "the wgmma kernels need compute capability 9.0 (sm_90a)"

// Xavier-uniform weights on the fp16 grid.
inline std::vector<double> random_params(const reference::MlpDims& d, std::mt19937_64& rng) {
    std::vector<double> p(d.n_params());
    for (uint32_t l = 0; l <= d.n_hidden; ++l) {
        const double bound = std::sqrt(6.0 / (d.fan_in(l) + d.fan_out(l)));
        std::uniform_real_distribution<double> u(-bound, bound);
        for (size_t i = 0; i < (size_t)d.fan_in(l) * d.fan_out(l); ++i) p[d.offset(l) + i] = round_to_half(u(rng));
    }
    return p;
}

inline std::vector<double> random_values(size_t n, double scale, bool fp16_grid, std::mt19937_64& rng) {
    std::uniform_real_distribution<double> u(-scale, scale);
    std::vector<double> v(n);
    for (auto& x : v) x = fp16_grid ? round_to_half(u(rng)) : u(rng);
    return v;
}

inline std::vector<float> to_float(const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); }

inline bool has_kink(Activation a) { return a == Activation::ReLU || a == Activation::LeakyReLU; }

// Smallest |z| / rms(z) over the units of one sample that pass through a
// kinked activation (ReLU, LeakyReLU); infinity if there are none.
inline double kink_margin(const reference::MlpDims& d, const std::vector<double>& params, const double* x) {
    std::vector<std::vector<double>> z;
    std::vector<double> y(d.n_out);
    reference::forward(d, params.data(), x, y.data(), z);
    double margin = INFINITY;
    for (uint32_t l = 0; l <= d.n_hidden; ++l) {
        if (!has_kink(l == d.n_hidden ? d.output : d.hidden)) continue;
        double ss = 0;
        for (double v : z[l]) ss += v * v;
        const double rms = std::sqrt(ss / z[l].size());
        for (double v : z[l]) margin = std::min(margin, std::abs(v) / std::max(rms, 1e-30));
    }
    return margin;
}

template <typename F>
void parallel_rows(uint32_t batch, F&& f) {
    const uint32_t n_threads = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
    std::vector<std::thread> threads;
    for (uint32_t t = 0; t < n_threads; ++t)
        threads.emplace_back([&, t] {
            for (uint32_t row = t; row < batch; row += n_threads) f(row);
        });
    for (auto& th : threads) th.join();
}

// A pre-activation within fp16 rounding of a ReLU kink can land on the other
// side on the GPU, which flips that unit's whole gradient path: an O(1) error
// in one term, not a rounding error. Gradient checks therefore use inputs
// away from kinks: each row is redrawn (deterministically) until all its
// kinked pre-activations are at least kKinkMargin * rms from zero; a row that
// still fails after 200 draws gets dL/dout = 0 (it then contributes nothing
// to any gradient, on the GPU or in the reference).
inline constexpr double kKinkMargin = 3e-3;

struct Inputs {
    std::vector<double> x;
    std::vector<char> masked;  // rows with dL/dout forced to 0
};

inline Inputs random_inputs(const reference::MlpDims& d, const std::vector<double>& params, uint32_t batch, uint64_t seed) {
    Inputs in;
    in.x.resize((size_t)batch * d.n_in);
    in.masked.assign(batch, 0);
    const bool kinked = has_kink(d.hidden) || has_kink(d.output);
    parallel_rows(batch, [&](uint32_t row) {
        std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + row);
        std::uniform_real_distribution<double> u(-1.0, 1.0);
        double* x = in.x.data() + (size_t)row * d.n_in;
        for (int attempt = 0;; ++attempt) {
            for (uint32_t i = 0; i < d.n_in; ++i) x[i] = round_to_half(u(rng));
            if (!kinked || kink_margin(d, params, x) >= kKinkMargin) break;
            if (attempt == 200) {
                in.masked[row] = 1;
                break;
            }
        }
    });
    return in;
}

// Reference outputs / gradients for the whole batch. dW needs every row; the
// rows are split over threads, each with its own accumulator, summed in a
// fixed order. dy(row, y, dy_out) supplies dL/dy of a row.
struct ReferenceResult {
    std::vector<double> out, din, dparams;
};

template <typename DyFn>
ReferenceResult reference_pass(const reference::MlpDims& d, const std::vector<double>& params,
                               const std::vector<double>& in, uint32_t batch, DyFn dy_of) {
    ReferenceResult r;
    r.out.assign((size_t)batch * d.n_out, 0.0);
    r.din.assign((size_t)batch * d.n_in, 0.0);
    const uint32_t n_threads = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
    std::vector<std::vector<double>> partial(n_threads, std::vector<double>(params.size(), 0.0));
    std::vector<std::thread> threads;
    for (uint32_t t = 0; t < n_threads; ++t) {
        threads.emplace_back([&, t] {
            std::vector<std::vector<double>> z;
            std::vector<double> dy(d.n_out);
            for (uint32_t row = t; row < batch; row += n_threads) {
                const double* x = in.data() + (size_t)row * d.n_in;
                double* y = r.out.data() + (size_t)row * d.n_out;
                reference::forward(d, params.data(), x, y, z);
                dy_of(row, y, dy.data());
                reference::backward(d, params.data(), x, dy.data(), partial[t].data(),
                                    r.din.data() + (size_t)row * d.n_in);
            }
        });
    }
    for (auto& th : threads) th.join();
    r.dparams.assign(params.size(), 0.0);
    for (const auto& p : partial)
        for (size_t i = 0; i < p.size(); ++i) r.dparams[i] += p[i];
    return r;
}

inline std::vector<uint32_t> rows_to_check(uint32_t batch, std::mt19937_64& rng) {
    if (batch <= 8192) return {};
    std::vector<uint32_t> rows = {0, batch - 1};
    std::uniform_int_distribution<uint32_t> u(0, batch - 1);
    for (int i = 0; i < 4096; ++i) rows.push_back(u(rng));
    return rows;
}

} // namespace fusedngp::gpu::mlp_test
