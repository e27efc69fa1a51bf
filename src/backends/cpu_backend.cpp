#include "backends/cpu_backend.h"

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
    for (auto& b : buffers) {
        auto it = std::find_if(s.optimizer_buffers.begin(), s.optimizer_buffers.end(),
                               [&](const auto& kv) { return kv.first == b.name; });
        if (it == s.optimizer_buffers.end()) throw InputError("snapshot lacks optimizer state \"" + b.name + "\"");
        if (it->second.size() != b.data->size()) {
            throw InputError("snapshot optimizer state \"" + b.name + "\" has " + std::to_string(it->second.size()) +
                             " values, expected " + std::to_string(b.data->size()));
        }
    }
    trainer_.model().params() = s.params;
    for (auto& b : buffers) {
        for (const auto& kv : s.optimizer_buffers) {
            if (kv.first == b.name) *b.data = kv.second;
        }
    }
    trainer_.optimizer().set_step_count(s.step);
    rng_.set_state(s.rng_state);
}

} // namespace fusedngp
