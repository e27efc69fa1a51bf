// `fusedngp mesh`: marching cubes of a trained SDF model into a PLY or OBJ
// mesh in the input mesh's coordinates (written atomically).
#include "app/commands.h"

#include "app/output_dir.h"
#include "app/sdf_model_file.h"
#include "core/errors.h"
#include "engine/sdf_backend_tools.h"
#include "geometry/mesh_io.h"

#include <chrono>
#include <filesystem>
#include <cstdio>

namespace fusedngp {
namespace {

struct MeshOptions {
    std::string input;
    std::string out;
    uint32_t resolution = 512;
    float level = 0.f;
    std::string backend;
};

void run_mesh(const MeshOptions& o) {
    if (o.resolution < 2 || o.resolution > 1024) {
        throw InputError("--resolution must be between 2 and 1024, got " + std::to_string(o.resolution));
    }
    const std::string ext = std::filesystem::path(o.out).extension().string();
    if (ext != ".ply" && ext != ".obj" && ext != ".PLY" && ext != ".OBJ") {
        throw InputError(o.out + ": the output must end in .ply or .obj");
    }
    OpenedSdfModel m = open_sdf_model(o.input, o.backend);
    prepare_output_file(o.out);
    IsosurfaceSettings settings;
    settings.resolution = o.resolution;
    settings.level = o.level;
    const auto start = std::chrono::steady_clock::now();
    TriangleMesh mesh = extract_sdf_model_mesh(*m.backend, settings);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (mesh.triangles.empty()) {
        throw InputError(o.input + ": the level set " + std::to_string(o.level) +
                         " is empty inside the unit cube (nothing to write); try another --level");
    }
    apply_transform(mesh, m.transform, false);
    save_mesh(o.out, mesh);
    std::printf("extracted %zu triangles, %zu vertices at %u^3 in %.2f s (%s) from %s -> %s\n", mesh.triangles.size(),
                mesh.vertices.size(), o.resolution, seconds, m.backend->name().c_str(), o.input.c_str(), o.out.c_str());
}

} // namespace

void add_mesh_command(CLI::App& app) {
    auto o = std::make_shared<MeshOptions>();
    CLI::App* cmd = app.add_subcommand("mesh", "Extract a mesh (.ply or .obj) from a trained SDF model by marching cubes");
    cmd->add_option("model", o->input, "SDF snapshot (from train) or weights (from export)")->required();
    cmd->add_option("--out", o->out, "output mesh, .ply (binary) or .obj")->required();
    cmd->add_option("--resolution", o->resolution, "cells per axis over the unit cube (2..1024)")->capture_default_str();
    cmd->add_option("--level", o->level, "iso value of the surface (0: the zero level set)")->capture_default_str();
    cmd->add_option("--backend", o->backend, "cpu or cuda; default: the best available");
    cmd->callback([o]() { run_mesh(*o); });
}

} // namespace fusedngp
