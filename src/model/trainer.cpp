#include "model/trainer.h"

#include "core/clock.h"
#include "losses/factory.h"
#include "optimizers/factory.h"

#include <chrono>
#include <cmath>

namespace fusedngp {

template <typename T>
Trainer<T>::Trainer(uint32_t n_input_dims, uint32_t n_output_dims, const json& config, uint64_t seed)
    : model_(n_input_dims, n_output_dims, config, seed) {
    if (!config.contains("loss")) throw ConfigError("loss", "missing section");
    if (!config.contains("optimizer")) throw ConfigError("optimizer", "missing section");
    loss_ = create_loss<T>(config.at("loss"), "loss");
    optimizer_ = create_optimizer<T>(config.at("optimizer"), "optimizer");
    optimizer_->allocate(model_.param_groups());
}

template <typename T>
T Trainer<T>::step(const Matrix<T>& inputs, const Matrix<T>& targets) {
    auto t0 = std::chrono::steady_clock::now();
    model_.forward(inputs, outputs_);
    T loss = loss_->evaluate(outputs_, targets, &doutputs_);
    timings_.forward_ms = ms_since(t0);

    t0 = std::chrono::steady_clock::now();
    if (!std::isfinite((double)loss)) {
        ++skipped_steps_;
        timings_.backward_ms = timings_.optimizer_ms = 0;
        return loss;
    }
    model_.backward(inputs, doutputs_, grads_);
    timings_.backward_ms = ms_since(t0);

    t0 = std::chrono::steady_clock::now();
    optimizer_->step(model_.params().data(), grads_.data());
    timings_.optimizer_ms = ms_since(t0);
    return loss;
}

template <typename T>
void Trainer<T>::inference(const Matrix<T>& inputs, Matrix<T>& outputs) const {
    model_.inference(inputs, outputs, optimizer_->inference_params(model_.params().data()));
}

template class Trainer<float>;
template class Trainer<double>;

} // namespace fusedngp
