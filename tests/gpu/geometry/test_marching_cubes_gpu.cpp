// Isosurface extraction on the device (gpu/geometry/marching_cubes_device.h)
// against the CPU extraction: on the analytic device fields and their host
// twins (tests/mesh_test_util.h), and on the device field's own values
// brought to the host, which must give the very same mesh. Skips without a device.
#include "gpu/geometry/marching_cubes_device.h"

#include "core/errors.h"
#include "geometry/isosurface_math.h"
#include "gpu/components/device_buffer.h"
#include "gpu/geometry/analytic_fields.h"
#include "gpu/device_test_util.h"
#include "isosurface_test_util.h"

#include <gtest/gtest.h>

#include <cmath>

namespace fusedngp::gpu {
namespace {

using test::batch_field;

IsosurfaceSettings settings_at(uint32_t resolution, uint32_t slab_cells = 0) {
    IsosurfaceSettings s;
    s.resolution = resolution;
    s.slab_cells = slab_cells;
    return s;
}

// The device field as a host SdfBatchFn: same values as the GPU extraction sees.
SdfBatchFn through_device(const DeviceSdfFn& field) {
    return [field](const Matrix<float>& points, Matrix<float>& values) {
        const uint32_t n = (uint32_t)points.rows();
        DeviceBuffer<float> d_points((size_t)n * 3), d_values(n);
        d_points.upload(std::vector<float>(points.data(), points.data() + points.size()));
        field(d_points.data(), n, d_values.data(), nullptr);
        FUSEDNGP_GPU_CHECK(cudaDeviceSynchronize());
        const std::vector<float> host = d_values.download();
        values.resize(n, 1);
        std::copy(host.begin(), host.end(), values.data());
    };
}

// Smallest |value - level| over the lattice: a margin far above float
// rounding means the host twin and the device agree on every sign.
float sign_margin(const SdfBatchFn& field, const IsosurfaceSettings& s) {
    const uint32_t n = s.resolution + 1;
    Matrix<float> points((Eigen::Index)n * n * n, 3), values;
    Eigen::Index row = 0;
    for (uint32_t k = 0; k < n; ++k) {
        for (uint32_t j = 0; j < n; ++j) {
            for (uint32_t i = 0; i < n; ++i, ++row) {
                const Vec3 p = iso::lattice_point(s.box.lo, s.box.hi, s.resolution, i, j, k);
                points(row, 0) = p.x, points(row, 1) = p.y, points(row, 2) = p.z;
            }
        }
    }
    field(points, values);
    return (values.array() - s.level).abs().minCoeff();
}

class MarchingCubesGpu : public test::DeviceStreamTest {
protected:
    // GPU vs CPU on the host twin (same counts and order, positions within
    // 1e-5), and vs CPU on the device's own values (the same mesh).
    void expect_matches_cpu(const DeviceSdfFn& device_field, const SdfBatchFn& host_twin, const IsosurfaceSettings& s) {
        ASSERT_GT(sign_margin(host_twin, s), 1e-6f) << "a lattice value sits on the level: pick other shape parameters";
        const TriangleMesh gpu = extract_isosurface_device(device_field, s, stream_);
        ASSERT_GT(gpu.triangles.size(), 100u);
        {
            SCOPED_TRACE("host twin");
            test::expect_same_mesh(extract_isosurface(host_twin, s), gpu, 1e-5f, 1e-3f);
        }
        {
            SCOPED_TRACE("device values on the host");
            test::expect_same_mesh(extract_isosurface(through_device(device_field), s), gpu, 1e-6f, 1e-6f);
        }
        EXPECT_TRUE(test::closed_and_consistently_oriented(gpu));
    }
};

const Vec3 kCenter{0.5f, 0.5f, 0.5f};

TEST_F(MarchingCubesGpu, SphereMatchesCpu) {
    const Vec3 c{0.48f, 0.51f, 0.5f};
    const float r = 0.3f;
    expect_matches_cpu(device_sphere_sdf(c, r), batch_field([=](Vec3 p) { return test::sphere_sdf(p, c, r); }), settings_at(64));
}

TEST_F(MarchingCubesGpu, SphereMultiSlabMatchesCpu) {
    const float r = 0.33f;
    for (uint32_t slab_cells : {1u, 7u}) {
        SCOPED_TRACE(slab_cells);
        expect_matches_cpu(device_sphere_sdf(kCenter, r), batch_field([=](Vec3 p) { return test::sphere_sdf(p, kCenter, r); }),
                           settings_at(48, slab_cells));
    }
}

TEST_F(MarchingCubesGpu, TorusMatchesCpu) {
    const TriangleMesh gpu = extract_isosurface_device(device_torus_sdf(kCenter, 0.25f, 0.1f), settings_at(64, 9), stream_);
    EXPECT_EQ(test::euler_characteristic(gpu), 0);
    expect_matches_cpu(device_torus_sdf(kCenter, 0.25f, 0.1f),
                       batch_field([](Vec3 p) { return test::torus_sdf(p, kCenter, 0.25f, 0.1f); }), settings_at(64, 9));
}

TEST_F(MarchingCubesGpu, SphereAt256MatchesCpu) {
    const float r = 0.3f;
    IsosurfaceSettings s = settings_at(256);
    ASSERT_GT(plan_isosurface_slabs(s).size(), 1u);  // the automatic slabs split 256^3 too
    expect_matches_cpu(device_sphere_sdf(kCenter, r), batch_field([=](Vec3 p) { return test::sphere_sdf(p, kCenter, r); }), s);
    s.slab_cells = 40;
    const TriangleMesh gpu = extract_isosurface_device(device_sphere_sdf(kCenter, r), s, stream_);
    EXPECT_EQ(test::euler_characteristic(gpu), 2);
    const double exact = 4.0 / 3.0 * 3.14159265358979 * r * r * r;
    EXPECT_NEAR(test::signed_volume(gpu), exact, 0.005 * exact);
}

TEST_F(MarchingCubesGpu, FieldWithoutCrossingsGivesAnEmptyMesh) {
    const TriangleMesh mesh = extract_isosurface_device(device_sphere_sdf({5, 5, 5}, 0.1f), settings_at(32, 5), stream_);
    EXPECT_TRUE(mesh.vertices.empty());
    EXPECT_TRUE(mesh.triangles.empty());
    EXPECT_TRUE(mesh.normals.empty());
}

TEST_F(MarchingCubesGpu, ResolutionOutsideRangeThrows) {
    EXPECT_THROW(extract_isosurface_device(device_sphere_sdf(kCenter, 0.3f), settings_at(1), stream_), InputError);
    EXPECT_THROW(extract_isosurface_device(device_sphere_sdf(kCenter, 0.3f), settings_at(1025), stream_), InputError);
}

} // namespace
} // namespace fusedngp::gpu
