// The desktop app in NeRF mode: `fusedngp gui SCENE` (a folder or a
// transforms .json). A NerfSession trains on its worker thread; the NeRF view
// shows the field from the interactive camera. Shares the window, panel
// frame, screenshots and frame cap with the other modes (app_frame.h).
#include "gui/gui_app.h"

#include "backends/backend.h"
#include "core/errors.h"
#include "gui/app_frame.h"
#include "gui/imgui_layer.h"
#include "gui/nerf_panel.h"
#include "gui/nerf_session.h"
#include "gui/nerf_setup.h"
#include "gui/nerf_view.h"
#include "gui/panels.h"
#include "gui/ui_state.h"

#include <imgui.h>

#include <cstdio>

namespace fusedngp {

namespace {

// Rays per step when --batch is not given: a CPU step of ~0.1 s on two cores
// keeps the picture close to training; the GPU takes instant-ngp's batch.
constexpr uint32_t kCpuRays = 1024, kGpuRays = 4096;

// Every --set the NeRF view can apply, checked before a window opens.
void validate_nerf_changes(const std::vector<ScheduledChange>& changes) {
    for (const auto& s : changes) NerfSession::validate_change(s.change);
}

struct NerfApp {
    GlWindow& window;
    NerfSession& session;
    NerfView view;
    UiState ui;
    const AutomationOptions& automation;

    NerfApp(GlWindow& w, NerfSession& s, const AutomationOptions& a) : window(w), session(s), view(s.scene()), automation(a) {}
};

void apply_due_changes(NerfApp& app, uint64_t frame) {
    for (const auto& s : app.automation.changes) {
        if (s.frame != frame) continue;
        app.session.request_change(s.change);
        std::printf("change frame=%llu key=%s value=%s\n", (unsigned long long)frame, s.change.key.c_str(),
                    s.change.value.dump().c_str());
    }
}

// The prompt's path for the worker (NerfSession::request_file_job).
void post_file_job(NerfApp& app, FileAction action, const std::string& path) {
    NerfFileJob job;
    job.path = path;
    job.mesh_resolution = (uint32_t)app.view.mesh_resolution;
    job.mesh_density = app.view.mesh_density;
    job.mesh_crop = app.view.active_crop();
    switch (action) {
    case FileAction::SaveSnapshot: job.kind = NerfFileJobKind::SaveSnapshot; break;
    case FileAction::LoadSnapshot: job.kind = NerfFileJobKind::LoadSnapshot; break;
    case FileAction::ExportWeights: job.kind = NerfFileJobKind::ExportWeights; break;
    case FileAction::ExtractMesh: job.kind = NerfFileJobKind::ExtractMesh; break;
    default: return;  // screenshots are the prompt's own; the NeRF view opens no images
    }
    app.session.request_file_job(job);
    app.ui.info((job.kind == NerfFileJobKind::LoadSnapshot ? "loading " : "writing ") + path + " on the training thread");
}

// Returns the number of frames drawn (app_frame.h's run_frames).
uint64_t run_nerf_loop(NerfApp& app, ImGuiLayer& layer, float scale, FrameClock& clock) {
    const uint32_t steps_per_frame = app.automation.steps_per_frame;
    app.session.set_lockstep(steps_per_frame > 0);
    app.session.start_worker();
    ModeFrame mode;
    mode.before_ui = [&](uint64_t frame) {
        apply_due_changes(app, frame);
        if (app.automation.orbit_pixels > 0) app.view.camera().orbit(app.automation.orbit_pixels, 0);
        if (steps_per_frame > 0 && app.session.running) app.session.run_steps(steps_per_frame);
        app.session.poll();
        for (const std::string& report : app.session.take_change_reports()) {
            std::printf("changed   %s\n", report.c_str());
            app.ui.info(report);
        }
        for (const std::string& report : app.session.take_file_reports()) {
            std::printf("file      %s\n", report.c_str());
            app.ui.info(report);
        }
        if (std::string error = app.session.take_worker_error(); !error.empty()) {
            app.ui.error(error);
            app.view.worker_failed();
        }
    };
    mode.ui = [&](uint64_t, const ViewRect& area, float panel_width) {
        handle_nerf_shortcuts(app.session, app.ui);
        app.view.handle_input(area, clock.last_frame_seconds());
        app.view.update(app.session, area);
        app.view.draw_training_views(area);
        app.view.draw_crop_box(area);
        begin_side_panel(panel_width, app.session.backend_name(), app.ui, app.session.running);
        draw_nerf_panel(app.view, app.session, app.ui);
        ImGui::End();
        draw_file_prompt(nullptr, app.ui, [&](FileAction action, const std::string& path) { post_file_job(app, action, path); });
        draw_help_window(app.ui);
    };
    mode.draw = [&](const ViewRect& area, int fb_w, int fb_h) { app.view.draw(area, fb_w, fb_h); };
    return run_frames(app.window, layer, app.ui, clock, scale, app.automation.frames, app.automation.screenshot, mode);
}

} // namespace

int run_nerf_gui(const GuiOptions& o) {
    // Everything that can be wrong with the input fails before a window opens.
    validate_nerf_changes(o.automation.changes);
    const std::string first_choice = o.backend.empty() ? available_backends().front() : o.backend;
    const uint32_t rays = o.batch_size ? o.batch_size : (equals_ignore_case(first_choice, "cpu") ? kCpuRays : kGpuRays);
    std::vector<std::string> warnings;
    NerfAppScene scene = load_nerf_scene(o.data, o.config, rays, o.seed, NerfEvalViews{}, &warnings);
    for (const auto& w : warnings) std::printf("warning   %s\n", w.c_str());
    const std::string description = scene.description;
    NerfSession session(std::move(scene), o.backend);

    std::unique_ptr<GlWindow> window = open_app_window(o);
    const float scale = window->content_scale();
    std::printf("gui       %s, content scale %.2f\n", window->gl_renderer().c_str(), scale);
    std::printf("data      %s (nerf mode): %s\n", o.data.c_str(), description.c_str());
    std::printf("model     %zu params, backend %s, %u rays per step\n", session.n_params(),
                session.backend_name().c_str(), session.rays_per_step());
    std::fflush(stdout);
    ImGuiLayer layer(*window, scale);
    NerfApp app(*window, session, o.automation);
    if (o.background) app.view.background = *o.background;
    if (o.crop) {
        app.view.crop_enabled = true;
        app.view.crop = *o.crop;
    }
    app.ui.view_3d = true;
    app.ui.nerf = true;
    app.ui.vsync = o.automation.frames == 0;
    app.ui.max_fps = o.max_fps;
    FrameClock clock;
    const uint64_t frames = run_nerf_loop(app, layer, scale, clock);
    const double seconds = clock.seconds();
    session.stop_worker();
    session.poll();
    std::printf("fps       %.1f mean over %llu frames in %.2f s (%llu training steps on a worker thread, %.1f steps/s)\n",
                seconds > 0 ? (double)frames / seconds : 0.0, (unsigned long long)frames, seconds,
                (unsigned long long)session.step(), session.steps_per_second());
    clock.print_steady_rate();
    std::printf("render    last view %d x %d (pass %.0f ms of worker time, %.1f us/pixel); %llu pictures, %.1f per "
                "second\n",
                app.view.render_size().width, app.view.render_size().height, app.view.last_pass_ms(),
                1e3 * app.view.resolution().ms_per_pixel(), (unsigned long long)app.view.passes_shown(),
                seconds > 0 ? (double)app.view.passes_shown() / seconds : 0.0);
    std::fflush(stdout);
    if (o.automation.frames > 0) {
        char quality[64];
        std::snprintf(quality, sizeof quality, "psnr=%.3f", session.measure_psnr());
        print_final_line(frames, session.step(), session.first_loss(), session.last_loss(), quality);
    }
    return 0;
}

} // namespace fusedngp
