// NerfTraining: what the CLI, snapshots, export and the app need from a NeRF
// trainer, whichever backend runs it. CpuNerfTraining wraps the CPU reference
// (NerfTrainer<float>); the CUDA trainer (engine/nerf_cuda_trainer.h)
// implements the same calls on the GPU. create_nerf_training
// (engine/nerf_training_factory.h) picks one by backend name.
//
// A trainer built on a dataset without frames can still render, export and
// load a state: step() then throws InputError. That is how `render` and
// `export` open a snapshot without the training images.
#pragma once

#include "io/image.h"
#include "model/model.h"
#include "nerf/nerf_dataset.h"
#include "nerf/nerf_trainer.h"
#include "nerf/occupancy_grid.h"
#include "render/camera.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace fusedngp::nerf {

// Everything needed to resume training and to render: the same on both
// backends, so a snapshot written by one resumes on the other.
struct NerfTrainingState {
    uint64_t step = 0;
    uint64_t rng_state = 0;  // the trainer's sampling generator
    std::vector<float> density_params, colour_params;
    std::vector<std::pair<std::string, std::vector<float>>> density_optimizer, colour_optimizer;
    std::vector<float> grid_density;  // [n_cascades * 128^3], grid_index order
    std::vector<uint8_t> grid_bits;   // [n_cascades * 128^3 / 8]
};

class NerfTraining {
public:
    virtual ~NerfTraining() = default;

    virtual std::string backend_name() const = 0;  // "cpu", "cuda"

    // One training step. Returns the loss of the newest finished step (the
    // CUDA trainer runs a few steps ahead of what it reports).
    virtual float step() = 0;
    virtual uint64_t step_count() const = 0;
    // Rays and samples of the newest finished step.
    virtual uint32_t last_ray_count() const = 0;
    virtual size_t last_sample_count() const = 0;
    // Waits for all queued work (timing; no-op on the CPU).
    virtual void synchronize() {}

    // Inference with the optimizers' inference parameters (EMA average).
    // render_view and render_depth march through the view crop; psnr_on
    // ignores it.
    virtual Image render_view(const Camera& camera, Vec3 background) = 0;
    virtual double psnr_on(const NerfDataset& dataset, Vec3 background) = 0;
    // The expected termination depth per pixel (NerfTrainer::render_depth's
    // definition), 1 channel: the app's depth view.
    virtual Image render_depth(const Camera& camera) = 0;
    // The crop box of the views (model space, the app's and `render --crop`):
    // what lies outside it is not drawn. Default: none.
    virtual void set_view_crop(const Box3& crop) = 0;
    virtual Box3 view_crop() const = 0;

    virtual NerfTrainingState save_state() const = 0;
    // Throws InputError when the state does not fit (sizes, buffer names).
    virtual void load_state(const NerfTrainingState& state) = 0;

    // Host models (layout, names, groups; their own params are not kept current).
    virtual const Model<float>& density_model() const = 0;
    virtual const Model<float>& colour_model() const = 0;
    virtual std::vector<float> density_inference_params() const = 0;
    virtual std::vector<float> colour_inference_params() const = 0;
    // A host copy of the occupancy grid (densities, bits, threshold).
    virtual OccupancyGrid occupancy_grid() const = 0;

    virtual double learning_rate() const = 0;
    virtual void set_learning_rate(double lr) = 0;

    // Backend-specific figures worth recording (summary.json's
    // "diagnostics"): skipped steps (non-finite loss), the CUDA trainer's time per step phase.
    virtual json diagnostics() const { return json::object(); }
};

// The CPU reference behind NerfTraining.
class CpuNerfTraining : public NerfTraining {
public:
    CpuNerfTraining(const NerfDataset& dataset, const json& config, const NerfTrainerSettings& settings)
        : trainer_(dataset, config, settings) {}

    std::string backend_name() const override { return "cpu"; }
    float step() override { return trainer_.step(); }
    uint64_t step_count() const override { return trainer_.step_count(); }
    uint32_t last_ray_count() const override { return trainer_.rays_per_batch(); }
    size_t last_sample_count() const override { return trainer_.last_sample_count(); }
    Image render_view(const Camera& camera, Vec3 background) override { return trainer_.render_view(camera, background); }
    double psnr_on(const NerfDataset& dataset, Vec3 background) override { return trainer_.psnr_on(dataset, background); }
    Image render_depth(const Camera& camera) override { return trainer_.render_depth(camera); }
    void set_view_crop(const Box3& crop) override { trainer_.set_view_crop(crop); }
    Box3 view_crop() const override { return trainer_.view_crop(); }
    NerfTrainingState save_state() const override;
    void load_state(const NerfTrainingState& state) override;
    const Model<float>& density_model() const override { return trainer_.density_model(); }
    const Model<float>& colour_model() const override { return trainer_.colour_model(); }
    std::vector<float> density_inference_params() const override { return trainer_.density_inference_params(); }
    std::vector<float> colour_inference_params() const override { return trainer_.colour_inference_params(); }
    OccupancyGrid occupancy_grid() const override { return trainer_.occupancy_grid(); }
    double learning_rate() const override { return trainer_.learning_rate(); }
    void set_learning_rate(double lr) override { trainer_.set_learning_rate(lr); }
    json diagnostics() const override {
        json d{{"skipped_steps", trainer_.skipped_steps()}, {"last_step", {{"marched_samples", trainer_.last_sample_count()}}}};
        if (trainer_.settings().cull_occluded_cells) d["culled_cells"] = trainer_.occlusion_mask().fraction_culled();
        return d;
    }

    NerfTrainer<float>& trainer() { return trainer_; }

private:
    NerfTrainer<float> trainer_;
};

// The config's optional "sampling" section over instant-ngp's defaults (cone
// angle 0 for aabb_scale 1 scenes, 1/256 for larger ones). Throws ConfigError
// naming the field.
NerfTrainerSettings nerf_settings_from_config(const json& config, float aabb_scale, uint32_t rays_per_batch,
                                              uint64_t seed);

// The config with its grid encoding's finest level set by the data, as
// instant-ngp sets it by aabb_scale: where `encoding` is a grid (HashGrid,
// DenseGrid, TiledGrid, Grid) of more than one level without
// "per_level_scale", the levels are made to run from base_resolution to
// finest_resolution_for(train) cells per unit. Finer levels only fit each
// view's own pixels: on lego at 400x400, a finest level of 384 gave +0.9 dB
// over 2048 at 30 s. Any other config is returned as it is. The result is what
// snapshots keep.
json nerf_config_for_data(json config, const NerfDataset& train);
// Whether nerf_config_for_data sets the scale of `config` (a grid encoding
// of more than one level without "per_level_scale").
bool nerf_grid_scale_from_data(const json& config);
// About one cell per pixel at the scene's centre: the median over the frames
// of focal length / distance to (0.5, 0.5, 0.5), in [16, 4096].
double finest_resolution_for(const NerfDataset& train);
double per_level_scale_for(double finest_resolution, uint32_t base_resolution, uint32_t n_levels);

} // namespace fusedngp::nerf
