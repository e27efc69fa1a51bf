// The CPU reference backend: fp32 Trainer, host sampling.
#pragma once

#include "backends/backend.h"

namespace fusedngp {

class CpuBackend : public Backend {
public:
    CpuBackend(const json& config, const TrainingData& data, uint64_t seed);

    std::string name() const override { return "cpu"; }
    const json& config() const override { return config_; }

    float train_step(uint32_t batch_size) override;
    // skipped_steps: steps whose loss was not finite (Trainer::step skips them).
    json diagnostics() override { return {{"skipped_steps", trainer_.skipped_steps()}}; }
    // Steps taken, skipped ones included (as the CUDA backend counts): the
    // training loop's --steps and progress count them.
    uint64_t step() const override { return trainer_.optimizer().step_count() + trainer_.skipped_steps(); }
    void inference(const Matrix<float>& inputs, Matrix<float>& outputs) override;

    size_t n_params() const override { return trainer_.model().n_params(); }
    size_t n_encoding_params() const override { return trainer_.model().n_encoding_params(); }
    size_t n_network_params() const override { return trainer_.model().n_network_params(); }
    std::vector<NamedTensor> named_tensors() const override { return trainer_.model().named_tensors(); }
    std::vector<float> inference_params() const override;

    TrainingState save_state() const override;
    void load_state(const TrainingState& state) override;
    void set_params(const std::vector<float>& params) override;

    StepTimings last_timings() const override { return trainer_.last_timings(); }
    double learning_rate() const override { return trainer_.optimizer().learning_rate(); }
    void set_learning_rate(double lr) override { trainer_.optimizer().set_learning_rate(lr); }

private:
    json config_;
    const TrainingData& data_;
    mutable Trainer<float> trainer_;  // mutable: optimizer state() hands out pointers
    Rng rng_;
    Matrix<float> inputs_, targets_;
};

} // namespace fusedngp
