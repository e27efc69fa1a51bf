#include "gpu/mlp_bench_runner.h"

#include "gpu/cublas_mlp.h"
#include "gpu/fused_mlp.h"
#include "gpu/gpu_mlp_factory.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>

namespace fusedngp::gpu {

namespace {

constexpr uint64_t kInputSeed = 10;

GpuMlpConfig network_config(const MlpBenchSettings& s, const MlpBenchCase& c) {
    return {s.n_in, s.n_out, c.width, c.depth, Activation::ReLU, Activation::None};
}

// Weights ~ U(-1/sqrt(W), 1/sqrt(W)) keep activations O(1) through the layers.
void set_random_params(GpuMlp& mlp, uint32_t width) {
    mlp.set_params(random_floats(mlp.n_params(), 1.f / std::sqrt((float)width), 5).data());
}

MlpKernelResources resources_of(const FusedMlp& mlp, const FusedMlp::PassPlan& plan, uint32_t batch, int sm_count,
                                 int max_warps_per_sm) {
    MlpKernelResources r;
    r.known = true;
    r.registers = plan.kernel.registers;
    r.smem_per_block = plan.smem_bytes + plan.kernel.static_smem_bytes;
    r.blocks_per_sm = plan.kernel.blocks_per_sm;
    // The block-tile kernels run 8 warps per block and hand a row tile to a
    // block; the warp kernels run plan.warps_per_block() warps per block and
    // hand a slab to a warp. Waves = work units per resident worker.
    const int warps_per_block = plan.warps_per_block();
    r.occupancy = (double)plan.kernel.blocks_per_sm * warps_per_block / max_warps_per_sm;
    r.rows_per_tile = mlp.rows_per_tile_for(batch, plan);
    const double tiles = std::ceil((double)batch / r.rows_per_tile);
    // The wgmma inference kernel hands a chunk to a warpgroup (4 warps).
    const int workers_per_block = plan.warp ? warps_per_block : plan.wgmma_inference ? warps_per_block / 4 : 1;
    r.waves = tiles / ((double)std::max(1, plan.kernel.blocks_per_sm) * workers_per_block * sm_count);
    return r;
}

} // namespace

MlpBenchRunner::MlpBenchRunner(const MlpBenchSettings& settings, uint32_t max_batch)
    : settings_(settings),
      max_batch_(max_batch),
      inputs_(kDefaultRotations, (size_t)max_batch * settings.n_in, 1.f, kInputSeed),
      targets_(kDefaultRotations, (size_t)max_batch * settings.n_out, 1.f, 20),
      // Small, like a mean-reduced loss gradient over a large batch.
      douts_(kDefaultRotations, (size_t)max_batch * settings.n_out, 1e-6f, 30),
      out_((size_t)max_batch * settings.n_out * sizeof(float)) {
    int device = 0, threads = 0;
    FUSEDNGP_CUDA_CHECK(cudaGetDevice(&device));
    FUSEDNGP_CUDA_CHECK(cudaDeviceGetAttribute(&threads, cudaDevAttrMaxThreadsPerMultiProcessor, device));
    FUSEDNGP_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device));
    max_warps_per_sm_ = threads / 32;
}

std::string MlpBenchRunner::unsupported_reason(const MlpBenchCase& c) const {
    if (c.io != "fp32" && c.io != "fp16") return "unknown io '" + c.io + "'";
    if (c.io == "fp16" && c.kernel != "fused") return "fp16 I/O is measured for the fused kernel only";
    if (c.kernel == "fused") return fused_unsupported_reason(network_config(settings_, c));
    if (c.kernel == "cublas") return "";
    return "unknown kernel '" + c.kernel + "'";
}

MlpBenchResult MlpBenchRunner::measure(const MlpBenchCase& c) {
    if (c.batch > max_batch_) throw std::invalid_argument("batch exceeds the runner's max_batch");
    const GpuMlpConfig config = network_config(settings_, c);
    const bool fused = c.kernel == "fused";
    std::unique_ptr<GpuMlp> mlp;
    MlpBenchResult result;
    if (fused) {
        auto f = std::make_unique<FusedMlp>(config, c.fused_tuning);
        const bool train = c.pass == "train", half = c.io == "fp16";
        const FusedMlp::PassPlan& plan =
            train ? (half ? f->training_half_plan_for(c.batch, false) : f->training_plan_for(c.batch))
                  : (half ? f->inference_half_plan() : f->inference_plan());
        result.resources = resources_of(*f, plan, c.batch, sm_count_, max_warps_per_sm_);
        mlp = std::move(f);
    } else {
        mlp = create_gpu_mlp(config, MlpKernel::Cublas, c.batch);
    }
    set_random_params(*mlp, c.width);
    DeviceMemory dweights(mlp->n_params() * sizeof(float));
    float* out = out_.as<float>();
    float* dw = dweights.as<float>();
    const uint32_t batch = c.batch;
    const int warmup = settings_.warmup, iters = settings_.iters;

    if (c.io == "fp16") {
        if (!inputs_half_) {
            inputs_half_ = std::make_unique<RotatedHalfBuffers>(kDefaultRotations, (size_t)max_batch_ * settings_.n_in,
                                                                1.f, kInputSeed);
            out_half_ = DeviceMemory((size_t)max_batch_ * settings_.n_out * sizeof(__half));
        }
        auto* fused_mlp = static_cast<FusedMlp*>(mlp.get());
        const bool train = c.pass == "train";
        __half* out16 = out_half_.as<__half>();
        result.ms = time_median_ms(warmup, iters, [&](int i) {
            if (train)
                fused_mlp->train_step_half(inputs_half_->at(i), targets_.at(i), LossKind::L2, nullptr, nullptr, dw,
                                           batch, nullptr);
            else
                fused_mlp->inference_half(inputs_half_->at(i), out16, batch, nullptr);
        });
        return result;
    }
    if (c.pass == "inference") {
        result.ms = time_median_ms(warmup, iters, [&](int i) { mlp->inference(inputs_.at(i), out, batch, nullptr); });
        return result;
    }
    if (c.pass != "train") throw std::invalid_argument("unknown pass '" + c.pass + "'");
    if (fused) {
        auto* fused_mlp = static_cast<FusedMlp*>(mlp.get());
        result.ms = time_median_ms(warmup, iters, [&](int i) {
            fused_mlp->train_step(inputs_.at(i), targets_.at(i), LossKind::L2, nullptr, nullptr, dw, batch, nullptr);
        });
        return result;
    }
    result.ms = time_median_ms(warmup, iters, [&](int i) {
        mlp->forward(inputs_.at(i), out, batch, nullptr);
        mlp->backward(inputs_.at(i), douts_.at(i), nullptr, dw, batch, nullptr);
    });
    return result;
}

} // namespace fusedngp::gpu
