#include "geometry/signed_distance.h"

#include "core/errors.h"
#include "geometry/pseudo_normals.h"

#include <algorithm>
#include <string>

namespace fusedngp {
namespace {

// Points are split into fixed chunks; each point's answer depends on that
// point alone, so the result is the same for any thread count.
constexpr int64_t kChunk = 1024;

template <typename PerPoint>
void for_each_point(int64_t n, PerPoint per_point) {
    const int64_t n_chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (n_chunks > 1)
    for (int64_t chunk = 0; chunk < n_chunks; ++chunk) {
        const int64_t end = std::min(n, (chunk + 1) * kChunk);
        for (int64_t i = chunk * kChunk; i < end; ++i) per_point(i);
    }
}

} // namespace

void check_sign_rays(uint32_t n_rays, const char* what) {
    if (n_rays == 0 || n_rays > kMaxSignRays || n_rays % 2 == 0) {
        throw InputError(std::string(what) + ": the number of sign rays must be odd and between 1 and " +
                         std::to_string(kMaxSignRays) + ", got " + std::to_string(n_rays));
    }
}

namespace {
uint32_t checked_sign_rays(uint32_t n_rays, const char* what) {
    check_sign_rays(n_rays, what);
    return n_rays;
}

std::shared_ptr<const TriangleBvh> build_bvh(const TriangleMesh& mesh, PseudoNormals pseudo_normals,
                                             std::string& why_not) {
    auto bvh = std::make_shared<TriangleBvh>(build_triangle_bvh(mesh));
    if (pseudo_normals == PseudoNormals::Build)
        attach_pseudo_normals(mesh, *bvh, &why_not);
    else
        why_not = "pseudo-normals were not computed for this mesh";
    return bvh;
}
} // namespace

GroundTruthSdf::GroundTruthSdf(const TriangleMesh& mesh, uint32_t sign_rays, PseudoNormals pseudo_normals)
    : sign_rays_(checked_sign_rays(sign_rays, "GroundTruthSdf")),
      bvh_(build_bvh(mesh, pseudo_normals, no_pseudo_normals_reason_)) {}

float GroundTruthSdf::signed_distance(Vec3 p) const { return fusedngp::signed_distance(host_view(*bvh_), p, sign_rays_); }

SdfBatchFn GroundTruthSdf::field(SignMethod sign) const {
    std::shared_ptr<const TriangleBvh> bvh = bvh_;
    const uint32_t rays = sign_rays_;
    return [bvh, rays, sign](const Matrix<float>& points, Matrix<float>& values) {
        if (points.cols() != 3) throw InputError("GroundTruthSdf: points must have 3 columns, got " + std::to_string(points.cols()));
        const BvhView view = host_view(*bvh);
        values.resize(points.rows(), 1);
        for_each_point(points.rows(), [&](int64_t i) {
            values(i, 0) = fusedngp::signed_distance(view, Vec3{points(i, 0), points(i, 1), points(i, 2)}, rays, sign);
        });
    };
}

void GroundTruthSdf::closest(const std::vector<Vec3>& points, std::vector<float>& distances, std::vector<Vec3>& normals) const {
    const BvhView view = host_view(*bvh_);
    distances.resize(points.size());
    normals.resize(points.size());
    for_each_point((int64_t)points.size(), [&](int64_t i) {
        ClosestHit hit = bvh_closest_point(view, points[i]);
        distances[i] = sqrtf(hit.distance_squared);
        normals[i] = triangle_normal(view.triangles[hit.triangle]);
    });
}

} // namespace fusedngp
