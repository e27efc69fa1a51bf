// Per-point and per-cell math of isosurface extraction, shared by the CPU
// loop (geometry/marching_cubes.cpp) and the CUDA kernels
// (kernels/geometry/marching_cubes.cu), so both build the same mesh.
//
// The method is marching tetrahedra on the Kuhn (Freudenthal) triangulation:
// every lattice cell is split into the 6 tetrahedra that share its main
// diagonal, corner 0 -> corner 7 (one per order in which the path from 0 to 7
// steps along x, y and z). The split is the same in every cell, so the
// triangulations of a face shared by two cells agree, and the surface is
// watertight with no case table. Every tetrahedron edge joins a lattice point
// p to p + d with d one of the 7 non-zero {0,1}^3 offsets, so a surface
// vertex is keyed by (p, d): shared by every cell that touches the edge.
//
// Vertex order is global: by lattice point (x fastest, then y, then z), then
// by d = 1..7 (d's bits: x = 1, y = 2, z = 4). Triangles go by cell in the
// same order, then tetrahedron 0..5, so the order does not depend on the slab
// split or on the device.
//
// Inside is value < level; a value equal to the level (or NaN) is outside,
// everywhere, so neighbouring cells agree and no cracks open.
//
// Bitwise agreement of host and device: the device rounds every product and
// sum separately (__fmul_rn/__fadd_rn), as the host does without FMA
// contraction (x86-64 baseline code), and division and sqrtf are IEEE on both.
#pragma once

#include "geometry/vec3.h"

#include <cstddef>
#include <cstdint>

namespace fusedngp::iso {

// A triangle of vertex indices; the layout of TriangleMesh's std::array<uint32_t, 3>.
struct Triangle {
    uint32_t v[3];
};

// Arithmetic that never fuses into an FMA, so host and device round alike.
FUSEDNGP_HD float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}
FUSEDNGP_HD float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}

// a + (b - a) * t, rounded step by step.
FUSEDNGP_HD float lerp_rn(float a, float b, float t) { return add_rn(a, mul_rn(b - a, t)); }
FUSEDNGP_HD Vec3 lerp_rn(Vec3 a, Vec3 b, float t) { return {lerp_rn(a.x, b.x, t), lerp_rn(a.y, b.y, t), lerp_rn(a.z, b.z, t)}; }

FUSEDNGP_HD Vec3 normalize_rn(Vec3 a) {
    const float len = sqrtf(add_rn(add_rn(mul_rn(a.x, a.x), mul_rn(a.y, a.y)), mul_rn(a.z, a.z)));
    return len > 0.f ? Vec3{a.x / len, a.y / len, a.z / len} : Vec3{0, 0, 0};
}

FUSEDNGP_HD uint32_t popcount8(uint32_t bits) {
    uint32_t n = 0;
    for (; bits; bits &= bits - 1) ++n;
    return n;
}

FUSEDNGP_HD bool is_inside(float value, float level) { return value < level; }

// Coordinate of lattice index i (0..res) along one axis of [lo, hi].
FUSEDNGP_HD float lattice_coord(float lo, float hi, uint32_t i, uint32_t res) {
    return lerp_rn(lo, hi, (float)i / (float)res);
}

FUSEDNGP_HD Vec3 lattice_point(Vec3 lo, Vec3 hi, uint32_t res, uint32_t i, uint32_t j, uint32_t k) {
    return {lattice_coord(lo.x, hi.x, i, res), lattice_coord(lo.y, hi.y, j, res), lattice_coord(lo.z, hi.z, k, res)};
}

// The field values of one slab: lattice planes z = plane_lo..plane_hi, each
// (res+1)^2 values with x fastest. A slab of cells [z0, z1) holds planes
// z0-1..z1+1 (clamped to the lattice): the extra plane on each side feeds the
// central differences of the normals.
struct SlabValues {
    const float* values = nullptr;
    uint32_t res = 0;  // cells per axis
    uint32_t plane_lo = 0, plane_hi = 0;
    Vec3 lo, hi;  // the box
    float level = 0.f;

    FUSEDNGP_HD uint32_t n() const { return res + 1; }
    FUSEDNGP_HD float at(uint32_t i, uint32_t j, uint32_t k) const {
        return values[((size_t)(k - plane_lo) * n() + j) * n() + i];
    }
    FUSEDNGP_HD bool inside(uint32_t i, uint32_t j, uint32_t k) const { return is_inside(at(i, j, k), level); }
};

// Offset d (1..7) as a step along each axis.
FUSEDNGP_HD uint32_t dx_of(uint32_t d) { return d & 1u; }
FUSEDNGP_HD uint32_t dy_of(uint32_t d) { return (d >> 1) & 1u; }
FUSEDNGP_HD uint32_t dz_of(uint32_t d) { return (d >> 2) & 1u; }

// Bit d-1 is set when the edge (p, p + d) lies in the lattice and the surface
// crosses it (one end inside, one outside): that edge carries a vertex.
FUSEDNGP_HD uint32_t point_edge_mask(const SlabValues& s, uint32_t i, uint32_t j, uint32_t k) {
    const bool in0 = s.inside(i, j, k);
    uint32_t mask = 0;
    for (uint32_t d = 1; d < 8; ++d) {
        const uint32_t i1 = i + dx_of(d), j1 = j + dy_of(d), k1 = k + dz_of(d);
        if (i1 > s.res || j1 > s.res || k1 > s.res) continue;
        if (s.inside(i1, j1, k1) != in0) mask |= 1u << (d - 1);
    }
    return mask;
}

// Derivative along one axis at lattice index `idx` of that axis: central
// differences inside the lattice, one-sided on its faces.
FUSEDNGP_HD float axis_derivative(const SlabValues& s, uint32_t i, uint32_t j, uint32_t k, int axis, float lo, float hi) {
    const uint32_t idx = axis == 0 ? i : (axis == 1 ? j : k);
    const uint32_t below = idx > 0 ? idx - 1 : idx, above = idx < s.res ? idx + 1 : idx;
    const float v_below = axis == 0 ? s.at(below, j, k) : (axis == 1 ? s.at(i, below, k) : s.at(i, j, below));
    const float v_above = axis == 0 ? s.at(above, j, k) : (axis == 1 ? s.at(i, above, k) : s.at(i, j, above));
    return (v_above - v_below) / (lattice_coord(lo, hi, above, s.res) - lattice_coord(lo, hi, below, s.res));
}

FUSEDNGP_HD Vec3 lattice_gradient(const SlabValues& s, uint32_t i, uint32_t j, uint32_t k) {
    return {axis_derivative(s, i, j, k, 0, s.lo.x, s.hi.x), axis_derivative(s, i, j, k, 1, s.lo.y, s.hi.y),
            axis_derivative(s, i, j, k, 2, s.lo.z, s.hi.z)};
}

// Where the level is reached between values a (at t = 0) and b (at t = 1).
// Exactly one of them is inside, so a != b for finite values; infinities or a
// NaN give no meaningful fraction and take the midpoint.
FUSEDNGP_HD float crossing_fraction(float a, float b, float level) {
    const float denom = b - a;
    const float t = denom != 0.f ? (level - a) / denom : 0.5f;
    return (t >= 0.f && t <= 1.f) ? t : 0.5f;
}

// The vertex on edge (p, p + d): linear interpolation of the values for the
// position; the normal is the lattice gradient interpolated the same way and
// normalised (it points outside, towards larger values). A zero gradient falls
// back to the edge direction, from its inside end to its outside end.
FUSEDNGP_HD void edge_vertex(const SlabValues& s, uint32_t i, uint32_t j, uint32_t k, uint32_t d, Vec3* position, Vec3* normal) {
    const uint32_t i1 = i + dx_of(d), j1 = j + dy_of(d), k1 = k + dz_of(d);
    const float a = s.at(i, j, k), b = s.at(i1, j1, k1);
    const float t = crossing_fraction(a, b, s.level);
    const Vec3 pa = lattice_point(s.lo, s.hi, s.res, i, j, k), pb = lattice_point(s.lo, s.hi, s.res, i1, j1, k1);
    *position = lerp_rn(pa, pb, t);
    Vec3 n = normalize_rn(lerp_rn(lattice_gradient(s, i, j, k), lattice_gradient(s, i1, j1, k1), t));
    if (n.x == 0.f && n.y == 0.f && n.z == 0.f) n = normalize_rn(is_inside(a, s.level) ? pb - pa : pa - pb);
    *normal = n;
}

// Writes the vertices of lattice point (i, j, k)'s crossed edges (`mask`
// from point_edge_mask), in order of d, from position[0] / normal[0] on.
FUSEDNGP_HD void point_vertices(const SlabValues& s, uint32_t i, uint32_t j, uint32_t k, uint32_t mask, Vec3* position, Vec3* normal) {
    uint32_t slot = 0;
    for (uint32_t d = 1; d < 8; ++d) {
        if (!(mask & (1u << (d - 1)))) continue;
        edge_vertex(s, i, j, k, d, position + slot, normal + slot);
        ++slot;
    }
}

// ---- Cells ----------------------------------------------------------------

// Corner c (0..7) of a cell, as bits x = 1, y = 2, z = 4.
FUSEDNGP_HD int corner_x(uint32_t c) { return (int)(c & 1u); }
FUSEDNGP_HD int corner_y(uint32_t c) { return (int)((c >> 1) & 1u); }
FUSEDNGP_HD int corner_z(uint32_t c) { return (int)((c >> 2) & 1u); }

// Corner `slot` (0..3) of Kuhn tetrahedron `tet` (0..5): the path 0 -> 7 that
// steps along axes first, second, third; tet picks the order (first = tet / 2,
// second = the (tet % 2)-th remaining axis).
FUSEDNGP_HD uint32_t kuhn_corner(uint32_t tet, uint32_t slot) {
    const uint32_t first = tet / 2;
    const uint32_t others[2] = {first == 0 ? 1u : 0u, first == 2 ? 1u : 2u};
    const uint32_t second = others[tet % 2];
    if (slot == 0) return 0;
    if (slot == 1) return 1u << first;
    if (slot == 2) return (1u << first) | (1u << second);
    return 7;
}

// Bit c of the result: corner c of cell (i, j, k) is inside.
FUSEDNGP_HD uint32_t cell_inside_bits(const SlabValues& s, uint32_t i, uint32_t j, uint32_t k) {
    uint32_t bits = 0;
    for (uint32_t c = 0; c < 8; ++c) {
        if (s.inside(i + corner_x(c), j + corner_y(c), k + corner_z(c))) bits |= 1u << c;
    }
    return bits;
}

// Triangles of one tetrahedron: 0 or 4 corners inside -> none, 1 or 3 -> one,
// 2 -> a quad as two.
FUSEDNGP_HD uint32_t tet_triangle_count(uint32_t cell_bits, uint32_t tet) {
    uint32_t n_in = 0;
    for (uint32_t slot = 0; slot < 4; ++slot) n_in += (cell_bits >> kuhn_corner(tet, slot)) & 1u;
    return n_in == 2 ? 2u : (n_in == 1 || n_in == 3 ? 1u : 0u);
}

FUSEDNGP_HD uint32_t cell_triangle_count(const SlabValues& s, uint32_t i, uint32_t j, uint32_t k) {
    const uint32_t bits = cell_inside_bits(s, i, j, k);
    if (bits == 0 || bits == 0xFFu) return 0;
    uint32_t count = 0;
    for (uint32_t tet = 0; tet < 6; ++tet) count += tet_triangle_count(bits, tet);
    return count;
}

// Where a slab's vertex ids come from: per lattice point of planes z0..z1, its
// crossed-edge mask and the exclusive prefix sum of the vertex counts; point
// p's edge d has id vertex_base + offsets[p] + (crossed edges of p below d).
struct VertexIds {
    const uint8_t* masks = nullptr;
    const uint32_t* offsets = nullptr;
    uint32_t vertex_base = 0;
    uint32_t z0 = 0;

    FUSEDNGP_HD uint32_t of(uint32_t res, uint32_t i, uint32_t j, uint32_t k, uint32_t d) const {
        const size_t n = res + 1;
        const size_t p = ((size_t)(k - z0) * n + j) * n + i;
        return vertex_base + offsets[p] + popcount8(masks[p] & ((1u << (d - 1)) - 1u));
    }
};

// Id of the vertex on the tetrahedron edge between cell corners u and v. In a
// Kuhn tetrahedron one corner's bits contain the other's, so the edge starts
// at the smaller corner u & v and steps by d = u ^ v.
FUSEDNGP_HD uint32_t edge_vertex_id(const VertexIds& ids, uint32_t res, uint32_t i, uint32_t j, uint32_t k, uint32_t u, uint32_t v) {
    const uint32_t from = u & v;
    return ids.of(res, i + corner_x(from), j + corner_y(from), k + corner_z(from), u ^ v);
}

// Twice the midpoint of the edge between corners u and v, in cell units (exact integers).
struct Int3 {
    int x, y, z;
};
FUSEDNGP_HD Int3 doubled_midpoint(uint32_t u, uint32_t v) {
    return {corner_x(u) + corner_x(v), corner_y(u) + corner_y(v), corner_z(u) + corner_z(v)};
}

// Whether the triangle through the midpoints of edges e0, e1, e2 (corner
// pairs) winds counter-clockwise seen from the outside corners, in exact
// integer arithmetic: its normal must point from the inside corners' centroid
// towards the outside corners'. The real vertices lie on the same edges, on
// the same sides, so they wind the same way.
FUSEDNGP_HD bool faces_outside(const uint32_t e[3][2], Int3 toward_outside) {
    const Int3 m0 = doubled_midpoint(e[0][0], e[0][1]), m1 = doubled_midpoint(e[1][0], e[1][1]),
               m2 = doubled_midpoint(e[2][0], e[2][1]);
    const Int3 a{m1.x - m0.x, m1.y - m0.y, m1.z - m0.z}, b{m2.x - m0.x, m2.y - m0.y, m2.z - m0.z};
    const Int3 n{a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
    return n.x * toward_outside.x + n.y * toward_outside.y + n.z * toward_outside.z > 0;
}

FUSEDNGP_HD void write_triangle(const VertexIds& ids, uint32_t res, uint32_t i, uint32_t j, uint32_t k, const uint32_t e[3][2], Triangle* out) {
    for (int c = 0; c < 3; ++c) out->v[c] = edge_vertex_id(ids, res, i, j, k, e[c][0], e[c][1]);
}

// Writes tetrahedron `tet`'s triangles of cell (i, j, k) to out; returns how many (0..2).
FUSEDNGP_HD uint32_t tet_triangles(const VertexIds& ids, uint32_t res, uint32_t i, uint32_t j, uint32_t k, uint32_t cell_bits, uint32_t tet, Triangle* out) {
    uint32_t in[4], outc[4], n_in = 0, n_out = 0;
    Int3 sum_in{0, 0, 0}, sum_out{0, 0, 0};
    for (uint32_t slot = 0; slot < 4; ++slot) {
        const uint32_t c = kuhn_corner(tet, slot);
        Int3& sum = (cell_bits >> c) & 1u ? sum_in : sum_out;
        sum.x += corner_x(c), sum.y += corner_y(c), sum.z += corner_z(c);
        if ((cell_bits >> c) & 1u) in[n_in++] = c;
        else outc[n_out++] = c;
    }
    if (n_in == 0 || n_out == 0) return 0;
    // n_in * n_out * (outside centroid - inside centroid), in integers.
    const Int3 toward_outside{(int)n_in * sum_out.x - (int)n_out * sum_in.x, (int)n_in * sum_out.y - (int)n_out * sum_in.y,
                              (int)n_in * sum_out.z - (int)n_out * sum_in.z};
    if (n_in != 2) {
        // One corner alone on its side: a triangle on its three edges.
        const uint32_t lone = n_in == 1 ? in[0] : outc[0];
        const uint32_t* rest = n_in == 1 ? outc : in;
        uint32_t e[3][2] = {{lone, rest[0]}, {lone, rest[1]}, {lone, rest[2]}};
        if (!faces_outside(e, toward_outside)) {
            e[1][1] = rest[2];
            e[2][1] = rest[1];
        }
        write_triangle(ids, res, i, j, k, e, out);
        return 1;
    }
    // Two and two: the quad through the four edges between the sides, in
    // cycle order (consecutive edges share a corner), split along its first
    // diagonal. Its midpoint version is a parallelogram, so both halves wind alike.
    uint32_t quad[4][2] = {{in[0], outc[0]}, {in[0], outc[1]}, {in[1], outc[1]}, {in[1], outc[0]}};
    const uint32_t first[3][2] = {{quad[0][0], quad[0][1]}, {quad[1][0], quad[1][1]}, {quad[2][0], quad[2][1]}};
    if (!faces_outside(first, toward_outside)) {
        // Reverse the cycle: swap entries 1 and 3.
        const uint32_t u = quad[1][0], v = quad[1][1];
        quad[1][0] = quad[3][0], quad[1][1] = quad[3][1];
        quad[3][0] = u, quad[3][1] = v;
    }
    const uint32_t t0[3][2] = {{quad[0][0], quad[0][1]}, {quad[1][0], quad[1][1]}, {quad[2][0], quad[2][1]}};
    const uint32_t t1[3][2] = {{quad[0][0], quad[0][1]}, {quad[2][0], quad[2][1]}, {quad[3][0], quad[3][1]}};
    write_triangle(ids, res, i, j, k, t0, out);
    write_triangle(ids, res, i, j, k, t1, out + 1);
    return 2;
}

// Writes cell (i, j, k)'s triangles (at most 12) to out, tetrahedron by
// tetrahedron; returns how many.
FUSEDNGP_HD uint32_t cell_triangles(const SlabValues& s, const VertexIds& ids, uint32_t i, uint32_t j, uint32_t k, Triangle* out) {
    const uint32_t bits = cell_inside_bits(s, i, j, k);
    if (bits == 0 || bits == 0xFFu) return 0;
    uint32_t count = 0;
    for (uint32_t tet = 0; tet < 6; ++tet) count += tet_triangles(ids, s.res, i, j, k, bits, tet, out + count);
    return count;
}

} // namespace fusedngp::iso
