#include "backends/cpu_backend.h"

#include "optimizers/state_matching.h"

#include "core/errors.h"

#include <algorithm>

namespace fusedngp {

CpuBackend::CpuBackend(const json& config, const TrainingData& data, uint64_t seed)
    : config_(config), data_(data), trainer_(data.n_input_dims(), data.n_output_dims(), config, seed),
      rng_(derive_seed(seed, 3)) {}

float CpuBackend::train_step(uint32_t batch_size) {
    data_.sample(batch_size, rng_, inputs_, targets_);
    return trainer_.step(inputs_, targets_);
}

void CpuBackend::inference(const Matrix<float>& inputs, Matrix<float>& outputs) {
    trainer_.inference(inputs, outputs);
}

std::vector<float> CpuBackend::inference_params() const {
    const auto& params = trainer_.model().params();
    const float* p = trainer_.optimizer().inference_params(params.data());
    return std::vector<float>(p, p + params.size());
}

TrainingState CpuBackend::save_state() const {
    TrainingState s;
    s.step = trainer_.optimizer().step_count();
    s.rng_state = rng_.state();
    s.params = trainer_.model().params();
    for (auto& b : trainer_.optimizer().state()) s.optimizer_buffers.emplace_back(b.name, *b.data);
    return s;
}

void CpuBackend::set_params(const std::vector<float>& params) {
    if (params.size() != trainer_.model().params().size()) {
        throw InputError("set_params: got " + std::to_string(params.size()) + " parameters, the model has " +
                         std::to_string(trainer_.model().params().size()));
    }
    trainer_.model().params() = params;
}

void CpuBackend::load_state(const TrainingState& s) {
    if (s.params.size() != trainer_.model().params().size()) {
        throw InputError("snapshot has " + std::to_string(s.params.size()) + " parameters, the model has " +
                         std::to_string(trainer_.model().params().size()));
    }
    auto buffers = trainer_.optimizer().state();
    std::vector<StateBufferShape> shapes;
    for (auto& b : buffers) shapes.push_back({b.name, b.data->size()});
    const auto saved = match_state_buffers(shapes, s.optimizer_buffers, "snapshot");
    trainer_.model().params() = s.params;
    for (size_t i = 0; i < buffers.size(); ++i) {
        if (saved[i]) {
            *buffers[i].data = *saved[i];
        } else {
            std::fill(buffers[i].data->begin(), buffers[i].data->end(), 0.f);
        }
    }
    trainer_.optimizer().set_step_count(s.step);
    rng_.set_state(s.rng_state);
}

} // namespace fusedngp
