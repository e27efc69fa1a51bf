#include "gui/nerf_session.h"

#include "backends/backend.h"
#include "core/clock.h"
#include "core/errors.h"
#include "engine/nerf_training_change.h"
#include "engine/nerf_training_factory.h"
#include "gui/view_3d.h"
#include "gui/worker_priority.h"
#include "nerf/occupancy_view.h"
#include "networks/factory.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>

namespace fusedngp {

namespace {

using Clock = std::chrono::steady_clock;

// Between two steps the worker renders for this share of the step's time
// (a third of its time goes to the picture while a pass is pending), at
// least kMinRenderMs. An urgent pass (the camera moved, or nothing is shown
// yet) gets as long as a step takes, at least kUrgentRenderMs: the picture
// follows the camera at half the training speed at worst.
constexpr double kNerfRenderShare = 0.5;
constexpr double kMinRenderMs = 10;
constexpr double kUrgentRenderMs = 150;
// The PSNR evaluation takes at most this share of the training time (early
// on, an untrained field costs the CPU ~1000 samples a ray).
constexpr double kMaxPsnrShare = 0.2;
constexpr double kIdleRenderMs = 50;  // paused: bands only
constexpr int kFirstBandRows = 4;     // before the cost per pixel is known
constexpr size_t kMaxLossHistory = 4000;
constexpr auto kNerfIdlePoll = std::chrono::milliseconds(20);

// Depth as grey, near bright, over the scene's depth range seen from the
// camera (the unit cube's bounding sphere); rays that hit nothing show `bg`.
Image shade_depth(const Image& depth, const Camera& camera, Vec3 bg) {
    const float centre = length(Vec3{0.5f, 0.5f, 0.5f} - camera.pose.position), radius = 0.87f;
    const float near = std::max(0.f, centre - radius), far = centre + radius;
    Image rgb;
    rgb.width = depth.width;
    rgb.height = depth.height;
    rgb.channels = 3;
    rgb.pixels.resize(depth.pixel_count() * 3);
    for (size_t i = 0; i < depth.pixel_count(); ++i) {
        const float d = depth.pixels[i];
        const float v = 1.f - std::clamp((d - near) / (far - near), 0.f, 1.f);
        for (int c = 0; c < 3; ++c) rgb.pixels[3 * i + c] = d > 0 ? 0.1f + 0.9f * v : bg[c];
    }
    return rgb;
}

} // namespace

NerfSession::NerfSession(NerfAppScene scene, const std::string& backend_name)
    : scene_(std::make_unique<NerfAppScene>(std::move(scene))) {
    // No name: the best available backend whose NeRF trainer can run here.
    const std::vector<std::string> candidates = backend_name.empty() ? available_backends() : std::vector{backend_name};
    for (size_t i = 0; i < candidates.size() && !trainer_; ++i) {
        try {
            trainer_ = create_nerf_training(candidates[i], scene_->train, scene_->config, scene_->settings);
        } catch (const InputError&) {
            if (i + 1 == candidates.size()) throw;
        }
    }
    backend_name_ = trainer_->backend_name();
    if (backend_name_ != "cpu") gpu_backend_ = backend_name_;
    n_params_ = trainer_->density_model().n_params() + trainer_->colour_model().n_params();
    learning_rate_ = trainer_->learning_rate();
    rays_ = scene_->settings.rays_per_batch;
    config_ = worker_config_ = scene_->config;
    worker_backend_ = backend_name_;
}

NerfSession::~NerfSession() { stop_worker(); }

void NerfSession::start_worker() {
    if (worker_.joinable()) return;
    stop_ = false;
    worker_ = std::thread([this] { worker_loop(); });
}

void NerfSession::stop_worker() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
    }
    wake();
    steps_done_.notify_all();
    if (worker_.joinable()) worker_.join();
}

bool NerfSession::want_step() const { return (running && !lockstep_) || requested_steps_ > 0; }

void NerfSession::worker_loop() {
    lower_this_thread_priority();
    while (true) {
        bool urgent = false;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            // `running` flips without a notification (the UI's Space): poll for it.
            if (!worker_wake_.wait_for(lock, kNerfIdlePoll, [&] {
                    return stop_ || want_step() || pending_row_ >= 0 || !pending_jobs_.empty();
                }))
                continue;
            if (stop_) return;
            urgent = pending_row_ >= 0 && pending_.urgent;
        }
        try {
            run_file_jobs();
            if (urgent) render_bands(std::max(kUrgentRenderMs, last_step_ms_));
            if (want_step()) {
                run_step();
                render_bands(std::max(kMinRenderMs, kNerfRenderShare * last_step_ms_));
            } else {
                render_bands(kIdleRenderMs);
            }
        } catch (const std::exception& e) {
            std::lock_guard<std::mutex> lock(mutex_);
            worker_error_ = std::string("NeRF worker: ") + e.what();
            running = false;
            requested_steps_ = 0;
            pending_row_ = -1;
            steps_done_.notify_all();
        }
    }
}

void NerfSession::run_step() {
    apply_changes();
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (lr_pending_) trainer_->set_learning_rate(learning_rate_);
        lr_pending_ = false;
    }
    const auto start = Clock::now();
    const float loss = trainer_->step();
    trainer_->synchronize();
    const double ms = ms_since(start);
    last_step_ms_ = ms;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        results_.push_back({loss, ms, trainer_->last_ray_count(), trainer_->last_sample_count()});
        worker_train_seconds_ += ms * 1e-3;
        if (requested_steps_ > 0) --requested_steps_;
    }
    steps_done_.notify_all();
    // Before the first evaluation its cost is estimated from the view's bands.
    double ms_per_pixel = 0;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        ms_per_pixel = band_ms_per_pixel_;
    }
    const double eval_pixels = (double)scene_->eval.frames.size() * scene_->eval.images.width * scene_->eval.images.height;
    const double eval_seconds = std::max(psnr_seconds_, 1e-3 * ms_per_pixel * eval_pixels);
    const double every = std::max(kPsnrEverySeconds, eval_seconds / kMaxPsnrShare);
    if (worker_train_seconds_ - last_psnr_seconds_ >= every) measure_psnr_on_worker();
}

// Not training time: the clock of the PSNR schedule and the steps/s stop meanwhile.
void NerfSession::measure_psnr_on_worker() {
    const auto start = Clock::now();
    const double psnr = trainer_->psnr_on(scene_->eval, background());
    psnr_seconds_ = ms_since(start) * 1e-3;
    const float occupied = trainer_->occupancy_grid().fraction_occupied();
    std::lock_guard<std::mutex> lock(mutex_);
    last_psnr_seconds_ = worker_train_seconds_;
    new_psnr_.push_back({trainer_->step_count(), worker_train_seconds_, psnr});
    new_occupancy_ = occupied;
}

void NerfSession::render_bands(double budget_ms) {
    const auto start = Clock::now();
    do {
        NerfRenderRequest request;
        int y0 = 0;
        Vec3 bg;
        double ms_per_pixel = 0;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (pending_row_ < 0) return;
            request = pending_;
            y0 = pending_row_;
            bg = background_;
            ms_per_pixel = band_ms_per_pixel_;
        }
        const int width = (int)request.camera.intrinsics.width, height = (int)request.camera.intrinsics.height;
        const double left_ms = std::max(1.0, budget_ms - ms_since(start));
        const int wanted = ms_per_pixel > 0 ? (int)(left_ms / (ms_per_pixel * width)) : kFirstBandRows;
        const int rows = std::clamp(wanted, 1, height - y0);
        const Camera band = band_camera(request.camera, y0, rows);
        const auto band_start = Clock::now();
        NerfBand done{request.pass, y0, {}, 0};
        try {
            done.pixels = render_band(request, band, bg, y0 == 0);
        } catch (const std::exception& e) {
            // A view the backend cannot draw (depth on a trainer without it): say so, keep training.
            std::lock_guard<std::mutex> lock(mutex_);
            worker_error_ = std::string("render: ") + e.what();
            if (pending_.pass == request.pass) pending_row_ = -1;
            return;
        }
        done.ms = ms_since(band_start);
        std::lock_guard<std::mutex> lock(mutex_);
        const double measured = done.ms / ((double)rows * width);
        band_ms_per_pixel_ = band_ms_per_pixel_ > 0 ? band_ms_per_pixel_ + 0.3 * (measured - band_ms_per_pixel_) : measured;
        if (pending_.pass != request.pass || pending_row_ != y0) continue;  // replaced meanwhile
        pending_row_ = y0 + rows < height ? y0 + rows : -1;
        bands_.push_back(std::move(done));
    } while (ms_since(start) < budget_ms);
}

Image NerfSession::render_band(const NerfRenderRequest& request, const Camera& band, Vec3 bg, bool first_band) {
    trainer_->set_view_crop(request.crop);
    switch (request.mode) {
    case NerfRenderMode::Occupancy:
        if (first_band) grid_copy_ = trainer_->occupancy_grid();
        return nerf::render_occupancy_view(grid_copy_, band, bg, request.crop);
    case NerfRenderMode::Cost: {
        if (first_band) grid_copy_ = trainer_->occupancy_grid();
        nerf::MarchSettings march;
        march.cone_angle = scene_->settings.cone_angle;
        march.max_samples = scene_->settings.max_samples_per_ray;
        return nerf::render_march_cost_view(grid_copy_, band, march, bg, request.crop);
    }
    case NerfRenderMode::Depth: return shade_depth(trainer_->render_depth(band), band, bg);
    case NerfRenderMode::Normals:
        if (first_band || !normal_field_)
            normal_field_ = nerf::host_sigma_field(*trainer_, trainer_->density_inference_params());
        return nerf::normals_from_depth(normal_field_, band, trainer_->render_depth(band), bg);
    case NerfRenderMode::Colour: break;
    }
    return trainer_->render_view(band, bg);
}

void NerfSession::request_render(const NerfRenderRequest& request) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        // A new mode measures its own cost (occupancy is far cheaper than colour).
        if (request.mode != pending_.mode) band_ms_per_pixel_ = 0;
        pending_ = request;
        pending_row_ = 0;
    }
    wake();
}

std::vector<NerfBand> NerfSession::take_bands() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<NerfBand> out;
    out.swap(bands_);
    return out;
}

void NerfSession::set_background(Vec3 background) {
    std::lock_guard<std::mutex> lock(mutex_);
    background_ = background;
}

Vec3 NerfSession::background() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return background_;
}

void NerfSession::set_learning_rate(double lr) {
    std::lock_guard<std::mutex> lock(mutex_);
    learning_rate_ = lr;
    lr_pending_ = true;
}

namespace {

bool is_network_key(const std::string& key) {
    for (const char* network : {"network.", "rgb_network."})
        for (const char* field : {"n_neurons", "n_hidden_layers", "otype"})
            if (key == std::string(network) + field) return true;
    return false;
}

// "otype" of "rgb_network.otype".
std::string field_of(const std::string& key) { return key.substr(key.rfind('.') + 1); }

bool is_cpu_kernel(const ConfigChange& change) {
    return field_of(change.key) == "otype" && equals_ignore_case(change.value.get<std::string>(), "CPU");
}

} // namespace

void NerfSession::validate_change(const ConfigChange& change) {
    const json& v = change.value;
    if (change.key == "optimizer.learning_rate") {
        if (!v.is_number() || !(v.get<double>() > 0))
            throw ConfigError(change.key, "must be a positive number, got " + v.dump());
        return;
    }
    if (!is_network_key(change.key))
        throw ConfigError(change.key, "the NeRF view changes network.* and rgb_network.* n_neurons, n_hidden_layers "
                                      "and otype, and optimizer.learning_rate, while it trains");
    if (field_of(change.key) == "otype") {
        const std::vector<std::string>& kernels = mlp_otypes();
        const bool known = v.is_string() && std::any_of(kernels.begin(), kernels.end(), [&](const std::string& k) {
                               return equals_ignore_case(k, v.get<std::string>());
                           });
        if (!known) {
            std::string names;
            for (const std::string& k : kernels) names += (names.empty() ? "" : ", ") + k;
            throw ConfigError(change.key, "must be one of " + names + "; got " + v.dump());
        }
        return;
    }
    const int64_t hi = field_of(change.key) == "n_neurons" ? 1024 : 16;
    if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > hi)
        throw ConfigError(change.key, "must be an integer in [1, " + std::to_string(hi) + "], got " + v.dump());
}

void NerfSession::request_change(const ConfigChange& change) {
    validate_change(change);
    if (change.key == "optimizer.learning_rate") {
        set_learning_rate(change.value.get<double>());
        apply_config_change(config_, change);
    }
    {
        std::lock_guard<std::mutex> lock(mutex_);
        pending_changes_.push_back(change);
    }
    wake();
}

void NerfSession::apply_changes() {
    std::vector<ConfigChange> changes;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        changes.swap(pending_changes_);
    }
    for (const ConfigChange& change : changes) {
        try {
            apply_change(change);
        } catch (const std::exception& e) {
            std::lock_guard<std::mutex> lock(mutex_);
            worker_error_ = change.key + " = " + value_text(change.value) + ": " + e.what() + " (training goes on unchanged)";
        }
    }
}

// Worker: a new trainer for the changed config or backend, from the current one's state.
void NerfSession::apply_change(const ConfigChange& change) {
    json next = worker_config_;
    std::string backend = worker_backend_;
    if (change.key == "optimizer.learning_rate") {
        apply_config_change(worker_config_, change);  // the rate itself goes through set_learning_rate
        return;
    }
    if (is_cpu_kernel(change)) {
        backend = "cpu";  // the config keeps its MLP otype: the CPU reference runs any
    } else {
        apply_config_change(next, change);
        if (field_of(change.key) == "otype" && backend == "cpu" && !gpu_backend_.empty()) backend = gpu_backend_;
    }
    NerfTrainingChange moved = change_nerf_training(*trainer_, worker_config_, backend, scene_->train, next, scene_->settings);
    const size_t carried = moved.density.copied + moved.colour.copied;
    const size_t total = moved.training->density_model().n_params() + moved.training->colour_model().n_params();
    const bool kept = moved.density.function_preserved && moved.colour.function_preserved;
    std::string report = change.key + " = " + value_text(change.value) + " (" + moved.training->backend_name() +
                         "): " + std::to_string(carried) + " of " + std::to_string(total) + " params carried, " +
                         (kept ? "the same function" : "function changed: " +
                                                           (moved.density.function_preserved ? moved.colour.why_not
                                                                                             : moved.density.why_not));
    trainer_ = std::move(moved.training);
    normal_field_ = nullptr;  // it points into the old trainer's model
    worker_config_ = next;
    worker_backend_ = trainer_->backend_name();
    std::lock_guard<std::mutex> lock(mutex_);
    change_reports_.push_back(std::move(report));
    new_config_ = worker_config_;
    new_backend_ = worker_backend_;
    new_params_ = total;
}

void NerfSession::request_file_job(const NerfFileJob& job) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        pending_jobs_.push_back(job);
    }
    wake();
}

void NerfSession::run_file_jobs() {
    std::vector<NerfFileJob> jobs;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        jobs.swap(pending_jobs_);
    }
    for (const NerfFileJob& job : jobs) {
        try {
            run_file_job(job);
        } catch (const std::exception& e) {
            std::lock_guard<std::mutex> lock(mutex_);
            worker_error_ = e.what();
        }
    }
}

void NerfSession::run_file_job(const NerfFileJob& job) {
    if (job.kind != NerfFileJobKind::LoadSnapshot) {
        std::string report = write_nerf_file(job, {*trainer_, worker_config_, *scene_, background()});
        std::lock_guard<std::mutex> lock(mutex_);
        file_reports_.push_back(std::move(report));
        return;
    }
    json config;
    trainer_ = load_nerf_app_snapshot(job.path, *scene_, worker_backend_, config);
    normal_field_ = nullptr;  // it points into the old trainer's model
    worker_config_ = config;
    const size_t params = trainer_->density_model().n_params() + trainer_->colour_model().n_params();
    const uint64_t step = trainer_->step_count();
    std::lock_guard<std::mutex> lock(mutex_);
    file_reports_.push_back("loaded snapshot " + job.path + " at step " + std::to_string(step));
    new_config_ = worker_config_;
    new_backend_ = worker_backend_;
    new_params_ = params;
    loaded_step_ = (int64_t)step;
    results_.clear();  // steps before the load: the readouts count from the snapshot's step
    pending_row_ = pending_row_ >= 0 ? 0 : -1;  // a pass in flight starts over on the loaded field
}

std::vector<std::string> NerfSession::take_file_reports() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> out;
    out.swap(file_reports_);
    return out;
}

std::vector<std::string> NerfSession::take_change_reports() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> out;
    out.swap(change_reports_);
    return out;
}

void NerfSession::run_steps(uint32_t n) {
    requested_steps_ += (int)n;
    wake();
    std::unique_lock<std::mutex> lock(mutex_);
    steps_done_.wait(lock, [&] { return stop_ || requested_steps_ <= 0 || !worker_error_.empty(); });
}

void NerfSession::poll() {
    std::vector<StepResult> results;
    std::vector<NerfPsnrPoint> psnr;
    float occupied = -1;
    int64_t loaded = -1;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        results.swap(results_);
        psnr.swap(new_psnr_);
        std::swap(occupied, new_occupancy_);
        if (new_params_ > 0) {
            config_ = new_config_;
            backend_name_ = new_backend_;
            n_params_ = new_params_;
            new_params_ = 0;
        }
        std::swap(loaded, loaded_step_);
    }
    if (loaded >= 0) steps_ = (uint64_t)loaded;  // the loaded state's steps, then this poll's new ones
    for (const StepResult& r : results) {
        ++steps_;
        last_loss_ = r.loss;
        if (std::isnan(first_loss_)) first_loss_ = r.loss;
        if (loss_history_.size() >= kMaxLossHistory)
            loss_history_.erase(loss_history_.begin(), loss_history_.begin() + kMaxLossHistory / 2);
        loss_history_.push_back(r.loss);
        step_ms_ = step_ms_ > 0 ? step_ms_ + 0.1 * (r.ms - step_ms_) : r.ms;
        train_seconds_ += r.ms * 1e-3;
        rays_ = r.rays;
        samples_ = r.samples;
    }
    psnr_history_.insert(psnr_history_.end(), psnr.begin(), psnr.end());
    if (occupied >= 0) occupancy_fraction_ = occupied;
}

std::string NerfSession::take_worker_error() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string error;
    error.swap(worker_error_);
    return error;
}

double NerfSession::measure_psnr() { return trainer_->psnr_on(scene_->eval, background()); }

} // namespace fusedngp
