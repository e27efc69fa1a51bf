// Quality metrics of a learned signed distance field: volume IoU, the mean
// SDF error in a band around the surface, and the Chamfer distance and
// normal consistency between two meshes (e.g. the input and the marching-
// cubes output). The GPU twins of the first two are in
// gpu/geometry/sdf_metrics_device.h and use the same points.
//
// All points are counter-based (geometry/sdf_sampling_math.h): a metric's
// points depend only on its seed and index, never on chunking or device.
#pragma once

#include "geometry/sdf_field.h"
#include "geometry/sdf_sampling_math.h"
#include "geometry/surface_sampler.h"
#include "geometry/triangle_mesh.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace fusedngp {

// Points per model/truth call of the CPU metrics (bounded memory: 1.25 MB).
constexpr uint32_t kSdfMetricChunk = 1u << 16;

// ---- Volume IoU --------------------------------------------------------------
// As instant-ngp computes it (testbed_sdf.cu, calculate_iou), on the whole
// unit cube: point j (j < n_points) is sdf_cube_point(sdf_random_key(seed, 0,
// Iou), j), uniform in [0, 1)^3. A point is inside a field when its value is
// < 0 (sdf_inside; instant-ngp counts <= 0: they differ only on the zero set).
//   inside_both   = #{j : model(p_j) < 0 and truth(p_j) < 0}
//   inside_either = #{j : model(p_j) < 0 or  truth(p_j) < 0}
//   iou           = inside_both / inside_either, and 1 when inside_either = 0
//                   (two empty shapes agree everywhere).
struct IouResult {
    double iou = 1;
    uint64_t n_points = 0, inside_both = 0, inside_either = 0;
};

IouResult iou_from_counts(uint64_t n_points, uint64_t inside_both, uint64_t inside_either);

IouResult sdf_iou(const SdfBatchFn& model, const SdfBatchFn& truth, uint64_t n_points, uint64_t seed);

// ---- Mean absolute SDF error near the surface --------------------------------
// Point j (j < n_points) is sdf_near_surface_point(surface, sdf_random_key(seed,
// 0, Band), j, band): a point uniform by area on the mesh, moved by
// N(0, band^2) per axis (band 1/128 of the unit cube unless given).
//   mean_abs_error = (1 / n_points) sum_j |model(p_j) - truth(p_j)|
constexpr float kDefaultSdfBand = 1.f / 128.f;

struct BandErrorResult {
    double mean_abs_error = 0;
    uint64_t n_points = 0;
};

// Throws InputError when `surface` is empty.
BandErrorResult sdf_band_error(const SurfaceSampler& surface, const SdfBatchFn& model, const SdfBatchFn& truth,
                               uint64_t n_points, uint64_t seed, float band = kDefaultSdfBand);

// ---- Chamfer distance and normal consistency ----------------------------------
// Unsigned distance from each point to a mesh, and the mesh's normal at the
// closest point (need not be unit length; it is normalised here, and a zero
// normal counts as inconsistent). The integrator binds it to the BVH.
using ClosestFn =
    std::function<void(const std::vector<Vec3>& points, std::vector<float>& distances, std::vector<Vec3>& normals)>;

// n_samples points uniform by area on A (sample j: triangle and barycentrics
// from sdf_random_key(seed, 0, Chamfer)) and n_samples on B (key (seed, 1,
// Chamfer)), each with its triangle's geometric normal n_s; d and n_c from
// the other mesh's ClosestFn.
//   mean_a_to_b      = mean over A's samples of d(a, B)      (and b_to_a alike)
//   chamfer          = mean_a_to_b + mean_b_to_a             (sum of the two means)
//   chamfer_squared  = mean d(a, B)^2 + mean d(b, A)^2
//   normal_consistency_a_to_b = mean over A's samples of |n_s . n_c / |n_c||
//   normal_consistency = (normal_consistency_a_to_b + normal_consistency_b_to_a) / 2
// Lengths are in the meshes' own units. Throws std::invalid_argument when
// n_samples is 0 or a ClosestFn returns the wrong number of results, and
// InputError when a mesh has no triangle of positive area.
struct ChamferResult {
    double chamfer = 0, mean_a_to_b = 0, mean_b_to_a = 0;
    double chamfer_squared = 0;
    double normal_consistency = 0, normal_consistency_a_to_b = 0, normal_consistency_b_to_a = 0;
    uint32_t n_samples = 0;
};

ChamferResult chamfer_distance(const TriangleMesh& a, const ClosestFn& closest_on_a, const TriangleMesh& b,
                               const ClosestFn& closest_on_b, uint32_t n_samples, uint64_t seed);

} // namespace fusedngp
