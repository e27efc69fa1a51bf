// TrainingSession: the model being trained live: data, config, backend and
// what the panels show about it. Every change either fully succeeds or
// leaves the current model running (errors are thrown for the UI to show).
// Mode-generic: it trains any TrainingData (images, SDFs); the image-only
// members (image(), load_image, the PSNRs) throw in other modes, and each
// mode's view draws the model through display_inference or render_on_device.
#pragma once

#include "backends/backend.h"
#include "config/config_override.h"
#include "gui/step_stats.h"
#include "io/image.h"
#include "model/param_transfer.h"
#include "modes/image_mode.h"

#include <atomic>
#include <condition_variable>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
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
    // The model computes the old function right after the change (see
    // TransferReport::function_preserved); else `why_not` says why.
    bool function_kept = true;
    std::string why_not{};
};

// "function kept" or "function not kept: <why>", for the panel and status line.
std::string function_kept_text(const ChangeRecord& change);

// What a session trains on, with what snapshots and weight files record about it.
struct SessionData {
    std::string mode;   // "image", "sdf"
    std::string path;   // the data's source file
    json mode_info;     // image_mode_info / sdf_mode_info
    std::unique_ptr<TrainingData> data;
};
SessionData image_session_data(Image image);

class TrainingSession {
public:
    TrainingSession(SessionData data, const json& config, std::string backend_name, uint32_t batch_size, uint64_t seed);
    TrainingSession(Image image, const json& config, std::string backend_name, uint32_t batch_size, uint64_t seed)
        : TrainingSession(image_session_data(std::move(image)), config, std::move(backend_name), batch_size, seed) {}
    ~TrainingSession();

    // ---- training on a worker thread ----
    // After start_worker(), steps run on a worker thread while `running` (or
    // when single_step() asks for one); the UI thread never steps. Every
    // method that touches the backend pauses the worker for its duration
    // (the step in flight finishes first), so a change applies between two
    // steps, in exactly the frame that asked for it.
    void start_worker();
    void stop_worker();  // waits for the step in flight; poll() afterwards
    // UI thread, once per frame: folds the steps finished since the last
    // call into the loss history, stats and change records.
    void poll();
    // The message of a step that threw on the worker (training is then
    // paused), once; empty when none.
    std::string take_worker_error();

    // Without a worker: runs steps until `budget_ms` of wall time is used (at least one).
    void train_for(double budget_ms);
    // One step: asked of the worker when there is one, else run here.
    void single_step();
    // Lockstep (scripted runs): from now on the worker steps only when asked;
    // run_steps(n) asks for n and waits until they are done.
    void set_lockstep(bool lockstep) { lockstep_ = lockstep; }
    void run_steps(uint32_t n);

    // Display inference that never waits for a CPU step: it runs a copy of
    // the model on a parameter snapshot the worker publishes (every
    // kPublishMs at most), so the picture lags training by a step or two.
    // On CUDA it runs on the device between two (asynchronous) steps.
    void display_inference(const Matrix<float>& inputs, Matrix<float>& outputs);
    // CUDA–GL interop: true when the backend renders straight into device
    // memory (render_to_device), false on the CPU backend.
    bool renders_on_device() const;
    // The model at every pixel centre of width x height, RGBA float4 per
    // pixel into device memory (a mapped PBO), beside training (see
    // render_beside_training). False (nothing written) until the worker's
    // first display copy is ready. Only when renders_on_device().
    bool render_to_device(float* d_rgba, int width, int height);
    // A device job that needs the training state itself (the SDF view's
    // marching cubes): `render` runs between two steps with the worker
    // paused. Only when renders_on_device().
    void render_on_device(const std::function<void(Backend&)>& render);
    // The 3-D views' device render beside training: `render` runs on the UI
    // thread while the worker keeps stepping, reading only the backend's
    // display copy (CudaBackend::display_lease), never the training state.
    // The worker publishes a fresh copy for the next frame after its next
    // step. Only when renders_on_device().
    void render_beside_training(const std::function<void(Backend&)>& render);
    // GPU steps that ran between two device renders, averaged over the last
    // frames; 0 before any.
    double device_steps_ran_per_frame() const { return device_steps_ran_.per_frame(); }
    // cudaMemGetInfo of the backend's device: false on the CPU backend.
    bool device_memory(size_t& used_bytes, size_t& total_bytes) const;
    // A fresh model with the current config.
    void reset();
    // Moves training to another backend ("cpu" or "cuda") with the exact
    // current parameters (the optimizer restarts its moments). Throws and
    // keeps the current backend when the new one cannot run the model.
    void switch_backend(const std::string& backend_name);

    // Applies a live change; throws ConfigError/InputError and keeps the
    // current model on failure. Rebuilds carry weights over when `carry_weights`.
    void apply(const ConfigChange& change, uint64_t frame);
    void set_batch_size(uint32_t batch_size);
    uint32_t batch_size() const { return batch_size_; }
    double learning_rate() const { return learning_rate_; }

    // New training data (drag and drop / open), image mode only. The model
    // restarts when the channel count differs, else it keeps training on the new image.
    void load_image(const std::string& path);
    void save_snapshot(const std::string& path) const;
    void load_snapshot(const std::string& path);
    void export_weights(const std::string& path) const;

    // PSNR on a fixed subsample of pixel centres (cheap, for the live readout)
    // and over the full image (for the final report). Image mode only.
    double subsample_psnr();  // through display_inference
    double full_psnr();

    std::atomic<bool> running{true};
    bool carry_weights = true;
    NewInputs new_inputs = NewInputs::Zero;

    Backend& backend() { return *backend_; }
    const Backend& backend() const { return *backend_; }
    const std::string& mode() const { return mode_; }
    bool is_image() const { return mode_ == "image"; }
    const Image& image() const;  // throws std::logic_error in other modes
    const TrainingData& data() const { return *data_; }
    const std::string& data_path() const { return data_path_; }
    const json& config() const { return config_; }
    const std::string& backend_name() const { return backend_name_; }
    // Steps of this session in total (the backend's count restarts on a rebuild).
    uint64_t step() const { return total_steps_; }
    float last_loss() const { return last_loss_; }
    float first_loss() const { return first_loss_; }
    const std::vector<float>& loss_history() const { return loss_history_; }
    const std::vector<ChangeRecord>& changes() const { return changes_; }
    const StepStats& stats() const { return stats_; }
    // Steps per second of wall time (updated by poll()): what the panel shows as steps/s.
    double wall_steps_per_second() const { return wall_rate_.steps_per_second(); }
    double forward_flops_per_sample() const { return flops_per_sample_; }
    double train_seconds() const { return train_seconds_; }
    // Bumped whenever the model or data is replaced, so views re-render.
    uint64_t generation() const { return generation_; }

private:
    // What one step leaves for poll().
    struct StepResult {
        float loss;
        double ms;
        StepTimings timings;
        uint32_t batch_size;
    };

    void run_step();                     // steps now, on this thread (under the step lock when there is a worker)
    void record(const StepResult& step); // UI thread
    void worker_loop();
    void publish_display_params();       // with the step lock held
    void publish_display_copy();         // the same for render_beside_training (CUDA)
    // Stops the worker from starting another step until the lock is released,
    // then folds in what it finished.
    std::unique_lock<std::mutex> pause_worker();
    std::unique_lock<std::mutex> hold_worker() const;  // the same without folding in (const users)
    void apply_paused(const ConfigChange& change, uint64_t frame);
    // network.otype: a kernel switch keeps the weights (hot swap on CUDA, the
    // CPU backend for "CPU", nothing to rebuild on the CPU reference).
    void switch_kernel(const ConfigChange& change, ChangeRecord& record);
    void move_to_backend(const std::string& backend_name, const json& config);
    TransferReport rebuild(const json& new_config, bool carry);
    void adopt(std::unique_ptr<TrainingData> data, std::unique_ptr<Backend> backend, const json& config);

    std::string backend_name_;
    std::string gpu_backend_name_;  // the device backend to return to after "CPU" (empty: none)
    uint64_t seed_;
    std::atomic<uint32_t> batch_size_;
    double learning_rate_ = 0;
    json config_;
    std::string mode_, data_path_;
    json mode_info_;
    std::unique_ptr<TrainingData> data_;
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

    // Worker thread and its handoff. Lock order: step_mutex_ before the others.
    std::thread worker_;
    mutable std::mutex step_mutex_;       // held by the worker for a step, by the UI for a change
    std::condition_variable worker_wake_;
    mutable std::atomic<int> pause_requests_{0};  // UI threads waiting for step_mutex_
    std::atomic<int> requested_steps_{0}; // single steps asked for (while paused, or in lockstep)
    std::atomic<bool> lockstep_{false};
    std::atomic<bool> display_copy_wanted_{false};  // render_beside_training asks the worker for a copy
    std::atomic<uint64_t> worker_steps_{0};  // steps the worker finished
    bool stop_ = false;                   // under step_mutex_
    bool threaded_ = false;               // a worker runs; set under step_mutex_ before it starts
    std::mutex results_mutex_;
    std::vector<StepResult> results_;     // finished steps not yet polled
    std::string worker_error_;            // under results_mutex_

    FrameSteps device_steps_ran_;   // worker steps counted at each device render beside training
    WallStepRate wall_rate_;        // fed by poll()

    // Display snapshot (CPU backend): the worker publishes, the UI swaps in.
    std::unique_ptr<Model<float>> display_model_;  // layout only; params come from the snapshot
    std::mutex display_mutex_;
    std::vector<float> display_params_, published_params_;
    uint64_t published_version_ = 0, display_version_ = 0;
    double last_publish_ms_ = 0;
};

} // namespace fusedngp
