// Live model changes of a NeRF (engine/nerf_training_change.h) on the CPU
// reference: a wider density network and a deeper colour network render the
// same view at the switch (weights, EMA average and grids carried), keep the
// step, and train on; a kernel switch keeps every optimizer buffer.
#include "nerf_persist_scene.h"

#include "engine/nerf_training_change.h"
#include "engine/nerf_training_factory.h"
#include "nerf/nerf_dataset.h"
#include "nerf/nerf_trainer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace fusedngp {
namespace {

struct Trained {
    NerfDataset data;
    json config;
    nerf::NerfTrainerSettings settings;
    std::unique_ptr<nerf::NerfTraining> training;
};

Trained trained(int steps) {
    Trained t;
    t.data = load_nerf_dataset((test::nerf_persist_scene().dir / "transforms_train.json").string());
    t.config = json::parse(test::kNerfPersistConfig);
    t.settings = nerf::nerf_settings_from_config(t.config, t.data.aabb_scale, 128, 3);
    t.training = create_nerf_training("cpu", t.data, t.config, t.settings);
    for (int i = 0; i < steps; ++i) t.training->step();
    return t;
}

float max_difference(const Image& a, const Image& b) {
    float d = 0;
    for (size_t i = 0; i < a.pixels.size(); ++i) d = std::max(d, std::abs(a.pixels[i] - b.pixels[i]));
    return d;
}

TEST(NerfTrainingChange, WiderAndDeeperNetworksRenderTheSameViewAndTrainOn) {
    Trained t = trained(20);
    const Camera& camera = t.data.frames[1].camera;
    const Image before = t.training->render_view(camera, {1, 1, 1});
    const nerf::NerfTrainingState old = t.training->save_state();
    json next = t.config;
    next["network"]["n_neurons"] = 64;
    next["rgb_network"]["n_hidden_layers"] = 2;
    NerfTrainingChange change = change_nerf_training(*t.training, t.config, "cpu", t.data, next, t.settings);
    nerf::NerfTraining& to = *change.training;
    EXPECT_TRUE(change.density.encoding_copied);
    EXPECT_TRUE(change.density.function_preserved) << change.density.why_not;
    EXPECT_TRUE(change.colour.function_preserved) << change.colour.why_not;
    EXPECT_EQ(change.colour.layers_inserted, 1u);
    EXPECT_GT(to.density_model().n_params(), t.training->density_model().n_params());
    // The views render from the EMA average: carried as the weights are.
    const Image after = to.render_view(camera, {1, 1, 1});
    EXPECT_LT(max_difference(before, after), 1e-4f);
    const nerf::NerfTrainingState moved = to.save_state();
    EXPECT_EQ(moved.step, old.step);
    EXPECT_EQ(moved.grid_bits, old.grid_bits);
    EXPECT_EQ(moved.grid_density, old.grid_density);
    // The grid's Adam moments stay; the reshaped network's start fresh.
    const NamedTensor grid = t.training->density_model().named_tensors().front();
    ASSERT_EQ(grid.name.rfind("encoding.", 0), 0u) << grid.name;
    for (size_t b = 0; b < old.density_optimizer.size(); ++b) {
        const auto& [name, values] = old.density_optimizer[b];
        if (name != "nested.first_moment") continue;
        const auto& now = moved.density_optimizer[b].second;
        EXPECT_TRUE(std::equal(values.begin() + (long)grid.offset, values.begin() + (long)(grid.offset + grid.size()),
                               now.begin() + (long)grid.offset));
        EXPECT_EQ(now.back(), 0.f);  // the network's last weight: fresh
    }
    const double psnr_at_switch = to.psnr_on(t.data, {1, 1, 1});
    for (int i = 0; i < 20; ++i) EXPECT_TRUE(std::isfinite(to.step()));
    EXPECT_GT(to.psnr_on(t.data, {1, 1, 1}), psnr_at_switch - 0.5);
}

TEST(NerfTrainingChange, KernelSwitchKeepsEveryOptimizerBuffer) {
    Trained t = trained(5);
    const nerf::NerfTrainingState old = t.training->save_state();
    json next = t.config;
    next["network"]["otype"] = "CublasMLP";
    NerfTrainingChange change = change_nerf_training(*t.training, t.config, "cpu", t.data, next, t.settings);
    const nerf::NerfTrainingState moved = change.training->save_state();
    EXPECT_EQ(moved.density_params, old.density_params);
    EXPECT_EQ(moved.colour_params, old.colour_params);
    EXPECT_EQ(moved.density_optimizer, old.density_optimizer);
    EXPECT_EQ(moved.colour_optimizer, old.colour_optimizer);
    EXPECT_EQ(change.density.copied + change.colour.copied,
              old.density_params.size() + old.colour_params.size());
}

TEST(NerfTrainingChange, ARefusedConfigLeavesTheOldTrainingAsItWas) {
    Trained t = trained(3);
    json next = t.config;
    next["network"]["activation"] = "NoSuchActivation";
    EXPECT_THROW(change_nerf_training(*t.training, t.config, "cpu", t.data, next, t.settings), ConfigError);
    EXPECT_TRUE(std::isfinite(t.training->step()));
    EXPECT_EQ(t.training->step_count(), 4u);
}

} // namespace
} // namespace fusedngp
