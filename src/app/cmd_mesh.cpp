// `fusedngp mesh`: marching cubes of a trained model into a PLY or OBJ mesh
// (written atomically). SDF models: the level set, in the input mesh's
// coordinates. NeRF models: the density iso-surface with vertex colours, in
// the scene's world frame (nerf/nerf_mesh.h).
#include "app/commands.h"
#include "app/cli_checks.h"

#include "app/output_dir.h"
#include "app/train_options.h"
#include "app/sdf_model_file.h"
#include "core/clock.h"
#include "core/errors.h"
#include "engine/nerf_model_file.h"
#include "engine/sdf_backend_tools.h"
#include "geometry/mesh_io.h"
#include "io/safetensors.h"
#include "nerf/nerf_mesh.h"
#include "persist/model_file.h"
#include "persist/nerf_weights.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <unistd.h>

namespace fusedngp {
namespace {

struct MeshOptions {
    std::string input;
    std::string out;
    uint32_t resolution = 512;
    float level = 0.f;
    float density = 2.5f;
    bool level_given = false, density_given = false;
    std::string crop;  // nerf: X0,Y0,Z0,X1,Y1,Z1 in model space
    std::string backend;
};

// Everything checkable without the model, so a bad option costs no loading.
void validate_options(const MeshOptions& o) {
    if (o.resolution < 2 || o.resolution > 1024) {
        throw InputError("--resolution must be between 2 and 1024, got " + std::to_string(o.resolution));
    }
    const std::string ext = std::filesystem::path(o.out).extension().string();
    if (ext != ".ply" && ext != ".obj" && ext != ".PLY" && ext != ".OBJ") {
        throw InputError(o.out + ": the output must end in .ply or .obj");
    }
    if (!(o.density > 0 && std::isfinite(o.density))) {
        throw InputError("--density must be positive, got " + std::to_string(o.density));
    }
}

void run_sdf_mesh(const MeshOptions& o, const SafetensorsContents& contents) {
    if (o.density_given || !o.crop.empty())
        throw InputError(o.input + ": --density and --crop are for NeRF models; SDF models take --level");
    OpenedSdfModel m = sdf_model_from(open_trained_model(contents, o.input), o.input, o.backend);
    prepare_output_file(o.out);
    IsosurfaceSettings settings;
    settings.resolution = o.resolution;
    settings.level = o.level;
    const auto start = std::chrono::steady_clock::now();
    TriangleMesh mesh = extract_sdf_model_mesh(*m.backend, settings);
    const double seconds = seconds_since(start);
    if (mesh.triangles.empty()) {
        throw InputError(o.input + ": the level set " + std::to_string(o.level) +
                         " is empty inside the unit cube (nothing to write); try another --level");
    }
    apply_transform(mesh, m.transform, false);
    save_mesh(o.out, mesh);
    std::printf("extracted %zu triangles, %zu vertices at %u^3 in %.2f s (%s) from %s -> %s\n", mesh.triangles.size(),
                mesh.vertices.size(), o.resolution, seconds, m.backend->name().c_str(), o.input.c_str(), o.out.c_str());
}

// A percentage redrawn in place on a terminal; nothing in logs and pipes.
std::function<void(double)> terminal_progress() {
    if (!isatty(fileno(stdout))) return {};
    return [last = -1](double fraction) mutable {
        const int percent = (int)(100 * fraction);
        if (percent == last) return;
        last = percent;
        std::printf("\r\033[Kmarching cubes: %d%%", percent);
        std::fflush(stdout);
    };
}

void clear_progress_line() {
    if (isatty(fileno(stdout))) std::printf("\r\033[K");
}

void run_nerf_mesh(const MeshOptions& o, const SafetensorsContents& contents) {
    if (o.level_given) throw InputError(o.input + ": --level is for SDF models; NeRF models take --density");
    // The mesh is evaluated on the host models either way; cpu avoids
    // starting a device just to copy the parameters back.
    OpenedNerfModel m = nerf_model_from_contents(contents, o.input, o.backend.empty() ? "cpu" : o.backend);
    prepare_output_file(o.out);
    nerf::NerfMeshSettings settings;
    settings.resolution = o.resolution;
    settings.density = o.density;
    if (!o.crop.empty()) settings.crop = parse_crop_box(o.crop);
    settings.progress = terminal_progress();
    const auto start = std::chrono::steady_clock::now();
    const TriangleMesh mesh = nerf::extract_nerf_world_mesh(*m.trainer, settings, *m.dataset);
    const double seconds = seconds_since(start);
    clear_progress_line();
    if (mesh.triangles.empty()) {
        throw InputError(o.input + ": the density iso-surface sigma = " + std::to_string(o.density) +
                         " is empty inside the scene box (nothing to write); try a lower --density");
    }
    save_mesh(o.out, mesh);
    std::printf("extracted %zu triangles, %zu vertices at %u^3 (sigma = %g) in %.2f s (%s) from %s -> %s\n",
                mesh.triangles.size(), mesh.vertices.size(), o.resolution, (double)o.density, seconds,
                m.trainer->backend_name().c_str(), o.input.c_str(), o.out.c_str());
}

void run_mesh(const MeshOptions& o) {
    validate_options(o);
    if (!o.crop.empty()) (void)parse_crop_box(o.crop);  // before reading the model
    const SafetensorsContents contents = read_safetensors(o.input);
    if (is_nerf_model_file(contents)) return run_nerf_mesh(o, contents);
    run_sdf_mesh(o, contents);
}

} // namespace

void add_mesh_command(CLI::App& app) {
    auto o = std::make_shared<MeshOptions>();
    CLI::App* cmd = app.add_subcommand(
        "mesh", "Extract a mesh (.ply or .obj) from a trained SDF or NeRF model by marching cubes");
    cmd->add_option("model", o->input, "SDF or NeRF snapshot (from train) or weights (from export)")->required();
    cmd->add_option("--out", o->out, "output mesh, .ply (binary; NeRF: with vertex colours) or .obj")->required();
    cmd->add_option("--resolution", o->resolution,
                    "cells per axis over the unit cube (NeRF: over the scene box) (2..1024)")
        ->check(positive_number())
        ->capture_default_str();
    CLI::Option* level = cmd->add_option("--level", o->level, "sdf: iso value of the surface (0: the zero level set)")
                             ->check(finite_number())
                             ->capture_default_str();
    CLI::Option* density = cmd->add_option("--density", o->density, "nerf: iso value of the density sigma")
                               ->check(positive_number())
                               ->capture_default_str();
    cmd->add_option("--crop", o->crop, "nerf: mesh only the box X0,Y0,Z0,X1,Y1,Z1 (model space: the unit cube holds the object)");
    cmd->add_option("--backend", o->backend, "cpu or cuda; default: the best available (nerf: cpu)");
    cmd->callback([o, level, density]() {
        o->level_given = level->count() > 0;
        o->density_given = density->count() > 0;
        run_mesh(*o);
    });
}

} // namespace fusedngp
