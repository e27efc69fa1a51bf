// The CPU NeRF trainer: the whole backward chain (volume rendering, trunc_exp,
// sigmoid, colour model into the density features, density model) against
// central differences in fp64, and training on the synthetic scene reaching a
// stated test-view PSNR.
#include "cli_runner.h"
#include "config/config.h"
#include "nerf/nerf_trainer.h"
#include "nerf/nerf_training.h"
#include "nerf/synthetic_scene.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>

namespace fusedngp::nerf {
namespace {

json mlp(uint32_t neurons, uint32_t hidden) {
    return json{{"otype", "FullyFusedMLP"}, {"activation", "ReLU"}, {"output_activation", "None"},
                {"n_neurons", neurons}, {"n_hidden_layers", hidden}};
}

json nerf_config(uint32_t levels, uint32_t log2_t, uint32_t neurons, const std::string& loss) {
    json c;
    c["loss"] = {{"otype", loss}};
    c["optimizer"] = {{"otype", "Adam"}, {"learning_rate", 1e-2}, {"beta1", 0.9}, {"beta2", 0.99}, {"epsilon", 1e-15}};
    c["encoding"] = {{"otype", "HashGrid"}, {"n_levels", levels}, {"n_features_per_level", 2},
                     {"log2_hashmap_size", log2_t}, {"base_resolution", 16}, {"per_level_scale", 1.5}};
    c["network"] = mlp(neurons, 1);
    c["dir_encoding"] = {{"otype", "Composite"},
                         {"nested", json::array({json{{"otype", "SphericalHarmonics"}, {"n_dims_to_encode", 3}, {"degree", 4}},
                                                 json{{"otype", "Identity"}}})}};
    c["rgb_network"] = mlp(neurons, 1);
    return c;
}

NerfDataset synthetic_split(const std::string& tag, int n_train, int n_test, uint32_t size, const char* split) {
    const auto dir = test::make_temp_dir(tag);
    write_synthetic_dataset(dir.string(), default_synthetic_scene(), n_train, n_test, size, size, 3);
    return load_nerf_dataset((dir / split).string());
}

// dL/dparams of a few parameters of one model, analytic vs central differences.
void check_gradients(NerfTrainer<double>& trainer, const NerfBatch<double>& batch, Model<double>& model,
                     const std::vector<double>& analytic, const char* what) {
    // The parameters with the largest gradients (surely used by the batch),
    // from both the encoding block and the network block.
    std::vector<size_t> order(analytic.size());
    std::iota(order.begin(), order.end(), 0);
    const size_t n_enc = model.n_encoding_params();
    std::vector<size_t> picked;
    for (bool encoding : {true, false}) {
        std::vector<size_t> part;
        for (size_t i : order)
            if ((i < n_enc) == encoding) part.push_back(i);
        if (part.empty()) continue;  // the colour model's encoding has no parameters
        std::sort(part.begin(), part.end(), [&](size_t a, size_t b) { return std::fabs(analytic[a]) > std::fabs(analytic[b]); });
        for (size_t k = 0; k < std::min<size_t>(4, part.size()); ++k) picked.push_back(part[k]);
        picked.push_back(part[part.size() / 3]);  // and one ordinary parameter
    }
    const double h = 1e-6;
    for (size_t i : picked) {
        const double saved = model.params()[i];
        model.params()[i] = saved + h;
        const double up = trainer.loss_and_gradients(batch, nullptr, nullptr);
        model.params()[i] = saved - h;
        const double down = trainer.loss_and_gradients(batch, nullptr, nullptr);
        model.params()[i] = saved;
        const double numeric = (up - down) / (2 * h);
        EXPECT_NEAR(analytic[i], numeric, 1e-6 * std::max(1.0, std::fabs(numeric)) + 1e-9)
            << what << " parameter " << i << " (encoding block " << (i < n_enc) << ")";
    }
}

TEST(NerfTrainer, GradientsMatchCentralDifferencesInDouble) {
    const NerfDataset data = synthetic_split("nerf_trainer_grad", 2, 0, 8, "transforms_train.json");
    NerfTrainerSettings s;
    s.rays_per_batch = 12;
    s.max_samples_per_ray = 24;
    s.cone_angle = 0.05f;  // long steps: few samples reach deep into the cube
    s.occupancy_update_interval = 0;
    NerfTrainer<double> trainer(data, nerf_config(2, 10, 16, "L2"), s);
    // Some training first, so densities and colours are not at their initial values.
    for (int i = 0; i < 5; ++i) trainer.step();
    const NerfBatch<double> batch = trainer.sample_batch();
    ASSERT_GT(batch.t.size(), 50u);
    std::vector<double> g_density, g_colour;
    const double loss = trainer.loss_and_gradients(batch, &g_density, &g_colour);
    ASSERT_TRUE(std::isfinite(loss));
    ASSERT_EQ(g_density.size(), trainer.density_model().n_params());
    ASSERT_EQ(g_colour.size(), trainer.colour_model().n_params());
    check_gradients(trainer, batch, trainer.density_model(), g_density, "density");
    check_gradients(trainer, batch, trainer.colour_model(), g_colour, "colour");
}

TEST(NerfTrainer, RaysPerBatchCanChangeBetweenSteps) {
    const NerfDataset data = synthetic_split("nerf_trainer_rays", 2, 0, 8, "transforms_train.json");
    NerfTrainerSettings s;
    s.rays_per_batch = 12;
    s.occupancy_update_interval = 0;
    NerfTrainer<float> trainer(data, nerf_config(2, 10, 16, "L2"), s);
    EXPECT_EQ(trainer.sample_batch().n_rays(), 12u);
    trainer.set_rays_per_batch(5);
    EXPECT_EQ(trainer.rays_per_batch(), 5u);
    EXPECT_EQ(trainer.sample_batch().n_rays(), 5u);
    EXPECT_TRUE(std::isfinite(trainer.step()));
    EXPECT_THROW(trainer.set_rays_per_batch(0), std::invalid_argument);
}

TEST(NerfTrainer, FixedTrainingBackgroundCompositesEveryRayOnIt) {
    const NerfDataset data = synthetic_split("nerf_trainer_bg", 2, 0, 16, "transforms_train.json");
    NerfTrainerSettings s;
    s.rays_per_batch = 256;
    s.occupancy_update_interval = 0;
    NerfTrainer<float> random_bg(data, nerf_config(2, 10, 16, "L2"), s);
    s.training_background.random = false;
    s.training_background.colour[0] = 0.25f;
    s.training_background.colour[1] = 0.5f;
    s.training_background.colour[2] = 1.f;
    NerfTrainer<float> fixed_bg(data, nerf_config(2, 10, 16, "L2"), s);
    const NerfBatch<float> a = random_bg.sample_batch(), b = fixed_bg.sample_batch();
    ASSERT_EQ(a.n_rays(), b.n_rays());
    ASSERT_EQ(a.t, b.t);  // the same rays: only the background differs
    int empty_pixels = 0, distinct = 0;
    for (size_t r = 0; r < b.n_rays(); ++r) {
        for (int c = 0; c < 3; ++c) EXPECT_EQ(b.background[3 * r + c], s.training_background.colour[c]);
        if (a.background[3 * r] != b.background[3 * r]) ++distinct;
        // A pixel with alpha 0 is its background on both sides.
        bool empty = true;
        for (int c = 0; c < 3; ++c) empty = empty && a.target[3 * r + c] == a.background[3 * r + c];
        if (!empty) continue;
        ++empty_pixels;
        for (int c = 0; c < 3; ++c) EXPECT_FLOAT_EQ(b.target[3 * r + c], s.training_background.colour[c]);
    }
    EXPECT_GT(empty_pixels, 10);
    EXPECT_GT(distinct, 200);  // the random side's colours are random
}

TEST(NerfTrainer, TrainingBackgroundIsReadFromTheSamplingSection) {
    auto settings = [](const json& value) {
        json config{{"sampling", {{"training_background", value}}}};
        return nerf_settings_from_config(config, 1, 64, 7).training_background;
    };
    EXPECT_TRUE(nerf_settings_from_config(json::object(), 1, 64, 7).training_background.random);
    EXPECT_TRUE(settings("random").random);
    const TrainingBackground white = settings("white"), black = settings("black");
    const TrainingBackground rgb = settings(json::array({0.2, 0.4, 0.6}));
    EXPECT_FALSE(white.random);
    EXPECT_EQ(white.colour[0], 1.f);
    EXPECT_EQ(white.colour[2], 1.f);
    EXPECT_FALSE(black.random);
    EXPECT_EQ(black.colour[1], 0.f);
    EXPECT_FALSE(rgb.random);
    EXPECT_FLOAT_EQ(rgb.colour[0], 0.2f);
    EXPECT_FLOAT_EQ(rgb.colour[2], 0.6f);
    for (const json& bad : {json("grey"), json(1), json::array({0.1, 0.2}), json::array({0.1, 0.2, 1.5}),
                            json::array({0.1, "x", 0.3})}) {
        try {
            settings(bad);
            ADD_FAILURE() << "accepted " << bad.dump();
        } catch (const ConfigError& e) {
            EXPECT_NE(std::string(e.what()).find("sampling.training_background"), std::string::npos) << e.what();
        }
    }
}

TEST(NerfTrainer, CullOccludedCellsIsReadFromTheSamplingSection) {
    EXPECT_FALSE(nerf_settings_from_config(json::object(), 1, 64, 7).cull_occluded_cells);
    json config{{"sampling", {{"cull_occluded_cells", true}}}};
    EXPECT_TRUE(nerf_settings_from_config(config, 1, 64, 7).cull_occluded_cells);
    config["sampling"]["cull_occluded_cells"] = 1;
    try {
        nerf_settings_from_config(config, 1, 64, 7);
        ADD_FAILURE() << "accepted a number";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("sampling.cull_occluded_cells"), std::string::npos) << e.what();
    }
}

// The synthetic scene the fitting tests train on (16 train, 2 test views,
// 32 x 32) and their sampling: 512 rays, a cone step, up to 128 samples.
struct FitScene {
    NerfDataset train, test;
};
FitScene fit_scene(const std::string& tag) {
    const auto dir = test::make_temp_dir(tag);
    write_synthetic_dataset(dir.string(), default_synthetic_scene(), 16, 2, 32, 32, 5);
    return {load_nerf_dataset((dir / "transforms_train.json").string()),
            load_nerf_dataset((dir / "transforms_test.json").string())};
}
NerfTrainerSettings fit_settings() {
    NerfTrainerSettings s;
    s.rays_per_batch = 512;
    s.cone_angle = 1.f / 128;
    s.max_samples_per_ray = 128;
    s.occupancy_update_interval = 16;
    // No warm-up: a warm-up update evaluates all 128^3 cells (2M points),
    // twice the cost of a regular one, for no gain on this small scene.
    s.occupancy.warmup_steps = 0;
    return s;
}

// sampling.cull_occluded_cells on the synthetic scene (the setup of
// SyntheticSceneTrainsToTheStatedPsnr): cells inside the primitives get
// culled from the training march, and the scene trains as well.
TEST(NerfTrainer, CullingOccludedCellsTrainsTheSyntheticScene) {
    const FitScene scene = fit_scene("nerf_trainer_cull");
    NerfTrainerSettings s = fit_settings();
    s.cull_occluded_cells = true;
    const NerfDataset& test = scene.test;
    NerfTrainer<float> trainer(scene.train, nerf_config(8, 14, 32, "Huber"), s);
    for (int i = 0; i < 300; ++i) trainer.step();
    const double psnr = trainer.psnr_on(test, {1, 1, 1});
    auto count_bits = [](const std::vector<uint8_t>& bits) {
        size_t n = 0;
        for (uint8_t b : bits) n += (size_t)__builtin_popcount(b);
        return n;
    };
    const size_t occupied = count_bits(trainer.occupancy_grid().bits());
    const size_t marched = count_bits(trainer.training_march_bits());
    std::printf("culling: test PSNR %.2f dB, %.4f of the cells culled, training march over %zu of %zu occupied cells\n",
                psnr, trainer.occlusion_mask().fraction_culled(), marched, occupied);
    // Seen (Release, 2 threads): 28.1 dB after 300 steps, 0.22 % of the cells
    // (3.5 % of the occupied ones) culled; without culling 27.7 dB after 200
    // (the test below).
    EXPECT_GT(psnr, 22.0);
    EXPECT_GT(trainer.occlusion_mask().fraction_culled(), 0.0);
    EXPECT_LT(marched, occupied);
}

// Frames at `distance` from the cube's centre with focal length `focal`.
NerfDataset frames_at(const std::vector<std::pair<float, float>>& distance_and_focal) {
    NerfDataset d;
    for (const auto& [distance, focal] : distance_and_focal) {
        NerfFrame f;
        f.camera.pose.position = Vec3{0.5f, 0.5f + distance, 0.5f};
        f.camera.intrinsics.fx = f.camera.intrinsics.fy = focal;
        d.frames.push_back(f);
    }
    return d;
}

TEST(NerfTrainer, FinestGridLevelFollowsThePixelsAtTheSceneCentre) {
    // Median of focal / distance: 500/2 = 250, 600/1.5 = 400, 900/1 = 900.
    EXPECT_NEAR(finest_resolution_for(frames_at({{2.f, 500.f}, {1.5f, 600.f}, {1.f, 900.f}})), 400.0, 1e-3);
    EXPECT_EQ(finest_resolution_for(frames_at({{1.f, 1e6f}})), 4096.0);  // clamped
    EXPECT_EQ(finest_resolution_for(frames_at({{1.f, 2.f}})), 16.0);
    // lego at 400x400: focal 555.6 px, cameras 4.03 x 0.33 from the centre.
    EXPECT_NEAR(finest_resolution_for(frames_at({{1.33f, 555.6f}})), 417.7, 0.1);

    EXPECT_NEAR(per_level_scale_for(512, 16, 16), std::pow(32.0, 1.0 / 15), 1e-12);
    EXPECT_EQ(per_level_scale_for(512, 16, 1), 1.0);
    EXPECT_EQ(per_level_scale_for(8, 16, 16), 1.0);  // never below 1, which the grid rejects

    const NerfDataset data = frames_at({{1.f, 512.f}});
    json config = nerf_config(16, 19, 64, "L2");
    config["encoding"].erase("per_level_scale");
    const json derived = nerf_config_for_data(config, data);
    EXPECT_NEAR(derived["encoding"]["per_level_scale"].get<double>(), std::pow(32.0, 1.0 / 15), 1e-6);
    json rest = derived;  // everything else is as it was
    rest["encoding"].erase("per_level_scale");
    EXPECT_EQ(rest, config);
    EXPECT_EQ(nerf_config_for_data(derived, data), derived);  // applying it again changes nothing

    json explicit_scale = nerf_config(16, 19, 64, "L2");  // per_level_scale 1.5 stays
    EXPECT_EQ(nerf_config_for_data(explicit_scale, data), explicit_scale);
    json frequency = config;
    frequency["encoding"] = {{"otype", "Frequency"}, {"n_frequencies", 6}};
    EXPECT_EQ(nerf_config_for_data(frequency, data), frequency);
    json one_level = config;
    one_level["encoding"]["n_levels"] = 1;
    EXPECT_EQ(nerf_config_for_data(one_level, data), one_level);
}

TEST(NerfTrainer, SyntheticSceneTrainsToTheStatedPsnr) {
    const FitScene scene = fit_scene("nerf_trainer_fit");
    const NerfDataset& test = scene.test;
    NerfTrainer<float> trainer(scene.train, nerf_config(8, 14, 32, "Huber"), fit_settings());
    const double psnr_before = trainer.psnr_on(test, {1, 1, 1});
    const auto t0 = std::chrono::steady_clock::now();
    const int steps = 200;
    double first = 0, last = 0;
    for (int i = 0; i < steps; ++i) {
        const double loss = trainer.step();
        if (i < 20) first += loss / 20;
        if (i >= steps - 20) last += loss / 20;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double psnr = trainer.psnr_on(test, {1, 1, 1});
    std::printf("nerf trainer: %d steps in %.2f s, loss %.5f -> %.5f, test PSNR %.2f -> %.2f dB, occupied %.3f, "
                "samples/batch %zu\n",
                steps, seconds, first, last, psnr_before, psnr, trainer.occupancy_grid().fraction_occupied(),
                trainer.last_sample_count());
    // Seen (Release, 1 thread, ~5 s): loss 0.0157 -> 0.0011, test PSNR on
    // white 9.6 -> 26.3 dB. Bounds with margin.
    EXPECT_LT(last, 0.2 * first);
    EXPECT_GT(psnr, 22.0);
    EXPECT_GT(psnr, psnr_before + 10.0);

    // render_depth: where the reference renderer's ray hits a primitive, the
    // expected termination depth lies near the hit; where it misses, nothing.
    const Camera& camera = test.frames[0].camera;
    const Image depth = trainer.render_depth(camera);
    ASSERT_EQ(depth.channels, 1);
    ASSERT_EQ(depth.width, (int)camera.intrinsics.width);
    double hit_error = 0;
    int hits = 0, misses = 0, empty_misses = 0;
    for (int y = 0; y < depth.height; ++y) {
        for (int x = 0; x < depth.width; ++x) {
            const SceneHit ref = intersect_scene(default_synthetic_scene(), camera_ray(camera, x + 0.5f, y + 0.5f));
            const float d = depth.at(x, y, 0);
            if (ref.hit) {
                hit_error += std::abs(d - ref.t);
                ++hits;
            } else {
                ++misses;
                empty_misses += d == 0.f;
            }
        }
    }
    ASSERT_GT(hits, 0);
    EXPECT_LT(hit_error / hits, 0.05) << "mean |depth - hit distance| over " << hits << " pixels";
    if (misses > 0) {
        EXPECT_GT((double)empty_misses / misses, 0.8);
    }
}

TEST(NerfTrainer, SameSeedGivesIdenticalStepsAndOtherSeedsDiffer) {
    const NerfDataset data = synthetic_split("nerf_trainer_seed", 3, 0, 8, "transforms_train.json");
    NerfTrainerSettings s;
    s.rays_per_batch = 32;
    s.max_samples_per_ray = 32;
    s.cone_angle = 0.05f;
    s.occupancy_update_interval = 4;
    s.occupancy.warmup_steps = 0;
    auto losses = [&](uint64_t seed) {
        s.seed = seed;
        NerfTrainer<float> trainer(data, nerf_config(2, 10, 16, "L2"), s);
        std::vector<float> out;
        for (int i = 0; i < 6; ++i) out.push_back(trainer.step());
        return out;
    };
    EXPECT_EQ(losses(1), losses(1));
    EXPECT_NE(losses(1), losses(2));
}

TEST(NerfTrainer, ShippedConfigTrainsAndOutputActivationsAreTheTrainers) {
    const NerfDataset data = synthetic_split("nerf_trainer_config", 2, 0, 8, "transforms_train.json");
    json config = load_config_file(std::string(FUSEDNGP_SOURCE_DIR) + "/configs/nerf.json");
    config["encoding"]["log2_hashmap_size"] = 12;  // the shipped 2^19 table is needlessly large here
    NerfTrainerSettings s;
    s.rays_per_batch = 64;
    s.max_samples_per_ray = 32;
    s.cone_angle = 0.05f;
    s.occupancy_update_interval = 0;
    NerfTrainer<float> trainer(data, config, s);
    EXPECT_EQ(trainer.density_model().n_output_dims(), 16u);
    EXPECT_EQ(trainer.colour_model().n_input_dims(), 19u);
    const double loss = trainer.step();
    EXPECT_TRUE(std::isfinite(loss));
    EXPECT_GT(trainer.last_sample_count(), 0u);

    for (const char* section : {"network", "rgb_network"}) {
        json bad = config;
        bad[section]["output_activation"] = "Sigmoid";
        try {
            NerfTrainer<float> t(data, bad, s);
            ADD_FAILURE() << section << ": accepted";
        } catch (const ConfigError& e) {
            EXPECT_NE(std::string(e.what()).find(std::string(section) + ".output_activation"), std::string::npos)
                << e.what();
        }
    }
}

// A step whose loss is not finite (here: a colour network whose output
// weights overflowed to NaN) leaves both models and the optimizers' moments
// as they were and is counted; the count is in the diagnostics.
TEST(NerfTrainer, NonFiniteStepIsSkippedAndCounted) {
    const NerfDataset data = synthetic_split("nerf_trainer_nan", 3, 0, 8, "transforms_train.json");
    NerfTrainerSettings s;
    s.rays_per_batch = 32;
    s.max_samples_per_ray = 32;
    s.occupancy.warmup_steps = 0;
    NerfTrainer<float> trainer(data, nerf_config(2, 10, 16, "L2"), s);
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(std::isfinite(trainer.step()));
    std::vector<float>& colour = trainer.colour_model().params();
    for (size_t i = colour.size() - 48; i < colour.size(); ++i) colour[i] = std::numeric_limits<float>::quiet_NaN();
    const std::vector<float> density = trainer.density_model().params(), colour_before = colour;
    std::vector<std::vector<float>> moments;
    for (auto& b : trainer.density_optimizer().state()) moments.push_back(*b.data);
    EXPECT_TRUE(std::isnan(trainer.step()));
    EXPECT_EQ(trainer.skipped_steps(), 1u);
    EXPECT_EQ(trainer.step_count(), 4u);
    EXPECT_EQ(trainer.density_model().params(), density);
    size_t k = 0;
    for (auto& b : trainer.density_optimizer().state()) EXPECT_EQ(*b.data, moments[k++]) << b.name;
    for (size_t i = 0; i + 48 < colour.size(); ++i) ASSERT_EQ(colour[i], colour_before[i]) << i;
}

} // namespace
} // namespace fusedngp::nerf
