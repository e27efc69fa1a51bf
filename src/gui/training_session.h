// TrainingSession: the model being trained live: data, config, backend and
// what the panels show about it. Every change either fully succeeds or
// leaves the current model running (errors are thrown for the UI to show).
#pragma once

#include "backends/backend.h"
#include "config/config_override.h"
#include "gui/step_stats.h"
#include "io/image.h"
#include "model/param_transfer.h"
#include "modes/image_mode.h"

#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace fusedngp {

// One applied change, for the UI and the automation report.
struct ChangeRecord {
    uint64_t frame = 0;
    std::string key;
    std::string value;
    float loss_before = std::numeric_limits<float>::quiet_NaN();
    float loss_after = std::numeric_limits<float>::quiet_NaN();  // first step after the change
    size_t params_carried = 0;
};

class TrainingSession {
public:
    TrainingSession(Image image, const json& config, std::string backend_name, uint32_t batch_size, uint64_t seed);
    ~TrainingSession();

    // Runs steps until `budget_ms` of wall time is used (at least one).
    void train_for(double budget_ms);
    void single_step();
    // A fresh model with the current config.
    void reset();

    // Applies a live change; throws ConfigError/InputError and keeps the
    // current model on failure. Rebuilds carry weights over when `carry_weights`.
    void apply(const ConfigChange& change, uint64_t frame);
    void set_batch_size(uint32_t batch_size);
    uint32_t batch_size() const { return batch_size_; }

    // New training data (drag and drop / open). The model restarts when the
    // channel count differs, else it keeps training on the new image.
    void load_image(const std::string& path);
    void save_snapshot(const std::string& path) const;
    void load_snapshot(const std::string& path);
    void export_weights(const std::string& path) const;

    // PSNR on a fixed subsample of pixel centres (cheap, for the live readout)
    // and over the full image (for the final report).
    double subsample_psnr();
    double full_psnr();

    bool running = true;
    bool carry_weights = true;
    NewInputs new_inputs = NewInputs::Zero;

    Backend& backend() { return *backend_; }
    const Backend& backend() const { return *backend_; }
    const Image& image() const { return data_->image(); }
    const json& config() const { return config_; }
    const std::string& backend_name() const { return backend_name_; }
    // Steps of this session in total (the backend's count restarts on a rebuild).
    uint64_t step() const { return total_steps_; }
    float last_loss() const { return last_loss_; }
    float first_loss() const { return first_loss_; }
    const std::vector<float>& loss_history() const { return loss_history_; }
    const std::vector<ChangeRecord>& changes() const { return changes_; }
    const StepStats& stats() const { return stats_; }
    double forward_flops_per_sample() const { return flops_per_sample_; }
    double train_seconds() const { return train_seconds_; }
    // Bumped whenever the model or data is replaced, so views re-render.
    uint64_t generation() const { return generation_; }

private:
    void run_step();
    void rebuild(const json& new_config, bool carry);
    void adopt(std::unique_ptr<ImageTrainingData> data, std::unique_ptr<Backend> backend, const json& config);

    std::string backend_name_;
    uint64_t seed_;
    uint32_t batch_size_;
    json config_;
    std::unique_ptr<ImageTrainingData> data_;
    std::unique_ptr<Backend> backend_;  // declared after data_: it refers to it
    StepStats stats_;
    double flops_per_sample_ = 0;
    double train_seconds_ = 0;
    uint64_t total_steps_ = 0;
    float last_loss_ = std::numeric_limits<float>::quiet_NaN();
    float first_loss_ = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> loss_history_;
    std::vector<ChangeRecord> changes_;
    bool awaiting_loss_after_ = false;
    uint64_t generation_ = 0;
    Matrix<float> psnr_coords_, psnr_targets_, psnr_outputs_;
};

} // namespace fusedngp
