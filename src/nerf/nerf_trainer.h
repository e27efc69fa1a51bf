// The NeRF mode's CPU trainer: two Models (density, colour), the occupancy
// grid, ray marching and volume rendering composed into one training step.
//
// Models (config sections as configs/nerf.json):
//   density: {encoding, network}, position (3, unit cube) -> 16 outputs;
//            sigma = trunc_exp(output 0) (instant-ngp: output 0 is log-density).
//   colour:  {dir_encoding, rgb_network}, [ (dir + 1) / 2 (3), density outputs (16) ]
//            = 19 dims -> 3; rgb = sigmoid(outputs). dir_encoding must encode
//            dims 0-2 (SH takes [0,1]^3) and pass the 16 features on (Composite
//            SH n_dims_to_encode 3 + Identity).
//   Both networks must have output_activation None: the trainer applies the
//   activations itself (so their gradients are in one place and the fp64
//   check covers them); anything else is a ConfigError.
// One optimizer per model, both from the config's "optimizer" section; the
// loss from "loss" (mean over rays x 3 channels of the ray colours).
//
// A step: rays_per_batch random (frame, pixel) pairs and jitter in the pixel
// (nerf/training_rays.h: a function of seed, step and ray, shared with the GPU)
// -> march through the occupancy grid (cap max_samples_per_ray) -> density
// and colour models on all samples at once -> volume rendering against a
// random background per ray, target = rgb * alpha + bg * (1 - alpha) ->
// backward through render_ray_backward, sigmoid, trunc_exp, colour model
// (its input gradient's feature part joins the density outputs' gradient),
// density model -> optimizer steps. Every occupancy_update_interval steps
// the grid is updated with sigma of the density model.
//
// Templated on the scalar so the fp64 gradient check runs the same code;
// marching (positions, t, dt) stays float, as on the GPU.
#pragma once

#include "losses/loss.h"
#include "model/model.h"
#include "nerf/nerf_dataset.h"
#include "nerf/nerf_model_layout.h"
#include "nerf/occlusion_mask.h"
#include "nerf/occupancy_grid.h"
#include "nerf/ray_marching_math.h"
#include "nerf/training_rays.h"
#include "io/image.h"

#include <functional>
#include <memory>
#include <vector>

namespace fusedngp::nerf {

// The two models' {encoding, network} configs from a NeRF config; ConfigError
// for a missing section or an output activation other than None.
json nerf_density_model_config(const json& config);
json nerf_colour_model_config(const json& config);

// The box training and rendering rays are marched through: the scene's box
// (aabb_scale) within the coarsest cascade.
Box3 nerf_march_bounds(const NerfDataset& dataset, int n_cascades);

// Mean over the dataset's frames of the PSNR (dB, peak 1) of render(camera)
// against the frame's image composited on `background` (NeRF-synthetic's
// protocol with a white background).
double mean_view_psnr(const NerfDataset& dataset, Vec3 background, const std::function<Image(const Camera&)>& render);
// The same views' mean PSNR and mean SSIM (io/metrics.h: 11 x 11 Gaussian
// window), for the final evaluation (SSIM costs more than PSNR).
struct ViewMetrics {
    double psnr = 0, ssim = 0;
};
ViewMetrics mean_view_metrics(const NerfDataset& dataset, Vec3 background,
                              const std::function<Image(const Camera&)>& render);

struct NerfTrainerSettings {
    uint32_t rays_per_batch = 1024;
    int max_samples_per_ray = 1024;
    float cone_angle = 0.f;               // ray_marching_math.h; 0: fixed step kMinStep
    uint32_t occupancy_update_interval = 16;  // 0: never update (march every cell)
    OccupancyGridSettings occupancy;
    uint64_t seed = 1337;
    // The CUDA trainer's sample budget: it adapts the rays per step so a
    // step marches about this many samples (instant-ngp: 2^18). The CPU
    // trainer keeps rays_per_batch fixed.
    uint32_t samples_per_batch = 1u << 18;
    // Training rays through pixel centres (training_rays.h); false: jittered
    // inside the pixel.
    bool snap_to_pixel_centers = true;
    TrainingBackground training_background;  // training_rays.h
    // The training march skips the occupied cells no training ray has seen
    // (nerf/occlusion_mask.h); from the end of the grid's warm-up.
    bool cull_occluded_cells = false;
};

// One batch of rays and their samples, as drawn by a step (kept so a test can
// evaluate the loss of the very same batch again).
template <typename T>
struct NerfBatch {
    std::vector<T> target;       // [rays][3], composited on bg
    std::vector<T> background;   // [rays][3]
    std::vector<uint32_t> first; // [rays + 1]: samples of ray r are first[r] .. first[r+1]-1
    Matrix<T> positions;         // [samples][3]
    Matrix<T> directions;        // [samples][3], (dir + 1) / 2
    std::vector<T> dt, t;        // [samples]
    size_t n_rays() const { return background.size() / 3; }
};

template <typename T>
class NerfTrainer {
public:
    // `config`: {loss, optimizer, encoding, network, dir_encoding, rgb_network}.
    // The dataset is kept by reference: it must outlive the trainer.
    NerfTrainer(const NerfDataset& dataset, const json& config, const NerfTrainerSettings& settings = {});

    // One training step; returns the loss of its batch before the update. A
    // batch whose loss is not finite leaves both models and optimizers
    // untouched and is counted in skipped_steps() (the step count goes on,
    // as the CUDA trainer's, so the occupancy schedule does not stall).
    T step();
    uint32_t step_count() const { return step_; }
    uint64_t skipped_steps() const { return skipped_steps_; }

    // A batch drawn from the trainer's generator (advances it).
    NerfBatch<T> sample_batch();
    // Loss of a batch with the current parameters; with gradients, also
    // dL/dparams of both models (resized, overwritten). Uses the models'
    // training forward (no EMA).
    // With `used`, each ray's count of composited samples (render_ray's `used`).
    T loss_and_gradients(const NerfBatch<T>& batch, std::vector<T>* density_grads, std::vector<T>* colour_grads,
                         std::vector<int>* used = nullptr);

    // Inference (with the optimizers' inference parameters, EMA if any):
    // a W x H RGB image of `camera`, pixel centres, early termination,
    // marched through the view crop (below).
    Image render_view(const Camera& camera, Vec3 background) const;
    // The same rays' expected termination depth, sum_i w_i t_i / opacity
    // (distance along the unit ray in model units), as a 1-channel image; 0
    // where the ray's opacity is at most kMinDepthOpacity (nothing there).
    Image render_depth(const Camera& camera) const;
    static constexpr double kMinDepthOpacity = 0.05;
    // Mean over the dataset's frames of the PSNR (dB, peak 1) of render_view
    // against the frame's image composited on `background`, without the crop.
    double psnr_on(const NerfDataset& dataset, Vec3 background) const;
    // The crop box of render_view and render_depth (model space): rays are
    // marched through its common part with march_bounds(), so what lies
    // outside it is not drawn. Training and psnr_on ignore it.
    void set_view_crop(const Box3& crop) { crop_ = crop; }
    const Box3& view_crop() const { return crop_; }

    Model<T>& density_model() { return density_; }
    Model<T>& colour_model() { return colour_; }
    const Model<T>& density_model() const { return density_; }
    const Model<T>& colour_model() const { return colour_; }
    std::vector<T> density_inference_params() const;
    std::vector<T> colour_inference_params() const;
    Optimizer<T>& density_optimizer() { return *density_optimizer_; }
    Optimizer<T>& colour_optimizer() { return *colour_optimizer_; }
    double learning_rate() const { return density_optimizer_->learning_rate(); }
    void set_learning_rate(double lr);
    uint32_t rays_per_batch() const { return settings_.rays_per_batch; }
    // The rays of the following steps (> 0): a test replays the CUDA trainer's adaptive counts.
    void set_rays_per_batch(uint32_t n);
    const NerfTrainerSettings& settings() const { return settings_; }
    // The model-space box rays are marched through (scene box within the grid).
    const Box3& march_bounds() const { return bounds_; }
    const MarchSettings& march_settings() const { return march_; }
    // Resuming: the step count (both optimizers keep theirs) and the sampler.
    void set_step_count(uint32_t step);
    uint64_t rng_state() const { return rng_.state(); }
    void set_rng_state(uint64_t state) { rng_.set_state(state); }
    const OccupancyGrid& occupancy_grid() const { return grid_; }
    OccupancyGrid& occupancy_grid() { return grid_; }
    const OcclusionMask& occlusion_mask() const { return occlusion_; }
    OcclusionMask& occlusion_mask() { return occlusion_; }
    // The bits training rays other than the probes march (the grid's bits
    // without the culled cells; the grid's own bits when culling is off).
    const std::vector<uint8_t>& training_march_bits() const;
    // Samples of the last batch (marching statistics).
    size_t last_sample_count() const { return last_samples_; }

private:
    // rgb [rays][3]; with `depth`, also the depth of render_depth [rays] (resized by the caller).
    void render_rays(const std::vector<Ray>& rays, const Box3& box, const T* background, std::vector<T>& rgb,
                     std::vector<T>* depth = nullptr) const;
    Image render_pixels(const Camera& camera, const Box3& box, Vec3 background, bool depth_only) const;
    void density_at(const Matrix<float>& points, Matrix<float>& sigma) const;
    void update_occupancy();
    void note_occlusion(const NerfBatch<T>& batch, const std::vector<int>& used);

    const NerfDataset& dataset_;
    NerfTrainerSettings settings_;
    Box3 bounds_;
    Box3 crop_ = unbounded_box();
    MarchSettings march_;
    Model<T> density_;
    Model<T> colour_;
    std::unique_ptr<Loss<T>> loss_;
    std::unique_ptr<Optimizer<T>> density_optimizer_;
    std::unique_ptr<Optimizer<T>> colour_optimizer_;
    OccupancyGrid grid_;
    OcclusionMask occlusion_;
    std::vector<uint8_t> training_bits_;  // with cull_occluded_cells: grid bits & ~culled, per batch
    Rng rng_;             // occupancy grid updates
    uint64_t ray_key_;    // training rays (training_rays.h)
    uint64_t batches_drawn_ = 0;
    uint32_t step_ = 0;
    uint64_t skipped_steps_ = 0;
    size_t last_samples_ = 0;
    std::vector<T> density_grads_, colour_grads_;
};

} // namespace fusedngp::nerf
