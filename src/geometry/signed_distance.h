// GroundTruthSdf: the exact signed distance of a triangle mesh, the SDF
// mode's training target and the reference for its metrics. Distance is to
// the nearest triangle; the sign is a majority vote of ray winding numbers
// (geometry/bvh_queries.h), so overlapping shells count as inside and a small
// hole misleads only points near it. On closed, consistently oriented meshes
// it also holds pseudo-normals, for the one-traversal sign that training
// targets may use (SignMethod). The GPU twin is gpu/geometry/device_bvh.h.
#pragma once

#include "geometry/bvh.h"
#include "geometry/bvh_queries.h"
#include "geometry/sdf_field.h"
#include "geometry/triangle_mesh.h"

#include <memory>
#include <string>
#include <vector>

namespace fusedngp {

// Whether a GroundTruthSdf computes pseudo-normals (SignMethod::PseudoNormal):
// a pass over the whole mesh that distance-only users (Chamfer on an
// extracted mesh of millions of triangles) and vote-only users skip.
enum class PseudoNormals { Build, Skip };

class GroundTruthSdf {
public:
    // `mesh` in the coordinates the queries use (the SDF mode passes the
    // mesh mapped into the unit cube). sign_rays: odd, 1..kMaxSignRays;
    // InputError otherwise, or for a mesh without triangles.
    explicit GroundTruthSdf(const TriangleMesh& mesh, uint32_t sign_rays = kDefaultSignRays,
                            PseudoNormals pseudo_normals = PseudoNormals::Build);

    float signed_distance(Vec3 p) const;

    // points [n][3] -> values [n][1], signed by `sign` (PseudoNormal votes
    // where the mesh has no pseudo-normals). The function shares this
    // object's BVH, so it stays valid after the GroundTruthSdf is gone.
    SdfBatchFn field(SignMethod sign = SignMethod::RayVote) const;

    // Whether SignMethod::PseudoNormal is exact here (closed, consistently
    // oriented mesh); if not, why not.
    bool has_pseudo_normals() const { return !bvh_->pseudo_normals.empty(); }
    const std::string& no_pseudo_normals_reason() const { return no_pseudo_normals_reason_; }

    // Unsigned distance to the mesh and the unit normal of the closest
    // triangle (mesh orientation; zero for a degenerate triangle), for the
    // Chamfer and normal-consistency metrics. Where several triangles are
    // equally close (an edge or vertex) the normal is one of theirs.
    void closest(const std::vector<Vec3>& points, std::vector<float>& distances, std::vector<Vec3>& normals) const;

    const TriangleBvh& bvh() const { return *bvh_; }
    uint32_t sign_rays() const { return sign_rays_; }

private:
    uint32_t sign_rays_;  // first: checked before the BVH is built
    std::string no_pseudo_normals_reason_;
    std::shared_ptr<const TriangleBvh> bvh_;
};

// Throws InputError unless n_rays is odd and in 1..kMaxSignRays (`what` names the setting).
void check_sign_rays(uint32_t n_rays, const char* what);

} // namespace fusedngp
