// `fusedngp train` in SDF mode: learn a mesh's signed distance field, then
// write the snapshot, a sphere-traced render, summary.json and (with
// --mesh-resolution) the marching-cubes mesh with its Chamfer distance.
#include "app/train_options.h"

#include "app/interrupt.h"
#include "app/output_dir.h"
#include "app/progress.h"
#include "backends/backend.h"
#include "config/unused_fields.h"
#include "core/errors.h"
#include "engine/sdf_backend_tools.h"
#include "geometry/mesh_io.h"
#include "io/atomic_file.h"
#include "modes/mode.h"
#include "modes/sdf_mode.h"
#include "modes/training_loop.h"
#include "render/camera.h"

#include <cstdio>
#include <filesystem>

namespace fusedngp {
namespace {

json quality_json(const SdfQuality& q) {
    return json{{"iou", q.iou.iou},
                {"iou_method", q.iou_method},
                {"iou_points", q.iou.n_points},
                {"mean_abs_sdf_error_near_surface", q.mean_abs_error_near_surface},
                {"near_surface_points", q.band_points}};
}

struct MeshResult {
    bool extracted = false;
    ChamferResult chamfer;
    size_t triangles = 0;
};

// Marching cubes of the trained model, written in the input's coordinates;
// the Chamfer distance is measured in the unit cube against the input mesh.
MeshResult extract_and_compare(Backend& backend, const SdfTrainingData& data, uint32_t resolution,
                               const std::string& path) {
    MeshResult r;
    IsosurfaceSettings settings;
    settings.resolution = resolution;
    TriangleMesh mesh = extract_sdf_model_mesh(backend, settings);
    r.extracted = true;
    r.triangles = mesh.triangles.size();
    if (!mesh.triangles.empty()) {
        GroundTruthSdf extracted_truth(mesh, data.truth().sign_rays(), PseudoNormals::Skip);  // Chamfer needs distances only
        r.chamfer = mesh_chamfer(data.scene().mesh, data.truth(), mesh, extracted_truth, 1u << 20, 11);
    }
    apply_transform(mesh, data.scene().transform, false);
    save_mesh(path, mesh);
    return r;
}

json summary_json(const TrainOptions& o, Backend& b, const TrainOutcome& outcome, const SdfQuality& q,
                  const SdfTrainingData& data, const json& iou_history, const MeshResult& mesh) {
    json s = common_summary_json(o, "sdf", b, outcome);
    s["sdf"] = sdf_mode_info(data.scene());
    s["sampling"] = data.sampling().to_json();
    s["target_sign"] = sign_method_name(data.target_sign());  // what sampling.target_sign resolved to
    s["iou_history"] = iou_history;
    s.update(quality_json(q));
    if (mesh.extracted) {
        s["mesh"] = {{"resolution", o.mesh_resolution}, {"triangles", mesh.triangles}};
        s["chamfer"] = mesh.chamfer.chamfer;
        s["normal_consistency"] = mesh.chamfer.normal_consistency;
        s["chamfer_squared"] = mesh.chamfer.chamfer_squared;
        s["chamfer_samples"] = mesh.chamfer.n_samples;
        s["chamfer_method"] = "n area-weighted samples on each mesh (unit-cube coordinates): mean distance "
                              "input->extracted + mean distance extracted->input";
    }
    return s;
}

} // namespace

int run_train_sdf(const TrainOptions& o) {
    namespace fs = std::filesystem;
    // Validate everything before training, so bad input leaves no output behind.
    if (o.mesh_resolution != 0 && (o.mesh_resolution < 2 || o.mesh_resolution > 1024)) {
        throw InputError("--mesh-resolution must be between 2 and 1024 (or 0 for no mesh), got " +
                         std::to_string(o.mesh_resolution));
    }
    std::unique_ptr<Snapshot> resumed;
    if (!o.resume.empty()) resumed = std::make_unique<Snapshot>(load_snapshot(o.resume));
    std::vector<std::string> warnings;
    SdfScene scene = load_sdf_scene(o.data, &warnings);
    const std::string description = scene.report.describe();
    json config = resolve_config(o, "sdf", resumed.get());
    SdfTrainingData data(std::move(scene), sdf_sampling_from_config(config));
    if (resumed) check_resume_fits(*resumed, o, "sdf", data);
    prepare_output_dir(o.out);

    std::unique_ptr<Backend> backend = create_backend(o.backend, config, data, o.seed);
    if (resumed) backend->load_state(resumed->state);
    for (const auto& w : warnings) std::fprintf(stderr, "fusedngp: warning: %s\n", w.c_str());
    for (const auto& w : unused_config_fields(config)) std::fprintf(stderr, "fusedngp: warning: %s\n", w.c_str());

    std::printf("data      %s: %s\n", o.data.c_str(), description.c_str());
    std::printf("targets   signs by %s\n", sign_method_name(data.target_sign()));
    std::printf("model     %zu encoding + %zu network = %zu params, backend %s, batch %u%s\n",
                backend->n_encoding_params(), backend->n_network_params(), backend->n_params(),
                backend->name().c_str(), o.batch_size,
                resumed ? (", resuming at step " + std::to_string(backend->step())).c_str() : "");
    std::fflush(stdout);

    std::unique_ptr<SdfEvaluator> evaluator = make_sdf_evaluator(*backend, data);
    install_interrupt_handler();
    TrainLimits limits{o.steps, o.seconds, o.batch_size};
    ProgressPrinter progress(limits, backend->step(), o.log_every);
    progress.set_quality_readout(true);
    json iou_history = json::array();
    double last_iou = -1, last_eval_time = 0;
    auto report = [&](const TrainProgress& p) {
        if (!p.finished && o.eval_every > 0 && p.train_seconds - last_eval_time >= o.eval_every) {
            last_iou = evaluator->evaluate(*backend).iou.iou;
            last_eval_time = p.train_seconds;
            iou_history.push_back({p.step, p.train_seconds, last_iou});
        }
        if (!p.finished) progress.update(p, last_iou);
        return true;
    };
    TrainOutcome outcome = run_training(*backend, limits, report, stop_requested());

    const SdfQuality quality = evaluator->evaluate(*backend);
    iou_history.push_back({outcome.last.step, outcome.last.train_seconds, quality.iou.iou});
    progress.finish(outcome.last, quality.iou.iou);

    Snapshot snap{config, "sdf", o.data, data.n_input_dims(), data.n_output_dims(), sdf_mode_info(data.scene()),
                  backend->name(), backend->save_state()};
    save_snapshot((fs::path(o.out) / "snapshot.fusedngp").string(), snap);
    Image render = render_sdf_model(*backend, default_view_camera(800, 600), SdfRenderMode::Shade);
    save_png(render, (fs::path(o.out) / "render.png").string());
    MeshResult mesh;
    if (o.mesh_resolution) {
        mesh = extract_and_compare(*backend, data, o.mesh_resolution, (fs::path(o.out) / "mesh.ply").string());
    }
    json summary = summary_json(o, *backend, outcome, quality, data, iou_history, mesh);
    const bool diverged = training_diverged(outcome.last.loss, quality.mean_abs_error_near_surface);
    if (diverged) summary["stop_reason"] = "diverged";
    std::string summary_text = summary.dump(2) + "\n";
    write_file_atomically((fs::path(o.out) / "summary.json").string(), summary_text.data(), summary_text.size());

    if (diverged) return report_divergence(outcome.last.step, o.out);
    if (outcome.reason == StopReason::Interrupted) std::printf("interrupted: ");
    std::printf("%llu steps in %.1f s, IoU %.5f, mean |SDF error| near the surface %.2e",
                (unsigned long long)outcome.last.step, outcome.last.train_seconds, quality.iou.iou,
                quality.mean_abs_error_near_surface);
    if (mesh.extracted) std::printf(", Chamfer %.2e", mesh.chamfer.chamfer);
    std::printf(" -> %s/{snapshot.fusedngp, render.png, %ssummary.json}\n", o.out.c_str(),
                mesh.extracted ? "mesh.ply, " : "");
    return 0;
}

} // namespace fusedngp
