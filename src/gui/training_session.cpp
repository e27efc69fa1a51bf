#include "gui/training_session.h"

#include "config/config.h"
#include "core/clock.h"
#include "core/errors.h"
#include "core/json_fields.h"
#include "gui/worker_priority.h"
#include "networks/factory.h"
#include "persist/snapshot.h"
#include "persist/weights.h"

#ifdef FUSEDNGP_HAVE_CUDA
#include "engine/cuda_backend.h"
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace fusedngp {

namespace {

using Clock = std::chrono::steady_clock;


constexpr size_t kLossHistory = 2000;
constexpr int kPsnrSamples = 1 << 14;
// How often the worker copies the parameters for the display: often enough
// that the picture follows training, rarely enough that copying a 12M-float
// hash table stays a small share of a CPU step.
constexpr double kPublishMs = 150.0;
// An idle worker re-checks for work this often (a started step wakes it at once).
constexpr auto kIdlePoll = std::chrono::milliseconds(5);

double now_ms() {
    return std::chrono::duration<double, std::milli>(Clock::now().time_since_epoch()).count();
}

} // namespace

std::string function_kept_text(const ChangeRecord& change) {
    return change.function_kept ? "function kept" : "function not kept: " + change.why_not;
}

SessionData image_session_data(Image image) {
    SessionData d{"image", image.path, image_mode_info(image), nullptr};
    d.data = std::make_unique<ImageTrainingData>(std::move(image));
    return d;
}

TrainingSession::TrainingSession(SessionData data, const json& config, std::string backend_name, uint32_t batch_size,
                                 uint64_t seed)
    : backend_name_(std::move(backend_name)), seed_(seed), batch_size_(batch_size), mode_(std::move(data.mode)),
      data_path_(std::move(data.path)), mode_info_(std::move(data.mode_info)) {
    if (!equals_ignore_case(backend_name_, "cpu")) gpu_backend_name_ = backend_name_;
    json full = config_with_defaults(config);
    auto backend = create_backend(backend_name_, full, *data.data, seed_);
    adopt(std::move(data.data), std::move(backend), full);
}

const Image& TrainingSession::image() const {
    auto* images = dynamic_cast<const ImageTrainingData*>(data_.get());
    if (!images) throw std::logic_error("TrainingSession::image() in mode " + mode_);
    return images->image();
}

TrainingSession::~TrainingSession() {
    stop_worker();
    backend_.reset();  // before the data it refers to
}

void TrainingSession::start_worker() {
    if (worker_.joinable()) return;
    {
        std::lock_guard<std::mutex> lock(step_mutex_);
        stop_ = false;
        threaded_ = true;
    }
    worker_ = std::thread([this] { worker_loop(); });
}

void TrainingSession::stop_worker() {
    if (!worker_.joinable()) return;
    {
        auto lock = hold_worker();
        stop_ = true;
    }
    worker_wake_.notify_all();
    worker_.join();
    threaded_ = false;
}

void TrainingSession::worker_loop() {
    lower_this_thread_priority();
    std::unique_lock<std::mutex> lock(step_mutex_);
    auto wants_step = [&] { return requested_steps_ > 0 || (running && !lockstep_); };
    auto has_work = [&] { return pause_requests_ == 0 && (wants_step() || display_copy_wanted_); };
    while (!stop_) {
        // Waiting releases the lock: this is where a paused UI thread gets in.
        worker_wake_.wait_for(lock, kIdlePoll, [&] { return stop_ || has_work(); });
        if (stop_ || !has_work()) continue;
        const bool step = wants_step();
        if (step && requested_steps_ > 0) --requested_steps_;
        try {
            if (!step) {
                publish_display_copy();  // training paused: the view still gets the model
                continue;
            }
            run_step();
        } catch (const std::exception& e) {
            // A failing step (e.g. out of GPU memory after a batch change) pauses
            // training and reaches the UI instead of ending the program.
            running = false;
            requested_steps_ = 0;
            std::lock_guard<std::mutex> results_lock(results_mutex_);
            worker_error_ = std::string("training step failed: ") + e.what();
        }
        ++worker_steps_;  // also for a failed one: run_steps() must not wait forever
    }
}

std::unique_lock<std::mutex> TrainingSession::hold_worker() const {
    ++pause_requests_;  // the worker starts no new step while this is set
    std::unique_lock<std::mutex> lock(step_mutex_);
    --pause_requests_;  // holding the lock is enough from here on
    return lock;
}

std::unique_lock<std::mutex> TrainingSession::pause_worker() {
    auto lock = hold_worker();
    poll();
    return lock;
}

void TrainingSession::adopt(std::unique_ptr<TrainingData> data, std::unique_ptr<Backend> backend,
                            const json& config) {
    backend_.reset();
    if (data) data_ = std::move(data);
    backend_ = std::move(backend);
    config_ = config;
    flops_per_sample_ = mlp_forward_flops_per_sample(backend_->named_tensors());
    learning_rate_ = backend_->learning_rate();
    stats_.reset();
    ++generation_;
    device_steps_ran_.reset();
    if (!renders_on_device()) {
        display_model_ = std::make_unique<Model<float>>(data_->n_input_dims(), data_->n_output_dims(), config_, 0);
        publish_display_params();
    }
}

void TrainingSession::publish_display_params() {
    std::vector<float> params = backend_->inference_params();
    std::lock_guard<std::mutex> lock(display_mutex_);
    published_params_ = std::move(params);
    ++published_version_;
    last_publish_ms_ = now_ms();
}

void TrainingSession::run_step() {
    auto start = Clock::now();
    const uint32_t batch = batch_size_;
    float loss = backend_->train_step(batch);
    StepResult result{loss, ms_since(start), backend_->last_timings(), batch};
    publish_display_copy();
    if (threaded_) {
        if (!renders_on_device() && now_ms() - last_publish_ms_ >= kPublishMs) publish_display_params();
        std::lock_guard<std::mutex> lock(results_mutex_);
        results_.push_back(result);
    } else {
        record(result);
        if (!renders_on_device()) publish_display_params();
    }
}

void TrainingSession::publish_display_copy() {
#ifdef FUSEDNGP_HAVE_CUDA
    if (!display_copy_wanted_.exchange(false)) return;
    if (auto* cuda = dynamic_cast<CudaBackend*>(backend_.get())) cuda->publish_display();
#endif
}

std::string TrainingSession::take_worker_error() {
    std::lock_guard<std::mutex> lock(results_mutex_);
    return std::exchange(worker_error_, std::string());
}

void TrainingSession::poll() {
    std::vector<StepResult> finished;
    {
        std::lock_guard<std::mutex> lock(results_mutex_);
        finished.swap(results_);
    }
    for (const StepResult& r : finished) record(r);
    wall_rate_.record(total_steps_, now_ms() * 1e-3);
}

void TrainingSession::record(const StepResult& step) {
    const float loss = step.loss;
    stats_.record(step.ms, step.timings, step.batch_size);
    train_seconds_ += step.ms * 1e-3;
    ++total_steps_;
    last_loss_ = loss;
    if (std::isnan(first_loss_)) first_loss_ = loss;
    if (awaiting_loss_after_ && !changes_.empty()) changes_.back().loss_after = loss;
    awaiting_loss_after_ = false;
    if (loss_history_.size() >= kLossHistory) loss_history_.erase(loss_history_.begin(), loss_history_.begin() + kLossHistory / 2);
    loss_history_.push_back(loss);
}

void TrainingSession::train_for(double budget_ms) {
    auto start = Clock::now();
    do {
        run_step();
    } while (ms_since(start) + stats_.step_ms() < budget_ms);
}

void TrainingSession::single_step() {
    if (!threaded_) {
        run_step();
        return;
    }
    ++requested_steps_;
    worker_wake_.notify_all();
}

void TrainingSession::run_steps(uint32_t n) {
    if (!threaded_) {
        for (uint32_t i = 0; i < n; ++i) run_step();
        return;
    }
    const uint64_t target = worker_steps_ + n;
    requested_steps_ += (int)n;
    worker_wake_.notify_all();
    while (worker_steps_ < target) std::this_thread::sleep_for(std::chrono::microseconds(200));
}

void TrainingSession::display_inference(const Matrix<float>& inputs, Matrix<float>& outputs) {
    if (renders_on_device() || !display_model_) {
        auto lock = pause_worker();
        backend_->inference(inputs, outputs);
        return;
    }
    {
        std::lock_guard<std::mutex> lock(display_mutex_);
        if (published_version_ != display_version_) {
            display_params_.swap(published_params_);
            display_version_ = published_version_;
        }
    }
    display_model_->inference(inputs, outputs, display_params_.data());
}

bool TrainingSession::renders_on_device() const {
#ifdef FUSEDNGP_HAVE_CUDA
    return dynamic_cast<const CudaBackend*>(backend_.get()) != nullptr;
#else
    return false;
#endif
}

bool TrainingSession::render_to_device([[maybe_unused]] float* d_rgba, [[maybe_unused]] int width,
                                       [[maybe_unused]] int height) {
    bool drawn = false;
#ifdef FUSEDNGP_HAVE_CUDA
    render_beside_training([&](Backend& backend) {
        if (auto* cuda = dynamic_cast<CudaBackend*>(&backend))
            drawn = cuda->render_rgba_beside_training(d_rgba, (uint32_t)width, (uint32_t)height);
    });
#endif
    return drawn;
}

void TrainingSession::render_on_device(const std::function<void(Backend&)>& render) {
    if (!renders_on_device()) return;
    auto lock = pause_worker();
    render(*backend_);
}

void TrainingSession::render_beside_training(const std::function<void(Backend&)>& render) {
    if (!renders_on_device()) return;
    if (!threaded_) {
        display_copy_wanted_ = true;
        publish_display_copy();  // this thread steps: the copy is ordered after its steps
    }
    render(*backend_);
    device_steps_ran_.record(total_steps_);
    display_copy_wanted_ = true;
    worker_wake_.notify_all();
}

bool TrainingSession::device_memory([[maybe_unused]] size_t& used_bytes, [[maybe_unused]] size_t& total_bytes) const {
#ifdef FUSEDNGP_HAVE_CUDA
    if (!renders_on_device()) return false;
    size_t free_bytes = 0, total = 0;
    if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) return false;
    used_bytes = total - free_bytes;
    total_bytes = total;
    return true;
#else
    return false;
#endif
}

void TrainingSession::switch_backend(const std::string& backend_name) {
    auto lock = pause_worker();
    move_to_backend(backend_name, config_);
}

void TrainingSession::move_to_backend(const std::string& backend_name, const json& config) {
    json full = config_with_defaults(config);
    auto fresh = create_backend(backend_name, full, *data_, seed_ + generation_);
    // The whole state (fp32 weights, optimizer moments, EMA average, step):
    // both backends share the snapshot layout, so the model goes on exactly
    // where it was. A layout the new backend lacks keeps the weights alone.
    TrainingState state = backend_->save_state();
    try {
        fresh->load_state(state);
    } catch (const InputError&) {
        fresh->set_params(state.params);
    }
    if (!equals_ignore_case(backend_name, "cpu")) gpu_backend_name_ = backend_name;
    backend_name_ = backend_name;
    adopt(nullptr, std::move(fresh), full);
}

void TrainingSession::switch_kernel(const ConfigChange& change, ChangeRecord& record) {
    const std::vector<std::string>& kernels = mlp_otypes();
    const bool known = change.value.is_string() &&
                       std::any_of(kernels.begin(), kernels.end(), [&](const std::string& k) {
                           return equals_ignore_case(k, change.value.get<std::string>());
                       });
    if (!known) {
        throw ConfigError("network.otype", "must be one of FullyFusedMLP, CublasMLP, CutlassMLP, MLP, Auto, CPU; got " +
                                               change.value.dump());
    }
    const std::string kernel = change.value.get<std::string>();
    json next = config_;
    apply_config_change(next, change);
    const bool on_cpu = equals_ignore_case(backend_name_, "cpu");
    if (equals_ignore_case(kernel, "CPU") && !on_cpu) {
        move_to_backend("cpu", next);
    } else if (on_cpu && !equals_ignore_case(kernel, "CPU") && !gpu_backend_name_.empty()) {
        move_to_backend(gpu_backend_name_, next);  // back to the GPU this session came from
    } else if (on_cpu) {
        // The CPU reference runs every MLP otype the same way: weights and
        // optimizer moments stay as they are, only the config records the choice.
        config_ = next;
    } else {
#ifdef FUSEDNGP_HAVE_CUDA
        auto* cuda = dynamic_cast<CudaBackend*>(backend_.get());
        if (!cuda) throw ConfigError("network.otype", "backend " + backend_name_ + " cannot switch kernels");
        gpu::MlpKernel target = gpu::MlpKernel::Auto;
        if (equals_ignore_case(kernel, "FullyFusedMLP")) target = gpu::MlpKernel::FullyFused;
        if (equals_ignore_case(kernel, "CublasMLP") || equals_ignore_case(kernel, "CutlassMLP")) target = gpu::MlpKernel::Cublas;
        cuda->set_mlp_kernel(target);  // hot swap: the same fp32 weights and optimizer state
        config_ = next;
#endif
    }
    record.params_carried = backend_->n_params();
}

void TrainingSession::reset() {
    auto lock = pause_worker();
    rebuild(config_, false);
    loss_history_.clear();
    first_loss_ = std::numeric_limits<float>::quiet_NaN();
    last_loss_ = std::numeric_limits<float>::quiet_NaN();
    train_seconds_ = 0;
    total_steps_ = 0;
}

TransferReport TrainingSession::rebuild(const json& new_config, bool carry) {
    json full = config_with_defaults(new_config);
    // A different seed per rebuild: the new sampler does not replay the first batches.
    auto fresh = create_backend(backend_name_, full, *data_, seed_ + generation_);
    TransferReport report;
    report.why_not = "weights not carried";
    if (carry) {
        std::vector<float> old_params = backend_->save_state().params;
        std::vector<NamedTensor> old_tensors = backend_->named_tensors();
        std::vector<float> params = fresh->save_state().params;
        ParamSource source{config_, old_tensors, old_params};
        report = transfer_params(source, full, fresh->named_tensors(), params, new_inputs);
        fresh->set_params(params);
    }
    adopt(nullptr, std::move(fresh), full);
    return report;
}

void TrainingSession::apply(const ConfigChange& change, uint64_t frame) {
    auto lock = pause_worker();
    apply_paused(change, frame);
}

void TrainingSession::apply_paused(const ConfigChange& change, uint64_t frame) {
    ChangeRecord record;
    record.frame = frame;
    record.key = change.key;
    record.value = value_text(change.value);
    record.loss_before = last_loss_;
    if (change.key == "network.otype") {
        switch_kernel(change, record);
        changes_.push_back(record);
        awaiting_loss_after_ = true;
        return;
    }
    switch (change_effect(change.key)) {
    case ChangeEffect::BatchSize: {
        if (!change.value.is_number_integer() || change.value.get<int64_t>() < 1 || change.value.get<int64_t>() > (1 << 22)) {
            throw ConfigError("batch_size", "must be an integer in [1, 4194304], got " + change.value.dump());
        }
        set_batch_size(change.value.get<uint32_t>());
        break;
    }
    case ChangeEffect::LearningRate: {
        if (!change.value.is_number() || !(change.value.get<double>() > 0)) {
            throw ConfigError("optimizer.learning_rate", "must be a positive number, got " + change.value.dump());
        }
        backend_->set_learning_rate(change.value.get<double>());
        learning_rate_ = backend_->learning_rate();
        apply_config_change(config_, change);
        break;
    }
    case ChangeEffect::Rebuild: {
        json next = config_;
        apply_config_change(next, change);
        const TransferReport carried = rebuild(next, carry_weights);  // throws: the current model stays
        record.params_carried = carried.copied;
        record.function_kept = carried.function_preserved;
        record.why_not = carried.why_not;
        break;
    }
    }
    changes_.push_back(record);
    awaiting_loss_after_ = true;
}

void TrainingSession::set_batch_size(uint32_t batch_size) { batch_size_ = std::max<uint32_t>(1, batch_size); }

void TrainingSession::load_image(const std::string& path) {
    if (!is_image()) throw InputError(path + ": the app trains a " + mode_ + " model; open images in image mode");
    Image image = fusedngp::load_image(path);  // before pausing: a slow read keeps training
    auto lock = pause_worker();
    json info = image_mode_info(image);
    std::string source = image.path;
    auto data = std::make_unique<ImageTrainingData>(std::move(image));
    if (data->n_output_dims() == data_->n_output_dims()) {
        // Same model shape: keep training the current weights on the new image.
        auto fresh = create_backend(backend_name_, config_, *data, seed_ + generation_);
        fresh->set_params(backend_->save_state().params);
        adopt(std::move(data), std::move(fresh), config_);
    } else {
        auto fresh = create_backend(backend_name_, config_, *data, seed_ + generation_);
        adopt(std::move(data), std::move(fresh), config_);
        loss_history_.clear();
    }
    mode_info_ = std::move(info);  // after adopt: a failed open keeps the old image's record
    data_path_ = std::move(source);
}

void TrainingSession::save_snapshot(const std::string& path) const {
    auto lock = hold_worker();  // the worker waits: a consistent state
    Snapshot snap{config_, mode_, data_path_, data_->n_input_dims(), data_->n_output_dims(), mode_info_,
                  backend_->name(), backend_->save_state()};
    fusedngp::save_snapshot(path, snap);
}

void TrainingSession::load_snapshot(const std::string& path) {
    Snapshot snap = fusedngp::load_snapshot(path);
    auto lock = pause_worker();
    if (snap.mode != mode_) throw InputError(path + ": snapshot is for mode \"" + snap.mode + "\", not " + mode_);
    std::unique_ptr<TrainingData> data;
    json info = mode_info_;
    std::string source_path = data_path_;
    const bool same_shape = snap.n_output_dims == data_->n_output_dims() && snap.n_input_dims == data_->n_input_dims();
    if (!same_shape && !is_image()) {
        throw InputError(path + ": snapshot model has " + std::to_string(snap.n_input_dims) + " -> " +
                         std::to_string(snap.n_output_dims) + " dims, this " + mode_ + " model has " +
                         std::to_string(data_->n_input_dims()) + " -> " + std::to_string(data_->n_output_dims()));
    }
    if (!same_shape) {
        // The snapshot was trained on other data: open that, or give up cleanly.
        Image source = fusedngp::load_image(snap.data_path);
        if (snap.n_output_dims != (uint32_t)source.channels) {
            throw InputError(path + ": snapshot model has " + std::to_string(snap.n_output_dims) +
                             " outputs, its image has " + std::to_string(source.channels) + " channels");
        }
        info = image_mode_info(source);
        source_path = source.path;
        data = std::make_unique<ImageTrainingData>(std::move(source));
    }
    const TrainingData& target = data ? *data : *data_;
    auto fresh = create_backend(backend_name_, snap.config, target, seed_ + generation_);
    fresh->load_state(snap.state);
    adopt(std::move(data), std::move(fresh), snap.config);
    mode_info_ = std::move(info);
    data_path_ = std::move(source_path);
    loss_history_.clear();
}

void TrainingSession::export_weights(const std::string& path) const {
    auto lock = hold_worker();
    const uint32_t n_in = data_->n_input_dims(), n_out = data_->n_output_dims();
    ModelDescription desc{config_, mode_, n_in, n_out, mode_info_};
    // Only for its layout and names; the values are the backend's.
    Model<float> layout(n_in, n_out, config_, 0);
    fusedngp::export_weights(path, desc, layout, backend_->inference_params(), TensorDtype::F32);
}

double TrainingSession::subsample_psnr() {
    const Image& img = image();
    const size_t n = img.pixel_count();
    const int count = (int)std::min<size_t>(n, kPsnrSamples);
    if (psnr_coords_.rows() != count) {
        // Evenly strided pixel centres: the same set every time, so the curve is comparable.
        psnr_coords_.resize(count, 2);
        psnr_targets_.resize(count, img.channels);
        for (int k = 0; k < count; ++k) {
            size_t p = (size_t)k * n / (size_t)count;
            int x = (int)(p % (size_t)img.width), y = (int)(p / (size_t)img.width);
            psnr_coords_(k, 0) = ((float)x + 0.5f) / (float)img.width;
            psnr_coords_(k, 1) = ((float)y + 0.5f) / (float)img.height;
            for (int c = 0; c < img.channels; ++c) psnr_targets_(k, c) = img.at(x, y, c);
        }
    }
    display_inference(psnr_coords_, psnr_outputs_);
    double mse = (psnr_outputs_ - psnr_targets_).squaredNorm() / (double)psnr_targets_.size();
    return mse > 0 ? -10.0 * std::log10(mse) : 99.0;
}

double TrainingSession::full_psnr() {
    auto lock = pause_worker();
    InferenceFn infer = [&](const Matrix<float>& in, Matrix<float>& out) { backend_->inference(in, out); };
    return evaluate_image(infer, image(), false).psnr;
}

} // namespace fusedngp
