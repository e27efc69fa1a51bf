// NerfSession: the NeRF mode's live training for the app. A worker thread
// owns the NerfTraining: it steps, renders the view the UI asks for in bands
// of rows between two steps, and measures the PSNR on the scene's eval views
// every few seconds of training (outside the training time). The UI thread
// only posts requests and picks up results, so a frame never waits for a CPU
// step or a CPU render. The GUI calls nothing of the NeRF pipeline but
// NerfTraining, so the CUDA trainer drops in through create_nerf_training.
#pragma once

#include "config/config_override.h"
#include "gui/nerf_files.h"
#include "gui/nerf_setup.h"
#include "io/image.h"
#include "nerf/nerf_normals.h"
#include "nerf/nerf_training.h"
#include "render/camera.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace fusedngp {

// Normals: -grad sigma at the expected depth, evaluated on the host
// (nerf/nerf_normals.h). Cost: samples the march places per ray
// (nerf/occupancy_view.h).
enum class NerfRenderMode { Colour, Depth, Occupancy, Normals, Cost };

// One pass of the view: the worker renders it top to bottom in bands.
struct NerfRenderRequest {
    uint64_t pass = 0;  // a newer pass replaces the one in flight
    Camera camera;      // the whole pass (its size is the pass's size)
    NerfRenderMode mode = NerfRenderMode::Colour;
    Box3 crop = unbounded_box();  // model space: what lies outside is not drawn
    // The camera moves: the whole pass renders before the next step, so the
    // picture follows the camera at the price of training speed.
    bool urgent = false;
};

struct NerfBand {
    uint64_t pass = 0;
    int y0 = 0;
    Image pixels;  // RGB, the pass's width x rows
    double ms = 0; // render time of the band
};

struct NerfPsnrPoint {
    uint64_t step = 0;
    double train_seconds = 0;
    double psnr = 0;
};

class NerfSession {
public:
    NerfSession(NerfAppScene scene, const std::string& backend_name);
    ~NerfSession();
    NerfSession(const NerfSession&) = delete;
    NerfSession& operator=(const NerfSession&) = delete;

    void start_worker();
    void stop_worker();  // waits for the step or band in flight
    // UI thread, once per frame: folds in what the worker finished.
    void poll();
    // The message of what threw on the worker, once: a step (training is then
    // paused) or a pass (dropped; training goes on).
    std::string take_worker_error();

    std::atomic<bool> running{true};
    void single_step() { ++requested_steps_; wake(); }
    // Lockstep (scripted runs): the worker steps only when asked; run_steps(n) waits for n.
    void set_lockstep(bool lockstep) { lockstep_ = lockstep; }
    void run_steps(uint32_t n);

    // The worker renders this pass next (dropping an older one in flight).
    void request_render(const NerfRenderRequest& request);
    // Bands finished since the last call, in order.
    std::vector<NerfBand> take_bands();

    // Background of the rendered view, the PSNR targets and its composite.
    void set_background(Vec3 background);
    Vec3 background() const;
    void set_learning_rate(double lr);  // applied by the worker before its next step
    double learning_rate() const { return learning_rate_; }

    // A live change of a network: network.* (the density network) or
    // rgb_network.* (the colour network) n_neurons / n_hidden_layers / otype
    // (FullyFusedMLP, CublasMLP, CutlassMLP, MLP; CPU moves training to the
    // CPU reference, another otype back to the GPU it came from), or
    // optimizer.learning_rate. The worker applies it before its next step and
    // carries what was learned (engine/nerf_training_change.h). A value that
    // cannot be right throws ConfigError here; one the new trainer refuses
    // comes back as a worker error, and training goes on unchanged.
    void request_change(const ConfigChange& change);
    static void validate_change(const ConfigChange& change);
    // One line per applied change since the last call ("network.n_neurons =
    // 128: 10321 of 12345 params carried, the same function").
    std::vector<std::string> take_change_reports();
    // A file action (gui/nerf_files.h): the worker runs it before its next
    // step, also while training is paused. Its one-line report comes back
    // through take_file_reports(), a failure through take_worker_error()
    // (training goes on). A loaded snapshot replaces the trainer: its config,
    // state and step.
    void request_file_job(const NerfFileJob& job);
    std::vector<std::string> take_file_reports();
    // The config the trainer runs (UI thread's copy, updated by poll()).
    const json& config() const { return config_; }

    // The test PSNR now, on the UI thread (stops nothing: call after stop_worker()).
    double measure_psnr();

    const NerfAppScene& scene() const { return *scene_; }
    const std::string& backend_name() const { return backend_name_; }
    size_t n_params() const { return n_params_; }
    uint64_t step() const { return steps_; }
    float last_loss() const { return last_loss_; }
    float first_loss() const { return first_loss_; }
    const std::vector<float>& loss_history() const { return loss_history_; }
    const std::vector<NerfPsnrPoint>& psnr_history() const { return psnr_history_; }
    double steps_per_second() const { return step_ms_ > 0 ? 1000.0 / step_ms_ : 0.0; }
    double train_seconds() const { return train_seconds_; }
    uint32_t rays_per_step() const { return rays_; }
    size_t samples_per_step() const { return samples_; }
    float occupancy_fraction() const { return occupancy_fraction_; }

    // The PSNR on the eval views every this many seconds of training (or
    // less often, so that it takes at most a fifth of the training time).
    static constexpr double kPsnrEverySeconds = 3.0;

private:
    struct StepResult {
        float loss;
        double ms;
        uint32_t rays;
        size_t samples;
    };

    void wake() { worker_wake_.notify_all(); }
    void worker_loop();
    void apply_changes();  // worker, before a step
    void run_file_jobs();  // worker, before a step and while paused
    void run_file_job(const NerfFileJob& job);
    void apply_change(const ConfigChange& change);
    bool want_step() const;
    void run_step();
    void render_bands(double budget_ms);  // worker: bands of the pending pass for about budget_ms
    Image render_band(const NerfRenderRequest& request, const Camera& band, Vec3 bg, bool first_band);
    void measure_psnr_on_worker();

    std::unique_ptr<NerfAppScene> scene_;  // the trainer keeps a reference to scene_->train
    std::string backend_name_;
    std::unique_ptr<nerf::NerfTraining> trainer_;
    size_t n_params_ = 0;
    json config_;  // UI thread's copy
    std::string gpu_backend_;  // the GPU backend a CPU switch came from

    // Worker side of the changes: its config and backend, and what it
    // applied (under mutex_ until poll() takes it).
    json worker_config_;
    std::string worker_backend_;
    std::vector<ConfigChange> pending_changes_;
    std::vector<std::string> change_reports_;
    std::vector<NerfFileJob> pending_jobs_;
    std::vector<std::string> file_reports_;
    int64_t loaded_step_ = -1;  // a loaded snapshot's step, for poll()
    json new_config_;
    std::string new_backend_;
    size_t new_params_ = 0;

    // UI-side readouts (poll()).
    uint64_t steps_ = 0;
    float last_loss_ = std::numeric_limits<float>::quiet_NaN();
    float first_loss_ = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> loss_history_;
    std::vector<NerfPsnrPoint> psnr_history_;
    double step_ms_ = 0, train_seconds_ = 0;
    uint32_t rays_ = 0;
    size_t samples_ = 0;
    float occupancy_fraction_ = 1;
    std::atomic<double> learning_rate_{0};

    // Worker and its handoff.
    std::thread worker_;
    mutable std::mutex mutex_;  // everything below
    std::condition_variable worker_wake_, steps_done_;
    bool stop_ = false;
    std::atomic<bool> lockstep_{false};
    std::atomic<int> requested_steps_{0};
    bool lr_pending_ = false;
    Vec3 background_{0, 0, 0};
    NerfRenderRequest pending_;   // the pass being rendered
    int pending_row_ = -1;        // its next row; -1: none pending
    nerf::OccupancyGrid grid_copy_{1};  // the occupancy pass's grid, copied at its start
    nerf::SigmaField normal_field_;     // the normals pass's density, taken at its start (reset with the trainer)
    double band_ms_per_pixel_ = 0;
    std::vector<NerfBand> bands_;
    std::vector<StepResult> results_;
    std::vector<NerfPsnrPoint> new_psnr_;
    float new_occupancy_ = -1;
    double worker_train_seconds_ = 0, last_psnr_seconds_ = 0;
    double last_step_ms_ = 0, psnr_seconds_ = 0;  // worker only
    std::string worker_error_;
};

} // namespace fusedngp
