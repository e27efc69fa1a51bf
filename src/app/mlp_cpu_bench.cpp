#include "app/mlp_cpu_bench.h"

#include "core/errors.h"
#include "networks/mlp.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace fusedngp {

namespace {

Matrix<float> random_matrix(uint32_t rows, uint32_t cols, float scale, uint32_t seed) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> u(-scale, scale);
    Matrix<float> m(rows, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = u(gen);
    return m;
}

double median_ms(int warmup, int iters, const std::function<void()>& call) {
    for (int i = 0; i < warmup; ++i) call();
    std::vector<double> times(iters);
    for (double& t : times) {
        const auto start = std::chrono::steady_clock::now();
        call();
        t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    }
    std::nth_element(times.begin(), times.begin() + iters / 2, times.end());
    return times[iters / 2];
}

int cpu_threads() {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

} // namespace

double cpu_mlp_median_ms(const CpuMlpBenchSettings& s, const CpuMlpBenchCase& c) {
    const Mlp<float> mlp(s.n_in, s.n_out, c.width, c.depth, Activation::ReLU, Activation::None);
    std::vector<float> params(mlp.n_params()), dparams(mlp.n_params());
    mlp.init_params(params.data(), 5);
    const Matrix<float> in = random_matrix(c.batch, s.n_in, 1.f, 10);
    // Small, like a mean-reduced loss gradient over a large batch.
    const Matrix<float> dout = random_matrix(c.batch, s.n_out, 1e-6f, 30);
    Matrix<float> out(c.batch, s.n_out);

    if (c.pass == "inference") return median_ms(s.warmup, s.iters, [&]() { mlp.inference(params.data(), in, out); });
    if (c.pass != "train") throw InputError("bench mlp: unknown pass '" + c.pass + "'");
    return median_ms(s.warmup, s.iters, [&]() {
        std::fill(dparams.begin(), dparams.end(), 0.f);
        const auto ctx = mlp.forward(params.data(), in, out);
        mlp.backward(*ctx, params.data(), in, dout, dparams.data(), nullptr);
    });
}

std::string cpu_identity() {
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line, model = "unknown CPU";
    while (std::getline(cpuinfo, line)) {
        if (line.rfind("model name", 0) != 0) continue;
        const size_t colon = line.find(':');
        if (colon != std::string::npos) model = line.substr(line.find_first_not_of(" \t", colon + 1));
        break;
    }
    return "cpu: " + model + " (" + std::to_string(cpu_threads()) + " threads)";
}

} // namespace fusedngp
