// GPU SDF sampling and metrics against their CPU twins: the same points for
// the same counters, the targets from the device truth, and the IoU counts
// and band error (gpu/geometry/sdf_sampling_device.h, sdf_metrics_device.h).
// Every test skips itself without a device.
#include "core/errors.h"
#include "geometry/sdf_metrics.h"
#include "geometry/sdf_sampling.h"
#include "gpu/components/device_buffer.h"
#include "gpu/geometry/analytic_fields.h"
#include "gpu/geometry/sdf_metrics_device.h"
#include "gpu/geometry/sdf_sampling_device.h"

#include "gpu/device_test_util.h"
#include "mesh_test_util.h"

#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

namespace fusedngp {
namespace {

const Vec3 kCenter{0.5f, 0.5f, 0.5f};

// All four kinds of sample in one batch.
SdfSamplingSettings mixed_settings() {
    SdfSamplingSettings s;
    s.uniform_fraction = 0.2f;
    s.surface_fraction = 0.3f;
    s.large_offset_fraction = 0.25f;
    return s;
}

SdfBatchFn host_sphere(Vec3 center, float radius) {
    return [=](const Matrix<float>& p, Matrix<float>& v) {
        v.resize(p.rows(), 1);
        for (int64_t i = 0; i < p.rows(); ++i) v(i, 0) = test::sphere_sdf({p(i, 0), p(i, 1), p(i, 2)}, center, radius);
    };
}

SdfBatchFn host_torus(Vec3 center, float major, float minor) {
    return [=](const Matrix<float>& p, Matrix<float>& v) {
        v.resize(p.rows(), 1);
        for (int64_t i = 0; i < p.rows(); ++i) {
            v(i, 0) = test::torus_sdf({p(i, 0), p(i, 1), p(i, 2)}, center, major, minor);
        }
    };
}

// Points of the IoU metric where either field is within 1e-6 of zero: the
// only ones where host and device float rounding may disagree on the sign.
uint64_t near_zero_iou_points(const SdfBatchFn& a, const SdfBatchFn& b, uint64_t n, uint64_t seed) {
    const uint64_t key = sdf_random_key(seed, 0, SdfRandomPurpose::Iou);
    Matrix<float> points(n, 3), va, vb;
    for (uint64_t j = 0; j < n; ++j) {
        const Vec3 p = sdf_cube_point(key, j);
        points(j, 0) = p.x;
        points(j, 1) = p.y;
        points(j, 2) = p.z;
    }
    a(points, va);
    b(points, vb);
    uint64_t count = 0;
    for (uint64_t j = 0; j < n; ++j) count += std::fabs(va(j, 0)) < 1e-6f || std::fabs(vb(j, 0)) < 1e-6f;
    return count;
}

void expect_counts_match(const IouResult& cpu, const IouResult& gpu, uint64_t allowed) {
    EXPECT_EQ(gpu.n_points, cpu.n_points);
    EXPECT_LE((uint64_t)std::llabs((long long)gpu.inside_both - (long long)cpu.inside_both), allowed);
    EXPECT_LE((uint64_t)std::llabs((long long)gpu.inside_either - (long long)cpu.inside_either), allowed);
}

TEST(DeviceSdfSampler, PointsEqualTheCpus) {
    REQUIRE_DEVICE();
    const SdfSamplingSettings settings = mixed_settings();
    const uint32_t batch = (1u << 16) + 37;
    for (const TriangleMesh& mesh : {test::make_box_mesh({0.2f, 0.3f, 0.25f}, {0.8f, 0.6f, 0.7f}),
                                     test::make_sphere_mesh(kCenter, 0.3f, 24, 48)}) {
        const SurfaceSampler host(mesh);
        const gpu::DeviceSdfSampler device(host);
        ASSERT_EQ(device.n_triangles(), host.n_triangles());
        for (uint64_t step : {0ull, 1ull, 12345ull}) {
            Matrix<float> expected;
            generate_sdf_positions(host, settings, 77, step, batch, expected);
            gpu::DeviceBuffer<float> d_points(3ull * batch);
            device.sample_points(settings, 77, step, batch, d_points.data(), nullptr);
            FUSEDNGP_GPU_CHECK(cudaDeviceSynchronize());
            const std::vector<float> got = d_points.download();
            float worst = 0;
            for (uint32_t i = 0; i < batch; ++i) {
                for (int a = 0; a < 3; ++a) worst = std::max(worst, std::fabs(got[3ull * i + a] - expected(i, a)));
            }
            EXPECT_LE(worst, 1e-6f) << "step " << step;
        }
    }
}

TEST(DeviceSdfSampler, TargetsAreTheDeviceTruthAtThePoints) {
    REQUIRE_DEVICE();
    const float radius = 0.3f;
    const SurfaceSampler host(test::make_sphere_mesh(kCenter, radius, 24, 48));
    const gpu::DeviceSdfSampler device(host);
    const uint32_t batch = 50000;
    gpu::DeviceBuffer<float> d_points(3ull * batch), d_targets(batch);
    device.sample(SdfSamplingSettings{}, 3, 8, batch, d_points.data(), d_targets.data(),
                  gpu::device_sphere_sdf(kCenter, radius), nullptr);
    FUSEDNGP_GPU_CHECK(cudaDeviceSynchronize());
    const std::vector<float> points = d_points.download(), targets = d_targets.download();
    Matrix<float> expected_points;
    generate_sdf_positions(host, SdfSamplingSettings{}, 3, 8, batch, expected_points);
    // Exact surface points get 0 (no truth asked), the others the device truth.
    const SdfSampleLayout layout = sdf_sample_layout(SdfSamplingSettings{}, batch);
    float worst_target = 0, worst_point = 0;
    for (uint32_t i = 0; i < batch; ++i) {
        const Vec3 p{points[3ull * i], points[3ull * i + 1], points[3ull * i + 2]};
        const bool on_surface = i >= layout.n_uniform && i < layout.n_uniform + layout.n_surface;
        const float expected = on_surface ? 0.f : test::sphere_sdf(p, kCenter, radius);
        worst_target = std::max(worst_target, std::fabs(targets[i] - expected));
        for (int a = 0; a < 3; ++a) worst_point = std::max(worst_point, std::fabs(p[a] - expected_points(i, a)));
    }
    EXPECT_LE(worst_target, 1e-6f);
    EXPECT_LE(worst_point, 1e-6f);
}

TEST(DeviceSdfSampler, SurfacePointsNeedAMesh) {
    REQUIRE_DEVICE();
    const gpu::DeviceSdfSampler none;
    gpu::DeviceBuffer<float> d_points(3 * 64);
    EXPECT_THROW(none.sample_points(SdfSamplingSettings{}, 0, 0, 64, d_points.data(), nullptr), InputError);
    SdfSamplingSettings uniform_only;
    uniform_only.uniform_fraction = 1.f;
    uniform_only.surface_fraction = 0.f;
    none.sample_points(uniform_only, 0, 0, 64, d_points.data(), nullptr);
    FUSEDNGP_GPU_CHECK(cudaDeviceSynchronize());
    const std::vector<float> got = d_points.download();
    for (uint32_t j = 0; j < 64; ++j) {
        const Vec3 p = sdf_cube_point(sdf_random_key(0, 0, SdfRandomPurpose::Training), j);
        for (int a = 0; a < 3; ++a) EXPECT_EQ(got[3 * j + a], p[a]);  // cube points are exact
    }
}

TEST(DeviceSdfIou, CountsEqualTheCpusOnAnalyticFields) {
    REQUIRE_DEVICE();
    // Two chunks and a remainder.
    const uint64_t n = 2ull * gpu::kDeviceSdfMetricChunk + 4321;
    struct Case {
        SdfBatchFn host_model, host_truth;
        gpu::DeviceSdfFn device_model, device_truth;
    };
    const Case cases[] = {
        {host_sphere(kCenter, 0.2f), host_sphere(kCenter, 0.3f), gpu::device_sphere_sdf(kCenter, 0.2f),
         gpu::device_sphere_sdf(kCenter, 0.3f)},
        {host_torus(kCenter, 0.3f, 0.1f), host_sphere({0.6f, 0.5f, 0.5f}, 0.25f),
         gpu::device_torus_sdf(kCenter, 0.3f, 0.1f), gpu::device_sphere_sdf({0.6f, 0.5f, 0.5f}, 0.25f)},
    };
    for (const Case& c : cases) {
        const IouResult cpu = sdf_iou(c.host_model, c.host_truth, n, 31);
        const IouResult gpu = gpu::device_sdf_iou(c.device_model, c.device_truth, n, 31, nullptr);
        ASSERT_GT(cpu.inside_both, 0u);
        expect_counts_match(cpu, gpu, near_zero_iou_points(c.host_model, c.host_truth, n, 31));
        EXPECT_NEAR(gpu.iou, cpu.iou, 1e-5);
    }
    // A field with itself, and the volume ratio of concentric spheres.
    const gpu::DeviceSdfFn sphere = gpu::device_sphere_sdf(kCenter, 0.3f);
    const IouResult self = gpu::device_sdf_iou(sphere, sphere, n, 5, nullptr);
    EXPECT_EQ(self.iou, 1.0);
    EXPECT_GT(self.inside_both, 0u);
    const IouResult ratio = gpu::device_sdf_iou(gpu::device_sphere_sdf(kCenter, 0.2f), sphere, 1ull << 24, 6, nullptr);
    EXPECT_EQ(ratio.n_points, 1ull << 24);
    EXPECT_NEAR(ratio.iou, std::pow(0.2 / 0.3, 3), 0.002);  // standard error 3.5e-4
}

TEST(DeviceSdfBandError, EqualsTheCpusAndTheShift) {
    REQUIRE_DEVICE();
    const float radius = 0.3f, grow = 0.004f;
    const SurfaceSampler host(test::make_sphere_mesh(kCenter, radius, 24, 48));
    const gpu::DeviceSdfSampler device(host);
    const uint64_t n = gpu::kDeviceSdfMetricChunk + 999;
    const gpu::DeviceSdfFn truth = gpu::device_sphere_sdf(kCenter, radius);
    const BandErrorResult self = gpu::device_sdf_band_error(device, truth, truth, n, 2, nullptr);
    EXPECT_EQ(self.mean_abs_error, 0.0);
    EXPECT_EQ(self.n_points, n);
    const BandErrorResult grown =
        gpu::device_sdf_band_error(device, gpu::device_sphere_sdf(kCenter, radius + grow), truth, n, 2, nullptr);
    EXPECT_NEAR(grown.mean_abs_error, grow, 1e-6);
    // A field the band error sees varying: the torus against the sphere.
    const gpu::DeviceSdfFn torus = gpu::device_torus_sdf(kCenter, 0.3f, 0.1f);
    const BandErrorResult gpu_torus = gpu::device_sdf_band_error(device, torus, truth, n, 2, nullptr);
    const BandErrorResult cpu_torus =
        sdf_band_error(host, host_torus(kCenter, 0.3f, 0.1f), host_sphere(kCenter, radius), n, 2);
    EXPECT_GT(cpu_torus.mean_abs_error, 0.01);
    EXPECT_NEAR(gpu_torus.mean_abs_error / cpu_torus.mean_abs_error, 1.0, 1e-5);
    // Same sum every run: the reduction order is fixed.
    EXPECT_EQ(gpu::device_sdf_band_error(device, torus, truth, n, 2, nullptr).mean_abs_error, gpu_torus.mean_abs_error);
    EXPECT_THROW(gpu::device_sdf_band_error(gpu::DeviceSdfSampler{}, truth, truth, 10, 2, nullptr), InputError);
}

} // namespace
} // namespace fusedngp
