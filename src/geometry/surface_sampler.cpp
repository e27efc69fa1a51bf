#include "geometry/surface_sampler.h"

#include "core/errors.h"

#include <string>

namespace fusedngp {

SurfaceSampler::SurfaceSampler(const TriangleMesh& mesh) {
    const size_t n = mesh.n_triangles();
    corners_.reserve(3 * n);
    std::vector<double> running(n);
    double total = 0;
    for (size_t t = 0; t < n; ++t) {
        for (uint32_t index : mesh.triangles[t]) {
            if (index >= mesh.vertices.size()) {
                throw InputError("surface sampling: triangle " + std::to_string(t) + " uses vertex " +
                                 std::to_string(index) + " of " + std::to_string(mesh.vertices.size()));
            }
            corners_.push_back(mesh.vertices[index]);
        }
        // Areas in double: a float sum over a million triangles would drift.
        const Vec3* c = &corners_[3 * t];
        const double ux = (double)c[1].x - c[0].x, uy = (double)c[1].y - c[0].y, uz = (double)c[1].z - c[0].z;
        const double vx = (double)c[2].x - c[0].x, vy = (double)c[2].y - c[0].y, vz = (double)c[2].z - c[0].z;
        const double nx = uy * vz - uz * vy, ny = uz * vx - ux * vz, nz = ux * vy - uy * vx;
        total += 0.5 * std::sqrt(nx * nx + ny * ny + nz * nz);
        running[t] = total;
    }
    if (!(total > 0)) throw InputError("surface sampling: the mesh has no triangle of positive area");
    cdf_.resize(n);
    for (size_t t = 0; t < n; ++t) cdf_[t] = (float)(running[t] / total);
    // Exactly 1 at the end, so every u < 1 finds a triangle.
    for (size_t t = n; t-- > 0 && running[t] == total;) cdf_[t] = 1.f;
    total_area_ = total;
}

} // namespace fusedngp
