// Angle-weighted pseudo-normals (Baerentzen and Aanaes, "Signed distance
// computation using the angle weighted pseudonormal", IEEE TVCG 2005): on a
// closed, consistently oriented mesh without self-intersections, a point is
// inside exactly when it lies behind the pseudo-normal of the feature (face,
// edge or vertex) that holds its closest point. That makes the sign of a
// distance free once the closest point is known, where a ray vote costs
// several more BVH traversals (SignMethod, geometry/bvh_queries.h).
#pragma once

#include "geometry/bvh.h"
#include "geometry/triangle_mesh.h"

#include <string>

namespace fusedngp {

// Fills bvh.pseudo_normals (leaf order) for the mesh the BVH was built from
// and returns true when the mesh, with vertices welded by position, is
// closed, manifold and consistently oriented (every directed edge once, its
// reverse once) and encloses a non-zero volume. A mesh oriented inside out
// gets flipped normals, so "behind" still means inside. Otherwise leaves
// bvh.pseudo_normals empty and says why in `why_not` (when given).
// Self-intersections are not detected: such meshes need SignMethod::RayVote.
bool attach_pseudo_normals(const TriangleMesh& mesh, TriangleBvh& bvh, std::string* why_not = nullptr);

} // namespace fusedngp
