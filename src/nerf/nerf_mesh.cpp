#include "nerf/nerf_mesh.h"

#include "core/errors.h"
#include "geometry/marching_cubes.h"
#include "nerf/host_inference.h"
#include "nerf/nerf_model_layout.h"
#include "nerf/ray_marching_math.h"
#include "nerf/volume_rendering.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>

namespace fusedngp::nerf {

namespace {

float sigmoid(float x) { return 1.f / (1.f + std::exp(-x)); }

uint8_t to_byte(float c) { return (uint8_t)std::lround(std::clamp(c, 0.f, 1.f) * 255.f); }

// The marching-cubes field: -sigma (inside is below the level -density).
// Points the dilated grid marks empty, and the box's faces, get 0 without an
// evaluation.
class DensityField {
public:
    DensityField(const NerfTraining& training, const NerfMeshSettings& settings)
        : model_(training.density_model()), params_(training.density_inference_params()),
          progress_(settings.progress), box_(settings.box),
          half_cell_(settings.box.extent() * (0.5f / (float)settings.resolution)) {
        const uint64_t side = settings.resolution + 1;
        total_points_ = side * side * side;
        if (settings.skip_empty) {
            const OccupancyGrid grid = training.occupancy_grid();
            n_cascades_ = grid.n_cascades();
            dilated_bits_ = dilated_occupancy_bits(grid);
        }
    }

    void operator()(const Matrix<float>& points, Matrix<float>& values) {
        const Eigen::Index n = points.rows();
        values.setZero(n, 1);
        std::vector<Eigen::Index> rows = rows_to_evaluate(points);
        Matrix<float> in((Eigen::Index)rows.size(), 3), raw;
        for (size_t i = 0; i < rows.size(); ++i) in.row((Eigen::Index)i) = points.row(rows[i]);
        parallel_inference(model_, params_.data(), in, raw);
        for (size_t i = 0; i < rows.size(); ++i) values(rows[i], 0) = -sigma_of_raw(raw((Eigen::Index)i, 0));
        done_points_ += (uint64_t)n;
        if (progress_) progress_(std::min(1.0, (double)done_points_ / (double)total_points_));
    }

private:
    std::vector<Eigen::Index> rows_to_evaluate(const Matrix<float>& points) const {
        std::vector<Eigen::Index> rows;
        rows.reserve((size_t)points.rows());
        for (Eigen::Index i = 0; i < points.rows(); ++i) {
            const Vec3 p{points(i, 0), points(i, 1), points(i, 2)};
            if (on_box_face(p)) continue;
            if (dilated_bits_.empty() || grid_occupied(dilated_bits_.data(), n_cascades_, p)) rows.push_back(i);
        }
        return rows;
    }

    // Lattice points on the box's faces count as empty, so a surface that
    // reaches the box is capped there and the mesh stays closed.
    bool on_box_face(Vec3 p) const {
        for (int a = 0; a < 3; ++a)
            if (p[a] - box_.lo[a] < half_cell_[a] || box_.hi[a] - p[a] < half_cell_[a]) return true;
        return false;
    }

    const Model<float>& model_;
    std::vector<float> params_;
    std::function<void(double)> progress_;
    Box3 box_;
    Vec3 half_cell_;
    int n_cascades_ = 0;
    std::vector<uint8_t> dilated_bits_;  // empty: evaluate everywhere
    uint64_t total_points_ = 0, done_points_ = 0;
};

void set_bit(std::vector<uint8_t>& bits, uint32_t index) { bits[index >> 3] |= (uint8_t)(1u << (index & 7u)); }

void set_neighbourhood(std::vector<uint8_t>& bits, int k, Cell3 c) {
    const int last = kGridResolution - 1;
    for (int dz = -1; dz <= 1; ++dz)
        for (int dy = -1; dy <= 1; ++dy)
            for (int dx = -1; dx <= 1; ++dx) {
                const int x = (int)c.x + dx, y = (int)c.y + dy, z = (int)c.z + dz;
                if (x < 0 || y < 0 || z < 0 || x > last || y > last || z > last) continue;
                set_bit(bits, grid_index(k, Cell3{(uint32_t)x, (uint32_t)y, (uint32_t)z}));
            }
}

std::string describe_box(const Box3& b) {
    char text[160];
    std::snprintf(text, sizeof text, "[%g, %g, %g] to [%g, %g, %g]", (double)b.lo.x, (double)b.lo.y, (double)b.lo.z,
                  (double)b.hi.x, (double)b.hi.y, (double)b.hi.z);
    return text;
}

} // namespace

std::vector<uint8_t> dilated_occupancy_bits(const OccupancyGrid& grid) {
    const std::vector<uint8_t>& bits = grid.bits();
    std::vector<uint8_t> dilated(bits.size(), 0);
    for (int k = 0; k < grid.n_cascades(); ++k)
        for (uint32_t m = 0; m < kGridCells; ++m)
            if (grid_bit(bits.data(), (uint32_t)k * kGridCells + m)) set_neighbourhood(dilated, k, morton3_decode(m));
    return dilated;
}

TriangleMesh extract_nerf_mesh(const NerfTraining& training, const NerfMeshSettings& settings) {
    if (!(settings.density > 0) || !std::isfinite(settings.density)) {
        throw InputError("the density iso value must be positive and finite, got " + std::to_string(settings.density));
    }
    IsosurfaceSettings iso;
    iso.resolution = settings.resolution;
    iso.level = -settings.density;
    iso.box = settings.box;
    validate_isosurface_settings(iso);
    DensityField field(training, settings);
    TriangleMesh mesh = extract_isosurface([&](const Matrix<float>& p, Matrix<float>& v) { field(p, v); }, iso);
    colour_nerf_mesh(training, mesh);
    return mesh;
}

void colour_nerf_mesh(const NerfTraining& training, TriangleMesh& mesh) {
    const Eigen::Index n = (Eigen::Index)mesh.vertices.size();
    if (mesh.normals.size() != mesh.vertices.size()) throw InputError("colouring a NeRF mesh needs its normals");
    Matrix<float> positions(n, 3), density_out, colour_in(n, kColourInputs), colour_raw;
    for (Eigen::Index i = 0; i < n; ++i)
        for (int a = 0; a < 3; ++a) {
            positions(i, a) = mesh.vertices[i][a];
            colour_in(i, a) = 0.5f * (-mesh.normals[i][a] + 1.f);
        }
    parallel_inference(training.density_model(), training.density_inference_params().data(), positions, density_out);
    colour_in.rightCols(kDensityOutputs) = density_out;
    parallel_inference(training.colour_model(), training.colour_inference_params().data(), colour_in, colour_raw);
    mesh.colors.resize((size_t)n);
    for (Eigen::Index i = 0; i < n; ++i)
        for (int c = 0; c < 3; ++c) mesh.colors[i][c] = to_byte(sigmoid(colour_raw(i, c)));
}

void nerf_mesh_to_world(TriangleMesh& mesh, float scale, Vec3 offset) {
    for (Vec3& v : mesh.vertices) v = nerf_unit_to_world(v, scale, offset);
    for (Vec3& n : mesh.normals) n = nerf_direction_to_world(n);
}

TriangleMesh extract_nerf_world_mesh(const NerfTraining& training, NerfMeshSettings settings, const NerfDataset& scene) {
    settings.box = intersection(nerf_scene_box(scene), settings.crop);
    const Vec3 e = settings.box.extent();
    if (!(e.x > 0 && e.y > 0 && e.z > 0)) {
        throw InputError("the crop box " + describe_box(settings.crop) + " does not overlap the scene's box " +
                         describe_box(nerf_scene_box(scene)));
    }
    TriangleMesh mesh = extract_nerf_mesh(training, settings);
    nerf_mesh_to_world(mesh, scene.scale, scene.offset);
    return mesh;
}

} // namespace fusedngp::nerf
