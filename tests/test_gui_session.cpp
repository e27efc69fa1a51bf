// The GUI's TrainingSession with its worker thread, without a window: lockstep
// runs are reproducible, a change lands between two steps and is recorded
// with the losses around it, and the display snapshot follows training.
#ifdef FUSEDNGP_HAVE_GUI

#include "config/config.h"
#include "core/errors.h"
#include "gui/training_session.h"
#include "modes/mode.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cmath>
#include <thread>

namespace fusedngp {
namespace {

// A small smooth RGB image: steps take milliseconds.
Image gradient_image(int w, int h) {
    Image img;
    img.width = w;
    img.height = h;
    img.channels = 3;
    img.pixels.resize((size_t)w * h * 3);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
            for (int c = 0; c < 3; ++c)
                img.pixels[img.index(x, y, c)] = 0.5f + 0.4f * std::sin(0.2f * (float)(x + 2 * c) + 0.13f * (float)y);
    return img;
}

json small_config() {
    json config = config_with_defaults(load_mode_config("image", ""));
    config["encoding"]["n_levels"] = 4;
    config["encoding"]["log2_hashmap_size"] = 10;
    config["network"]["n_neurons"] = 16;
    config["network"]["n_hidden_layers"] = 1;
    return config;
}

void wait_for_steps(TrainingSession& s, uint64_t steps) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (s.step() < steps && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        s.poll();
    }
}

TEST(GuiSession, LockstepRunsAreReproducible) {
    std::vector<float> histories[2];
    for (auto& history : histories) {
        TrainingSession s(gradient_image(32, 24), small_config(), "cpu", 256, 7);
        s.set_lockstep(true);
        s.start_worker();
        for (int frame = 0; frame < 4; ++frame) s.run_steps(3);
        s.stop_worker();
        s.poll();
        EXPECT_EQ(s.step(), 12u);  // exactly the steps asked for, none while idle
        history = s.loss_history();
    }
    ASSERT_EQ(histories[0].size(), 12u);
    EXPECT_EQ(histories[0], histories[1]);
    EXPECT_LT(histories[0].back(), histories[0].front());
}

TEST(GuiSession, ChangeLandsBetweenStepsWithLossesRecorded) {
    TrainingSession s(gradient_image(32, 24), small_config(), "cpu", 256, 7);
    s.start_worker();
    wait_for_steps(s, 5);
    s.apply({"network.n_neurons", 32}, 10);
    // apply() folds in every step finished before it: loss_before is the last of them.
    ASSERT_EQ(s.changes().size(), 1u);
    EXPECT_EQ(s.changes()[0].loss_before, s.last_loss());
    EXPECT_TRUE(std::isnan(s.changes()[0].loss_after));
    EXPECT_GT(s.changes()[0].params_carried, 0u);
    EXPECT_EQ(s.config()["network"]["n_neurons"], 32);
    const uint64_t at_change = s.step();
    wait_for_steps(s, at_change + 3);
    s.stop_worker();
    s.poll();
    EXPECT_GE(s.step(), at_change + 3);
    EXPECT_TRUE(std::isfinite(s.changes()[0].loss_after));
}

TEST(GuiSession, DisplaySnapshotFollowsTraining) {
    TrainingSession s(gradient_image(32, 24), small_config(), "cpu", 512, 7);
    Matrix<float> coords(4, 2), before, after;
    coords << 0.1f, 0.2f, 0.5f, 0.5f, 0.9f, 0.3f, 0.4f, 0.8f;
    s.display_inference(coords, before);  // the initial parameters
    ASSERT_EQ(before.rows(), 4);
    ASSERT_EQ(before.cols(), 3);
    s.set_lockstep(true);
    s.start_worker();
    s.run_steps(40);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // past the publish interval:
    s.run_steps(1);                                               // this step publishes
    s.display_inference(coords, after);
    s.stop_worker();
    EXPECT_GT((after - before).norm(), 1e-3f) << "the display still shows the initial model";
    // The snapshot is the trained model's inference parameters, run by the display's own model.
    Matrix<float> direct;
    s.backend().inference(coords, direct);
    EXPECT_LT((after - direct).norm(), 1e-5f * (1.0f + direct.norm()));
}

// Kernel switches on the CPU backend: the reference MLP runs every otype the
// same way, so nothing is rebuilt and weights and optimizer moments stay bit
// for bit; the config records the choice and the change is reported.
TEST(GuiSession, KernelSwitchOnCpuKeepsWeightsAndMoments) {
    TrainingSession s(gradient_image(32, 24), small_config(), "cpu", 256, 7);
    s.run_steps(5);
    const TrainingState before = s.backend().save_state();
    const uint64_t generation = s.generation();
    for (const char* kernel : {"CublasMLP", "CPU", "FullyFusedMLP"}) {
        s.apply({"network.otype", kernel}, 10);
        EXPECT_EQ(s.config()["network"]["otype"], kernel);
        EXPECT_EQ(s.backend_name(), "cpu");
        EXPECT_EQ(s.generation(), generation) << "a kernel switch on the CPU rebuilt the model";
        const TrainingState now = s.backend().save_state();
        EXPECT_EQ(now.params, before.params);
        ASSERT_EQ(now.optimizer_buffers.size(), before.optimizer_buffers.size());
        for (size_t i = 0; i < now.optimizer_buffers.size(); ++i)
            EXPECT_EQ(now.optimizer_buffers[i].second, before.optimizer_buffers[i].second);
    }
    ASSERT_EQ(s.changes().size(), 3u);
    EXPECT_EQ(s.changes().back().params_carried, s.backend().n_params());
    s.run_steps(1);
    s.poll();
    EXPECT_TRUE(std::isfinite(s.changes().back().loss_after));
    EXPECT_THROW(s.apply({"network.otype", "TensorCoreMLP"}, 11), ConfigError);
    EXPECT_EQ(s.changes().size(), 3u);
}

// Moving to another backend (the GUI's "CPU" kernel on a CUDA session, and
// back) carries the exact parameters and optimizer state (EMA average included): the new backend predicts exactly what
// the old one did, and training goes on from there.
TEST(GuiSession, SwitchBackendCarriesExactParameters) {
    TrainingSession s(gradient_image(32, 24), small_config(), "cpu", 256, 7);
    s.run_steps(20);
    Matrix<float> coords(3, 2), before, after;
    coords << 0.1f, 0.2f, 0.5f, 0.5f, 0.9f, 0.3f;
    s.backend().inference(coords, before);
    const std::vector<float> params = s.backend().save_state().params;
    const uint64_t steps = s.backend().step();
    const float loss = s.last_loss();
    const uint64_t generation = s.generation();
    s.switch_backend("cpu");
    EXPECT_GT(s.generation(), generation) << "no new backend was made";
    EXPECT_EQ(s.backend().step(), steps);  // optimizer state and step count came along
    EXPECT_EQ(s.backend().save_state().params, params);
    s.backend().inference(coords, after);
    EXPECT_EQ((after - before).norm(), 0.0f);
    s.run_steps(1);
    // Far below a fresh start's loss: training continued from the carried weights.
    EXPECT_LT(s.last_loss(), 2.0f * loss);
    EXPECT_THROW(s.switch_backend("tpu"), ConfigError);
    EXPECT_EQ(s.backend().save_state().params.size(), params.size());
}

// Opening (or dropping) an unreadable or unsupported file is an error the UI
// shows; the session keeps its image, its model and its training state.
TEST(GuiSession, OpeningABadFileKeepsTheCurrentModel) {
    TrainingSession s(gradient_image(32, 24), small_config(), "cpu", 256, 7);
    s.run_steps(3);
    s.poll();
    const TrainingState before = s.backend().save_state();
    const std::string dir = ::testing::TempDir();
    const std::string not_image = dir + "/fusedngp_not_an_image.png";
    { std::FILE* f = std::fopen(not_image.c_str(), "w"); std::fputs("not a PNG\n", f); std::fclose(f); }
    for (const std::string& path : {dir + "/fusedngp_missing_file.png", not_image}) {
        SCOPED_TRACE(path);
        EXPECT_THROW(s.load_image(path), InputError);
        EXPECT_THROW(s.load_snapshot(path), InputError);
        EXPECT_EQ(s.image().width, 32);
        EXPECT_EQ(s.backend().save_state().params, before.params);
    }
    std::remove(not_image.c_str());
    s.run_steps(2);  // and training goes on
    s.poll();
    EXPECT_EQ(s.step(), before.step + 2);
}

// The case: 2 -> 3 hidden ReLU layers while training. The new layer
// starts as the identity, so the first loss after the change is the loss
// before it. A near-zero learning rate for the step before the change keeps
// training progress (a few % per step this early) out of the comparison;
// batch noise at this batch size is ~0.1 % on this smooth image (0.9 % at 4096).
TEST(GuiSession, DeeperNetworkKeepsTheLoss) {
    json config = small_config();
    config["network"]["n_hidden_layers"] = 2;
    TrainingSession s(gradient_image(32, 24), config, "cpu", 1 << 14, 7);
    s.run_steps(20);
    s.apply({"optimizer.learning_rate", 1e-9}, 1);
    s.run_steps(1);
    s.apply({"network.n_hidden_layers", 3}, 2);
    s.run_steps(1);
    const ChangeRecord deeper = s.changes().back();
    EXPECT_TRUE(deeper.function_kept) << deeper.why_not;
    EXPECT_EQ(function_kept_text(deeper), "function kept");
    EXPECT_NEAR(deeper.loss_after, deeper.loss_before, 0.01 * deeper.loss_before);
    // Wider and deeper at once keeps it too (the session zeroes new inputs).
    s.apply({"network.n_neurons", 32}, 3);
    s.apply({"network.n_hidden_layers", 4}, 4);
    s.run_steps(1);
    const ChangeRecord wider_deeper = s.changes().back();
    EXPECT_TRUE(s.changes()[s.changes().size() - 2].function_kept);  // the width step alone
    EXPECT_TRUE(wider_deeper.function_kept) << wider_deeper.why_not;
    EXPECT_NEAR(wider_deeper.loss_after, deeper.loss_before, 0.01 * deeper.loss_before);
    // Once the new layers have learned, going back to 2 loses what they
    // learned, and the record says so.
    s.apply({"optimizer.learning_rate", 1e-2}, 5);
    EXPECT_TRUE(s.changes().back().function_kept);  // rebuilds nothing
    s.run_steps(10);
    s.apply({"network.n_hidden_layers", 2}, 6);
    s.run_steps(1);
    const ChangeRecord shallower = s.changes().back();
    EXPECT_FALSE(shallower.function_kept);
    EXPECT_EQ(function_kept_text(shallower), "function not kept: fewer hidden layers");
    EXPECT_GT(std::abs(shallower.loss_after - shallower.loss_before), 0.01 * shallower.loss_before);
}

} // namespace
} // namespace fusedngp

#endif
