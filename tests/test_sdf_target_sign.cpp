// SdfTrainingData's target sign: sampling.target_sign resolved against the
// mesh, and the pseudo-normal sign agreeing with the ray vote (the metrics'
// ground truth) on a real mesh's training batches.

#include "core/errors.h"
#include "core/rng.h"
#include "modes/sdf_mode.h"
#include "mesh_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace fusedngp {
namespace {

SdfSamplingSettings with_sign(const std::string& sign) {
    SdfSamplingSettings s;
    s.target_sign = sign;
    return s;
}

SdfScene holed_sphere_scene() {
    SdfScene scene;
    scene.path = "holed_sphere.obj";
    scene.mesh = test::make_sphere_mesh({0.5f, 0.5f, 0.5f}, 0.35f, 16, 32);
    scene.mesh.triangles.erase(scene.mesh.triangles.begin(), scene.mesh.triangles.begin() + 32);
    return scene;
}

TEST(SdfTargetSign, AutoPicksPseudoNormalsOnAClosedMeshAndTheVoteOnAnOpenOne) {
    const SdfScene cow = load_sdf_scene(FUSEDNGP_SOURCE_DIR "/data/cow.obj");
    EXPECT_EQ(SdfTrainingData(cow, SdfSamplingSettings{}).target_sign(), SignMethod::PseudoNormal);
    EXPECT_EQ(SdfTrainingData(cow, with_sign("pseudo_normal")).target_sign(), SignMethod::PseudoNormal);
    EXPECT_EQ(SdfTrainingData(cow, with_sign("ray_vote")).target_sign(), SignMethod::RayVote);
    EXPECT_EQ(SdfTrainingData(holed_sphere_scene(), SdfSamplingSettings{}).target_sign(), SignMethod::RayVote);
    EXPECT_THROW(SdfTrainingData(cow, with_sign("parity")), ConfigError);
    try {
        SdfTrainingData data(holed_sphere_scene(), with_sign("pseudo_normal"));
        FAIL() << "an open mesh cannot take pseudo-normal signs";
    } catch (const InputError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("holed_sphere.obj"), std::string::npos) << what;
        EXPECT_NE(what.find("boundary"), std::string::npos) << what;
    }
}

// Training batches of the bundled cow (closed and oriented, but
// self-intersecting in places, where the checking ray sends the point to the
// vote): the two signs agree on every point off the surface, and the
// distances are identical.
TEST(SdfTargetSign, PseudoNormalTargetsEqualTheVotesOnTheCow) {
    const SdfScene cow = load_sdf_scene(FUSEDNGP_SOURCE_DIR "/data/cow.obj");
    const SdfTrainingData fast(cow, SdfSamplingSettings{});
    const SdfTrainingData voted(cow, with_sign("ray_vote"));
    const uint32_t batch = 1 << 14;
    int signed_points = 0;
    for (uint64_t seed : {1u, 2u}) {
        Rng a(seed), b(seed);
        Matrix<float> points_a, targets_a, points_b, targets_b;
        fast.sample(batch, a, points_a, targets_a);
        voted.sample(batch, b, points_b, targets_b);
        ASSERT_TRUE(points_a == points_b);
        for (uint32_t i = 0; i < batch; ++i) {
            ASSERT_EQ(std::fabs(targets_a(i, 0)), std::fabs(targets_b(i, 0))) << i;
            if (std::fabs(targets_b(i, 0)) < 1e-6f) continue;
            ++signed_points;
            ASSERT_EQ(targets_a(i, 0) < 0, targets_b(i, 0) < 0)
                << "point " << points_a(i, 0) << " " << points_a(i, 1) << " " << points_a(i, 2);
        }
    }
    EXPECT_GT(signed_points, batch * 9 / 10);  // half of each batch is off the surface
}

} // namespace
} // namespace fusedngp
