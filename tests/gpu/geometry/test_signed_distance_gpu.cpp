// DeviceBvh's kernels against their CPU twin, GroundTruthSdf: the same
// bvh_queries.h functions on the same BVH. nvcc contracts multiply-adds into
// FMAs, so values agree to rounding (1e-5), not bit for bit; signs agree
// wherever the point is not within rounding of the surface. Output buffers
// are poisoned with NaN first, so an element left unwritten fails.

#include "core/errors.h"
#include "core/rng.h"
#include "geometry/bvh_queries.h"
#include "geometry/signed_distance.h"
#include "gpu/components/device_buffer.h"
#include "gpu/geometry/device_bvh.h"
#include "gpu/device_test_util.h"
#include "mesh_test_util.h"
#include "modes/sdf_mode.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace fusedngp::gpu {
namespace {

constexpr float kDistanceTolerance = 1e-5f;

class SignedDistanceGpu : public test::DeviceStreamTest {};

// 10^5 + 3 points (a partial last block) in [-0.1, 1.1]^3, as [n][3] floats.
std::vector<float> random_points(uint64_t seed, uint32_t n = 100003) {
    Rng rng(seed);
    std::vector<float> points(3 * (size_t)n);
    for (float& x : points) x = rng.uniform(-0.1f, 1.1f);
    return points;
}

Vec3 point_at(const std::vector<float>& points, size_t i) { return {points[3 * i], points[3 * i + 1], points[3 * i + 2]}; }

void expect_signed_distances_match(const TriangleMesh& mesh, uint32_t sign_rays, cudaStream_t stream,
                                   SignMethod sign = SignMethod::RayVote) {
    const GroundTruthSdf cpu(mesh, sign_rays);
    if (sign == SignMethod::PseudoNormal) { ASSERT_TRUE(cpu.has_pseudo_normals()) << cpu.no_pseudo_normals_reason(); }
    const DeviceBvh gpu(cpu.bvh());
    const std::vector<float> points = random_points(sign_rays);
    const uint32_t n = (uint32_t)(points.size() / 3);

    Matrix<float> batch(n, 3);
    for (uint32_t i = 0; i < n; ++i) batch.row(i) << points[3 * i], points[3 * i + 1], points[3 * i + 2];
    Matrix<float> expected;
    cpu.field(sign)(batch, expected);

    DeviceBuffer<float> d_points(points.size()), d_values(n), d_field_values(n);
    d_points.upload(points);
    d_values.fill_bytes(0xFF, stream);
    d_field_values.fill_bytes(0xFF, stream);
    gpu.signed_distances(d_points.data(), n, d_values.data(), sign_rays, stream, sign);
    gpu.field(sign_rays, sign)(d_points.data(), n, d_field_values.data(), stream);
    FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream));
    const std::vector<float> values = d_values.download(), field_values = d_field_values.download();

    uint32_t inside = 0;
    for (uint32_t i = 0; i < n; ++i) {
        const float want = expected(i, 0);
        ASSERT_FALSE(std::isnan(values[i])) << "not written: " << i;
        ASSERT_NEAR(values[i], want, kDistanceTolerance) << "point " << i;
        if (std::fabs(want) > kDistanceTolerance) { ASSERT_EQ(values[i] < 0, want < 0) << "sign of point " << i; }
        ASSERT_EQ(field_values[i], values[i]) << "field() is signed_distances";
        inside += want < 0;
    }
    EXPECT_GT(inside, 100u);
}

TEST_F(SignedDistanceGpu, TorusMatchesCpu) {
    expect_signed_distances_match(test::make_torus_mesh({0.5f, 0.5f, 0.5f}, 0.3f, 0.1f), 7, stream_);
}

TEST_F(SignedDistanceGpu, OverlappingSpheresMatchCpuWithOneAndFifteenRays) {
    const TriangleMesh spheres = test::concatenate_meshes(test::make_sphere_mesh({0.4f, 0.5f, 0.5f}, 0.3f),
                                                          test::make_sphere_mesh({0.62f, 0.52f, 0.5f}, 0.25f));
    expect_signed_distances_match(spheres, 1, stream_);
    expect_signed_distances_match(spheres, kMaxSignRays, stream_);
}

TEST_F(SignedDistanceGpu, BoxMatchesCpu) {
    expect_signed_distances_match(test::make_box_mesh({0.2f, 0.25f, 0.3f}, {0.8f, 0.7f, 0.65f}), 7, stream_);
}

// Pseudo-normal signs (one closest-point query and one checking ray; the
// full vote where they disagree) on closed meshes, including the bundled cow,
// which self-intersects in places, so the vote fallback runs on the device too.
TEST_F(SignedDistanceGpu, PseudoNormalSignsMatchCpu) {
    expect_signed_distances_match(test::make_torus_mesh({0.5f, 0.5f, 0.5f}, 0.3f, 0.1f), 7, stream_,
                                  SignMethod::PseudoNormal);
    expect_signed_distances_match(test::make_box_mesh({0.2f, 0.25f, 0.3f}, {0.8f, 0.7f, 0.65f}), 7, stream_,
                                  SignMethod::PseudoNormal);
    expect_signed_distances_match(load_sdf_scene(FUSEDNGP_SOURCE_DIR "/data/cow.obj").mesh, 15, stream_,
                                  SignMethod::PseudoNormal);
}

// Where an edge or vertex is closest, two triangles tie and the device may
// pick the other one: then its normal must be that of a triangle as close.
TEST_F(SignedDistanceGpu, ClosestMatchesCpu) {
    const TriangleMesh mesh = test::make_torus_mesh({0.5f, 0.5f, 0.5f}, 0.3f, 0.1f);
    const GroundTruthSdf cpu(mesh);
    const DeviceBvh gpu(cpu.bvh());
    const std::vector<float> flat = random_points(99);
    const uint32_t n = (uint32_t)(flat.size() / 3);
    std::vector<Vec3> points(n);
    for (uint32_t i = 0; i < n; ++i) points[i] = point_at(flat, i);
    std::vector<float> want_distances;
    std::vector<Vec3> want_normals;
    cpu.closest(points, want_distances, want_normals);

    DeviceBuffer<float> d_points(flat.size()), d_distances(n), d_normals(3 * (size_t)n);
    d_points.upload(flat);
    d_distances.fill_bytes(0xFF, stream_);
    d_normals.fill_bytes(0xFF, stream_);
    gpu.closest(d_points.data(), n, d_distances.data(), d_normals.data(), stream_);
    FUSEDNGP_GPU_CHECK(cudaStreamSynchronize(stream_));
    const std::vector<float> distances = d_distances.download(), normals = d_normals.download();

    const BvhView host = host_view(cpu.bvh());
    uint32_t ties = 0;
    for (uint32_t i = 0; i < n; ++i) {
        ASSERT_NEAR(distances[i], want_distances[i], kDistanceTolerance) << "point " << i;
        const Vec3 normal = point_at(normals, i);
        ASSERT_NEAR(length(normal), 1.f, 1e-5f) << "point " << i;
        if (length(normal - want_normals[i]) < 1e-4f) continue;
        ++ties;
        bool found = false;
        for (uint32_t t = 0; t < host.n_triangles && !found; ++t) {
            const BvhTriangle& tri = host.triangles[t];
            const float d = length(points[i] - closest_point_on_triangle(points[i], tri.a, tri.b, tri.c));
            found = d < want_distances[i] + kDistanceTolerance && length(triangle_normal(tri) - normal) < 1e-4f;
        }
        ASSERT_TRUE(found) << "point " << i << ": the device's normal is of no triangle at the closest distance";
    }
    EXPECT_LT(ties, n / 10) << "ties are edge and vertex cases only";
}

TEST_F(SignedDistanceGpu, EmptyBatchesAndBadRayCounts) {
    const DeviceBvh gpu(build_triangle_bvh(test::make_box_mesh({0, 0, 0}, {1, 1, 1})));
    EXPECT_EQ(gpu.view().n_triangles, 12u);
    EXPECT_NO_THROW(gpu.signed_distances(nullptr, 0, nullptr, 7, stream_));
    EXPECT_NO_THROW(gpu.closest(nullptr, 0, nullptr, nullptr, stream_));
    EXPECT_THROW(gpu.signed_distances(nullptr, 0, nullptr, 4, stream_), InputError);
    EXPECT_THROW(gpu.field(0), InputError);
}

} // namespace
} // namespace fusedngp::gpu
