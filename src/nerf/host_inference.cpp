#include "nerf/host_inference.h"

#include "nerf/volume_rendering.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace fusedngp::nerf {

namespace {

// Points per inference call: large enough to amortise the call, small enough
// that a thread's scratch stays a few MB.
constexpr Eigen::Index kChunk = 1 << 14;

} // namespace

void parallel_inference(const Model<float>& model, const float* params, const Matrix<float>& in, Matrix<float>& out) {
    const Eigen::Index n = in.rows();
    out.resize(n, model.n_output_dims());
    const Eigen::Index n_chunks = (n + kChunk - 1) / kChunk;
    std::atomic<Eigen::Index> next{0};
    auto work = [&] {
        Matrix<float> chunk_in, chunk_out;
        for (Eigen::Index c = next++; c < n_chunks; c = next++) {
            const Eigen::Index s0 = c * kChunk, m = std::min(kChunk, n - s0);
            chunk_in = in.middleRows(s0, m);
            model.inference(chunk_in, chunk_out, params);
            out.middleRows(s0, m) = chunk_out;
        }
    };
    const unsigned n_threads = (unsigned)std::min<Eigen::Index>(std::max(1u, std::thread::hardware_concurrency()), n_chunks);
    std::vector<std::thread> threads;
    for (unsigned t = 1; t < n_threads; ++t) threads.emplace_back(work);
    work();
    for (std::thread& t : threads) t.join();
}

float sigma_of_raw(float raw) { return trunc_exp(std::min(raw, kMaxRawDensity)); }

} // namespace fusedngp::nerf
