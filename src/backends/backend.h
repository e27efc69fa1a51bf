// Backend: runs training steps and inference for one model. The CPU reference
// backend runs everywhere; the CUDA backend plugs in behind the same interface,
// so modes and the app never know which one they drive.
#pragma once

#include "backends/training_data.h"
#include "core/json_fields.h"
#include "model/model.h"
#include "model/trainer.h"

#include <memory>
#include <string>
#include <vector>

namespace fusedngp {

// Everything needed to resume training bit-identically.
struct TrainingState {
    uint64_t step = 0;
    uint64_t rng_state = 0;
    std::vector<float> params;
    std::vector<std::pair<std::string, std::vector<float>>> optimizer_buffers;
};

class Backend {
public:
    virtual ~Backend() = default;

    virtual std::string name() const = 0;            // "cpu", "cuda"
    virtual const json& config() const = 0;          // the full effective config

    // One step on a batch drawn from the attached data. Returns the loss.
    virtual float train_step(uint32_t batch_size) = 0;
    virtual uint64_t step() const = 0;

    // Inference on host data, rows = samples. Uses the optimizer's inference
    // parameters (the EMA average when the config has one).
    virtual void inference(const Matrix<float>& inputs, Matrix<float>& outputs) = 0;

    // Parameter bookkeeping shared with export and the GUI.
    virtual size_t n_params() const = 0;
    virtual size_t n_encoding_params() const = 0;
    virtual size_t n_network_params() const = 0;
    virtual std::vector<NamedTensor> named_tensors() const = 0;
    virtual std::vector<float> inference_params() const = 0;

    virtual TrainingState save_state() const = 0;
    // Throws InputError when the state does not fit this model.
    virtual void load_state(const TrainingState& state) = 0;
    // Replaces the model's parameters (e.g. weights carried over from a
    // reshaped model). The optimizer state is left as it is: call it on a
    // fresh backend so moments and averages start from these weights.
    // Throws InputError when the size does not match.
    virtual void set_params(const std::vector<float>& params) = 0;

    virtual StepTimings last_timings() const = 0;
    virtual double learning_rate() const = 0;
    virtual void set_learning_rate(double lr) = 0;
    // Backend-specific training state worth recording (summary.json's
    // "diagnostics"): skipped steps (non-finite loss or fp16 overflow), the CUDA backend's loss scale.
    virtual json diagnostics() { return json::object(); }
};

// Creates "cpu" (or "cuda" when built with CUDA and a device exists).
// `config` must be complete (config_with_defaults). Throws ConfigError for an
// unknown backend name, InputError when CUDA was asked for but is unavailable.
std::unique_ptr<Backend> create_backend(const std::string& name, const json& config,
                                        const TrainingData& data, uint64_t seed);

// Names of backends usable on this machine, best first ("cuda" only with a device).
std::vector<std::string> available_backends();

} // namespace fusedngp
