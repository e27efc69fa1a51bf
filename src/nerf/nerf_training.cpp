#include "nerf/nerf_training.h"

#include "core/errors.h"
#include "core/json_fields.h"
#include "optimizers/state_matching.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace fusedngp::nerf {

namespace {

std::vector<std::pair<std::string, std::vector<float>>> optimizer_buffers(Optimizer<float>& optimizer) {
    std::vector<std::pair<std::string, std::vector<float>>> out;
    for (const auto& b : optimizer.state()) out.emplace_back(b.name, *b.data);
    return out;
}

void restore_optimizer(Optimizer<float>& optimizer, const SavedStateBuffers& saved, const std::string& which) {
    auto buffers = optimizer.state();
    std::vector<StateBufferShape> shapes;
    for (const auto& b : buffers) shapes.push_back({b.name, b.data->size()});
    const auto values = match_state_buffers(shapes, saved, which + " optimizer: the state");
    for (size_t i = 0; i < buffers.size(); ++i) {
        if (values[i]) {
            *buffers[i].data = *values[i];
        } else {
            std::fill(buffers[i].data->begin(), buffers[i].data->end(), 0.f);
        }
    }
}

void restore_params(std::vector<float>& params, const std::vector<float>& saved, const std::string& which) {
    if (saved.size() != params.size())
        throw InputError(which + " model: the state has " + std::to_string(saved.size()) + " parameters, expected " +
                         std::to_string(params.size()));
    params = saved;
}

// "random", "white", "black" or [r, g, b] with each in [0, 1].
TrainingBackground training_background_from(const json& value) {
    TrainingBackground b;
    const char* path = "sampling.training_background";
    if (value.is_string()) {
        const std::string name = value.get<std::string>();
        if (name == "random") return b;
        b.random = false;
        if (name == "white") return b;
        if (name == "black") {
            for (float& c : b.colour) c = 0.f;
            return b;
        }
    } else if (value.is_array() && value.size() == 3) {
        b.random = false;
        for (int c = 0; c < 3; ++c) {
            if (!value[c].is_number() || !(value[c].get<double>() >= 0 && value[c].get<double>() <= 1))
                throw ConfigError(path, "colour components must be numbers in [0, 1]");
            b.colour[c] = value[c].get<float>();
        }
        return b;
    }
    throw ConfigError(path, "must be \"random\", \"white\", \"black\" or [r, g, b] in [0, 1]");
}

} // namespace

NerfTrainingState CpuNerfTraining::save_state() const {
    auto& t = const_cast<NerfTrainer<float>&>(trainer_);  // Optimizer::state() is non-const; nothing changes
    NerfTrainingState s;
    s.step = t.step_count();
    s.rng_state = t.rng_state();
    s.density_params = t.density_model().params();
    s.colour_params = t.colour_model().params();
    s.density_optimizer = optimizer_buffers(t.density_optimizer());
    s.colour_optimizer = optimizer_buffers(t.colour_optimizer());
    s.grid_density = t.occupancy_grid().density();
    s.grid_bits = t.occupancy_grid().bits();
    return s;
}

void CpuNerfTraining::load_state(const NerfTrainingState& s) {
    restore_params(trainer_.density_model().params(), s.density_params, "density");
    restore_params(trainer_.colour_model().params(), s.colour_params, "colour");
    restore_optimizer(trainer_.density_optimizer(), s.density_optimizer, "density");
    restore_optimizer(trainer_.colour_optimizer(), s.colour_optimizer, "colour");
    trainer_.occupancy_grid().set_state(s.grid_density, s.grid_bits);
    trainer_.set_step_count((uint32_t)s.step);
    trainer_.set_rng_state(s.rng_state);
}

NerfTrainerSettings nerf_settings_from_config(const json& config, float aabb_scale, uint32_t rays_per_batch,
                                              uint64_t seed) {
    NerfTrainerSettings s;
    s.rays_per_batch = rays_per_batch;
    s.seed = seed;
    s.cone_angle = aabb_scale <= 1 ? 0.f : 1.f / 256;
    auto it = config.find("sampling");
    if (it == config.end()) return s;
    if (!it->is_object()) throw ConfigError("sampling", "must be an object");
    for (const auto& [key, value] : it->items()) {
        if (key == "snap_to_pixel_centers" || key == "cull_occluded_cells") continue;  // booleans: get_bool checks them
        if (key == "training_background") {
            s.training_background = training_background_from(value);
            continue;
        }
        if (key != "cone_angle" && key != "max_samples_per_ray" && key != "occupancy_update_interval" &&
            key != "occupancy_warmup_steps" && key != "samples_per_batch")
            throw ConfigError("sampling." + key, "unknown field (NeRF reads cone_angle, cull_occluded_cells, "
                                                 "max_samples_per_ray, occupancy_update_interval, "
                                                 "occupancy_warmup_steps, samples_per_batch, "
                                                 "snap_to_pixel_centers, training_background)");
        if (!value.is_number() || value.get<double>() < 0) throw ConfigError("sampling." + key, "must be a number >= 0");
    }
    s.snap_to_pixel_centers = get_bool(*it, "sampling", "snap_to_pixel_centers", s.snap_to_pixel_centers);
    s.cull_occluded_cells = get_bool(*it, "sampling", "cull_occluded_cells", s.cull_occluded_cells);
    s.cone_angle = (float)get_number(*it, "sampling", "cone_angle", s.cone_angle);
    s.max_samples_per_ray = (int)get_number(*it, "sampling", "max_samples_per_ray", s.max_samples_per_ray);
    if (s.max_samples_per_ray < 1) throw ConfigError("sampling.max_samples_per_ray", "must be at least 1");
    s.occupancy_update_interval =
        (uint32_t)get_number(*it, "sampling", "occupancy_update_interval", s.occupancy_update_interval);
    s.occupancy.warmup_steps = (uint32_t)get_number(*it, "sampling", "occupancy_warmup_steps", s.occupancy.warmup_steps);
    s.samples_per_batch = (uint32_t)get_number(*it, "sampling", "samples_per_batch", s.samples_per_batch);
    if (s.samples_per_batch < 256 || s.samples_per_batch > (1u << 26))
        throw ConfigError("sampling.samples_per_batch", "must be in [256, 2^26]");
    return s;
}

double per_level_scale_for(double finest_resolution, uint32_t base_resolution, uint32_t n_levels) {
    if (n_levels < 2 || base_resolution == 0 || finest_resolution <= base_resolution) return 1.0;
    return std::pow(finest_resolution / base_resolution, 1.0 / (n_levels - 1));
}

double finest_resolution_for(const NerfDataset& train) {
    std::vector<double> per_unit;
    for (const auto& f : train.frames) {
        const double distance = std::max(1e-3f, length(f.camera.pose.position - Vec3{0.5f, 0.5f, 0.5f}));
        per_unit.push_back(0.5 * ((double)f.camera.intrinsics.fx + f.camera.intrinsics.fy) / distance);
    }
    if (per_unit.empty()) return 2048;
    std::nth_element(per_unit.begin(), per_unit.begin() + per_unit.size() / 2, per_unit.end());
    return std::clamp(per_unit[per_unit.size() / 2], 16.0, 4096.0);
}

bool nerf_grid_scale_from_data(const json& config) {
    const auto it = config.find("encoding");
    if (it == config.end() || !it->is_object() || it->contains("per_level_scale")) return false;
    const std::string otype = get_string(*it, "encoding", "otype", "");
    bool grid = false;
    for (const char* name : {"HashGrid", "DenseGrid", "TiledGrid", "Grid"}) grid = grid || equals_ignore_case(otype, name);
    return grid && get_size(*it, "encoding", "n_levels", 16) >= 2;
}

json nerf_config_for_data(json config, const NerfDataset& train) {
    if (!nerf_grid_scale_from_data(config)) return config;
    const auto it = config.find("encoding");
    const uint32_t n_levels = get_size(*it, "encoding", "n_levels", 16);
    const uint32_t base = get_size(*it, "encoding", "base_resolution", 16);
    // 6 digits: the value summary.json and snapshots show.
    (*it)["per_level_scale"] =
        std::round(per_level_scale_for(finest_resolution_for(train), base, n_levels) * 1e6) / 1e6;
    return config;
}

} // namespace fusedngp::nerf
