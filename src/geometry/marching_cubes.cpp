// The CPU isosurface extraction: plain loops over geometry/isosurface_math.h,
// slab by slab. The GPU driver (kernels/geometry/marching_cubes.cu) runs the
// same steps as kernels and must give the same mesh.
#include "geometry/marching_cubes.h"

#include "core/errors.h"
#include "geometry/isosurface_math.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace fusedngp {

void validate_isosurface_settings(const IsosurfaceSettings& settings) {
    if (settings.resolution < 2 || settings.resolution > 1024) {
        throw InputError("--resolution must be between 2 and 1024, got " + std::to_string(settings.resolution));
    }
    const Vec3 extent = settings.box.extent();
    if (!(extent.x > 0 && extent.y > 0 && extent.z > 0)) {
        throw InputError("the isosurface box must have a positive extent along every axis");
    }
}

uint32_t isosurface_slab_cells(const IsosurfaceSettings& settings) {
    const uint32_t res = settings.resolution;
    if (settings.slab_cells > 0) return std::min(settings.slab_cells, res);
    const size_t plane_bytes = sizeof(float) * (size_t)(res + 1) * (res + 1);
    const size_t budget_planes = (size_t(64) << 20) / plane_bytes;
    // A slab of c cells holds c + 1 planes and a halo plane on each side.
    const size_t cells = budget_planes > 3 ? budget_planes - 3 : 1;
    return (uint32_t)std::clamp<size_t>(cells, 1, res);
}

std::vector<IsosurfaceSlab> plan_isosurface_slabs(const IsosurfaceSettings& settings) {
    validate_isosurface_settings(settings);
    const uint32_t res = settings.resolution, step = isosurface_slab_cells(settings);
    std::vector<IsosurfaceSlab> slabs;
    uint32_t previous_hi = 0;
    for (uint32_t z0 = 0; z0 < res; z0 += step) {
        IsosurfaceSlab s;
        s.z0 = z0;
        s.z1 = std::min(z0 + step, res);
        s.plane_lo = z0 > 0 ? z0 - 1 : 0;
        s.plane_hi = std::min(s.z1 + 1, res);
        s.first_new_plane = slabs.empty() ? 0 : previous_hi + 1;
        s.last = s.z1 == res;
        previous_hi = s.plane_hi;
        slabs.push_back(s);
    }
    return slabs;
}

namespace {

// Evaluates planes [first, last] of the lattice into `values` (plane `first` at index 0),
// a few planes per call so each batch is large but bounded.
void evaluate_planes(const SdfBatchFn& field, const IsosurfaceSettings& settings, uint32_t first, uint32_t last, float* values) {
    const uint32_t res = settings.resolution, n = res + 1;
    const size_t plane = (size_t)n * n;
    const uint32_t planes_per_call = (uint32_t)std::max<size_t>(1, (size_t(1) << 20) / plane);
    Matrix<float> points, out;
    for (uint32_t k0 = first; k0 <= last; k0 += planes_per_call) {
        const uint32_t k1 = std::min(k0 + planes_per_call - 1, last);
        const size_t count = plane * (k1 - k0 + 1);
        points.resize((Eigen::Index)count, 3);
        size_t row = 0;
        for (uint32_t k = k0; k <= k1; ++k) {
            for (uint32_t j = 0; j < n; ++j) {
                for (uint32_t i = 0; i < n; ++i, ++row) {
                    const Vec3 p = iso::lattice_point(settings.box.lo, settings.box.hi, res, i, j, k);
                    points(row, 0) = p.x, points(row, 1) = p.y, points(row, 2) = p.z;
                }
            }
        }
        out.resize((Eigen::Index)count, 1);
        field(points, out);
        if ((size_t)out.size() != count) {
            throw std::runtime_error("extract_isosurface: the field returned " + std::to_string(out.size()) +
                                     " values for " + std::to_string(count) + " points");
        }
        std::memcpy(values + plane * (k0 - first), out.data(), count * sizeof(float));
    }
}

// The slab's value planes: carries the overlap with the previous slab
// (`previous`, planes from previous_lo) and evaluates the rest.
void fill_slab_values(const SdfBatchFn& field, const IsosurfaceSettings& settings, const IsosurfaceSlab& slab,
                      const std::vector<float>& previous, uint32_t previous_lo, std::vector<float>& values) {
    const size_t plane = (size_t)(settings.resolution + 1) * (settings.resolution + 1);
    values.resize(plane * slab.n_planes());
    const size_t carried = plane * (slab.first_new_plane - slab.plane_lo);
    if (carried) std::memcpy(values.data(), previous.data() + plane * (slab.plane_lo - previous_lo), carried * sizeof(float));
    if (slab.first_new_plane <= slab.plane_hi) {
        evaluate_planes(field, settings, slab.first_new_plane, slab.plane_hi, values.data() + carried);
    }
}

// Crossed-edge masks and the exclusive prefix sum of their vertex counts for
// the slab's classified points (offsets has one more entry: the total).
void classify_points(const iso::SlabValues& s, const IsosurfaceSlab& slab, std::vector<uint8_t>& masks, std::vector<uint32_t>& offsets) {
    const uint32_t n = s.res + 1, count = slab.points_classified(s.res);
    masks.resize(count);
    offsets.resize((size_t)count + 1);
    uint32_t running = 0;
    for (uint32_t p = 0; p < count; ++p) {
        const uint32_t mask = iso::point_edge_mask(s, p % n, (p / n) % n, slab.z0 + p / (n * n));
        masks[p] = (uint8_t)mask;
        offsets[p] = running;
        running += iso::popcount8(mask);
    }
    offsets[count] = running;
}

} // namespace

TriangleMesh extract_isosurface(const SdfBatchFn& field, const IsosurfaceSettings& settings) {
    const std::vector<IsosurfaceSlab> slabs = plan_isosurface_slabs(settings);
    const uint32_t res = settings.resolution, n = res + 1;
    TriangleMesh mesh;
    std::vector<float> values, previous;
    std::vector<uint8_t> masks;
    std::vector<uint32_t> offsets;
    uint32_t previous_lo = 0;
    for (const IsosurfaceSlab& slab : slabs) {
        std::swap(values, previous);
        fill_slab_values(field, settings, slab, previous, previous_lo, values);
        previous_lo = slab.plane_lo;
        const iso::SlabValues s{values.data(), res, slab.plane_lo, slab.plane_hi, settings.box.lo, settings.box.hi, settings.level};
        classify_points(s, slab, masks, offsets);

        const uint32_t base = (uint32_t)mesh.vertices.size(), owned = slab.points_owned(res);
        mesh.vertices.resize(base + offsets[owned]);
        mesh.normals.resize(mesh.vertices.size());
        for (uint32_t p = 0; p < owned; ++p) {
            if (!masks[p]) continue;
            iso::point_vertices(s, p % n, (p / n) % n, slab.z0 + p / (n * n), masks[p], &mesh.vertices[base + offsets[p]],
                                &mesh.normals[base + offsets[p]]);
        }

        const iso::VertexIds ids{masks.data(), offsets.data(), base, slab.z0};
        iso::Triangle cell[12];
        for (uint32_t k = slab.z0; k < slab.z1; ++k) {
            for (uint32_t j = 0; j < res; ++j) {
                for (uint32_t i = 0; i < res; ++i) {
                    const uint32_t count = iso::cell_triangles(s, ids, i, j, k, cell);
                    for (uint32_t t = 0; t < count; ++t) mesh.triangles.push_back({cell[t].v[0], cell[t].v[1], cell[t].v[2]});
                }
            }
        }
    }
    return mesh;
}

} // namespace fusedngp
