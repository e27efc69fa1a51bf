#include "gui/gui_app.h"

#include "config/config.h"
#include "core/errors.h"
#include "gui/app_frame.h"
#include "gui/display_texture.h"
#include "gui/gl_window.h"
#include "gui/image_view.h"
#include "gui/imgui_layer.h"
#include "gui/panels.h"
#include "gui/prediction_renderer.h"
#include "gui/sdf_setup.h"
#include "gui/sdf_view.h"
#include "gui/training_session.h"
#include "gui/ui_state.h"
#include "modes/mode.h"
#include "persist/snapshot.h"

#include <GLFW/glfw3.h>
#include <imgui.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <cstdio>

namespace fusedngp {

namespace {


// Training runs on the session's worker thread; a frame only renders a slice
// of the prediction on the host path (the CPU backend): 8 ms of a 33 ms frame
// keeps the UI above 30 fps while the worker steps on the other core.
constexpr double kFrameMs = 33.3;
constexpr double kRenderShare = 0.12;
// Wall time, not training time: the CUDA backend's steps are timed at enqueue
// (microseconds), so training seconds barely advance there.
constexpr double kPsnrEverySeconds = 1.0;


std::vector<float> rgba_of(const Image& image) {
    std::vector<float> rgba(image.pixel_count() * 4);
    to_rgba(image.pixels.data(), image.channels, image.pixel_count(), rgba.data());
    return rgba;
}

// Everything that lives for one app run, wired together by the loop below.
struct App {
    GlWindow& window;
    TrainingSession& session;
    ImageView view;
    DisplayTexture truth, prediction;
    PredictionRenderer renderer;
    std::unique_ptr<SdfView> sdf;  // the 3-D view, in SDF mode; the image view is idle then
    UiState ui;
    std::vector<std::string> dropped;
    uint64_t seen_generation = ~0ull;
    double psnr = 0, psnr_time = -1e9;
    bool device_render_reported = false;

    App(GlWindow& w, TrainingSession& s) : window(w), session(s) {}
};

void open_dropped(App& app) {
    for (const auto& path : app.dropped) {
        bool snapshot = false;
        try {
            snapshot = is_snapshot_file(path);
        } catch (const std::exception&) {
        }
        if (snapshot) {
            if (run_reporting_errors(app.ui, "loading " + path, [&] { app.session.load_snapshot(path); }))
                app.ui.info("loaded snapshot " + path);
        } else if (run_reporting_errors(app.ui, "opening " + path, [&] { app.session.load_image(path); })) {
            app.ui.info("opened " + path);
        }
    }
    app.dropped.clear();
}

void handle_mouse(App& app, const ViewRect& area) {
    const ImGuiIO& io = ImGui::GetIO();
    if (io.WantCaptureMouse) return;
    const float sx = io.DisplayFramebufferScale.x, sy = io.DisplayFramebufferScale.y;
    const float mx = io.MousePos.x * sx, my = io.MousePos.y * sy;
    if (mx < area.x || mx > area.x + area.width || my < area.y || my > area.y + area.height) return;
    if (ImGui::IsMouseDragging(ImGuiMouseButton_Left, 0.0f)) app.view.drag(io.MouseDelta.x * sx, io.MouseDelta.y * sy);
    if (io.MouseWheel != 0) app.view.zoom_at(io.MouseWheel, mx, my, area);
    app.prediction.set_nearest_filter(app.view.zoom() > 2.0f);
    app.truth.set_nearest_filter(app.view.zoom() > 2.0f);
}

void choose_render_resolution(App& app, const ViewRect& area) {
    const Image& img = app.session.image();
    int w = img.width, h = img.height;
    if (app.ui.render_resolution == 1) {
        // The size the prediction occupies on screen (capped: the CPU renders it).
        float panel_w = app.view.mode == ViewMode::SideBySide ? area.width * 0.5f : area.width;
        float scale = std::min(panel_w / (float)img.width, area.height / (float)img.height) * app.view.zoom();
        w = std::clamp((int)((float)img.width * scale), 16, 4096);
        h = std::clamp((int)((float)img.height * scale), 16, 4096);
    } else if (app.ui.render_resolution == 2) {
        w = app.ui.custom_width;
        h = app.ui.custom_height;
    }
    app.renderer.set_resolution(w, h);
}

void draw_side_panel(App& app, uint64_t frame, float width) {
    begin_side_panel(width, app.session.backend_name(), app.ui, app.session.running);
    draw_info_panel(app.session, app.ui, app.psnr);
    if (app.sdf) {
        draw_sdf_panel(*app.sdf, app.session, app.ui);
    } else {
        draw_view_panel(app.view, app.ui);
    }
    draw_control_panel(app.session, app.ui, frame);
    draw_files_panel(app.session, app.ui);
    ImGui::End();
    draw_file_prompt(&app.session, app.ui);
    draw_help_window(app.ui);
}

void update_model_views(App& app) {
    if (app.seen_generation == app.session.generation()) return;
    // New model or data: refresh ground truth, restart the progressive render.
    const Image& img = app.session.image();
    std::vector<float> rgba = rgba_of(img);
    app.truth.upload_from_host(rgba.data(), img.width, img.height);
    app.renderer.restart();
    app.psnr_time = -1e9;
    app.seen_generation = app.session.generation();
}

// CUDA backend: a kernel writes the whole prediction into the PBO (interop);
// CPU backend, or when interop is refused: host bands under a time budget.
void render_prediction(App& app) {
    if (app.renderer.render_on_device(app.session, app.prediction)) {
        if (!app.device_render_reported) {
            std::printf("render    CUDA-GL interop: prediction written by CUDA into the GL PBO\n");
            std::fflush(stdout);
            app.device_render_reported = true;
        }
        return;
    }
    app.renderer.advance(app.session, app.session.image().channels, app.prediction, kFrameMs * kRenderShare);
}

// The model's picture for this frame and the live quality readout: the 3-D
// view in SDF mode, the image view otherwise.
void update_view(App& app, const ViewRect& area, double wall_seconds, float dt_seconds) {
    const bool measure = wall_seconds - app.psnr_time >= kPsnrEverySeconds;
    if (measure) app.psnr_time = wall_seconds;
    if (app.sdf) {
        if (measure) app.sdf->measure_iou(app.session);
        app.sdf->handle_input(area, dt_seconds);
        app.sdf->render(app.session, area);
        return;
    }
    if (measure) app.psnr = app.session.subsample_psnr();
    handle_mouse(app, area);
    choose_render_resolution(app, area);
    render_prediction(app);
}

void draw_view(App& app, const ViewRect& area, int fb_w, int fb_h) {
    if (app.sdf) {
        app.sdf->draw(area, fb_w, fb_h);
    } else {
        app.view.draw(app.truth, app.prediction, app.session.image().color_space == ColorSpace::Linear, area, fb_w, fb_h);
    }
}

// Returns the number of frames drawn (app_frame.h's run_frames).
uint64_t run_loop(App& app, ImGuiLayer& layer, const Automation& automation, float scale, FrameClock& clock) {
#ifdef _OPENMP
    // The host render runs on this thread alone: a second OpenMP team here
    // would spin against the worker's team for the same two cores.
    omp_set_num_threads(1);
#endif
    app.session.set_lockstep(automation.steps_per_frame() > 0);
    app.session.start_worker();
    ModeFrame mode;
    mode.before_ui = [&](uint64_t frame) {
        automation.apply_due(frame, app.session);
        open_dropped(app);
        if (automation.steps_per_frame() > 0 && app.session.running) app.session.run_steps(automation.steps_per_frame());
        app.session.poll();
        if (std::string error = app.session.take_worker_error(); !error.empty()) app.ui.error(error);
        if (!app.sdf) update_model_views(app);
        if (app.sdf && automation.orbit_pixels() > 0) app.sdf->camera().orbit(automation.orbit_pixels(), 0);
    };
    mode.ui = [&](uint64_t frame, const ViewRect& area, float panel_width) {
        handle_shortcuts(app.session, app.view, app.ui);
        update_view(app, area, clock.seconds(), clock.last_frame_seconds());
        draw_side_panel(app, frame, panel_width);
    };
    mode.draw = [&](const ViewRect& area, int fb_w, int fb_h) { draw_view(app, area, fb_w, fb_h); };
    return run_frames(app.window, layer, app.ui, clock, scale, automation.frame_limit(), automation.screenshot_path(), mode);
}

} // namespace

namespace {

// One --set change applied to `current`, checked as the app will apply it.
void validate_scheduled_change(json& current, uint32_t n_input_dims, uint32_t n_output_dims, const ScheduledChange& s) {
    const json& v = s.change.value;
    switch (change_effect(s.change.key)) {
    case ChangeEffect::BatchSize:
        if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > (1 << 22))
            throw ConfigError("batch_size", "must be an integer in [1, 4194304], got " + v.dump());
        break;
    case ChangeEffect::LearningRate:
        if (!v.is_number() || !(v.get<double>() > 0))
            throw ConfigError("optimizer.learning_rate", "must be a positive number, got " + v.dump());
        break;
    case ChangeEffect::Rebuild:
        if (s.change.key.rfind("rgb_network.", 0) == 0)
            throw ConfigError(s.change.key, "only the NeRF view has a colour network");
        apply_config_change(current, s.change);
        Model<float>(n_input_dims, n_output_dims, config_with_defaults(current), 0);  // throws ConfigError naming the field
        break;
    }
}

} // namespace

void validate_scheduled_changes(const json& config, uint32_t n_input_dims, uint32_t n_output_dims,
                                const std::vector<ScheduledChange>& changes) {
    std::vector<ScheduledChange> ordered = changes;
    std::stable_sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) { return a.frame < b.frame; });
    json current = config;
    for (const auto& s : ordered) {
        try {
            validate_scheduled_change(current, n_input_dims, n_output_dims, s);
        } catch (const ConfigError& e) {
            // Name the option as the user typed it: the field alone reads like a config file's error.
            const json& v = s.change.value;
            const std::string typed = v.is_string() ? v.get<std::string>() : v.dump();
            throw ConfigError("", "--set " + s.change.key + "=" + typed + "@" + std::to_string(s.frame) + ": " + e.what());
        }
    }
}

namespace {

// The session's data for `path` (image or mesh), with the 3-D scene in SDF mode.
struct OpenedData {
    SessionData session;
    SdfSceneInfo scene;
    std::string description;
};

OpenedData open_data(const std::string& mode, const std::string& path, const json& config) {
    OpenedData out;
    if (mode == "sdf") {
        std::vector<std::string> warnings;
        SdfSessionData d = load_sdf_session_data(path, config, &warnings);
        for (const auto& w : warnings) std::printf("warning   %s\n", w.c_str());
        out.session = std::move(d.session);
        out.scene = std::move(d.scene);
        out.description = out.scene.description;
    } else if (mode == "image") {
        Image image = load_image(path);
        out.description = image.describe();
        out.session = image_session_data(std::move(image));
    } else {
        throw InputError(path + ": the desktop app trains images, meshes (SDF) and NeRF scenes, not mode " + mode);
    }
    return out;
}

// The last report line's quality: PSNR over the full image, or the IoU.
std::string final_quality(App& app) {
    char text[64];
    if (app.sdf) {
        std::snprintf(text, sizeof text, "iou=%.4f", app.sdf->measure_iou(app.session));
    } else {
        std::snprintf(text, sizeof text, "psnr=%.3f", app.session.full_psnr());
    }
    return text;
}

} // namespace

int run_gui(const GuiOptions& o) {
    // Everything that can be wrong with the input fails before a window opens.
    const std::string mode = infer_mode(o.data);
    if (mode == "nerf") return run_nerf_gui(o);
    if (o.background) throw InputError("--background: only the NeRF view has one (" + o.data + " is not a NeRF scene)");
    if (o.crop) throw InputError("--crop: only the NeRF view has one (" + o.data + " is not a NeRF scene)");
    json config = config_with_defaults(load_mode_config(mode, o.config));
    OpenedData opened = open_data(mode, o.data, config);
    validate_scheduled_changes(config, opened.session.data->n_input_dims(), opened.session.data->n_output_dims(),
                               o.automation.changes);
    const std::string backend = o.backend.empty() ? available_backends().front() : o.backend;
    // 2^12 samples per step: a CPU step of ~80 ms on two cores, so the display follows training closely.
    const uint32_t batch = o.batch_size ? o.batch_size : (equals_ignore_case(backend, "cpu") ? 1u << 12 : 1u << 18);
    TrainingSession session(std::move(opened.session), config, backend, batch, o.seed);

    std::unique_ptr<GlWindow> window = open_app_window(o);
    const float scale = window->content_scale();
    std::printf("gui       %s, content scale %.2f\n", window->gl_renderer().c_str(), scale);
    std::printf("data      %s (%s mode): %s\n", o.data.c_str(), mode.c_str(), opened.description.c_str());
    std::fflush(stdout);
    ImGuiLayer layer(*window, scale);
    App app(*window, session);
    if (mode == "sdf") app.sdf = std::make_unique<SdfView>(std::move(opened.scene));
    app.ui.view_3d = app.sdf != nullptr;
    app.ui.vsync = o.automation.frames == 0;
    app.ui.max_fps = o.max_fps;
    window->on_drop([&app](const std::vector<std::string>& paths) {
        app.dropped.insert(app.dropped.end(), paths.begin(), paths.end());
    });
    Automation automation(o.automation);
    FrameClock clock;
    uint64_t frames = run_loop(app, layer, automation, scale, clock);
    const double seconds = clock.seconds();
    session.stop_worker();
    session.poll();
    std::printf("fps       %.1f mean over %llu frames in %.2f s (%llu training steps on a worker thread)\n",
                seconds > 0 ? (double)frames / seconds : 0.0, (unsigned long long)frames, seconds,
                (unsigned long long)session.step());
    clock.print_steady_rate();
    if (session.renders_on_device())
        std::printf("training  %.1f GPU steps ran per device render (mean of the last %zu renders)\n",
                    session.device_steps_ran_per_frame(), FrameSteps::kFrames);
    std::fflush(stdout);
    if (app.ui.autosave_on_exit) {
        run_reporting_errors(app.ui, "autosave", [&] { session.save_snapshot(app.ui.autosave_path); });
        std::printf("%s\n", app.ui.message_is_error ? app.ui.message.c_str() : ("autosaved " + app.ui.autosave_path).c_str());
    }
    if (o.automation.frames > 0) automation.print_report(session, frames, final_quality(app));
    return 0;
}

} // namespace fusedngp
