// `fusedngp train` in NeRF mode: train a NerfTraining (create_nerf_training
// picks the backend) on a transforms.json scene, then write the snapshot,
// test-view renders and summary.json; --resume continues from a snapshot.
// NerfTraining is not a Backend (two models, its own sampling), so this path
// has its own short loop with run_training's limits and stop semantics.
#include "app/train_options.h"

#include "app/interrupt.h"
#include "app/output_dir.h"
#include "app/progress.h"
#include "config/unused_fields.h"
#include "core/errors.h"
#include "io/atomic_file.h"
#include "io/image.h"
#include "modes/mode.h"
#include "modes/training_loop.h"
#include "nerf/nerf_dataset.h"
#include "nerf/nerf_training.h"
#include "engine/nerf_training_factory.h"
#include "persist/nerf_snapshot.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include <unistd.h>

namespace fusedngp {


namespace {

constexpr size_t kMaxTestRenders = 8;
constexpr size_t kTrainEvalViews = 4;  // train-view PSNR when there is no test split

// The first few frames of a dataset, to measure train-view PSNR.
NerfDataset first_frames(const NerfDataset& data, size_t n) {
    NerfDataset d = data;
    n = std::min(n, data.frames.size());
    d.frames.resize(n);
    d.images.rgba.resize(n * data.images.frame_bytes());
    return d;
}

void save_view(nerf::NerfTraining& trainer, const Camera& camera, Vec3 bg, const std::string& path) {
    Image img = trainer.render_view(camera, bg);
    img.color_space = ColorSpace::Srgb;  // the targets are the files' bytes, not linearised
    save_png(img, path);
}

// Decoding a scene's images takes seconds: on a terminal, a live count.
// How much of the scene the occupancy grid still marches through: the
// fraction of occupied cells per cascade and the density threshold.
json occupancy_summary(const nerf::OccupancyGrid& grid) {
    json fractions = json::array();
    for (int k = 0; k < grid.n_cascades(); ++k) fractions.push_back(grid.fraction_occupied(k));
    return json{{"fraction_occupied_per_cascade", fractions}, {"threshold", grid.threshold()}};
}

NerfLoadOptions loading_progress() {
    NerfLoadOptions o;
    if (!isatty(fileno(stdout))) return o;
    o.progress = [](size_t done, size_t total) {
        std::printf("\r\033[Kloading images %zu/%zu", done, total);
        if (done == total) std::printf("\r\033[K");
        std::fflush(stdout);
    };
    return o;
}

// Milliseconds to render the first test view (its resolution) and, on the
// GPU, the same view at 800x800 (NeRF-synthetic's full resolution).
json time_renders(nerf::NerfTraining& trainer, const Camera& camera, Vec3 bg) {
    using clock = std::chrono::steady_clock;
    auto ms = [&](const Camera& c) {
        const auto t0 = clock::now();
        (void)trainer.render_view(c, bg);
        return std::chrono::duration<double, std::milli>(clock::now() - t0).count();
    };
    const Camera full{camera.pose, scaled_intrinsics(camera.intrinsics, 800, 800)};
    const std::string native =
        "test_view_" + std::to_string(camera.intrinsics.width) + "x" + std::to_string(camera.intrinsics.height);
    json out{{native, ms(camera)}};
    if (trainer.backend_name() == "cuda") out["800x800"] = ms(full);
    return out;
}

// The snapshot's config when resuming (a --config that differs is an error),
// else the default or the user's file, with the grid's finest level set by
// the data where the file leaves it open (nerf_config_for_data; then
// scale_from_data is set).
json resolve_nerf_config(const TrainOptions& o, const NerfSnapshot* resumed, const NerfDataset& train,
                         bool& scale_from_data) {
    scale_from_data = false;
    if (!resumed) {
        const json loaded = load_mode_config("nerf", o.config);
        scale_from_data = nerf::nerf_grid_scale_from_data(loaded);
        return nerf::nerf_config_for_data(loaded, train);
    }
    if (!o.config.empty() && nerf::nerf_config_for_data(load_mode_config("nerf", o.config), train) != resumed->config) {
        throw InputError(o.resume + ": the snapshot was trained with a different config than " + o.config +
                         " (resume without --config to continue with the snapshot's)");
    }
    return resumed->config;
}

// One line when nerf_config_for_data chose the grid's per_level_scale, so the
// user sees a value the config file does not hold.
void print_data_set_scale(const json& config, const NerfDataset& train) {
    std::printf("encoding  per_level_scale %.6g, set by the data: finest level %.0f cells per unit (one per pixel at "
                "the scene's centre); a per_level_scale in the config overrides it\n",
                config["encoding"]["per_level_scale"].get<double>(), nerf::finest_resolution_for(train));
}

// Exactly n finite numbers separated by commas (the whole text); false otherwise.
bool read_comma_floats(const std::string& s, int n, float* v) {
    std::stringstream in(s);
    for (int i = 0; i < n; ++i) {
        char comma = ',';
        if (!((i == 0 || (in >> comma && comma == ',')) && in >> v[i] && std::isfinite(v[i]))) return false;
    }
    return (in >> std::ws).eof();
}

} // namespace

Vec3 parse_background(const std::string& s) {
    if (s == "white") return {1, 1, 1};
    if (s == "black") return {0, 0, 0};
    float c[3];
    if (read_comma_floats(s, 3, c) && c[0] >= 0 && c[0] <= 1 && c[1] >= 0 && c[1] <= 1 && c[2] >= 0 && c[2] <= 1)
        return {c[0], c[1], c[2]};
    throw InputError("--background must be white, black or R,G,B with each in [0, 1], got \"" + s + "\"");
}

Box3 parse_crop_box(const std::string& s) {
    float v[6];
    if (!read_comma_floats(s, 6, v) || !(v[0] < v[3] && v[1] < v[4] && v[2] < v[5])) {
        throw InputError("--crop must be X0,Y0,Z0,X1,Y1,Z1 (model space, the unit cube holds the object) with X0 < X1, "
                         "Y0 < Y1 and Z0 < Z1, got \"" + s + "\"");
    }
    Box3 box;
    box.lo = {v[0], v[1], v[2]};
    box.hi = {v[3], v[4], v[5]};
    return box;
}

int run_train_nerf(const TrainOptions& o) {
    namespace fs = std::filesystem;
    using clock = std::chrono::steady_clock;
    // Validate everything before training, so bad input leaves no output behind.
    std::unique_ptr<NerfSnapshot> resumed;
    if (!o.resume.empty()) resumed = std::make_unique<NerfSnapshot>(load_nerf_snapshot(o.resume));
    const Vec3 bg = parse_background(o.background);
    NerfSplitPaths paths = resolve_nerf_paths(o.data);
    if (!o.test.empty()) {
        if (!fs::is_regular_file(o.test)) throw InputError(o.test + ": --test: no such file");
        paths.test = o.test;
    }
    std::vector<std::string> warnings;
    const NerfLoadOptions load = loading_progress();
    const NerfDataset train = load_nerf_dataset(paths.train, load, &warnings);
    const bool has_test = !paths.test.empty();
    const NerfDataset test =
        has_test ? load_nerf_dataset(paths.test, load, &warnings) : first_frames(train, kTrainEvalViews);
    if (resumed) check_nerf_scene_matches(resumed->scene, train, o.resume);
    bool scale_from_data = false;
    const json config = resolve_nerf_config(o, resumed.get(), train, scale_from_data);
    // Resuming keeps the snapshot's batch unless --batch says otherwise (the
    // same batch continues bit-identically on the CPU).
    const uint32_t rays = resumed && !o.batch_given ? resumed->rays_per_batch : o.batch_size;
    const uint64_t seed = resumed ? resumed->seed : o.seed;
    std::unique_ptr<nerf::NerfTraining> trainer_ptr = create_nerf_training(
        o.backend, train, config, nerf::nerf_settings_from_config(config, train.aabb_scale, rays, seed));
    nerf::NerfTraining& trainer = *trainer_ptr;
    if (resumed) {
        try {
            trainer.load_state(resumed->state);
        } catch (const InputError& e) {
            throw InputError(o.resume + ": " + e.what());
        }
    }
    prepare_output_dir(o.out);

    for (const auto& w : warnings) std::fprintf(stderr, "fusedngp: warning: %s\n", w.c_str());
    for (const auto& w : unused_config_fields(config)) std::fprintf(stderr, "fusedngp: warning: %s\n", w.c_str());
    const size_t n_density = trainer.density_model().n_params(), n_colour = trainer.colour_model().n_params();
    std::printf("data      %s: %zu frames %ux%u, %s\n", paths.train.c_str(), train.frames.size(), train.images.width,
                train.images.height,
                has_test ? (std::to_string(test.frames.size()) + " test frames (" + paths.test + ")").c_str()
                         : "no test split (PSNR on the first train views)");
    std::printf("model     %zu density + %zu colour = %zu params, backend %s, %u rays per batch%s\n", n_density,
                n_colour, n_density + n_colour, trainer.backend_name().c_str(), rays,
                resumed ? (", resuming at step " + std::to_string(trainer.step_count())).c_str() : "");
    if (scale_from_data) print_data_set_scale(config, train);
    std::fflush(stdout);

    install_interrupt_handler();
    TrainLimits limits{o.steps, o.seconds, rays};
    ProgressPrinter progress(limits, trainer.step_count(), o.log_every);
    json psnr_history = json::array();
    double last_psnr = -1, last_eval_time = 0, samples_total = 0, rays_total = 0;
    TrainOutcome outcome;
    outcome.last.step = trainer.step_count();
    while (true) {
        if (limits.max_steps && outcome.last.step >= limits.max_steps) { outcome.reason = StopReason::Steps; break; }
        if (limits.max_seconds > 0 && outcome.last.train_seconds >= limits.max_seconds) { outcome.reason = StopReason::Seconds; break; }
        if (stop_requested().load()) { outcome.reason = StopReason::Interrupted; break; }
        const auto t0 = clock::now();
        outcome.last.loss = trainer.step();
        outcome.last.train_seconds += std::chrono::duration<double>(clock::now() - t0).count();
        outcome.last.step = trainer.step_count();
        outcome.last.steps_this_run += 1;
        samples_total += (double)trainer.last_sample_count();
        rays_total += (double)trainer.last_ray_count();
        if (o.eval_every > 0 && outcome.last.train_seconds - last_eval_time >= o.eval_every) {
            last_psnr = trainer.psnr_on(test, bg);
            last_eval_time = outcome.last.train_seconds;
            psnr_history.push_back({outcome.last.step, outcome.last.train_seconds, last_psnr});
        }
        progress.update(outcome.last, last_psnr);
    }
    outcome.last.finished = true;
    const nerf::ViewMetrics final_metrics =
        nerf::mean_view_metrics(test, bg, [&](const Camera& camera) { return trainer.render_view(camera, bg); });
    const double psnr = final_metrics.psnr;
    psnr_history.push_back({outcome.last.step, outcome.last.train_seconds, psnr});
    progress.finish(outcome.last, psnr);

    // The default view of `render`: the first test view (else the first train view).
    const Camera view = nerf_frame_view(has_test ? test : train, 0);
    const NerfSnapshot snapshot{config, o.data, trainer.backend_name(), rays, seed, nerf_scene_of(train, view, bg),
                                trainer.save_state()};
    save_nerf_snapshot((fs::path(o.out) / "snapshot.fusedngp").string(), snapshot);

    std::vector<std::string> renders;
    if (has_test) {
        for (size_t i = 0; i < std::min(kMaxTestRenders, test.frames.size()); ++i) {
            char name[32];
            std::snprintf(name, sizeof name, "test_%03zu.png", i);
            renders.push_back(name);
        }
    } else {
        renders.push_back("render.png");
    }
    for (size_t i = 0; i < renders.size(); ++i)
        save_view(trainer, test.frames[i].camera, bg, (fs::path(o.out) / renders[i]).string());
    const json render_ms = time_renders(trainer, test.frames[0].camera, bg);

    const double secs = outcome.last.train_seconds;
    const uint64_t n = outcome.last.steps_this_run;
    json summary{{"mode", "nerf"},
                 {"backend", trainer.backend_name()},
                 {"data", o.data},
                 {"train", {{"path", paths.train}, {"frames", train.frames.size()},
                            {"width", train.images.width}, {"height", train.images.height}}},
                 {"test", has_test ? json{{"path", paths.test}, {"frames", test.frames.size()}} : json(nullptr)},
                 {"background", {bg.x, bg.y, bg.z}},
                 {"steps", outcome.last.step},
                 {"steps_this_run", outcome.last.steps_this_run},
                 {"resumed_from", resumed ? json(o.resume) : json(nullptr)},
                 {"seconds", secs},
                 {"steps_per_second", secs > 0 ? n / secs : 0.0},
                 {"loss", outcome.last.loss},
                 {"stop_reason", stop_reason_name(outcome.reason)},
                 {"rays_per_step", n ? rays_total / n : 0.0},
                 {"rays_per_batch", rays},
                 {"samples_per_step", n ? samples_total / n : 0.0},
                 {"samples_per_step_method", "mean over the steps of this run"},
                 {"seed", seed},
                 {"params", {{"density", n_density}, {"colour", n_colour}, {"total", n_density + n_colour}}},
                 {"psnr_history", psnr_history},
                 {"renders", renders},
                 {"render_ms", render_ms},
                 {"diagnostics", trainer.diagnostics()},
                 {"occupancy", occupancy_summary(trainer.occupancy_grid())},
                 {"config", config}};
    // test_psnr on the test split; without one, the PSNR of the first train views.
    summary[has_test ? "test_psnr" : "train_psnr"] = json_number_or_null(psnr);
    summary[has_test ? "test_ssim" : "train_ssim"] = json_number_or_null(final_metrics.ssim);
    const bool diverged = training_diverged(outcome.last.loss, psnr);
    if (diverged) summary["stop_reason"] = "diverged";
    std::string summary_text = summary.dump(2) + "\n";
    write_file_atomically((fs::path(o.out) / "summary.json").string(), summary_text.data(), summary_text.size());

    if (diverged) return report_divergence(outcome.last.step, o.out);
    if (outcome.reason == StopReason::Interrupted) std::printf("interrupted: ");
    std::printf("%llu steps in %.1f s, %s PSNR %.2f dB -> %s/{snapshot.fusedngp, %s, summary.json}\n",
                (unsigned long long)outcome.last.step, secs, has_test ? "test" : "train-view", psnr, o.out.c_str(),
                has_test ? "test_*.png" : "render.png");
    return 0;
}

} // namespace fusedngp
