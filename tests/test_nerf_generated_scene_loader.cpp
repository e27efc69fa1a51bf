// The synthetic scene writer and the transforms.json loader agree on every
// convention: re-rendering each loaded camera (as the loader maps it into the
// unit cube) reproduces the written image. This is what the NeRF mode's CPU
// tests will train on.
#include "cli_runner.h"
#include "nerf/nerf_dataset.h"
#include "nerf/synthetic_scene.h"

#include <gtest/gtest.h>

#include <cmath>

namespace fusedngp {
namespace {

TEST(NerfSyntheticLoader, LoadedCamerasReproduceTheWrittenImages) {
    const auto dir = test::make_temp_dir("nerf_synthetic_loader");
    const SyntheticScene scene = default_synthetic_scene();
    write_synthetic_dataset(dir.string(), scene, 5, 3, 40, 30, 7);
    for (const char* split : {"transforms_train.json", "transforms_test.json"}) {
        std::vector<std::string> warnings;
        const NerfDataset data = load_nerf_dataset((dir / split).string(), NerfLoadOptions{}, &warnings);
        EXPECT_TRUE(warnings.empty()) << warnings.front();
        ASSERT_EQ(data.images.width, 40u);
        ASSERT_EQ(data.images.height, 30u);
        for (size_t f = 0; f < data.frames.size(); ++f) {
            const Image again = render_synthetic_view(scene, data.frames[f].camera, SyntheticRig{}.supersampling);
            const uint8_t* written = data.images.frame(f);
            size_t off = 0, covered = 0;
            for (size_t i = 0; i < (size_t)40 * 30; ++i) {
                covered += written[4 * i + 3] > 0;
                for (int c = 0; c < 4; ++c) {
                    const float expected = again.pixels[4 * i + (size_t)c];
                    off += std::fabs(written[4 * i + (size_t)c] / 255.f - expected) > 2.f / 255.f;
                }
            }
            EXPECT_GT(covered, 40u * 30u / 10) << split << " frame " << f << ": the scene is in view";
            // Float differences can move a subsample across a silhouette: a few channels.
            EXPECT_LE(off, (size_t)12) << split << " frame " << f;
        }
    }
}

} // namespace
} // namespace fusedngp
