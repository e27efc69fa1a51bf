// `fusedngp train`: train a model on data, then write a snapshot, a render and
// summary.json into the output directory. Also what `fusedngp` runs with no
// arguments when there is no display or no GUI in the build.
#include "app/commands.h"
#include "app/cli_checks.h"

#include "app/interrupt.h"
#include "app/output_dir.h"
#include "app/progress.h"
#include "app/train_options.h"
#include "backends/backend.h"
#include "config/unused_fields.h"
#include "core/errors.h"
#include "io/atomic_file.h"
#include "io/image.h"
#include "modes/image_mode.h"
#include "modes/mode.h"
#include "modes/training_loop.h"
#include "persist/snapshot.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>

namespace fusedngp {

json json_number_or_null(double v) {
    if (std::isfinite(v)) return v;
    return v > 0 ? json(1e9) : json(nullptr);
}

bool training_diverged(double loss, double quality) { return !std::isfinite(loss) || std::isnan(quality); }

int report_divergence(uint64_t step, const std::string& out) {
    std::fprintf(stderr,
                 "fusedngp: training diverged: by step %llu the loss or the model's output is no longer a finite "
                 "number, so no quality is reported (stop_reason \"diverged\" in %s/summary.json); lower the "
                 "learning rate\n",
                 (unsigned long long)step, out.c_str());
    return kExitDiverged;
}

json common_summary_json(const TrainOptions& o, const std::string& mode, Backend& b, const TrainOutcome& outcome) {
    const double secs = outcome.last.train_seconds;
    const StepTimings t = b.last_timings();
    return json{{"mode", mode},
                {"backend", b.name()},
                {"data", o.data},
                {"steps", outcome.last.step},
                {"steps_this_run", outcome.last.steps_this_run},
                {"seconds", secs},
                {"steps_per_second", secs > 0 ? outcome.last.steps_this_run / secs : 0.0},
                {"loss", outcome.last.loss},
                {"stop_reason", stop_reason_name(outcome.reason)},
                {"batch_size", o.batch_size},
                {"seed", o.seed},
                {"params", {{"encoding", b.n_encoding_params()}, {"network", b.n_network_params()}, {"total", b.n_params()}}},
                // Where the time of the last timed step went (see the printed line).
                {"last_step_ms", {{"forward", t.forward_ms}, {"backward", t.backward_ms}, {"optimizer", t.optimizer_ms}}},
                {"diagnostics", b.diagnostics()},
                {"config", b.config()}};
}

// The config to train with: the snapshot's when resuming (a --config that
// differs is an error), else the mode's default or the user's file.
json resolve_config(const TrainOptions& o, const std::string& mode, const Snapshot* resumed) {
    if (!resumed) return load_mode_config(mode, o.config);
    if (!o.config.empty()) {
        json given = load_mode_config(mode, o.config);
        if (given != resumed->config) {
            throw InputError(o.resume + ": the snapshot was trained with a different config than " + o.config +
                             " (resume without --config to continue with the snapshot's)");
        }
    }
    return resumed->config;
}

void check_resume_fits(const Snapshot& s, const TrainOptions& o, const std::string& mode, const TrainingData& data) {
    if (s.mode != mode) throw InputError(o.resume + ": snapshot is for mode \"" + s.mode + "\", not \"" + mode + "\"");
    if (s.n_input_dims != data.n_input_dims() || s.n_output_dims != data.n_output_dims()) {
        throw InputError(o.resume + ": snapshot model maps " + std::to_string(s.n_input_dims) + " -> " +
                         std::to_string(s.n_output_dims) + " values, but " + o.data + " needs " +
                         std::to_string(data.n_input_dims()) + " -> " + std::to_string(data.n_output_dims()));
    }
}

namespace {

// --sampling / --targets / --sample-order -> ImageSampling (CLI11 has already checked the names).
ImageSampling image_sampling(const TrainOptions& o) {
    ImageSampling s;
    s.positions = o.sampling == "uniform" ? SamplePositions::Uniform : SamplePositions::Stratified;
    s.targets = o.targets == "bilinear" ? SampleTargets::Bilinear : SampleTargets::PixelCentres;
    s.order = o.sample_order == "tiled" ? SampleOrder::Tiled : SampleOrder::Spread;
    return s;
}

std::string default_data_path() { return std::string(FUSEDNGP_SOURCE_DIR) + "/data/astronaut.png"; }

json summary_json(const TrainOptions& o, const std::string& mode, Backend& b, const TrainOutcome& outcome,
                  const ImageQuality& q, const Image& image, const json& psnr_history) {
    json s = common_summary_json(o, mode, b, outcome);
    s["psnr"] = json_number_or_null(q.psnr);
    s["ssim"] = json_number_or_null(q.ssim);
    s["sampling"] = {{"positions", o.sampling}, {"targets", o.targets}, {"order", o.sample_order}};
    s["image"] = image_mode_info(image);
    s["psnr_history"] = psnr_history;
    return s;
}

int run_train(TrainOptions o) {
    if (o.data.empty()) o.data = default_data_path();
    std::string mode = o.mode.empty() ? infer_mode(o.data) : mode_spec(o.mode).name;
    if (!mode_spec(mode).implemented) throw InputError("mode \"" + mode + "\" is not implemented yet (image and sdf are)");
    if (o.backend.empty()) o.backend = available_backends().front();
    if (mode == "nerf" && !o.batch_given) o.batch_size = 4096;  // rays, not points
    if (o.batch_size == 0) throw ConfigError("batch", "must be a positive integer");
    if (o.steps == 0 && o.seconds <= 0) o.steps = 2000;
    if (mode == "sdf") return run_train_sdf(o);
    if (mode == "nerf") return run_train_nerf(o);

    // Validate everything before training, so bad input leaves no output behind.
    std::unique_ptr<Snapshot> resumed;
    if (!o.resume.empty()) resumed = std::make_unique<Snapshot>(load_snapshot(o.resume));
    Image image = load_image(o.data);
    ImageTrainingData data(image, image_sampling(o));
    if (resumed) check_resume_fits(*resumed, o, mode, data);
    json config = resolve_config(o, mode, resumed.get());
    prepare_output_dir(o.out);

    std::unique_ptr<Backend> backend = create_backend(o.backend, config, data, o.seed);
    if (resumed) backend->load_state(resumed->state);
    for (const auto& w : unused_config_fields(config)) std::fprintf(stderr, "fusedngp: warning: %s\n", w.c_str());

    std::printf("data      %s: %s\n", o.data.c_str(), image.describe().c_str());
    std::printf("model     %zu encoding + %zu network = %zu params, backend %s, batch %u%s\n",
                backend->n_encoding_params(), backend->n_network_params(), backend->n_params(),
                backend->name().c_str(), o.batch_size,
                resumed ? (", resuming at step " + std::to_string(backend->step())).c_str() : "");
    std::fflush(stdout);

    InferenceFn infer = [&](const Matrix<float>& in, Matrix<float>& out) { backend->inference(in, out); };
    install_interrupt_handler();
    TrainLimits limits{o.steps, o.seconds, o.batch_size};
    ProgressPrinter progress(limits, backend->step(), o.log_every);
    json psnr_history = json::array();
    double last_psnr = -1, last_eval_time = 0;
    auto report = [&](const TrainProgress& p) {
        if (!p.finished && o.eval_every > 0 && p.train_seconds - last_eval_time >= o.eval_every) {
            last_psnr = evaluate_image(infer, image, false).psnr;
            last_eval_time = p.train_seconds;
            psnr_history.push_back({p.step, p.train_seconds, last_psnr});
        }
        if (!p.finished) progress.update(p, last_psnr);
        return true;
    };
    TrainOutcome outcome = run_training(*backend, limits, report, stop_requested());

    Image render;
    ImageQuality quality = evaluate_image(infer, image, true, &render);
    psnr_history.push_back({outcome.last.step, outcome.last.train_seconds, quality.psnr});
    progress.finish(outcome.last, quality.psnr);

    namespace fs = std::filesystem;
    Snapshot snap{config, mode, o.data, data.n_input_dims(), data.n_output_dims(), image_mode_info(image),
                  backend->name(), backend->save_state()};
    save_snapshot((fs::path(o.out) / "snapshot.fusedngp").string(), snap);
    save_png(render, (fs::path(o.out) / "render.png").string());
    if (image.color_space == ColorSpace::Linear) save_exr(render, (fs::path(o.out) / "render.exr").string());
    json summary = summary_json(o, mode, *backend, outcome, quality, image, psnr_history);
    const bool diverged = training_diverged(outcome.last.loss, quality.psnr);
    if (diverged) summary["stop_reason"] = "diverged";
    std::string summary_text = summary.dump(2) + "\n";
    write_file_atomically((fs::path(o.out) / "summary.json").string(), summary_text.data(), summary_text.size());

    // The split of one step, so a slow step says which part is slow (forward:
    // sampling excluded, encoding + network; backward: loss, network and
    // encoding gradients; optimizer: the update of all parameters).
    const StepTimings t = backend->last_timings();
    std::printf("last step: forward %.3f ms, backward %.3f ms, optimizer %.3f ms\n", t.forward_ms, t.backward_ms,
                t.optimizer_ms);
    if (diverged) return report_divergence(outcome.last.step, o.out);
    if (outcome.reason == StopReason::Interrupted) std::printf("interrupted: ");
    std::printf("%llu steps in %.1f s, PSNR %.2f dB, SSIM %.4f -> %s/{snapshot.fusedngp, render.png, summary.json}\n",
                (unsigned long long)outcome.last.step, outcome.last.train_seconds, quality.psnr, quality.ssim,
                o.out.c_str());
    return 0;
}

} // namespace

void add_train_command(CLI::App& app) {
    auto o = std::make_shared<TrainOptions>();
    CLI::App* cmd = app.add_subcommand("train", "Train a model on data; writes snapshot, render and summary.json to --out");
    cmd->add_option("--data", o->data, "training data (image: PNG/JPEG/BMP/TGA/EXR; sdf: a mesh, .obj .ply .stl .off; nerf: a folder with transforms_train.json or transforms.json, or a transforms .json); default: the bundled data/astronaut.png");
    cmd->add_option("--mode", o->mode, "image, sdf or nerf; inferred from --data when omitted");
    cmd->add_option("--config", o->config, "JSON config in tiny-cuda-nn's schema; default: configs/<mode>.json");
    cmd->add_option("--backend", o->backend, "cpu or cuda; default: the best available");
    cmd->add_option("--steps", o->steps, "stop at this total step count (default 2000 when --seconds is not given)")
        ->check(positive_number());
    cmd->add_option("--seconds", o->seconds, "stop after this much training time (evaluation excluded)")
        ->check(positive_number());
    CLI::Option* batch = cmd->add_option("--batch", o->batch_size, "samples per step (nerf: rays per step, default 4096; the cuda backend adapts them to the config's sampling.samples_per_batch)")->check(positive_number())->capture_default_str();
    cmd->add_option("--seed", o->seed, "seed for initialisation and sampling")->check(non_negative_number())->capture_default_str();
    cmd->add_option("--out", o->out, "output directory")->capture_default_str();
    cmd->add_option("--resume", o->resume, "continue from a snapshot written by train");
    cmd->add_option("--log-every", o->log_every, "when stdout is not a terminal, print a line every N steps")->check(positive_number())->capture_default_str();
    cmd->add_option("--eval-every", o->eval_every, "seconds of training between PSNR evaluations (0: only at the end)")->check(non_negative_number())->capture_default_str();
    cmd->add_option("--sampling", o->sampling,
                    "image training positions: stratified (one jittered grid cell per sample, instant-ngp's "
                    "default) or uniform")
        ->check(CLI::IsMember({"stratified", "uniform"}))
        ->capture_default_str();
    cmd->add_option("--targets", o->targets,
                    "image training targets: pixels (snap to the pixel centre, learn its value, instant-ngp's "
                    "default) or bilinear (interpolated at the continuous position)")
        ->check(CLI::IsMember({"pixels", "bilinear"}))
        ->capture_default_str();
    cmd->add_option("--sample-order", o->sample_order,
                    "image: order of the stratified samples within a batch: tiled (each 32 consecutive samples "
                    "an 8 x 4 tile of strata, an order the grid gradient aggregates; the faster step on the GPU) "
                    "or spread (a warp's samples far apart; the same samples)")
        ->check(CLI::IsMember({"spread", "tiled"}))
        ->capture_default_str();
    cmd->add_option("--mesh-resolution", o->mesh_resolution,
                    "sdf: also extract mesh.ply by marching cubes at this resolution and report its Chamfer "
                    "distance to the input (0: no mesh)")
        ->check(non_negative_number())
        ->capture_default_str();
    cmd->add_option("--test", o->test, "nerf only: the test split's transforms .json (default: transforms_test.json beside --data)");
    cmd->add_option("--background", o->background, "nerf only: background for evaluation and renders: white, black or R,G,B in [0, 1]")
        ->capture_default_str();
    cmd->callback([o, batch]() {
        o->batch_given = batch->count() > 0;
        int rc = run_train(*o);
        if (rc != 0) throw CLI::RuntimeError(rc);
    });
}

int run_default() {
    if (gui_available()) return run_gui_default();
    std::printf("fusedngp: no display (or built without the GUI): training headless on the bundled image "
                "(see `fusedngp --help`)\n");
    TrainOptions o;
    o.seconds = 60;
    return run_train(o);
}

} // namespace fusedngp
