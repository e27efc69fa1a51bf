// Queries on a TriangleBvh (bvh.h), written once for the host loops
// (geometry/signed_distance.h) and the CUDA kernels (gpu/geometry/device_bvh.h):
// closest point, ray winding number, inside test and signed distance.
// Traversals use a fixed-size stack (a BVH is built shallower than
// kBvhMaxStack) and no recursion, so they run unchanged in a kernel.
#pragma once

#include "geometry/bvh.h"
#include "geometry/vec3.h"

#include <cmath>
#include <cstdint>

namespace fusedngp {

// ---- Closest point on a triangle ------------------------------------------

// The closest point of segment [a, b] to p; a zero-length segment gives a.
FUSEDNGP_HD Vec3 closest_point_on_segment(Vec3 p, Vec3 a, Vec3 b) {
    Vec3 ab = b - a;
    float len2 = dot(ab, ab);
    if (!(len2 > 0)) return a;
    float t = dot(p - a, ab) / len2;
    t = fminf(fmaxf(t, 0.f), 1.f);
    return a + ab * t;
}

FUSEDNGP_HD Vec3 closest_point_on_edges(Vec3 p, Vec3 a, Vec3 b, Vec3 c) {
    Vec3 best = closest_point_on_segment(p, a, b);
    float best_d = length_squared(p - best);
    Vec3 q = closest_point_on_segment(p, b, c);
    float d = length_squared(p - q);
    if (d < best_d) best = q, best_d = d;
    q = closest_point_on_segment(p, c, a);
    if (length_squared(p - q) < best_d) best = q;
    return best;
}

// Which feature of a triangle holds the closest point: the face's interior,
// a vertex or an edge (the index of BvhPseudoNormals::feature), or unknown
// for a degenerate triangle, whose closest point the region tests cannot place.
enum TriangleFeature : uint32_t {
    kFeatureFace = 0,
    kFeatureVertexA = 1, kFeatureVertexB = 2, kFeatureVertexC = 3,
    kFeatureEdgeAB = 4, kFeatureEdgeBC = 5, kFeatureEdgeCA = 6,
    kFeatureUnknown = 7,
};

// The closest point of triangle (a, b, c) to p, and the feature it lies on.
// Classifies p into the triangle's Voronoi regions (3 vertices, 3 edges, the
// face) from the barycentric signs of its projection, so every branch is a
// plain formula. A degenerate (zero-area) triangle is a segment or a point:
// its closest point is on one of the three edges, which the region tests
// cannot tell apart reliably, so it takes that path.
FUSEDNGP_HD Vec3 closest_point_on_triangle(Vec3 p, Vec3 a, Vec3 b, Vec3 c, uint32_t& feature) {
    feature = kFeatureUnknown;
    const Vec3 ab = b - a, ac = c - a;
    const Vec3 n = cross(ab, ac);
    // |n|^2 = |ab|^2 |ac|^2 sin^2: relative sine below ~1e-6 counts as flat.
    if (!(length_squared(n) > 1e-12f * length_squared(ab) * length_squared(ac))) return closest_point_on_edges(p, a, b, c);

    const Vec3 ap = p - a;
    const float d1 = dot(ab, ap), d2 = dot(ac, ap);
    if (d1 <= 0 && d2 <= 0) {
        feature = kFeatureVertexA;
        return a;
    }

    const Vec3 bp = p - b;
    const float d3 = dot(ab, bp), d4 = dot(ac, bp);
    if (d3 >= 0 && d4 <= d3) {
        feature = kFeatureVertexB;
        return b;
    }

    const float vc = d1 * d4 - d3 * d2;
    if (vc <= 0 && d1 >= 0 && d3 <= 0) {
        feature = kFeatureEdgeAB;
        return a + ab * (d1 / (d1 - d3));
    }

    const Vec3 cp = p - c;
    const float d5 = dot(ab, cp), d6 = dot(ac, cp);
    if (d6 >= 0 && d5 <= d6) {
        feature = kFeatureVertexC;
        return c;
    }

    const float vb = d5 * d2 - d1 * d6;
    if (vb <= 0 && d2 >= 0 && d6 <= 0) {
        feature = kFeatureEdgeCA;
        return a + ac * (d2 / (d2 - d6));
    }

    const float va = d3 * d6 - d5 * d4;
    if (va <= 0 && (d4 - d3) >= 0 && (d5 - d6) >= 0) {
        feature = kFeatureEdgeBC;
        return b + (c - b) * ((d4 - d3) / ((d4 - d3) + (d5 - d6)));
    }

    const float sum = va + vb + vc;
    if (!(sum > 0)) return closest_point_on_edges(p, a, b, c);  // rounding in a near-flat triangle
    feature = kFeatureFace;
    return a + ab * (vb / sum) + ac * (vc / sum);
}

FUSEDNGP_HD Vec3 closest_point_on_triangle(Vec3 p, Vec3 a, Vec3 b, Vec3 c) {
    uint32_t feature;
    return closest_point_on_triangle(p, a, b, c, feature);
}

// The triangle's unit normal in the mesh's orientation (counter-clockwise
// seen from outside points out); zero for a degenerate triangle.
FUSEDNGP_HD Vec3 triangle_normal(const BvhTriangle& t) { return normalize(cross(t.b - t.a, t.c - t.a)); }

// ---- Closest point on the mesh ---------------------------------------------

struct ClosestHit {
    float distance_squared = INFINITY;
    uint32_t triangle = 0;  // leaf-order index (TriangleBvh::triangle_ids gives the mesh's)
    uint32_t feature = kFeatureUnknown;  // TriangleFeature of `point` on that triangle
    Vec3 point;
};

FUSEDNGP_HD float box_distance_squared(Vec3 p, Vec3 lo, Vec3 hi) {
    float dx = fmaxf(fmaxf(lo.x - p.x, p.x - hi.x), 0.f);
    float dy = fmaxf(fmaxf(lo.y - p.y, p.y - hi.y), 0.f);
    float dz = fmaxf(fmaxf(lo.z - p.z, p.z - hi.z), 0.f);
    return dx * dx + dy * dy + dz * dz;
}

// Depth-first, nearer child first; a subtree is skipped once its box is no
// closer than the best triangle so far. Ties keep the first triangle found.
FUSEDNGP_HD ClosestHit bvh_closest_point(const BvhView& bvh, Vec3 p) {
    ClosestHit best;
    uint32_t stack[kBvhMaxStack];
    float stack_distance[kBvhMaxStack];
    uint32_t top = 0;
    uint32_t node = 0;
    float node_distance = box_distance_squared(p, bvh.nodes[0].lo, bvh.nodes[0].hi);
    for (;;) {
        if (node_distance < best.distance_squared) {
            const BvhNode& n = bvh.nodes[node];
            if (n.count == 0) {
                uint32_t near_child = n.first, far_child = n.first + 1;
                float near_d = box_distance_squared(p, bvh.nodes[near_child].lo, bvh.nodes[near_child].hi);
                float far_d = box_distance_squared(p, bvh.nodes[far_child].lo, bvh.nodes[far_child].hi);
                if (far_d < near_d) {
                    uint32_t c = near_child; near_child = far_child; far_child = c;
                    float d = near_d; near_d = far_d; far_d = d;
                }
                // One pending sibling per level of the current path: fits, as depth < kBvhMaxStack.
                if (far_d < best.distance_squared) {
                    stack[top] = far_child;
                    stack_distance[top] = far_d;
                    ++top;
                }
                node = near_child;
                node_distance = near_d;
                continue;
            }
            for (uint32_t i = n.first; i < n.first + n.count; ++i) {
                const BvhTriangle& t = bvh.triangles[i];
                uint32_t feature;
                Vec3 q = closest_point_on_triangle(p, t.a, t.b, t.c, feature);
                float d = length_squared(p - q);
                if (d < best.distance_squared) {
                    best.distance_squared = d;
                    best.triangle = i;
                    best.feature = feature;
                    best.point = q;
                }
            }
        }
        if (top == 0) break;
        --top;
        node = stack[top];
        node_distance = stack_distance[top];
    }
    return best;
}

// ---- Rays ------------------------------------------------------------------

// A ray prepared for the watertight triangle test (Woop, Benthin and Wald,
// JCGT 2013): the dominant axis becomes z and a shear maps the ray onto the
// z axis, so a triangle test is a 2-D point-in-triangle test at the origin.
struct WatertightRay {
    Vec3 origin;
    int kx, ky, kz;
    float sx, sy, sz;
};

FUSEDNGP_HD WatertightRay make_watertight_ray(Vec3 origin, Vec3 dir) {
    WatertightRay r;
    r.origin = origin;
    float ax = fabsf(dir.x), ay = fabsf(dir.y), az = fabsf(dir.z);
    r.kz = ax > ay ? (ax > az ? 0 : 2) : (ay > az ? 1 : 2);
    r.kx = r.kz == 2 ? 0 : r.kz + 1;
    r.ky = r.kx == 2 ? 0 : r.kx + 1;
    if (dir[r.kz] < 0) {  // keep the 2-D orientation of triangles the same for both ray senses
        int k = r.kx; r.kx = r.ky; r.ky = k;
    }
    r.sx = dir[r.kx] / dir[r.kz];
    r.sy = dir[r.ky] / dir[r.kz];
    r.sz = 1.f / dir[r.kz];
    return r;
}

// Whether the origin is on the triangle's side of an edge. The edge function
// is the exact product difference rounded once (float products are exact in
// double), so it has the exact sign and the two triangles sharing an edge see
// exact opposites: no ray slips between them or counts twice. On the edge
// itself (value exactly 0) only the triangle lying towards a fixed half-plane
// (the top-left rule of rasterisers) claims it.
FUSEDNGP_HD bool edge_claims(double edge, double det, float grad_x, float grad_y) {
    if (edge != 0) return (edge > 0) == (det > 0);
    float nx = det > 0 ? grad_x : -grad_x, ny = det > 0 ? grad_y : -grad_y;  // towards the triangle
    return nx > 0 || (nx == 0 && ny > 0);
}

// Crossing of the ray (t > 0) with a triangle: 0 for none, +1 when the ray
// leaves through it (dot(normal, dir) > 0), -1 when it enters.
FUSEDNGP_HD int ray_triangle_crossing(const WatertightRay& r, const BvhTriangle& t) {
    const Vec3 a = t.a - r.origin, b = t.b - r.origin, c = t.c - r.origin;
    const float ax = a[r.kx] - r.sx * a[r.kz], ay = a[r.ky] - r.sy * a[r.kz];
    const float bx = b[r.kx] - r.sx * b[r.kz], by = b[r.ky] - r.sy * b[r.kz];
    const float cx = c[r.kx] - r.sx * c[r.kz], cy = c[r.ky] - r.sy * c[r.kz];
    const double u = (double)cx * by - (double)cy * bx;  // edge b-c
    const double v = (double)ax * cy - (double)ay * cx;  // edge c-a
    const double w = (double)bx * ay - (double)by * ax;  // edge a-b
    const double det = u + v + w;
    if (det == 0) return 0;  // seen edge-on
    // Gradient of each edge function in the 2-D plane: the edge's normal.
    if (!edge_claims(u, det, cy - by, bx - cx)) return 0;
    if (!edge_claims(v, det, ay - cy, cx - ax)) return 0;
    if (!edge_claims(w, det, by - ay, ax - bx)) return 0;
    const double hit_t = (u * (r.sz * a[r.kz]) + v * (r.sz * b[r.kz]) + w * (r.sz * c[r.kz])) / det;
    if (!(hit_t > 0)) return 0;
    // In the sheared frame det < 0 exactly when dot(normal, dir) > 0.
    return det < 0 ? 1 : -1;
}

// Whether the ray from `origin` with reciprocal direction inv_dir (finite:
// see bvh_ray_winding) meets box [lo, hi] at some t >= 0. The far distance is
// widened by a few ulps (Pharr, Jakob and Humphreys, PBRT 3rd ed., 3.9.2), so
// rounding never drops the box of a triangle that the ray just touches, such
// as a flat box around an axis-aligned face.
FUSEDNGP_HD bool ray_hits_box(Vec3 origin, Vec3 inv_dir, Vec3 lo, Vec3 hi) {
    float t_near = 0.f, t_far = INFINITY;
    for (int k = 0; k < 3; ++k) {
        float t0 = (lo[k] - origin[k]) * inv_dir[k], t1 = (hi[k] - origin[k]) * inv_dir[k];
        if (t0 > t1) { float s = t0; t0 = t1; t1 = s; }
        t_near = fmaxf(t_near, t0);
        t_far = fminf(t_far, t1 * 1.0000004f);
    }
    return t_near <= t_far;
}

// The sum over all crossings of the ray (t > 0) of +1 where it leaves the
// mesh and -1 where it enters. For a closed, consistently oriented mesh this
// is the winding number of `origin`: 1 inside, 0 outside, 2 where two shells
// overlap (parity would say "outside" there). `dir` need not be unit length.
FUSEDNGP_HD int bvh_ray_winding(const BvhView& bvh, Vec3 origin, Vec3 dir) {
    const WatertightRay ray = make_watertight_ray(origin, dir);
    const Vec3 inv_dir = safe_inverse(dir);  // finite: 0 * inf would be NaN in the slab test
    int winding = 0;
    uint32_t stack[kBvhMaxStack];
    uint32_t top = 0;
    uint32_t node = 0;
    bool visit = ray_hits_box(origin, inv_dir, bvh.nodes[0].lo, bvh.nodes[0].hi);
    for (;;) {
        if (visit) {
            const BvhNode& n = bvh.nodes[node];
            if (n.count == 0) {
                bool hit0 = ray_hits_box(origin, inv_dir, bvh.nodes[n.first].lo, bvh.nodes[n.first].hi);
                bool hit1 = ray_hits_box(origin, inv_dir, bvh.nodes[n.first + 1].lo, bvh.nodes[n.first + 1].hi);
                if (hit0 && hit1) stack[top++] = n.first + 1;  // one pending sibling per level
                node = hit0 ? n.first : n.first + 1;
                visit = hit0 || hit1;
                continue;
            }
            for (uint32_t i = n.first; i < n.first + n.count; ++i) winding += ray_triangle_crossing(ray, bvh.triangles[i]);
        }
        if (top == 0) break;
        node = stack[--top];
        visit = true;
    }
    return winding;
}

// ---- Inside test and signed distance ---------------------------------------

constexpr uint32_t kMaxSignRays = 15;
constexpr uint32_t kDefaultSignRays = 7;

// Fixed unit directions, none near an axis or a coordinate plane (smallest
// component 0.12), ordered so that every prefix is spread out (the first 7
// are at least 65 degrees apart): a greedy farthest-point pick from a dense
// spherical Fibonacci set.
FUSEDNGP_HD Vec3 sign_ray_direction(uint32_t i) {
    switch (i) {
        case 0: return {0.59545184f, 0.51722292f, 0.61475000f};
        case 1: return {-0.59358860f, -0.53994630f, -0.59675000f};
        case 2: return {-0.20148445f, 0.82483693f, -0.52825000f};
        case 3: return {0.79299509f, -0.26463604f, -0.54875000f};
        case 4: return {-0.47707521f, -0.37519553f, 0.79475000f};
        case 5: return {0.57042923f, -0.66631107f, 0.48025000f};
        case 6: return {-0.92370099f, 0.36223462f, 0.12475000f};
        case 7: return {0.68967867f, 0.64569595f, -0.32775000f};
        case 8: return {-0.31574044f, 0.52966538f, 0.78725000f};
        case 9: return {-0.24028998f, -0.96164997f, 0.13225000f};
        case 10: return {0.14204431f, 0.12250857f, -0.98225000f};
        case 11: return {0.17140336f, -0.77462528f, -0.60875000f};
        case 12: return {-0.73169208f, 0.26205177f, -0.62925000f};
        case 13: return {-0.87136750f, -0.46689732f, 0.15075000f};
        default: return {0.21238236f, -0.12032735f, 0.96975000f};
    }
}

// Majority vote over n_rays (odd, 1..kMaxSignRays; larger counts are clamped)
// rays of "winding != 0". A hole in the mesh flips only the few rays through
// it, so points not close to a hole still get the right answer.
FUSEDNGP_HD bool inside_by_rays(const BvhView& bvh, Vec3 p, uint32_t n_rays = kDefaultSignRays) {
    if (n_rays > kMaxSignRays) n_rays = kMaxSignRays;
    uint32_t inside_votes = 0, outside_votes = 0;
    for (uint32_t i = 0; i < n_rays; ++i) {
        if (bvh_ray_winding(bvh, p, sign_ray_direction(i)) != 0) ++inside_votes; else ++outside_votes;
        if (2 * inside_votes > n_rays) return true;  // the remaining rays cannot change the outcome
        if (2 * outside_votes >= n_rays) return false;
    }
    return 2 * inside_votes > n_rays;
}

// How a signed distance decides inside from outside.
enum class SignMethod : uint32_t {
    // A majority vote of ray winding numbers (inside_by_rays): survives holes
    // and overlapping shells; 1 closest-point traversal plus up to n_rays ray traversals.
    RayVote = 0,
    // The side of the closest feature's angle-weighted pseudo-normal
    // (Baerentzen and Aanaes, IEEE TVCG 2005), checked by one ray: exact on a
    // closed, consistently oriented mesh without self-intersections; near a
    // self-intersection, where the closest face can point into the solid,
    // the ray disagrees and the full vote decides. 2 traversals where they
    // agree. Needs BvhView::pseudo_normals (else, and on degenerate
    // triangles, it votes).
    PseudoNormal = 1,
};

// Distance to the nearest triangle, negative inside (by the ray vote).
FUSEDNGP_HD float signed_distance(const BvhView& bvh, Vec3 p, uint32_t n_rays = kDefaultSignRays) {
    float d = sqrtf(bvh_closest_point(bvh, p).distance_squared);
    return inside_by_rays(bvh, p, n_rays) ? -d : d;
}

// Distance to the nearest triangle, negative inside by `method`.
FUSEDNGP_HD float signed_distance(const BvhView& bvh, Vec3 p, uint32_t n_rays, SignMethod method) {
    if (method != SignMethod::PseudoNormal || !bvh.pseudo_normals) return signed_distance(bvh, p, n_rays);
    const ClosestHit hit = bvh_closest_point(bvh, p);
    const float d = sqrtf(hit.distance_squared);
    if (d == 0) return d;
    if (hit.feature != kFeatureUnknown) {
        const float side = dot(p - hit.point, bvh.pseudo_normals[hit.triangle].feature[hit.feature]);
        const bool inside = side < 0;
        if (side != 0 && (bvh_ray_winding(bvh, p, sign_ray_direction(0)) != 0) == inside) return inside ? -d : d;
    }
    return inside_by_rays(bvh, p, n_rays) ? -d : d;  // they disagree, no feature, or a zero pseudo-normal
}

} // namespace fusedngp
