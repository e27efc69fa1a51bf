#include "gui/app_frame.h"

#include "core/errors.h"
#include "gui/gui_app.h"
#include "gui/imgui_layer.h"
#include "gui/screenshot.h"

#include <glad/gl.h>
#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <thread>

namespace fusedngp {

namespace {

// Start-up (first uploads, CUDA context and kernel loads) is not what the UI
// feels like while training: the steady rate skips these first frames.
constexpr size_t kWarmupFrames = 60;
constexpr float kPanelWidth = 400.0f;

} // namespace

std::unique_ptr<GlWindow> open_app_window(const GuiOptions& o) {
    try {
        return std::make_unique<GlWindow>("fusedngp", o.window_width, o.window_height, /*vsync=*/o.automation.frames == 0);
    } catch (const std::runtime_error& e) {
        throw InputError(std::string(e.what()) + " (is $DISPLAY set? use `fusedngp train` for headless runs)");
    }
}

ViewRect view_area(int fb_width, int fb_height, float panel_width_fb) {
    return {0, 0, std::max(1.0f, (float)fb_width - panel_width_fb), (float)fb_height};
}

float side_panel_width(float scale) { return std::min(kPanelWidth * scale, ImGui::GetIO().DisplaySize.x * 0.5f); }

void begin_side_panel(float width, const std::string& backend, const UiState& ui, bool training) {
    const ImGuiIO& io = ImGui::GetIO();
    ImGui::SetNextWindowPos(ImVec2(io.DisplaySize.x - width, 0), ImGuiCond_Always);
    ImGui::SetNextWindowSize(ImVec2(width, io.DisplaySize.y), ImGuiCond_Always);
    ImGui::Begin("fusedngp", nullptr, ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoCollapse |
                                          ImGuiWindowFlags_NoTitleBar);
    ImGui::TextColored(ImVec4(0.45f, 0.75f, 1.0f, 1.0f), "fusedngp");
    ImGui::SameLine();
    ImGui::TextDisabled("%s  |  %.0f fps  |  %s", backend.c_str(), ui.fps, training ? "training" : "paused");
    ImGui::Separator();
}

void draw_status_bar(const UiState& ui, const ViewRect& area, float scale) {
    if (ui.message.empty()) return;
    const ImGuiIO& io = ImGui::GetIO();
    ImGui::SetNextWindowPos(ImVec2(area.x / io.DisplayFramebufferScale.x + 8 * scale,
                                   (area.y + area.height) / io.DisplayFramebufferScale.y - 8 * scale),
                            ImGuiCond_Always, ImVec2(0, 1));
    ImGui::SetNextWindowBgAlpha(0.75f);
    ImGui::Begin("##status", nullptr,
                 ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoFocusOnAppearing |
                     ImGuiWindowFlags_NoNav | ImGuiWindowFlags_NoInputs);
    ImVec4 colour = ui.message_is_error ? ImVec4(1.0f, 0.45f, 0.4f, 1) : ImVec4(0.7f, 0.9f, 0.7f, 1);
    ImGui::TextColored(colour, "%s", ui.message.c_str());
    ImGui::End();
}

void clear_frame(int fb_width, int fb_height) {
    glViewport(0, 0, fb_width, fb_height);
    glClearColor(0.07f, 0.075f, 0.08f, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
}

void save_pending_screenshot(UiState& ui, int fb_width, int fb_height) {
    if (ui.screenshot_after_frame == FileAction::None) return;
    const std::string path = ui.pending_screenshot_path;
    ui.screenshot_after_frame = FileAction::None;
    if (run_reporting_errors(ui, "screenshot " + path, [&] { save_screenshot(path, fb_width, fb_height); }))
        ui.info("saved " + path);
}

FrameClock::FrameClock() : start_(Clock::now()), last_frame_(start_), deadline_(start_) {}

double FrameClock::seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

float FrameClock::last_frame_seconds() const {
    return (float)std::chrono::duration<double>(Clock::now() - last_frame_).count();
}

void FrameClock::end_frame(UiState& ui) {
    auto since_last = [&] { return std::chrono::duration<double, std::milli>(Clock::now() - last_frame_).count(); };
    if (ui.max_fps > 0) {
        // Deadlines a period apart rather than a period after each frame's
        // end: the sleeps' overshoot then evens out instead of adding up
        // (60 fps capped that way ran at 57.7). A frame later than a whole
        // period starts the schedule again, so no burst follows a stall.
        const auto period = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(1.0 / ui.max_fps));
        deadline_ += period;
        const auto now = Clock::now();
        if (deadline_ < now - period || deadline_ > now + period) deadline_ = now;
        std::this_thread::sleep_until(deadline_);
    }
    const double ms = since_last();
    last_frame_ = Clock::now();
    frame_ms_.push_back(ms);
    ui.frame_ms = ui.frame_ms == 0 ? ms : ui.frame_ms + 0.1 * (ms - ui.frame_ms);
    ui.fps = ui.frame_ms > 0 ? 1000.0 / ui.frame_ms : 0;
}

void FrameClock::print_steady_rate() const {
    if (frame_ms_.size() <= kWarmupFrames) return;
    std::vector<double> ms(frame_ms_.begin() + kWarmupFrames, frame_ms_.end());
    double total = 0;
    for (double m : ms) total += m;
    const size_t n = ms.size();
    std::sort(ms.begin(), ms.end());
    std::printf("frames    steady %.1f fps over frames %zu..%zu; frame ms p50 %.1f p95 %.1f max %.1f\n",
                total > 0 ? 1000.0 * (double)n / total : 0.0, kWarmupFrames, kWarmupFrames + n, ms[n / 2],
                ms[std::min(n - 1, n * 95 / 100)], ms.back());
}

uint64_t run_frames(GlWindow& window, ImGuiLayer& layer, UiState& ui, FrameClock& clock, float scale,
                    uint64_t frame_limit, const std::string& screenshot, const ModeFrame& mode) {
    uint64_t frame = 0;
    bool vsync = ui.vsync;
    while (!window.should_close()) {
        window.poll_events();
        if (ui.vsync != vsync) window.set_vsync(vsync = ui.vsync);
        mode.before_ui(frame);

        int fb_w = 0, fb_h = 0;
        window.framebuffer_size(fb_w, fb_h);
        layer.begin_frame();
        const float panel_width = side_panel_width(scale);
        const ViewRect area = view_area(fb_w, fb_h, panel_width * ImGui::GetIO().DisplayFramebufferScale.x);
        mode.ui(frame, area, panel_width);
        draw_status_bar(ui, area, scale);

        clear_frame(fb_w, fb_h);
        mode.draw(area, fb_w, fb_h);
        layer.end_frame();
        save_pending_screenshot(ui, fb_w, fb_h);
        ++frame;
        if (frame_limit > 0 && frame >= frame_limit) {
            if (!screenshot.empty()) save_screenshot(screenshot, fb_w, fb_h);
            break;
        }
        window.swap_buffers();
        clock.end_frame(ui);
    }
    return frame;
}

} // namespace fusedngp
