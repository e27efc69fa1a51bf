// A step whose loss is not finite (here a batch with a NaN target) is skipped
// on the CPU reference: parameters and optimizer state stay as they were,
// the step is counted, and training goes on with the next batch. The CUDA
// twin of this test is CudaBackend.PoisonedBatchIsSkippedAndTrainingGoesOn.
#include "backends/cpu_backend.h"
#include "config/config.h"
#include "core/rng.h"
#include "io/image.h"
#include "model/trainer.h"
#include "modes/image_mode.h"
#include "modes/mode.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace fusedngp {
namespace {

void random_batch(uint32_t n, uint64_t seed, Matrix<float>& in, Matrix<float>& target) {
    Rng rng(seed);
    in.resize(n, 2);
    target.resize(n, 3);
    for (uint32_t i = 0; i < n; ++i) {
        in(i, 0) = rng.next_float();
        in(i, 1) = rng.next_float();
        for (int c = 0; c < 3; ++c) target(i, c) = rng.next_float();
    }
}

std::vector<std::vector<float>> optimizer_state(Trainer<float>& trainer) {
    std::vector<std::vector<float>> state;
    for (auto& b : trainer.optimizer().state()) state.push_back(*b.data);
    return state;
}

TEST(NonFiniteSteps, PoisonedBatchIsSkippedAndTrainingGoesOn) {
    json config = load_mode_config("image", "");
    config["encoding"]["log2_hashmap_size"] = 12;  // small: the test is about the step, not the model
    Trainer<float> trainer(2, 3, config_with_defaults(config), 1);
    Matrix<float> in, target;
    random_batch(512, 7, in, target);
    EXPECT_TRUE(std::isfinite(trainer.step(in, target)));  // moments non-zero from here
    const std::vector<float> params = trainer.model().params();
    const auto state = optimizer_state(trainer);
    const uint64_t steps = trainer.optimizer().step_count();

    Matrix<float> poisoned = target;
    poisoned(3, 1) = std::numeric_limits<float>::quiet_NaN();
    EXPECT_TRUE(std::isnan(trainer.step(in, poisoned)));
    EXPECT_EQ(trainer.skipped_steps(), 1u);
    EXPECT_EQ(trainer.model().params(), params);
    EXPECT_EQ(optimizer_state(trainer), state);
    EXPECT_EQ(trainer.optimizer().step_count(), steps);

    target(0, 0) = std::numeric_limits<float>::infinity();  // an infinite target: skipped as well
    trainer.step(in, target);
    EXPECT_EQ(trainer.skipped_steps(), 2u);
    target(0, 0) = 0.5f;
    const float loss = trainer.step(in, target);
    EXPECT_TRUE(std::isfinite(loss));
    EXPECT_NE(trainer.model().params(), params);
    EXPECT_EQ(trainer.optimizer().step_count(), steps + 1);
    EXPECT_EQ(trainer.skipped_steps(), 2u);
}

TEST(NonFiniteSteps, CpuBackendReportsSkippedStepsInItsDiagnostics) {
    Image image = make_image(16, 16, 3, ColorSpace::Linear);
    for (size_t i = 0; i < image.pixels.size(); ++i) image.pixels[i] = (float)(i % 7) / 7.f;
    image.pixels[5] = std::numeric_limits<float>::quiet_NaN();  // every batch that samples it is poisoned
    ImageTrainingData data(image);
    json config = load_mode_config("image", "");
    config["encoding"]["log2_hashmap_size"] = 12;
    CpuBackend backend(config_with_defaults(config), data, 3);
    uint64_t non_finite = 0;
    for (int i = 0; i < 20; ++i) non_finite += std::isfinite(backend.train_step(64)) ? 0 : 1;
    EXPECT_GT(non_finite, 0u) << "the poisoned pixel was never sampled";
    EXPECT_EQ(backend.diagnostics().at("skipped_steps").get<uint64_t>(), non_finite);
    EXPECT_EQ(backend.step(), 20u);  // skipped steps count as taken, as on the GPU
    EXPECT_EQ(backend.save_state().step, 20u - non_finite);  // the optimizer's own count
    std::vector<float> params = backend.save_state().params;
    for (float p : params) ASSERT_TRUE(std::isfinite(p));
}

} // namespace
} // namespace fusedngp
