// Trainer: model + loss + optimizer, one training step at a time (CPU reference).
#pragma once

#include "losses/loss.h"
#include "model/model.h"
#include "optimizers/optimizer.h"

#include <memory>

namespace fusedngp {

// Wall time of the parts of the last step, in milliseconds.
struct StepTimings {
    double forward_ms = 0;
    double backward_ms = 0;
    double optimizer_ms = 0;
};

template <typename T>
class Trainer {
public:
    // `config` is a full config ({loss, optimizer, encoding, network}); use
    // config_with_defaults() to fill missing sections.
    Trainer(uint32_t n_input_dims, uint32_t n_output_dims, const json& config, uint64_t seed);

    Model<T>& model() { return model_; }
    const Model<T>& model() const { return model_; }
    Optimizer<T>& optimizer() { return *optimizer_; }
    const Loss<T>& loss() const { return *loss_; }

    // forward -> loss -> backward -> optimizer step. Returns the loss before
    // the update. A step whose loss is not finite (a poisoned batch, a model
    // already overflowed) leaves the parameters and the optimizer untouched
    // and is counted in skipped_steps(): a finite loss has finite gradients,
    // so the check costs nothing per parameter.
    T step(const Matrix<T>& inputs, const Matrix<T>& targets);
    uint64_t skipped_steps() const { return skipped_steps_; }

    // Inference with the optimizer's inference parameters (EMA average if any).
    void inference(const Matrix<T>& inputs, Matrix<T>& outputs) const;

    const std::vector<T>& gradients() const { return grads_; }
    const StepTimings& last_timings() const { return timings_; }

private:
    Model<T> model_;
    std::unique_ptr<Loss<T>> loss_;
    std::unique_ptr<Optimizer<T>> optimizer_;
    Matrix<T> outputs_, doutputs_;
    std::vector<T> grads_;
    StepTimings timings_;
    uint64_t skipped_steps_ = 0;
};

} // namespace fusedngp
