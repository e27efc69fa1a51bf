#include "gpu/components/gpu_elementwise_loss.h"

#include "launch_losses.h"
#include "losses/basic_losses.h"
#include "losses/factory.h"

#include <stdexcept>

namespace fusedngp::gpu {

namespace {

GpuLossKind kind_of(const std::string& otype) {
    static const std::pair<const char*, GpuLossKind> kinds[] = {
        {"L2", GpuLossKind::L2},
        {"L1", GpuLossKind::L1},
        {"RelativeL2", GpuLossKind::RelativeL2},
        {"RelativeL1", GpuLossKind::RelativeL1},
        {"RelativeL2Luminance", GpuLossKind::RelativeL2Luminance},
        {"MAPE", GpuLossKind::MAPE},
        {"SMAPE", GpuLossKind::SMAPE},
        {"Huber", GpuLossKind::Huber},
        {"CrossEntropy", GpuLossKind::CrossEntropy},
    };
    for (const auto& [name, kind] : kinds) {
        if (otype == name) return kind;
    }
    throw std::invalid_argument("no GPU implementation of loss " + otype);
}

} // namespace

GpuElementwiseLoss::GpuElementwiseLoss(const Loss<float>& cpu)
    : otype_(cpu.otype()), args_(std::make_unique<GpuLossArgs>()), partials_(kLossPartialBlocks) {
    args_->kind = kind_of(otype_);
    if (auto* huber = dynamic_cast<const HuberLoss<float>*>(&cpu)) args_->huber_delta = huber->delta();
}

GpuElementwiseLoss::~GpuElementwiseLoss() = default;

void GpuElementwiseLoss::evaluate(const float* d_pred, const float* d_target, uint32_t batch, uint32_t n_dims,
                                  float loss_scale, float* d_dpred, float* d_mean_loss, cudaStream_t stream) const {
    launch_loss(*args_, d_pred, d_target, batch, n_dims, loss_scale, d_dpred, d_mean_loss, partials_.data(), stream);
}

std::unique_ptr<GpuLoss> create_gpu_loss(const json& config, const std::string& path) {
    const std::unique_ptr<Loss<float>> cpu = create_loss<float>(config, path);
    return std::make_unique<GpuElementwiseLoss>(*cpu);
}

} // namespace fusedngp::gpu
