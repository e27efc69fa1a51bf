#include "engine/nerf_cuda_trainer.h"

#include "core/env.h"
#include "core/errors.h"
#include "core/json_fields.h"
#include "engine/cuda_backend.h"
#include "losses/basic_losses.h"
#include "losses/factory.h"
#include "nerf/launch_nerf.h"
#include "nerf/nerf_model_layout.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <stdexcept>
#include <string>

namespace fusedngp {
namespace {

using nerf::kColourInputs;
using nerf::kDensityOutputs;

constexpr uint32_t kMaxRaysPerStep = 1u << 20;
constexpr uint32_t kMinRaysPerStep = 128;
constexpr uint32_t kViewChunkRays = 1u << 18;
constexpr uint32_t kViewFirstRoundSamples = 16;  // per ray; doubles each round up to 16x
// Samples per run of a view round at least, whatever the training budget:
// each run is a few launches and a density and colour inference, so runs of
// a small budget were slow (lego, 2^14 samples per step, H100: an 800x800
// frame in 55.6 ms against 14.0 with runs of 2^18).
constexpr uint32_t kViewRunSamples = 1u << 18;
// Marched samples per step at most, in budgets: instant-ngp's lego keeps
// about half of what it marches once trained.
constexpr uint32_t kMarchBudgets = 4;
// Rays whose march ballots the count pass stores for the write pass (16 MB
// a march set; lego's steps have ~37 k rays, the rest march twice).
constexpr uint32_t kMaskedRays = 1u << 17;
// The march limit over what the step's rays marched on average per ray: the
// density pass runs over the whole limit (its batch is set before the count
// is known), so the margin is paid every step. A sum over ~3.5 x 10^4 rays
// varies by well under 1 % between steps; the margin covers the drift of the
// few steps the adaptation lags behind, and a step that overflows it drops its
// last rays (and adapts) rather than failing.
constexpr double kMarchLimitMargin = 1.05;
// dL/dout of a NeRF step is tiny (a mean over all rays' channels, times
// weights and sigmoid slopes: ~1e-7); fp16 backward passes need it scaled up
// past the subnormal range. Non-finite gradients skip the update and halve
// the scale; a run of clean steps doubles it again, up to the initial scale
// (65536 trained lego no better than 4096). FUSEDNGP_LOSS_SCALE=S[:G] sets
// another initial scale (and growth interval).
LossScaleSettings nerf_loss_scale_settings() {
    LossScaleSettings defaults;
    defaults.initial = 4096.f;
    LossScaleSettings s = loss_scale_settings_from_environment(defaults);
    s.max_scale = s.initial;
    return s;
}

nerf::RayLoss ray_loss_from_config(const json& config) {
    if (!config.contains("loss")) throw ConfigError("loss", "missing section");
    const auto loss = create_loss<float>(config.at("loss"), "loss");
    nerf::RayLoss r;
    const std::string otype = loss->otype();
    if (otype == "L2") r.kind = nerf::RayLossKind::L2;
    else if (otype == "L1") r.kind = nerf::RayLossKind::L1;
    else if (otype == "Huber") {
        r.kind = nerf::RayLossKind::Huber;
        r.huber_delta = dynamic_cast<const HuberLoss<float>&>(*loss).delta();
    } else {
        throw ConfigError("loss.otype", "the NeRF mode's CUDA trainer takes L2, L1 or Huber, got " + otype);
    }
    return r;
}

uint32_t round_up(uint32_t x, uint32_t m) { return (x + m - 1) / m * m; }

// The density grid's kernel choices for NeRF's sample order: samples come ray
// by ray, ~1/600 apart, so a warp's samples share the coarse levels' corners.
// Summing those per warp before the shared-memory atomics pays, and the
// forward's paired-corner 16-byte loads do not (H200, lego, 8-s runs:
// backward 0.90 -> 0.75 ms per step; compaction 0.463 -> 0.428 ms).
gpu::GpuEncodingOptions nerf_density_encoding_options() {
    gpu::GpuEncodingOptions o;
    o.grid_kernels.gradient_warp_aggregate_shared = true;
    o.grid_kernels.forward_chunk_loads = false;
    o.grid_kernels.gradient_sample_run = 16;
    return o;
}

} // namespace

NerfCudaTrainer::NerfCudaTrainer(const NerfDataset& dataset, const json& config,
                                 const nerf::NerfTrainerSettings& settings)
    : dataset_(dataset),
      config_(config),
      settings_(settings),
      ray_loss_(ray_loss_from_config(config)),
      density_host_(3, kDensityOutputs, nerf::nerf_density_model_config(config), derive_seed(settings.seed, 1)),
      colour_host_(kColourInputs, 3, nerf::nerf_colour_model_config(config), derive_seed(settings.seed, 2)),
      ray_key_(derive_seed(settings.seed, 4)) {
    if (!cuda_device_available())
        throw InputError("the cuda backend needs a CUDA device: " + cuda_device_description() + "; use --backend cpu");
    if (!config.contains("optimizer")) throw ConfigError("optimizer", "missing section");
    const int n_cascades = nerf::cascades_for_aabb_scale((int)dataset.aabb_scale);
    if (n_cascades == 0)
        throw InputError(dataset.source + ": aabb_scale " + std::to_string(dataset.aabb_scale) +
                         " is not a power of two in [1, 128]");
    march_.cone_angle = settings.cone_angle;
    march_.n_cascades = n_cascades;
    march_.max_samples = settings.max_samples_per_ray;
    bounds_ = nerf::nerf_march_bounds(dataset, n_cascades);
    capacity_ = round_up(settings.samples_per_batch, 256);
    march_capacity_ = kMarchBudgets * capacity_;
    march_limit_ = march_capacity_;
    view_capacity_ = std::max(capacity_, kViewRunSamples);
    max_rays_ = kMaxRaysPerStep;
    n_rays_ = std::clamp(round_up(settings.rays_per_batch, 128), kMinRaysPerStep, max_rays_);

    march_ahead_ = !env_equals("FUSEDNGP_NERF_MARCH_AHEAD", "0");
    march_skip_mask_ = !env_equals("FUSEDNGP_NERF_SKIP_MASK", "0");
    FUSEDNGP_GPU_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    FUSEDNGP_GPU_CHECK(cudaStreamCreateWithFlags(&march_stream_, cudaStreamNonBlocking));
    FUSEDNGP_GPU_CHECK(cudaEventCreateWithFlags(&march_after_, cudaEventDisableTiming));
    for (MarchSet& m : march_sets_) {
        FUSEDNGP_GPU_CHECK(cudaEventCreateWithFlags(&m.done, cudaEventDisableTiming));
        FUSEDNGP_GPU_CHECK(cudaEventCreateWithFlags(&m.free, cudaEventDisableTiming));
    }
    for (auto& pair : march_timing_)
        for (cudaEvent_t& e : pair) FUSEDNGP_GPU_CHECK(cudaEventCreate(&e));
    for (Slot& s : slots_) {
        FUSEDNGP_GPU_CHECK(cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming));
        for (cudaEvent_t& e : s.phase) FUSEDNGP_GPU_CHECK(cudaEventCreate(&e));
        FUSEDNGP_GPU_CHECK(cudaMallocHost(reinterpret_cast<void**>(&s.host), sizeof(Readback)));
        *s.host = {};
    }
    density_ = std::make_unique<DeviceModel>(density_host_, config.at("network"), "network", config.at("optimizer"),
                                             nerf_density_encoding_options(), stream_);
    colour_ = std::make_unique<DeviceModel>(colour_host_, config.at("rgb_network"), "rgb_network",
                                            config.at("optimizer"), gpu::GpuEncodingOptions{}, stream_);
    // The colour network's input is [direction (3), density features]: only
    // the features' gradient flows on (into the density network). Where its
    // encoding copies the features unchanged (the default Identity part),
    // they go straight into its encoded rows and their gradient is read
    // where its MLP writes it: one copy each way instead of two (~4 % of a
    // lego step on an H100).
    colour_->skip_input_gradient_below(3);
    colour_feature_column_ = colour_->encode_columns_by_caller(3, kDensityOutputs);
    loss_scale_ = DynamicLossScale(nerf_loss_scale_settings());
    apply_loss_scale();
    grid_ = std::make_unique<DeviceOccupancyGrid>(n_cascades, settings.occupancy, derive_seed(settings.seed, 5),
                                                  stream_);
    allocate_buffers();
    upload_dataset();
    if (settings_.cull_occluded_cells) {
        for (auto* b : {&culled_, &visited_, &seen_, &training_bits_}) {
            b->resize(grid_->n_cells() / 8);
            b->fill_bytes(0, stream_);
        }
        occlusion_recent_.resize(grid_->n_cells());
        occlusion_recent_.fill_bytes(nerf::kOcclusionMemory, stream_);
        refresh_occlusion(false);
    }
    FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream_));
}

NerfCudaTrainer::~NerfCudaTrainer() {
    if (stream_) cudaStreamSynchronize(stream_);
    if (march_stream_) cudaStreamSynchronize(march_stream_);
    for (MarchSet& m : march_sets_) {
        if (m.done) cudaEventDestroy(m.done);
        if (m.free) cudaEventDestroy(m.free);
    }
    for (auto& pair : march_timing_)
        for (cudaEvent_t e : pair)
            if (e) cudaEventDestroy(e);
    if (march_after_) cudaEventDestroy(march_after_);
    if (march_stream_) cudaStreamDestroy(march_stream_);
    for (Slot& s : slots_) {
        if (s.done) cudaEventDestroy(s.done);
        for (cudaEvent_t e : s.phase)
            if (e) cudaEventDestroy(e);
        if (s.host) cudaFreeHost(s.host);
    }
    if (stream_) cudaStreamDestroy(stream_);
}

void NerfCudaTrainer::allocate_buffers() {
    // The forward buffers also hold a view's runs (view_capacity_ rows);
    // training uses their first capacity_ rows, gradients have capacity_.
    const size_t n = view_capacity_, g = capacity_;
    density_->reserve(capacity_);
    colour_->reserve(capacity_);
    density_->reserve_inference(std::max(march_capacity_, view_capacity_));  // compaction, occupancy, views
    colour_->reserve_inference(view_capacity_);
    // Inputs start as valid points: every step runs the networks on the
    // whole buffer, and rows no ray wrote keep older (finite) samples.
    positions_.resize(3 * n);
    positions_.upload(std::vector<float>(3 * n, 0.5f));
    colour_in_.resize(kColourInputs * n);
    colour_in_.upload(std::vector<float>(kColourInputs * n, 0.5f));
    t_.resize(n);
    dt_.resize(n);
    density_out_.resize(kDensityOutputs * n);
    colour_raw_.resize(3 * n);
    sigma_.resize(n);
    rgb_.resize(3 * n);
    d_sigma_.resize(g);
    d_rgb_.resize(3 * g);
    d_colour_raw_.resize(3 * g);
    // Only where the colour encoding computes the features' input gradient.
    if (colour_feature_column_ < 0) d_colour_in_.resize(kColourInputs * g);
    d_density_out_.resize(kDensityOutputs * g);
    scratch_.resize((size_t)std::max(density_->n_encoded_dims(), colour_->n_encoded_dims()) *
                    std::max(march_capacity_, view_capacity_));
    const size_t m = march_capacity_;
    for (MarchSet& set : march_sets_) {
        set.positions.resize(3 * m);
        set.directions.resize(3 * m);
        set.t.resize(m);
        set.dt.resize(m);
        set.first.resize(max_rays_);
        set.count.resize(max_rays_);
        set.target.resize(3 * (size_t)max_rays_);
        set.background.resize(3 * (size_t)max_rays_);
        set.counters.resize(3);
        set.round_masks.resize((size_t)std::min(kMaskedRays, max_rays_) * gpu::kNerfStoredMarchRounds);
        set.scan_temp.resize(std::max<size_t>(gpu::nerf_ray_scan_temp_bytes(max_rays_), 1));
    }
    marched_density_out_.resize(kDensityOutputs * m);
    ray_first_.resize(max_rays_);
    ray_count_.resize(max_rays_);
    kept_source_row_.resize(capacity_);
    step_state_.resize(1);
    view_counts_.resize(kViewChunkRays + 1);
    view_offsets_.resize(kViewChunkRays + 1);
    view_state_.resize(kViewChunkRays);
    view_rgb_.resize(3 * (size_t)kViewChunkRays);
    size_t scan_bytes = 0;
    gpu::nerf_exclusive_sum(nullptr, nullptr, kViewChunkRays + 1, nullptr, scan_bytes, stream_);
    scan_temp_.resize(std::max<size_t>({scan_bytes, gpu::nerf_ray_scan_temp_bytes(max_rays_), 1}));
}

void NerfCudaTrainer::upload_dataset() {
    if (dataset_.frames.empty()) return;  // an inference-only trainer
    std::vector<Camera> cameras;
    for (const NerfFrame& f : dataset_.frames) cameras.push_back(f.camera);
    cameras_.resize(cameras.size());
    cameras_.upload(cameras);
    images_.resize(dataset_.images.rgba.size());
    images_.upload(dataset_.images.rgba);
}

gpu::NerfMarchView NerfCudaTrainer::march_view() const {
    gpu::NerfMarchView v;
    v.bits = grid_->bits();
    v.skip_mask = march_skip_mask_ ? grid_->skip_mask() : nullptr;
    v.bounds = bounds_;
    v.march = march_;
    return v;
}

gpu::NerfMarchView NerfCudaTrainer::training_march_view() const {
    gpu::NerfMarchView v = march_view();
    if (!settings_.cull_occluded_cells) return v;
    v.probe_bits = v.bits;
    v.bits = training_bits_.data();
    return v;
}

// The test hooks below read or set the mask, which exists only with the option.
void NerfCudaTrainer::require_culling(const char* what) const {
    if (!settings_.cull_occluded_cells)
        throw std::logic_error(std::string(what) + ": sampling.cull_occluded_cells is off");
}

static void require_occlusion_buffer_size(const char* what, size_t got, size_t expected) {
    if (got != expected)
        throw InputError(std::string(what) + ": " + std::to_string(got) + " bytes, expected " + std::to_string(expected));
}

NerfCudaTrainer::OcclusionState NerfCudaTrainer::occlusion_state() {
    require_culling("occlusion_state");
    synchronize();
    return {culled_.download(), visited_.download(), seen_.download(), training_bits_.download(),
            occlusion_recent_.download()};
}

void NerfCudaTrainer::set_culled_cells(const std::vector<uint8_t>& culled) {
    require_culling("set_culled_cells");
    require_occlusion_buffer_size("set_culled_cells", culled.size(), culled_.size());
    synchronize();
    culled_.upload(culled);
    refresh_occlusion(false);
    FUSEDNGP_GPU_CHECK(cudaEventRecord(march_after_, stream_));
    forget_marches();
}

void NerfCudaTrainer::set_occlusion_recent(const std::vector<uint8_t>& recent) {
    require_culling("set_occlusion_recent");
    require_occlusion_buffer_size("set_occlusion_recent", recent.size(), occlusion_recent_.size());
    synchronize();
    occlusion_recent_.upload(recent);
}

void NerfCudaTrainer::update_occlusion_mask() {
    require_culling("update_occlusion_mask");
    synchronize();
    refresh_occlusion(true);
    FUSEDNGP_GPU_CHECK(cudaEventRecord(march_after_, stream_));
    forget_marches();
}

// The occluded-cell mask (nerf/occlusion_mask.h) after the grid changed:
// with `apply`, the update rule over the marks since the last one; else the
// marks are dropped. Then the training march's bits from the grid's.
void NerfCudaTrainer::refresh_occlusion(bool apply) {
    gpu::launch_nerf_occlusion_update(grid_->bits(), culled_.data(), visited_.data(), seen_.data(),
                                      occlusion_recent_.data(), training_bits_.data(), grid_->n_cells(), apply,
                                      stream_);
}

std::string NerfCudaTrainer::describe() const {
    std::ostringstream os;
    os << "density " << density_->describe() << "; colour " << colour_->describe() << "; " << capacity_
       << " samples per step";
    return os.str();
}

void NerfCudaTrainer::density_values(const float* d_points, uint32_t n, float* d_sigma) {
    for (uint32_t i0 = 0; i0 < n; i0 += march_capacity_) {
        const uint32_t m = std::min(march_capacity_, n - i0);
        density_->inference(d_points + 3 * (size_t)i0, marched_density_out_.data(), scratch_.data(), m, stream_);
        gpu::launch_nerf_sigma(marched_density_out_.data(), kDensityOutputs, d_sigma + i0, m, stream_);
    }
}

void NerfCudaTrainer::update_occupancy() {
    grid_->update([this](const float* p, uint32_t n, float* out) { density_values(p, n, out); }, (uint32_t)step_,
                  stream_);
    // Before the warm-up ends the grid's densities are not yet the scene's:
    // nothing is culled from them.
    if (settings_.cull_occluded_cells) refresh_occlusion(step_ >= settings_.occupancy.warmup_steps);
    FUSEDNGP_GPU_CHECK(cudaEventRecord(march_after_, stream_));
}

NerfCudaTrainer::ColourFeatures NerfCudaTrainer::colour_features() {
    if (colour_feature_column_ >= 0)
        return {colour_->encoded_input(), colour_->encoded_gradient(), nullptr, colour_->n_encoded_dims(),
                (uint32_t)colour_feature_column_};
    return {colour_in_.data(), d_colour_in_.data(), d_colour_in_.data(), kColourInputs, 3};
}

void NerfCudaTrainer::run_networks_and_loss(uint32_t n_rays, const float* ray_target, const float* ray_background,
                                            bool encoded, cudaEvent_t forward_done) {
    const uint32_t b = capacity_;
    Readback* state = step_state_.data();
    if (encoded)  // compact() copied the kept samples' encoding
        density_->forward_encoded(density_out_.data(), b, stream_);
    else
        density_->forward(positions_.data(), density_out_.data(), b, stream_);
    const ColourFeatures features = colour_features();
    gpu::launch_copy_columns(density_out_.data(), kDensityOutputs, features.rows, features.stride, features.column,
                             kDensityOutputs, b, stream_);
    colour_->forward(colour_in_.data(), colour_raw_.data(), b, stream_);
    gpu::launch_nerf_activations(density_out_.data(), kDensityOutputs, colour_raw_.data(), sigma_.data(), rgb_.data(),
                                 b, stream_);
    d_sigma_.fill_bytes(0, stream_);
    d_rgb_.fill_bytes(0, stream_);
    gpu::NerfRayLossArgs a;
    a.n_rays = n_rays;
    a.ray_first = ray_first_.data();
    a.ray_count = ray_count_.data();
    a.ray_target = ray_target;
    a.ray_background = ray_background;
    a.sigma = sigma_.data();
    a.rgb = rgb_.data();
    a.dt = dt_.data();
    a.loss = ray_loss_;
    a.counters = &state->compact[0];
    a.d_sigma = d_sigma_.data();
    a.d_rgb = d_rgb_.data();
    a.loss_sum = &state->loss_sum;
    gpu::launch_nerf_ray_loss(a, stream_);
    if (forward_done) FUSEDNGP_GPU_CHECK(cudaEventRecord(forward_done, stream_));
    gpu::launch_nerf_colour_raw_gradient(rgb_.data(), d_rgb_.data(), d_colour_raw_.data(), b, stream_);
    // Both backwards flag a non-finite gradient as they go (DeviceModel::backward).
    colour_->backward(colour_in_.data(), d_colour_raw_.data(), features.input_gradient, b, stream_, &state->non_finite);
    gpu::launch_nerf_density_gradient(features.gradient, features.stride, features.column, density_out_.data(),
                                      d_sigma_.data(), d_density_out_.data(), b, stream_);
    density_->backward(positions_.data(), d_density_out_.data(), nullptr, b, stream_, &state->non_finite);
}

void NerfCudaTrainer::apply_updates() {
    const unsigned int* flag = &step_state_.data()->non_finite;  // set by the backward passes
    density_->zero_gradient_if(flag, stream_);
    colour_->zero_gradient_if(flag, stream_);
    density_->step(stream_);
    colour_->step(stream_);
}

void NerfCudaTrainer::retire(int slot) {
    Slot& s = slots_[slot];
    if (!s.pending) return;
    FUSEDNGP_GPU_CHECK(cudaEventSynchronize(s.done));
    const Readback r = *s.host;
    last_.loss = (float)r.loss_sum;
    last_.rays = s.rays;
    last_.marched_asked = r.march[0];
    last_.marched_rays = r.march[1];
    last_.marched_kept = r.march[2];
    last_.samples_asked = r.compact[0];
    last_.rays_kept = r.compact[1];
    last_.samples_kept = r.compact[2];
    if (r.non_finite) ++skipped_steps_;
    if (loss_scale_.on_step(s.loss_scale, r.non_finite != 0)) apply_loss_scale();
    for (int p = 0; p < kPhases; ++p) {
        float ms = 0;
        FUSEDNGP_GPU_CHECK(cudaEventElapsedTime(&ms, s.phase[p], s.phase[p + 1]));
        phase_ms_[p] += ms;
    }
    const auto& march = march_timing_[s.step % march_timing_.size()];
    float march_ms = 0;
    FUSEDNGP_GPU_CHECK(cudaEventElapsedTime(&march_ms, march[0], march[1]));
    march_kernels_ms_ += march_ms;
    ++timed_steps_;
    s.pending = false;
}

// Both models' fp16 backward passes run with loss_scale_'s current scale.
void NerfCudaTrainer::apply_loss_scale() {
    density_->set_loss_scale(loss_scale_.scale());
    colour_->set_loss_scale(loss_scale_.scale());
}

// instant-ngp's rule: as many rays as fill the budget at the last step's
// kept samples per ray; the march limit holds what those rays march, with a
// margin.
void NerfCudaTrainer::adapt_ray_count() {
    if (last_.rays == 0 || last_.marched_rays == 0) return;
    const double kept_per_ray = (double)last_.samples_asked / (double)last_.marched_rays;
    const double marched_per_ray = (double)last_.marched_asked / (double)last_.rays;
    double rays = kept_per_ray > 0 ? (double)capacity_ / kept_per_ray : (double)max_rays_;
    rays = std::min({rays, (double)max_rays_, (double)march_capacity_ / std::max(marched_per_ray, 1e-3)});
    n_rays_ = std::clamp(round_up(std::max((uint32_t)rays, 1u), 128), kMinRaysPerStep, max_rays_);
    const double marched = kMarchLimitMargin * (double)n_rays_ * marched_per_ray;
    march_limit_ = std::clamp(round_up((uint32_t)std::min(marched, (double)march_capacity_), 256), capacity_,
                              march_capacity_);
}

// Draws and marches the step's rays. The march reads only the occupancy
// bits: it waits for march_after_ (the grid's latest write) and for the step
// that used this buffer set before, not for the steps in between.
void NerfCudaTrainer::issue_march(uint64_t step) {
    MarchSet& m = march_sets_[step & 1];
    FUSEDNGP_GPU_CHECK(cudaStreamWaitEvent(march_stream_, m.free, 0));
    FUSEDNGP_GPU_CHECK(cudaStreamWaitEvent(march_stream_, march_after_, 0));
    const auto& timing = march_timing_[step % march_timing_.size()];
    FUSEDNGP_GPU_CHECK(cudaEventRecord(timing[0], march_stream_));
    gpu::NerfTrainingRaysArgs a;
    a.key = ray_key_;
    a.step = step;
    a.n_rays = n_rays_;
    a.cameras = cameras_.data();
    a.n_frames = (uint32_t)dataset_.frames.size();
    a.images = images_.data();
    a.width = dataset_.images.width;
    a.height = dataset_.images.height;
    a.snap_to_pixel_centers = settings_.snap_to_pixel_centers;
    a.background = settings_.training_background;
    a.grid = training_march_view();
    a.samples = {m.positions.data(), m.directions.data(), 3, m.t.data(), m.dt.data(), march_limit_};
    a.ray_first = m.first.data();
    a.ray_count = m.count.data();
    a.ray_target = m.target.data();
    a.ray_background = m.background.data();
    a.counters = m.counters.data();
    a.round_masks = m.round_masks.data();
    a.masked_rays = std::min(kMaskedRays, max_rays_);
    a.scan_temp = m.scan_temp.data();
    a.scan_temp_bytes = m.scan_temp.size();
    gpu::launch_nerf_training_rays(a, march_stream_);
    FUSEDNGP_GPU_CHECK(cudaEventRecord(timing[1], march_stream_));
    FUSEDNGP_GPU_CHECK(cudaEventRecord(m.done, march_stream_));
    m.step = step;
    m.n_rays = n_rays_;
    m.limit = march_limit_;
}

// Keeps the marched samples that count: densities of every marched sample
// (inference, training parameters), then compaction into the networks'
// buffers.
void NerfCudaTrainer::compact(MarchSet& m) {
    Readback* state = step_state_.data();
    density_->inference(m.positions.data(), marched_density_out_.data(), scratch_.data(), m.limit, stream_);
    gpu::NerfCompactArgs c;
    c.n_rays = m.n_rays;
    c.ray_first = m.first.data();
    c.ray_count = m.count.data();
    c.density_out = marched_density_out_.data();
    c.density_stride = kDensityOutputs;
    c.in = {m.positions.data(), m.directions.data(), 3, m.t.data(), m.dt.data(), m.limit};
    c.out = {positions_.data(), colour_in_.data(), kColourInputs, t_.data(), dt_.data(), capacity_};
    c.out_first = ray_first_.data();
    c.out_count = ray_count_.data();
    c.rays_limit = m.counters.data() + 1;
    c.counters = &state->compact[0];
    c.scan_temp = scan_temp_.data();
    c.scan_temp_bytes = scan_temp_.size();
    // The inference above left the marched samples' encoding in scratch_:
    // the kept rows become the training forward's encoded input.
    c.in_encoded = scratch_.data();
    c.out_encoded = density_->encoded_input();
    c.encoded_dims = density_->n_encoded_dims();
    c.source_row = kept_source_row_.data();
    if (settings_.cull_occluded_cells) {
        c.visited = reinterpret_cast<uint32_t*>(visited_.data());
        c.seen = reinterpret_cast<uint32_t*>(seen_.data());
        c.n_cascades = grid_->n_cascades();
    }
    gpu::launch_nerf_compact_rays(c, stream_);
}

// A march issued ahead belongs to the state it was issued in: after the
// parameters, the grid or the step count are replaced, the next step marches
// again.
void NerfCudaTrainer::forget_marches() {
    for (MarchSet& m : march_sets_) m.step = kNoStep;
}

float NerfCudaTrainer::step() {
    if (dataset_.frames.empty()) throw InputError(dataset_.source + ": no frames to train on");
    const int slot = (int)(step_ % kInFlight);
    retire(slot);
    Slot& s = slots_[slot];
    FUSEDNGP_GPU_CHECK(cudaEventRecord(s.phase[0], stream_));
    if (occupancy_step(step_)) update_occupancy();
    FUSEDNGP_GPU_CHECK(cudaEventRecord(s.phase[1], stream_));
    MarchSet& m = march_sets_[step_ & 1];
    if (m.step != step_) {  // in line: after everything issued before
        adapt_ray_count();
        FUSEDNGP_GPU_CHECK(cudaEventRecord(march_after_, stream_));
        issue_march(step_);
    }
    // The march phase: what this step still waits for its march.
    FUSEDNGP_GPU_CHECK(cudaStreamWaitEvent(stream_, m.done, 0));
    FUSEDNGP_GPU_CHECK(cudaEventRecord(s.phase[2], stream_));
    step_state_.fill_bytes(0, stream_);
    compact(m);
    FUSEDNGP_GPU_CHECK(cudaEventRecord(s.phase[3], stream_));
    run_networks_and_loss(m.n_rays, m.target.data(), m.background.data(), true, s.phase[4]);
    FUSEDNGP_GPU_CHECK(cudaEventRecord(s.phase[5], stream_));
    apply_updates();
    FUSEDNGP_GPU_CHECK(cudaEventRecord(s.phase[6], stream_));
    FUSEDNGP_GPU_CHECK(cudaMemcpyAsync(s.host, step_state_.data(), sizeof(Readback), cudaMemcpyDeviceToHost, stream_));
    FUSEDNGP_GPU_CHECK(cudaMemcpyAsync(s.host->march, m.counters.data(), sizeof(s.host->march),
                                       cudaMemcpyDeviceToHost, stream_));
    FUSEDNGP_GPU_CHECK(cudaEventRecord(m.free, stream_));
    FUSEDNGP_GPU_CHECK(cudaEventRecord(s.done, stream_));
    s.rays = m.n_rays;
    s.step = step_;
    s.loss_scale = loss_scale_.scale();
    s.pending = true;
    ++step_;
    // The first steps wait for themselves: their counts set the ray count
    // from the warm-up grid's (all occupied) to the budget's quickly.
    if (step_ <= 8) retire(slot);
    // The next step's march runs beside this step's training, unless the
    // next step updates the grid first.
    if (march_ahead_ && !occupancy_step(step_)) {
        adapt_ray_count();
        issue_march(step_);
    }
    return last_.loss;
}

bool NerfCudaTrainer::occupancy_step(uint64_t step) const {
    return settings_.occupancy_update_interval > 0 && step % settings_.occupancy_update_interval == 0;
}

void NerfCudaTrainer::synchronize() {
    for (uint64_t i = 0; i < kInFlight; ++i) retire((int)((step_ + i) % kInFlight));
    FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream_));
    FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(march_stream_));
}

Image NerfCudaTrainer::render_view(const Camera& camera, Vec3 background) {
    return render_pixels(camera, intersection(bounds_, crop_), background, false);
}

Image NerfCudaTrainer::render_depth(const Camera& camera) {
    return render_pixels(camera, intersection(bounds_, crop_), Vec3{0, 0, 0}, true);
}

Image NerfCudaTrainer::render_pixels(const Camera& camera, const Box3& box, Vec3 background, bool depth_only) {
    Image img;
    img.width = (int)camera.intrinsics.width;
    img.height = (int)camera.intrinsics.height;
    img.channels = depth_only ? 1 : 3;
    img.pixels.resize(img.pixel_count() * img.channels);
    density_->use_inference_params(stream_);
    colour_->use_inference_params(stream_);
    gpu::NerfMarchView grid = march_view();
    grid.bounds = box;
    std::vector<uint32_t> offsets;
    for (size_t p0 = 0; p0 < img.pixel_count(); p0 += kViewChunkRays) {
        const uint32_t m = (uint32_t)std::min<size_t>(kViewChunkRays, img.pixel_count() - p0);
        const gpu::NerfViewRays rays{camera, (uint32_t)p0, m};
        gpu::launch_nerf_start_view(rays, grid, view_state_.data(), stream_);
        // Rounds (launch_nerf.h): opaque rays stop marching. Short first
        // rounds, as most rays turn opaque within a few occupied cells.
        for (uint32_t round = 0;; ++round) {
            const uint32_t per_ray = kViewFirstRoundSamples << std::min(round, 4u);
            FUSEDNGP_GPU_CHECK(cudaMemsetAsync(view_counts_.data() + m, 0, sizeof(uint32_t), stream_));
            gpu::launch_nerf_count_view_round(rays, grid, view_state_.data(), per_ray, view_counts_.data(), stream_);
            size_t bytes = scan_temp_.size();
            gpu::nerf_exclusive_sum(view_counts_.data(), view_offsets_.data(), m + 1, scan_temp_.data(), bytes,
                                    stream_);
            offsets.resize(m + 1);
            FUSEDNGP_GPU_CHECK(cudaMemcpyAsync(offsets.data(), view_offsets_.data(), (m + 1) * sizeof(uint32_t),
                                               cudaMemcpyDeviceToHost, stream_));
            FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream_));
            if (offsets[m] == 0) break;
            render_view_round(rays, grid, per_ray, offsets);
        }
        gpu::launch_nerf_finish_view(view_state_.data(), m, background, depth_only ? nullptr : view_rgb_.data(),
                                     depth_only ? view_rgb_.data() : nullptr,
                                     (float)nerf::NerfTrainer<float>::kMinDepthOpacity, stream_);
        const size_t channels = (size_t)img.channels;
        FUSEDNGP_GPU_CHECK(cudaMemcpyAsync(img.pixels.data() + channels * p0, view_rgb_.data(),
                                           channels * m * sizeof(float), cudaMemcpyDeviceToHost, stream_));
    }
    density_->use_training_params(stream_);
    colour_->use_training_params(stream_);
    FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream_));
    return img;
}

// One round of a view: runs of rays whose samples fit the sample buffers.
void NerfCudaTrainer::render_view_round(const gpu::NerfViewRays& rays, const gpu::NerfMarchView& grid,
                                        uint32_t per_ray, const std::vector<uint32_t>& offsets) {
    const uint32_t m = rays.n_rays;
    for (uint32_t r0 = 0; r0 < m;) {
        uint32_t r1 = r0 + 1;
        while (r1 < m && offsets[r1 + 1] - offsets[r0] <= view_capacity_) ++r1;
        const uint32_t n = offsets[r1] - offsets[r0];
        const gpu::NerfSampleBuffers samples{positions_.data(), colour_in_.data(), kColourInputs, t_.data(),
                                             dt_.data(), view_capacity_};
        gpu::launch_nerf_march_view_round(rays, grid, view_state_.data(), per_ray, view_offsets_.data(), r0, r1,
                                          samples, stream_);
        if (n > 0) {
            density_->inference(positions_.data(), density_out_.data(), scratch_.data(), n, stream_);
            gpu::launch_copy_columns(density_out_.data(), kDensityOutputs, colour_in_.data(), kColourInputs, 3,
                                     kDensityOutputs, n, stream_);
            colour_->inference(colour_in_.data(), colour_raw_.data(), scratch_.data(), n, stream_);
            gpu::launch_nerf_activations(density_out_.data(), kDensityOutputs, colour_raw_.data(), sigma_.data(),
                                         rgb_.data(), n, stream_);
        }
        gpu::launch_nerf_composite_view_round(view_offsets_.data(), r0, r1, sigma_.data(), rgb_.data(), t_.data(),
                                              dt_.data(), grid, view_state_.data(), stream_);
        r0 = r1;
    }
}

double NerfCudaTrainer::psnr_on(const NerfDataset& dataset, Vec3 background) {
    return nerf::mean_view_psnr(dataset, background,
                                [&](const Camera& camera) { return render_pixels(camera, bounds_, background, false); });
}

nerf::NerfTrainingState NerfCudaTrainer::save_state() const {
    const_cast<NerfCudaTrainer*>(this)->synchronize();
    nerf::NerfTrainingState s;
    s.step = step_;
    s.rng_state = 0;  // training draws are counter-based (seed, step)
    s.density_params = density_->params();
    s.colour_params = colour_->params();
    s.density_optimizer = density_->optimizer_state(stream_);
    s.colour_optimizer = colour_->optimizer_state(stream_);
    const nerf::OccupancyGrid grid = occupancy_grid();
    s.grid_density = grid.density();
    s.grid_bits = grid.bits();
    return s;
}

void NerfCudaTrainer::load_state(const nerf::NerfTrainingState& s) {
    synchronize();
    density_->load(s.density_params, s.density_optimizer, s.step, "density", stream_);
    colour_->load(s.colour_params, s.colour_optimizer, s.step, "colour", stream_);
    grid_->upload(s.grid_density, s.grid_bits, stream_);
    if (settings_.cull_occluded_cells) {  // snapshots keep no mask: nothing culled
        culled_.fill_bytes(0, stream_);
        occlusion_recent_.fill_bytes(nerf::kOcclusionMemory, stream_);
        refresh_occlusion(false);
    }
    FUSEDNGP_GPU_CHECK(cudaEventRecord(march_after_, stream_));
    step_ = s.step;
    last_ = {};
    forget_marches();
}

nerf::OccupancyGrid NerfCudaTrainer::occupancy_grid() const {
    return grid_->download((int)dataset_.aabb_scale, stream_);
}

json NerfCudaTrainer::diagnostics() const {
    static const char* names[kPhases] = {"occupancy_update", "march", "compaction", "forward_and_loss", "backward",
                                         "update"};
    json ms = json::object();
    double total = 0;
    for (int p = 0; p < kPhases; ++p) {
        const double mean = timed_steps_ ? phase_ms_[p] / (double)timed_steps_ : 0.0;
        ms[names[p]] = mean;
        total += mean;
    }
    ms["total"] = total;
    // The march's own time on its stream; "march" above is what the step
    // still waited for it (less, where it ran beside the previous step).
    ms["march_kernels"] = timed_steps_ ? march_kernels_ms_ / (double)timed_steps_ : 0.0;
    json d{{"step_ms", ms},
           {"timed_steps", timed_steps_},
           {"skipped_steps", skipped_steps_},
           {"loss_scale", loss_scale_.scale()},
           {"samples_per_step_budget", capacity_},
           {"last_step", {{"rays", last_.rays}, {"rays_kept", last_.rays_kept},
                          {"marched_samples", last_.marched_kept}, {"kept_samples", last_.samples_kept}}}};
    if (settings_.cull_occluded_cells) {  // a synchronous copy, as download() is
        FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream_));
        const std::vector<uint8_t> culled = culled_.download();
        d["culled_cells"] = nerf::fraction_of_set_bits(culled.data(), culled.size());
    }
    return d;
}

void NerfCudaTrainer::set_learning_rate(double lr) {
    density_->set_learning_rate(lr, stream_);
    colour_->set_learning_rate(lr, stream_);
}

std::vector<std::vector<float>> NerfCudaTrainer::marched_sample_t() {
    synchronize();
    const MarchSet& m = march_sets_[(step_ - 1) & 1];  // the newest finished step's
    const std::vector<uint32_t> first = m.first.download(), count = m.count.download();
    const std::vector<float> t = m.t.download();
    std::vector<std::vector<float>> rays(last_.rays);
    for (uint32_t r = 0; r < last_.rays; ++r)
        if (count[r] != gpu::kDroppedRay) rays[r].assign(t.begin() + first[r], t.begin() + first[r] + count[r]);
    return rays;
}

float NerfCudaTrainer::loss_and_gradients(const nerf::NerfBatch<float>& batch, std::vector<float>* density_grads,
                                          std::vector<float>* colour_grads) {
    synchronize();
    const uint32_t n = (uint32_t)batch.t.size();
    const uint32_t n_rays = (uint32_t)batch.n_rays();
    if (n > capacity_ || n_rays > max_rays_)
        throw InputError("loss_and_gradients: " + std::to_string(n) + " samples of " + std::to_string(n_rays) +
                         " rays do not fit the trainer's " + std::to_string(capacity_) + " samples");
    std::vector<float> positions(3 * (size_t)n), directions(3 * (size_t)n);
    for (uint32_t s = 0; s < n; ++s)
        for (int a = 0; a < 3; ++a) {
            positions[3 * s + a] = batch.positions(s, a);
            directions[3 * s + a] = batch.directions(s, a);
        }
    std::vector<uint32_t> first(n_rays), count(n_rays);
    for (uint32_t r = 0; r < n_rays; ++r) {
        first[r] = batch.first[r];
        count[r] = batch.first[r + 1] - batch.first[r];
    }
    auto up = [&](void* dst, const void* src, size_t bytes) {
        if (bytes > 0) FUSEDNGP_GPU_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
    };
    up(positions_.data(), positions.data(), positions.size() * sizeof(float));
    up(scratch_.data(), directions.data(), directions.size() * sizeof(float));
    gpu::launch_copy_columns(scratch_.data(), 3, colour_in_.data(), kColourInputs, 0, 3, n, stream_);
    up(t_.data(), batch.t.data(), n * sizeof(float));
    up(dt_.data(), batch.dt.data(), n * sizeof(float));
    up(ray_first_.data(), first.data(), n_rays * sizeof(uint32_t));
    up(ray_count_.data(), count.data(), n_rays * sizeof(uint32_t));
    // The batch's targets go into a march set: a march issued ahead is
    // drawn again at the next step.
    forget_marches();
    MarchSet& m = march_sets_[0];
    up(m.target.data(), batch.target.data(), 3 * (size_t)n_rays * sizeof(float));
    up(m.background.data(), batch.background.data(), 3 * (size_t)n_rays * sizeof(float));
    Readback init{};
    init.compact[0] = n;
    init.compact[1] = n_rays;
    init.compact[2] = n;
    up(step_state_.data(), &init, sizeof(Readback));
    run_networks_and_loss(n_rays, m.target.data(), m.background.data(), false, nullptr);
    Readback out{};
    FUSEDNGP_GPU_CHECK(cudaMemcpyAsync(&out, step_state_.data(), sizeof(Readback), cudaMemcpyDeviceToHost, stream_));
    FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream_));
    if (density_grads) *density_grads = density_->gradients();
    if (colour_grads) *colour_grads = colour_->gradients();
    return (float)out.loss_sum;
}

} // namespace fusedngp
