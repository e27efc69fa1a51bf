// `fusedngp mesh` on NeRF models: the model <-> world transform, the dilated
// occupancy mask, and the command on a tiny model of the synthetic scene
// (watertight, coloured, in world coordinates on the analytic surfaces), from
// a snapshot and from exported weights; bad inputs (one line, exit 2, no
// output).
#include "nerf_persist_scene.h"

#include "engine/nerf_model_file.h"
#include "engine/nerf_training_factory.h"
#include "geometry/mesh_checks.h"
#include "geometry/mesh_io.h"
#include "nerf/nerf_dataset.h"
#include "nerf/nerf_mesh.h"
#include "nerf/ray_marching_math.h"
#include "persist/nerf_scene.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>

namespace fs = std::filesystem;
using fusedngp::test::expect_cli_input_error;
using namespace fusedngp;
using fusedngp::test::make_temp_dir;
using fusedngp::test::nerf_persist_scene;
using fusedngp::test::run_cli;

namespace {

// `train` on the synthetic scene (CPU) into a fresh folder; returns the snapshot.
fs::path train_snapshot(const std::string& tag, int steps, int rays) {
    const fs::path out = make_temp_dir(tag) / "out";
    const auto r = run_cli("train --data " + nerf_persist_scene().dir.string() + " --backend cpu --config " +
                           nerf_persist_scene().config.string() + " --steps " + std::to_string(steps) + " --batch " +
                           std::to_string(rays) + " --eval-every 0 --out " + out.string());
    if (r.exit_code != 0) throw std::runtime_error("training failed: " + r.out + r.err);
    return out / "snapshot.fusedngp";
}

// A model that has learnt the scene (test PSNR 23.8 dB; the CLI test's run):
// for the geometry and colour checks.
const fs::path& trained_snapshot() {
    static const fs::path s = train_snapshot("nerf_mesh_trained", 150, 512);
    return s;
}

// A barely trained model whose occupancy grid has had one update (step 16),
// so it has empty cells to skip: enough for the file paths, the errors and
// the skip, at a tenth of the trained model's cost (ctest runs every test in
// its own process, so each test pays for its model).
const fs::path& quick_snapshot() {
    static const fs::path s = train_snapshot("nerf_mesh_quick", 20, 128);
    return s;
}

constexpr int kMeshResolution = 64;

// Signed distance to a primitive in unit-cube coordinates (negative inside).
float primitive_distance(const Primitive& p, Vec3 u) {
    if (p.kind == PrimitiveKind::Sphere) return length(u - p.center) - p.radius;
    Vec3 q = u - p.center;
    q = {std::fabs(q.x) - p.half_extent.x, std::fabs(q.y) - p.half_extent.y, std::fabs(q.z) - p.half_extent.z};
    const float inside = std::min(std::max(q.x, std::max(q.y, q.z)), 0.f);
    return length(max(q, Vec3{0, 0, 0})) + inside;
}

// Distance in world units from a world point to the scene's surface (|the
// union's signed distance|: exact outside, where a mesh's vertices lie).
float world_distance_to_scene(const SyntheticScene& scene, Vec3 world) {
    const Vec3 u = synthetic_unit_from_world(world);
    float d = 1e30f;
    for (const Primitive& p : scene.primitives) d = std::min(d, primitive_distance(p, u));
    return std::fabs(d) * kSyntheticWorldPerUnit;
}

float median(std::vector<float> v) {
    std::nth_element(v.begin(), v.begin() + (long)v.size() / 2, v.end());
    return v[v.size() / 2];
}

} // namespace

TEST(NerfWorldTransform, UnitToWorldInvertsWorldToUnit) {
    std::mt19937 gen(3);
    std::uniform_real_distribution<float> u(-3.f, 3.f);
    const Vec3 offset{0.5f, 0.25f, -0.125f};
    for (int i = 0; i < 100; ++i) {
        const Vec3 p{u(gen), u(gen), u(gen)};
        const Vec3 back = nerf_unit_to_world(nerf_world_to_unit(p, 0.7f, offset), 0.7f, offset);
        EXPECT_LT(length(back - p), 1e-5f);
        EXPECT_EQ(nerf_direction_to_world(nerf_direction_to_unit(p)).x, p.x);
        EXPECT_EQ(nerf_direction_to_unit(nerf_direction_to_world(p)).y, p.y);
    }
}

TEST(NerfWorldTransform, AgreesWithTheSyntheticScenesFrame) {
    // The synthetic dataset is written with scale 0.33 and offset 0.5.
    for (Vec3 unit : {Vec3{0.5f, 0.5f, 0.5f}, Vec3{0.1f, 0.8f, 0.3f}, Vec3{1, 0, 0.25f}}) {
        EXPECT_LT(length(nerf_unit_to_world(unit, 0.33f, {0.5f, 0.5f, 0.5f}) - synthetic_world_from_unit(unit)), 1e-5f);
    }
    EXPECT_LT(length(nerf_direction_to_world({0, 1, 0}) - Vec3{0, 0, 1}), 1e-7f);  // our up is world z
}

TEST(NerfMeshOccupancy, DilationSetsTheNeighbourhoodOfEachOccupiedCell) {
    nerf::OccupancyGrid grid(1);
    std::vector<float> density(grid.density().size(), 0.f);
    density[nerf::grid_index(0, {10, 20, 30})] = 100.f;
    density[nerf::grid_index(0, {0, 0, 127})] = 100.f;  // a corner: only its 8 neighbours inside the grid
    grid.set_density(density);
    const std::vector<uint8_t> dilated = nerf::dilated_occupancy_bits(grid);
    size_t set = 0;
    for (uint8_t b : dilated) set += (size_t)__builtin_popcount(b);
    EXPECT_EQ(set, 27u + 8u);
    EXPECT_TRUE(nerf::grid_bit(dilated.data(), nerf::grid_index(0, {11, 21, 31})));
    EXPECT_TRUE(nerf::grid_bit(dilated.data(), nerf::grid_index(0, {9, 19, 29})));
    EXPECT_FALSE(nerf::grid_bit(dilated.data(), nerf::grid_index(0, {12, 20, 30})));
}

namespace {

// Mean colour (0..1) of the vertices within `band` (unit-cube units) of a primitive.
Vec3 mean_colour_near(const TriangleMesh& mesh, const Primitive& p, float band, int& count) {
    Vec3 sum{0, 0, 0};
    count = 0;
    for (size_t i = 0; i < mesh.vertices.size(); ++i) {
        if (std::fabs(primitive_distance(p, synthetic_unit_from_world(mesh.vertices[i]))) > band) continue;
        sum += Vec3{(float)mesh.colors[i][0], (float)mesh.colors[i][1], (float)mesh.colors[i][2]} / 255.f;
        ++count;
    }
    return count ? sum / (float)count : sum;
}

float share(Vec3 rgb, int channel) { return rgb[channel] / std::max(1e-6f, rgb.x + rgb.y + rgb.z); }

} // namespace

TEST(NerfMeshCli, SnapshotGivesAWatertightColouredMeshOnTheSceneInWorldCoordinates) {
    const fs::path out = make_temp_dir("nerf_mesh_ply") / "scene.ply";
    const auto r = run_cli("mesh " + trained_snapshot().string() + " --out " + out.string() + " --resolution " +
                           std::to_string(kMeshResolution));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("triangles"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(out.string()), std::string::npos) << r.out;

    const TriangleMesh mesh = load_mesh(out.string());
    const MeshReport report = analyse_mesh(mesh);
    EXPECT_TRUE(report.watertight()) << report.describe();
    ASSERT_EQ(mesh.colors.size(), mesh.vertices.size());
    ASSERT_EQ(mesh.normals.size(), mesh.vertices.size());

    // In world coordinates on the analytic scene. Measured 0.0625 world units
    // (1.3 lattice cells of 1/64 unit = 0.047 world units; the tiny model's
    // sigma = 2.5 shell lies just outside the true surfaces).
    const SyntheticScene scene = default_synthetic_scene();
    std::vector<float> distances;
    for (const Vec3& v : mesh.vertices) distances.push_back(world_distance_to_scene(scene, v));
    const float median_distance = median(distances);
    EXPECT_LT(median_distance, 0.1f) << "median vertex distance to the scene (world units)";

    // Colours tell the primitives apart: the red sphere's vertices are redder
    // than the green slab's, which are greener (measured shares: red 0.46 vs
    // 0.32, green 0.45 vs 0.37).
    int n_red = 0, n_green = 0;
    const Vec3 red = mean_colour_near(mesh, scene.primitives[0], 0.02f, n_red);
    const Vec3 green = mean_colour_near(mesh, scene.primitives[2], 0.02f, n_green);
    ASSERT_GT(n_red, 100);
    ASSERT_GT(n_green, 100);
    EXPECT_GT(share(red, 0), share(green, 0) + 0.05f) << red.x << " " << red.y << " " << red.z;
    EXPECT_GT(share(green, 1), share(red, 1) + 0.03f) << green.x << " " << green.y << " " << green.z;
    std::printf("[ measured ] %zu vertices, median distance %.4f world units; red share %.3f vs %.3f, green share %.3f vs %.3f\n",
                mesh.vertices.size(), (double)median_distance, (double)share(red, 0), (double)share(green, 0),
                (double)share(green, 1), (double)share(red, 1));
}

TEST(NerfMesh, SkippingEmptyCellsKeepsTheSurface) {
    const OpenedNerfModel m = open_nerf_model(quick_snapshot().string(), "cpu");
    const float occupied = m.trainer->occupancy_grid().fraction_occupied();
    ASSERT_LT(occupied, 0.9f) << "the grid should have empty cells to skip";
    nerf::NerfMeshSettings settings;
    settings.resolution = 48;
    settings.density = 1.f;  // the barely trained model's densities are low
    // Above the grid's threshold (measured 0.46), so a cell whose samples
    // reached the iso value is occupied and the skip should change nothing.
    ASSERT_LT(m.trainer->occupancy_grid().threshold(), settings.density);
    const TriangleMesh skipped = nerf::extract_nerf_mesh(*m.trainer, settings);
    settings.skip_empty = false;
    const TriangleMesh full = nerf::extract_nerf_mesh(*m.trainer, settings);
    ASSERT_GT(full.triangles.size(), 0u);
    std::printf("[ measured ] grid %.3f occupied; %zu triangles skipping empty cells, %zu evaluating all\n",
                (double)occupied, skipped.triangles.size(), full.triangles.size());
    EXPECT_EQ(skipped.triangles, full.triangles);
}

TEST(NerfMesh, LargeScenesMeshTheirWholeBoxAndStayClosed) {
    // aabb_scale 4: three cascades, scene box [-1.5, 2.5]^3. One occupied
    // cell of the outer cascade, far outside the unit cube; with an iso value
    // below every density the untrained model has, the mesh is the closed
    // skin of that cell's dilated neighbourhood (3 x 3 x 3 cells of 1/32).
    NerfScene scene;
    scene.aabb_scale = 4;
    const NerfDataset data = frameless_dataset(scene, "mem");
    const json config = json::parse(test::kNerfPersistConfig);
    auto trainer = create_nerf_training("cpu", data, config, nerf::nerf_settings_from_config(config, 4, 64, 7));
    nerf::NerfTrainingState state = trainer->save_state();
    const nerf::Cell3 cell{4, 4, 4};
    state.grid_density.assign(state.grid_density.size(), 0.f);
    state.grid_density[nerf::grid_index(2, cell)] = 100.f;
    state.grid_bits.assign(state.grid_bits.size(), 0);
    state.grid_bits[nerf::grid_index(2, cell) >> 3] = (uint8_t)(1u << (nerf::grid_index(2, cell) & 7u));
    trainer->load_state(state);

    nerf::NerfMeshSettings settings;
    settings.resolution = 128;  // lattice cells of 1/32, as the outer cascade's
    settings.density = 1e-6f;
    settings.box = nerf_scene_box(data);
    const TriangleMesh mesh = nerf::extract_nerf_mesh(*trainer, settings);
    EXPECT_TRUE(analyse_mesh(mesh).watertight()) << analyse_mesh(mesh).describe();
    const Box3 cell_box = nerf::cell_box(2, cell);
    const float margin = 1.f / 32 + 1.f / 32 + 1e-4f;  // the dilation, then one lattice cell
    const Box3 bounds = mesh.bounds();
    for (int a = 0; a < 3; ++a) {
        EXPECT_GE(bounds.lo[a], cell_box.lo[a] - margin) << a;
        EXPECT_LE(bounds.hi[a], cell_box.hi[a] + margin) << a;
        EXPECT_LT(bounds.hi[a], 0.f) << a;  // outside the unit cube
    }
    ASSERT_EQ(mesh.colors.size(), mesh.vertices.size());
}

TEST(NerfMeshCli, ExportedWeightsGiveTheSnapshotsMeshAsObj) {
    const fs::path dir = make_temp_dir("nerf_mesh_obj");
    const fs::path weights = dir / "scene.safetensors";
    ASSERT_EQ(run_cli("export " + quick_snapshot().string() + " --out " + weights.string()).exit_code, 0);
    const fs::path from_weights = dir / "weights.obj", from_snapshot = dir / "snapshot.obj";
    for (const auto& [model, out] : {std::pair{weights, from_weights}, std::pair{quick_snapshot(), from_snapshot}}) {
        const auto r = run_cli("mesh " + model.string() + " --out " + out.string() + " --resolution 32 --density 1");
        ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    }
    const TriangleMesh a = load_mesh(from_weights.string()), b = load_mesh(from_snapshot.string());
    EXPECT_GT(a.triangles.size(), 0u);
    EXPECT_EQ(a.triangles, b.triangles);
    EXPECT_EQ(a.colors.size(), a.vertices.size());  // OBJ's `v x y z r g b`
    ASSERT_EQ(a.vertices.size(), b.vertices.size());
    for (size_t i = 0; i < a.vertices.size(); ++i) EXPECT_EQ(length(a.vertices[i] - b.vertices[i]), 0.f);
}

TEST(NerfMeshCli, CropBoxMeshesOnlyItsPartOfTheScene) {
    const fs::path dir = make_temp_dir("nerf_mesh_crop");
    const std::string mesh = "mesh " + quick_snapshot().string() + " --resolution 32 --density 1 --out ";
    ASSERT_EQ(run_cli(mesh + (dir / "full.ply").string()).exit_code, 0);
    const auto r = run_cli(mesh + (dir / "right.ply").string() + " --crop 0.5,-1,-1,2,2,2");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const TriangleMesh full = load_mesh((dir / "full.ply").string());
    const TriangleMesh right = load_mesh((dir / "right.ply").string());
    ASSERT_GT(right.triangles.size(), 0u);
    EXPECT_LT(right.triangles.size(), full.triangles.size());
    // The lattice spans the common part of the scene's box and the crop, so
    // every vertex lies in it; the whole scene reaches further left.
    int left = 0;
    for (const Vec3& v : full.vertices) left += synthetic_unit_from_world(v).x < 0.4f;
    EXPECT_GT(left, 100);
    for (const Vec3& v : right.vertices) ASSERT_GE(synthetic_unit_from_world(v).x, 0.5f - 1e-4f);
}

TEST(NerfMeshCli, BadInputsAreOneLineErrorsWithoutOutput) {
    const fs::path dir = make_temp_dir("nerf_mesh_bad");
    const std::string model = quick_snapshot().string();
    const fs::path ply = dir / "m.ply";
    expect_cli_input_error("mesh " + model + " --out " + ply.string() + " --density 0", ply, "--density");
    expect_cli_input_error("mesh " + model + " --out " + ply.string() + " --density -1", ply, "--density");
    expect_cli_input_error("mesh " + model + " --out " + ply.string() + " --resolution 1", ply, "--resolution");
    expect_cli_input_error("mesh " + model + " --out " + ply.string() + " --resolution 2000", ply, "--resolution");
    expect_cli_input_error("mesh " + model + " --out " + (dir / "m.stl").string(), dir / "m.stl", "m.stl");
    expect_cli_input_error("mesh " + model + " --out " + ply.string() + " --level 0.1", ply, "--level");
    expect_cli_input_error("mesh " + (dir / "missing.fusedngp").string() + " --out " + ply.string(), ply,
                       "missing.fusedngp");
    expect_cli_input_error("mesh " + model + " --out " + ply.string() + " --crop 0,0,0,1,1", ply, "--crop");
    expect_cli_input_error("mesh " + model + " --out " + ply.string() + " --crop 0,0,1,1,1,0", ply, "--crop");
    expect_cli_input_error("mesh " + model + " --out " + ply.string() + " --crop 2,2,2,3,3,3", ply, "does not overlap");
    // A density above anything the model holds: an empty surface, no file.
    expect_cli_input_error("mesh " + model + " --out " + ply.string() + " --resolution 8 --density 1e30", ply, "empty");
}
