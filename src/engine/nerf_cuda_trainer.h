// NerfCudaTrainer: the NeRF mode on the GPU, behind NerfTraining. It
// composes the same components as the CPU trainer (nerf/nerf_trainer.h):
// two DeviceModels (density: hash grid -> MLP -> 16 outputs; colour: SH +
// identity -> MLP -> RGB), the occupancy grid (DeviceOccupancyGrid), ray
// marching, volume rendering and the loss as kernels whose per-ray math is
// the CPU reference's own host/device code. docs/NERF.md, "The CUDA
// trainer", has the data flow.
//
// A step draws its rays as the CPU does (training_rays.h) and marches them;
// the density model (inference) then gives every marched sample's density,
// and compaction keeps only the samples volume rendering composites (early
// termination) in a fixed budget (settings.samples_per_batch). Both models
// train on that budget, and the next steps' ray count adapts so the kept
// samples fill it (instant-ngp's scheme). Rays whose samples do not fit are
// dropped. The host runs up to kInFlight steps ahead of the GPU; the loss and
// counts reported are the newest finished step's. A step's march needs only
// the occupancy bits, so the next step's rays are drawn and marched on a
// second stream while this step trains (into the other of two march buffer
// sets), unless an occupancy update comes first.
#pragma once

#include "engine/device_model.h"
#include "engine/device_occupancy_grid.h"
#include "nerf/launch_nerf.h"
#include "nerf/nerf_training.h"
#include "nerf/ray_loss.h"
#include "optimizers/dynamic_loss_scale.h"

#include <array>
#include <memory>

namespace fusedngp {

class NerfCudaTrainer : public nerf::NerfTraining {
public:
    NerfCudaTrainer(const NerfDataset& dataset, const json& config, const nerf::NerfTrainerSettings& settings);
    ~NerfCudaTrainer() override;

    std::string backend_name() const override { return "cuda"; }
    float step() override;
    uint64_t step_count() const override { return step_; }
    uint32_t last_ray_count() const override { return last_.rays_kept; }
    size_t last_sample_count() const override { return last_.samples_kept; }
    // Samples the newest finished step marched (before compaction).
    size_t last_marched_sample_count() const { return last_.marched_kept; }
    void synchronize() override;

    Image render_view(const Camera& camera, Vec3 background) override;
    Image render_depth(const Camera& camera) override;
    double psnr_on(const NerfDataset& dataset, Vec3 background) override;
    void set_view_crop(const Box3& crop) override { crop_ = crop; }
    Box3 view_crop() const override { return crop_; }

    nerf::NerfTrainingState save_state() const override;
    void load_state(const nerf::NerfTrainingState& state) override;

    const Model<float>& density_model() const override { return density_host_; }
    const Model<float>& colour_model() const override { return colour_host_; }
    std::vector<float> density_inference_params() const override { return density_->inference_params(stream_); }
    std::vector<float> colour_inference_params() const override { return colour_->inference_params(stream_); }
    nerf::OccupancyGrid occupancy_grid() const override;

    double learning_rate() const override { return density_->learning_rate(); }
    void set_learning_rate(double lr) override;
    // Mean GPU time per step phase (ms, CUDA events) over the finished
    // steps, the skipped steps and the loss scale.
    json diagnostics() const override;

    // ---- beyond the interface (tests, benchmarks) ----
    // The loss of a given batch (the CPU trainer's NerfBatch) with the
    // current training parameters, and the gradients of both models (full
    // parameter vectors, the host layout). Synchronous.
    float loss_and_gradients(const nerf::NerfBatch<float>& batch, std::vector<float>* density_grads,
                             std::vector<float>* colour_grads);
    // The newest finished step's marched samples: t of each sample, per ray
    // (empty for a dropped ray). Synchronous.
    std::vector<std::vector<float>> marched_sample_t();
    // Rays the next step will draw (adapted to the sample budget).
    uint32_t rays_per_step() const { return n_rays_; }
    uint64_t skipped_steps() const { return skipped_steps_; }
    std::string describe() const;
    DeviceOccupancyGrid& device_grid() { return *grid_; }
    // The occluded-cell mask (sampling.cull_occluded_cells), for tests: a
    // host copy; a given culled bitfield (drops the marks, recomputes the
    // training bits); the update rule applied now.
    struct OcclusionState {
        std::vector<uint8_t> culled, visited, seen, training_bits, recent;
    };
    OcclusionState occlusion_state();
    void set_culled_cells(const std::vector<uint8_t>& culled);
    void set_occlusion_recent(const std::vector<uint8_t>& recent);  // a counter per cell
    void update_occlusion_mask();
    cudaStream_t stream() const { return stream_; }

private:
    static constexpr int kInFlight = 2;
    // A step's phases, timed by events recorded between them.
    static constexpr int kPhases = 6;  // occupancy update, march, compaction, forward + loss, backward, update
    struct Readback {
        uint32_t march[3];    // samples asked for, rays kept, samples kept
        uint32_t compact[3];  // the same after compaction
        unsigned int non_finite;
        double loss_sum;
    };
    struct Finished {
        float loss = 0;
        uint32_t rays = 0, rays_kept = 0, marched_rays = 0;
        size_t samples_asked = 0, samples_kept = 0, marched_asked = 0, marched_kept = 0;
    };

    void allocate_buffers();
    void upload_dataset();
    void update_occupancy();
    void density_values(const float* d_points, uint32_t n, float* d_sigma);
    // Forward, loss and backward over the sample buffers (rays already marched).
    // `encoded`: the density model's encoded input already holds the samples'
    // encoding (compact). `forward_done` (may be null) is recorded
    // after the loss.
    void run_networks_and_loss(uint32_t n_rays, const float* ray_target, const float* ray_background, bool encoded,
                               cudaEvent_t forward_done);
    void apply_updates();
    void retire(int slot);
    void adapt_ray_count();
    struct MarchSet;
    // Draws and marches step `step`'s rays (n_rays_, march_limit_) into
    // march_sets_[step & 1] on march_stream_.
    void issue_march(uint64_t step);
    void compact(MarchSet& m);
    void forget_marches();
    bool occupancy_step(uint64_t step) const;
    gpu::NerfMarchView march_view() const;
    // The training march's view: with cull_occluded_cells, the bits without
    // the culled cells, the full ones for the probe rays.
    gpu::NerfMarchView training_march_view() const;
    void refresh_occlusion(bool apply);
    void require_culling(const char* what) const;
    // Colour (3 channels) or depth (1: NerfTrainer::render_depth's
    // definition), rays marched through `box`.
    Image render_pixels(const Camera& camera, const Box3& box, Vec3 background, bool depth_only);
    void render_view_round(const gpu::NerfViewRays& rays, const gpu::NerfMarchView& grid, uint32_t per_ray,
                           const std::vector<uint32_t>& offsets);
    nerf::RayLoss ray_loss() const { return ray_loss_; }

    const NerfDataset& dataset_;
    json config_;
    nerf::NerfTrainerSettings settings_;
    Box3 bounds_;
    Box3 crop_ = unbounded_box();
    nerf::MarchSettings march_;
    nerf::RayLoss ray_loss_;
    Model<float> density_host_, colour_host_;
    uint64_t ray_key_;

    cudaStream_t stream_ = nullptr;
    cudaStream_t march_stream_ = nullptr;  // marches run here, a step ahead
    // The point on stream_ that every march follows: recorded after each
    // write of the occupancy grid, and before an in-line march (which then
    // follows everything issued before it).
    cudaEvent_t march_after_ = nullptr;
    std::unique_ptr<DeviceModel> density_, colour_;
    std::unique_ptr<DeviceOccupancyGrid> grid_;
    // The occluded-cell mask (sampling.cull_occluded_cells; grid layout).
    gpu::DeviceBuffer<uint8_t> culled_, visited_, seen_, training_bits_;
    gpu::DeviceBuffer<uint8_t> occlusion_recent_;  // a counter per cell

    uint32_t capacity_ = 0;  // samples per step after compaction (the networks' batch)
    uint32_t march_capacity_ = 0;  // marched samples per step, at most
    uint32_t view_capacity_ = 0;   // samples per run of a view round (>= capacity_)
    uint32_t march_limit_ = 0;     // marched samples of the newest march (adapted; the density pass's batch)
    uint32_t max_rays_ = 0;
    gpu::DeviceBuffer<Camera> cameras_;
    gpu::DeviceBuffer<uint8_t> images_;
    gpu::DeviceBuffer<float> positions_, colour_in_, t_, dt_;
    gpu::DeviceBuffer<float> density_out_, colour_raw_, sigma_, rgb_;
    gpu::DeviceBuffer<float> d_sigma_, d_rgb_, d_colour_raw_, d_colour_in_, d_density_out_, scratch_;
    gpu::DeviceBuffer<uint32_t> ray_first_, ray_count_;
    gpu::DeviceBuffer<uint32_t> kept_source_row_;  // NerfCompactArgs::source_row
    // A step's rays and marched samples, before compaction; two sets, so
    // the next step's march can run while this step trains.
    static constexpr uint64_t kNoStep = ~0ull;
    struct MarchSet {
        gpu::DeviceBuffer<float> positions, directions, t, dt;
        gpu::DeviceBuffer<uint32_t> first, count;
        gpu::DeviceBuffer<float> target, background;  // [rays][3]
        gpu::DeviceBuffer<uint32_t> counters;          // NerfTrainingRaysArgs::counters
        gpu::DeviceBuffer<uint32_t> round_masks;       // NerfTrainingRaysArgs::round_masks
        gpu::DeviceBuffer<uint8_t> scan_temp;
        uint64_t step = kNoStep;  // the step whose rays it holds
        uint32_t n_rays = 0, limit = 0;
        cudaEvent_t done = nullptr;  // its march finished (march_stream_)
        cudaEvent_t free = nullptr;  // the step that last used it finished (stream_)
    };
    std::array<MarchSet, 2> march_sets_;
    // Each march's own GPU time (march_stream_), by step % 4: a step's pair
    // is read when the step retires, before the march 4 steps later reuses it.
    std::array<std::array<cudaEvent_t, 2>, 4> march_timing_{};
    bool march_ahead_ = true;  // FUSEDNGP_NERF_MARCH_AHEAD=0: each march in line, for A/B runs
    bool march_skip_mask_ = true;  // FUSEDNGP_NERF_SKIP_MASK=0: every round tested, for A/B runs
    // The colour network's encoded column of the first density feature, where
    // the trainer writes the features itself (DeviceModel::encode_columns_by_caller);
    // -1: they go through colour_in_ and its encoding.
    int colour_feature_column_ = -1;
    // Where a step's density features go into the colour network's input and
    // where their gradient comes back: rows of `stride` floats from `column`.
    // input_gradient: what the colour network's backward writes its input
    // gradient to (nullptr where the features are in its encoded rows).
    struct ColourFeatures {
        float* rows;
        const float* gradient;
        float* input_gradient;
        uint32_t stride, column;
    };
    ColourFeatures colour_features();
    gpu::DeviceBuffer<float> marched_density_out_;
    gpu::DeviceBuffer<Readback> step_state_;  // this step's counters, flag and loss
    gpu::DeviceBuffer<uint32_t> view_counts_, view_offsets_;
    gpu::DeviceBuffer<float> view_rgb_;
    gpu::DeviceBuffer<gpu::NerfViewRayState> view_state_;
    gpu::DeviceBuffer<uint8_t> scan_temp_;

    struct Slot {
        cudaEvent_t done = nullptr;
        std::array<cudaEvent_t, kPhases + 1> phase{};
        Readback* host = nullptr;  // pinned
        uint32_t rays = 0;
        uint64_t step = 0;
        float loss_scale = 0;  // the scale this step ran with
        bool pending = false;
    };
    std::array<Slot, kInFlight> slots_{};
    void apply_loss_scale();
    uint32_t n_rays_ = 0;
    uint64_t step_ = 0;
    uint64_t skipped_steps_ = 0;
    DynamicLossScale loss_scale_{LossScaleSettings{}};  // set from nerf_loss_scale_settings()
    Finished last_;
    std::array<double, kPhases> phase_ms_{};  // sums over timed_steps_
    double march_kernels_ms_ = 0;             // sum over timed_steps_ (march_timing_)
    uint64_t timed_steps_ = 0;
};

} // namespace fusedngp
