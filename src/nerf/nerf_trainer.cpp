#include "nerf/nerf_trainer.h"


#include "core/errors.h"
#include "core/json_fields.h"
#include "io/metrics.h"
#include "losses/factory.h"
#include "nerf/training_rays.h"
#include "nerf/volume_rendering.h"
#include "optimizers/factory.h"

#include <algorithm>
#include <cmath>

namespace fusedngp::nerf {

namespace {

// Rays per inference chunk of render_view, and points per chunk of the grid update.
constexpr size_t kRenderChunkRays = 4096;
constexpr Eigen::Index kDensityChunk = 1 << 16;

template <typename T>
T sigmoid(T x) { return (T)1 / ((T)1 + scalar_exp(-x)); }

// The trainer applies both activations itself, so the networks must not.
void require_no_output_activation(const json& config, const std::string& section) {
    if (!config.contains(section)) throw ConfigError(section, "missing section");
    const json& net = config.at(section);
    const std::string act = get_string(net, section, "output_activation", "None");
    if (act != "None")
        throw ConfigError(section + ".output_activation",
                          "must be None (the NeRF trainer applies trunc_exp / sigmoid itself), got " + act);
}

json model_config(const json& config, const std::string& encoding, const std::string& network) {
    if (!config.contains(encoding)) throw ConfigError(encoding, "missing section");
    return json{{"encoding", config.at(encoding)}, {"network", config.at(network)}};
}


} // namespace

Box3 nerf_march_bounds(const NerfDataset& dataset, int n_cascades) {
    return intersection(nerf_scene_box(dataset), cascade_box(n_cascades - 1));
}

// Renders every frame of the dataset and hands each render with its target
// (the frame's image composited on the background) to `score`.
static void for_each_view(const NerfDataset& dataset, Vec3 background,
                          const std::function<Image(const Camera&)>& render,
                          const std::function<void(const Image& rendered, const Image& target)>& score) {
    if (dataset.frames.empty()) throw InputError(dataset.source + ": no frames to evaluate");
    const float bg[3] = {background.x, background.y, background.z};
    for (size_t f = 0; f < dataset.frames.size(); ++f) {
        Camera camera = dataset.frames[f].camera;
        camera.intrinsics.width = dataset.images.width;
        camera.intrinsics.height = dataset.images.height;
        const Image rendered = render(camera);
        Image target = rendered;
        for (uint32_t y = 0; y < dataset.images.height; ++y)
            for (uint32_t x = 0; x < dataset.images.width; ++x)
                composite_pixel(dataset.images.frame(f) + ((size_t)y * dataset.images.width + x) * 4, bg,
                                &target.pixels[target.index((int)x, (int)y, 0)]);
        score(rendered, target);
    }
}

double mean_view_psnr(const NerfDataset& dataset, Vec3 background, const std::function<Image(const Camera&)>& render) {
    double sum = 0;
    for_each_view(dataset, background, render, [&](const Image& r, const Image& t) { sum += psnr(r, t); });
    return sum / (double)dataset.frames.size();
}

ViewMetrics mean_view_metrics(const NerfDataset& dataset, Vec3 background,
                              const std::function<Image(const Camera&)>& render) {
    ViewMetrics m;
    for_each_view(dataset, background, render, [&](const Image& r, const Image& t) {
        m.psnr += psnr(r, t);
        m.ssim += ssim(r, t);
    });
    m.psnr /= (double)dataset.frames.size();
    m.ssim /= (double)dataset.frames.size();
    return m;
}

json nerf_density_model_config(const json& config) {
    require_no_output_activation(config, "network");
    return model_config(config, "encoding", "network");
}

json nerf_colour_model_config(const json& config) {
    require_no_output_activation(config, "rgb_network");
    return model_config(config, "dir_encoding", "rgb_network");
}

template <typename T>
NerfTrainer<T>::NerfTrainer(const NerfDataset& dataset, const json& config, const NerfTrainerSettings& settings)
    : dataset_(dataset),
      settings_(settings),
      density_(3, kDensityOutputs, nerf_density_model_config(config), derive_seed(settings.seed, 1)),
      colour_(kColourInputs, 3, nerf_colour_model_config(config), derive_seed(settings.seed, 2)),
      grid_((int)dataset.aabb_scale, settings.occupancy),
      occlusion_(grid_.n_cascades()),
      rng_(derive_seed(settings.seed, 3)),
      ray_key_(derive_seed(settings.seed, 4)) {
    if (!config.contains("loss")) throw ConfigError("loss", "missing section");
    if (!config.contains("optimizer")) throw ConfigError("optimizer", "missing section");
    loss_ = create_loss<T>(config.at("loss"), "loss");
    density_optimizer_ = create_optimizer<T>(config.at("optimizer"), "optimizer");
    colour_optimizer_ = create_optimizer<T>(config.at("optimizer"), "optimizer");
    density_optimizer_->allocate(density_.param_groups());
    colour_optimizer_->allocate(colour_.param_groups());
    march_.cone_angle = settings_.cone_angle;
    march_.n_cascades = grid_.n_cascades();
    march_.max_samples = settings_.max_samples_per_ray;
    bounds_ = nerf_march_bounds(dataset_, grid_.n_cascades());
}

template <typename T>
void NerfTrainer<T>::set_rays_per_batch(uint32_t n) {
    if (n == 0) throw std::invalid_argument("NerfTrainer: rays per batch must be positive");
    settings_.rays_per_batch = n;
}

template <typename T>
NerfBatch<T> NerfTrainer<T>::sample_batch() {
    const uint32_t n_rays = settings_.rays_per_batch;
    const NerfImages& images = dataset_.images;
    NerfBatch<T> b;
    b.target.resize(3 * (size_t)n_rays);
    b.background.resize(3 * (size_t)n_rays);
    b.first.assign(1, 0);
    std::vector<float> pos, dir;
    const uint64_t batch_index = batches_drawn_++;
    // From the grid as it is now (an update, a restored snapshot, a test's set_density).
    if (settings_.cull_occluded_cells) occlusion_.training_bits(grid_.bits(), training_bits_);
    for (uint32_t r = 0; r < n_rays; ++r) {
        TrainingRayDraw d = draw_training_ray(ray_key_, batch_index, r, (uint32_t)dataset_.frames.size(),
                                              images.width, images.height);
        apply_training_background(settings_.training_background, d);
        T* bg = &b.background[3 * r];
        float target[3];
        composite_pixel(images.frame(d.frame) + ((size_t)d.y * images.width + d.x) * 4, d.background, target);
        for (int c = 0; c < 3; ++c) {
            bg[c] = (T)d.background[c];
            b.target[3 * r + c] = (T)target[c];
        }
        float px = 0, py = 0;
        training_ray_pixel(d, settings_.snap_to_pixel_centers, &px, &py);
        const Ray ray = camera_ray(dataset_.frames[d.frame].camera, px, py);
        const uint8_t* bits = occlusion_probe_ray(r) ? grid_.bits().data() : training_march_bits().data();
        march_ray(ray.origin, ray.direction, bounds_, d.march_jitter, bits, march_,
                  [&](Vec3 p, float t, float dt) {
                      for (int a = 0; a < 3; ++a) {
                          pos.push_back(p[a]);
                          dir.push_back(0.5f * (ray.direction[a] + 1.f));
                      }
                      b.t.push_back((T)t);
                      b.dt.push_back((T)dt);
                  },
                  grid_.skip_mask().data());
        b.first.push_back((uint32_t)b.t.size());
    }
    const Eigen::Index n = (Eigen::Index)b.t.size();
    b.positions.resize(n, 3);
    b.directions.resize(n, 3);
    for (Eigen::Index s = 0; s < n; ++s)
        for (int a = 0; a < 3; ++a) {
            b.positions(s, a) = (T)pos[3 * s + a];
            b.directions(s, a) = (T)dir[3 * s + a];
        }
    return b;
}

template <typename T>
T NerfTrainer<T>::loss_and_gradients(const NerfBatch<T>& b, std::vector<T>* density_grads,
                                     std::vector<T>* colour_grads, std::vector<int>* used) {
    const size_t n_rays = b.n_rays();
    const Eigen::Index n = b.positions.rows();
    // Per-sample activations.
    Matrix<T> density_out, colour_in, colour_raw;
    std::vector<T> sigma(n), rgb(3 * (size_t)n);
    if (n > 0) {
        density_.forward(b.positions, density_out);
        colour_in.resize(n, kColourInputs);
        colour_in.leftCols(3) = b.directions;
        colour_in.rightCols(kDensityOutputs) = density_out;
        colour_.forward(colour_in, colour_raw);
        for (Eigen::Index s = 0; s < n; ++s) {
            sigma[s] = trunc_exp(density_out(s, 0));
            for (int c = 0; c < 3; ++c) rgb[3 * s + c] = sigmoid(colour_raw(s, c));
        }
    }
    // Per-ray volume rendering.
    Matrix<T> pred((Eigen::Index)n_rays, 3), target((Eigen::Index)n_rays, 3), dpred;
    std::vector<RayResult<T>> results(n_rays);
    auto ray_samples = [&](size_t r) {
        RaySamples<T> rs;
        const uint32_t f = b.first[r];
        rs.n = (int)(b.first[r + 1] - f);
        rs.sigma = sigma.data() + f;
        rs.rgb = rgb.data() + 3 * (size_t)f;
        rs.dt = b.dt.data() + f;
        rs.t = b.t.data() + f;
        return rs;
    };
    for (size_t r = 0; r < n_rays; ++r) {
        results[r] = render_ray(ray_samples(r), &b.background[3 * r]);
        for (int c = 0; c < 3; ++c) {
            pred((Eigen::Index)r, c) = results[r].rgb[c];
            target((Eigen::Index)r, c) = b.target[3 * r + c];
        }
    }
    if (used) {
        used->resize(n_rays);
        for (size_t r = 0; r < n_rays; ++r) (*used)[r] = results[r].used;
    }
    const bool want_grads = density_grads || colour_grads;
    const T loss = loss_->evaluate(pred, target, want_grads ? &dpred : nullptr);
    if (!want_grads) return loss;
    if (n == 0) {
        if (density_grads) density_grads->assign(density_.n_params(), (T)0);
        if (colour_grads) colour_grads->assign(colour_.n_params(), (T)0);
        return loss;
    }
    // Backward through the rendering: dL/dsigma and dL/drgb per sample.
    std::vector<T> d_sigma(n), d_rgb(3 * (size_t)n);
    for (size_t r = 0; r < n_rays; ++r) {
        RayOutputGrad<T> g;
        for (int c = 0; c < 3; ++c) g.rgb[c] = dpred((Eigen::Index)r, c);
        const uint32_t f = b.first[r];
        render_ray_backward(ray_samples(r), results[r], g, RayInputGrad<T>{d_sigma.data() + f, d_rgb.data() + 3 * (size_t)f});
    }
    // Through the sigmoid, then the colour model (params and input).
    Matrix<T> d_colour_raw(n, 3), d_colour_in;
    for (Eigen::Index s = 0; s < n; ++s)
        for (int c = 0; c < 3; ++c) {
            const T y = rgb[3 * s + c];
            d_colour_raw(s, c) = d_rgb[3 * s + c] * y * ((T)1 - y);
        }
    std::vector<T> local_colour;
    colour_.backward(colour_in, d_colour_raw, colour_grads ? *colour_grads : local_colour, &d_colour_in);
    // The density outputs feed the colour model (all 16) and, output 0, sigma.
    Matrix<T> d_density_out = d_colour_in.rightCols(kDensityOutputs);
    for (Eigen::Index s = 0; s < n; ++s) d_density_out(s, 0) += d_sigma[s] * trunc_exp_grad(density_out(s, 0));
    std::vector<T> local_density;
    density_.backward(b.positions, d_density_out, density_grads ? *density_grads : local_density);
    return loss;
}

template <typename T>
T NerfTrainer<T>::step() {
    if (dataset_.frames.empty()) throw InputError(dataset_.source + ": no frames to train on");
    if (settings_.occupancy_update_interval > 0 && step_ % settings_.occupancy_update_interval == 0)
        update_occupancy();
    const NerfBatch<T> batch = sample_batch();
    last_samples_ = batch.t.size();
    std::vector<int> used;
    const T loss = loss_and_gradients(batch, &density_grads_, &colour_grads_,
                                      settings_.cull_occluded_cells ? &used : nullptr);
    if (settings_.cull_occluded_cells) note_occlusion(batch, used);
    ++step_;
    if (!std::isfinite((double)loss)) {
        ++skipped_steps_;
        return loss;
    }
    density_optimizer_->step(density_.params().data(), density_grads_.data());
    colour_optimizer_->step(colour_.params().data(), colour_grads_.data());
    return loss;
}

// sigma at points with the current (training) parameters, as instant-ngp's
// grid update; chunked so the grid's 128^3 points never sit in one matrix.
template <typename T>
void NerfTrainer<T>::density_at(const Matrix<float>& points, Matrix<float>& out) const {
    const Eigen::Index n = points.rows();
    out.resize(n, 1);
    Matrix<T> in, raw;
    for (Eigen::Index s0 = 0; s0 < n; s0 += kDensityChunk) {
        const Eigen::Index m = std::min(kDensityChunk, n - s0);
        in = points.middleRows(s0, m).template cast<T>();
        density_.inference(in, raw);
        for (Eigen::Index i = 0; i < m; ++i) out(s0 + i, 0) = (float)trunc_exp(raw(i, 0));
    }
}

template <typename T>
void NerfTrainer<T>::update_occupancy() {
    grid_.update([this](const Matrix<float>& p, Matrix<float>& d) { density_at(p, d); }, step_, rng_);
    if (!settings_.cull_occluded_cells) return;
    // Before the warm-up ends the grid still marches (nearly) everything and
    // its densities are not yet the scene's: nothing is culled from them.
    if (step_ >= settings_.occupancy.warmup_steps) occlusion_.update();
    else occlusion_.clear_marks();
}

template <typename T>
const std::vector<uint8_t>& NerfTrainer<T>::training_march_bits() const {
    return settings_.cull_occluded_cells ? training_bits_ : grid_.bits();
}

// Every sample of the batch in its cell: seen when the ray composited it.
template <typename T>
void NerfTrainer<T>::note_occlusion(const NerfBatch<T>& b, const std::vector<int>& used) {
    for (size_t r = 0; r < b.n_rays(); ++r)
        for (uint32_t s = b.first[r]; s < b.first[r + 1]; ++s) {
            const Vec3 p{(float)b.positions((Eigen::Index)s, 0), (float)b.positions((Eigen::Index)s, 1),
                         (float)b.positions((Eigen::Index)s, 2)};
            occlusion_.note_sample(p, (float)b.dt[s], (int)(s - b.first[r]) < used[r]);
        }
}

// Colours of whole rays (pixel centres, no jitter) with the inference parameters.
template <typename T>
void NerfTrainer<T>::render_rays(const std::vector<Ray>& rays, const Box3& box, const T* background,
                                 std::vector<T>& out, std::vector<T>* depth) const {
    std::vector<uint32_t> first(1, 0);
    std::vector<float> pos, dir, ts, dts;
    for (const Ray& ray : rays) {
        march_ray(ray.origin, ray.direction, box, 0.f, grid_.bits().data(), march_, [&](Vec3 p, float t, float dt) {
            for (int a = 0; a < 3; ++a) {
                pos.push_back(p[a]);
                dir.push_back(0.5f * (ray.direction[a] + 1.f));
            }
            ts.push_back(t);
            dts.push_back(dt);
        }, grid_.skip_mask().data());
        first.push_back((uint32_t)ts.size());
    }
    const Eigen::Index n = (Eigen::Index)ts.size();
    std::vector<T> sigma(n), rgb(3 * (size_t)n), t(ts.begin(), ts.end()), dt(dts.begin(), dts.end());
    if (n > 0) {
        Matrix<T> positions(n, 3), colour_in(n, kColourInputs), density_out, colour_raw;
        for (Eigen::Index s = 0; s < n; ++s)
            for (int a = 0; a < 3; ++a) {
                positions(s, a) = (T)pos[3 * s + a];
                colour_in(s, a) = (T)dir[3 * s + a];
            }
        density_.inference(positions, density_out, density_optimizer_->inference_params(density_.params().data()));
        colour_in.rightCols(kDensityOutputs) = density_out;
        colour_.inference(colour_in, colour_raw, colour_optimizer_->inference_params(colour_.params().data()));
        for (Eigen::Index s = 0; s < n; ++s) {
            sigma[s] = trunc_exp(density_out(s, 0));
            for (int c = 0; c < 3; ++c) rgb[3 * s + c] = sigmoid(colour_raw(s, c));
        }
    }
    out.resize(3 * rays.size());
    for (size_t r = 0; r < rays.size(); ++r) {
        RaySamples<T> rs;
        rs.n = (int)(first[r + 1] - first[r]);
        rs.sigma = sigma.data() + first[r];
        rs.rgb = rgb.data() + 3 * (size_t)first[r];
        rs.dt = dt.data() + first[r];
        rs.t = t.data() + first[r];
        const RayResult<T> res = render_ray(rs, background);
        for (int c = 0; c < 3; ++c) out[3 * r + c] = res.rgb[c];
        if (depth) (*depth)[r] = res.opacity > (T)kMinDepthOpacity ? res.depth / res.opacity : (T)0;
    }
}

template <typename T>
Image NerfTrainer<T>::render_pixels(const Camera& camera, const Box3& box, Vec3 background, bool depth_only) const {
    Image img;
    img.width = (int)camera.intrinsics.width;
    img.height = (int)camera.intrinsics.height;
    img.channels = depth_only ? 1 : 3;
    img.pixels.resize(img.pixel_count() * (size_t)img.channels);
    const T bg[3] = {(T)background.x, (T)background.y, (T)background.z};
    std::vector<Ray> rays;
    std::vector<T> rgb, depth(kRenderChunkRays);
    for (size_t p0 = 0; p0 < img.pixel_count(); p0 += kRenderChunkRays) {
        const size_t m = std::min(kRenderChunkRays, img.pixel_count() - p0);
        rays.clear();
        for (size_t i = p0; i < p0 + m; ++i)
            rays.push_back(camera_ray(camera, (float)(i % img.width) + 0.5f, (float)(i / img.width) + 0.5f));
        render_rays(rays, box, bg, rgb, depth_only ? &depth : nullptr);
        const std::vector<T>& values = depth_only ? depth : rgb;
        for (size_t i = 0; i < m * (size_t)img.channels; ++i) img.pixels[(size_t)img.channels * p0 + i] = (float)values[i];
    }
    return img;
}

template <typename T>
Image NerfTrainer<T>::render_view(const Camera& camera, Vec3 background) const {
    return render_pixels(camera, intersection(bounds_, crop_), background, false);
}

template <typename T>
Image NerfTrainer<T>::render_depth(const Camera& camera) const {
    return render_pixels(camera, intersection(bounds_, crop_), Vec3{0, 0, 0}, true);
}

template <typename T>
double NerfTrainer<T>::psnr_on(const NerfDataset& dataset, Vec3 background) const {
    return mean_view_psnr(dataset, background,
                          [&](const Camera& camera) { return render_pixels(camera, bounds_, background, false); });
}

template <typename T>
std::vector<T> NerfTrainer<T>::density_inference_params() const {
    const T* p = density_optimizer_->inference_params(density_.params().data());
    return std::vector<T>(p, p + density_.n_params());
}

template <typename T>
std::vector<T> NerfTrainer<T>::colour_inference_params() const {
    const T* p = colour_optimizer_->inference_params(colour_.params().data());
    return std::vector<T>(p, p + colour_.n_params());
}

template <typename T>
void NerfTrainer<T>::set_learning_rate(double lr) {
    density_optimizer_->set_learning_rate(lr);
    colour_optimizer_->set_learning_rate(lr);
}

template <typename T>
void NerfTrainer<T>::set_step_count(uint32_t step) {
    step_ = step;
    batches_drawn_ = step;
    density_optimizer_->set_step_count(step);
    colour_optimizer_->set_step_count(step);
}

template class NerfTrainer<float>;
template class NerfTrainer<double>;

} // namespace fusedngp::nerf
