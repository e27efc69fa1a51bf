// The NeRF persistence tests' shared small scene (the generated synthetic
// scene, 12 train and 2 test views of 24 x 24) and a small config: ~25 steps
// of 128 rays train in well under a second on one core.
#pragma once

#include "cli_runner.h"
#include "nerf/synthetic_scene.h"

#include <filesystem>
#include <string>

namespace fusedngp::test {

inline const char* kNerfPersistConfig = R"({
  "loss": {"otype": "Huber"},
  "optimizer": {"otype": "EMA", "decay": 0.95, "nested": {"otype": "Adam", "learning_rate": 1e-2, "beta1": 0.9,
                "beta2": 0.99, "epsilon": 1e-15}},
  "encoding": {"otype": "HashGrid", "n_levels": 8, "n_features_per_level": 2, "log2_hashmap_size": 14,
               "base_resolution": 16, "per_level_scale": 1.5},
  "network": {"otype": "FullyFusedMLP", "activation": "ReLU", "output_activation": "None",
              "n_neurons": 32, "n_hidden_layers": 1},
  "dir_encoding": {"otype": "Composite", "nested": [{"otype": "SphericalHarmonics", "n_dims_to_encode": 3, "degree": 4},
                                                    {"otype": "Identity"}]},
  "rgb_network": {"otype": "FullyFusedMLP", "activation": "ReLU", "output_activation": "None",
                  "n_neurons": 32, "n_hidden_layers": 1},
  "sampling": {"cone_angle": 0.0078125, "max_samples_per_ray": 128, "occupancy_warmup_steps": 0}
})";

struct NerfPersistScene {
    std::filesystem::path dir, config;
};

inline const NerfPersistScene& nerf_persist_scene() {
    static const NerfPersistScene s = [] {
        NerfPersistScene r;
        r.dir = make_temp_dir("nerf_persist_scene");
        write_synthetic_dataset(r.dir.string(), default_synthetic_scene(), 12, 2, 24, 24, 5);
        r.config = r.dir / "small.json";
        write_text_file(r.config, kNerfPersistConfig);
        return r;
    }();
    return s;
}

// `train` on the scene (CPU) for `steps` steps of 128 rays into `out`.
inline std::string nerf_train_args(const std::filesystem::path& out, int steps) {
    return "train --data " + nerf_persist_scene().dir.string() + " --backend cpu --config " +
           nerf_persist_scene().config.string() + " --steps " + std::to_string(steps) +
           " --batch 128 --eval-every 0 --out " + out.string();
}

} // namespace fusedngp::test
