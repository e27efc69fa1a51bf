// The pieces of a frame every mode's app loop shares: the window, the view
// area left of the side panel, the side panel's header, the status line,
// screenshots taken after a frame, and the frame cap with its timing report.
#pragma once

#include "gui/gl_window.h"
#include "gui/image_view.h"
#include "gui/ui_state.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace fusedngp {

struct GuiOptions;
class ImGuiLayer;

// Throws InputError (with a hint about $DISPLAY) when no window can be opened.
std::unique_ptr<GlWindow> open_app_window(const GuiOptions& options);

// The framebuffer minus the side panel.
ViewRect view_area(int fb_width, int fb_height, float panel_width_fb);
// The side panel's width in screen units for this frame.
float side_panel_width(float scale);

// Opens the side panel window with the title line; the caller draws its
// sections and calls ImGui::End().
void begin_side_panel(float width, const std::string& backend, const UiState& ui, bool training);
// The last status message under the view (errors in red).
void draw_status_bar(const UiState& ui, const ViewRect& area, float scale);
// The window's background under the view.
void clear_frame(int fb_width, int fb_height);
// A screenshot asked for in this frame's UI, read back now that the frame is drawn.
void save_pending_screenshot(UiState& ui, int fb_width, int fb_height);

// The frame cap and the frame-time record of one app run.
class FrameClock {
public:
    FrameClock();
    // After drawing: sleeps out the frame cap (ui.max_fps; without vsync it
    // leaves the CPU to training) and updates ui.fps / ui.frame_ms.
    void end_frame(UiState& ui);
    // Seconds since the first frame began.
    double seconds() const;
    float last_frame_seconds() const;  // the previous frame's length, for camera motion
    // "frames    steady 61.3 fps over frames 60..600; frame ms p50 15.9 p95 17.2 max 40.1"
    void print_steady_rate() const;

private:
    using Clock = std::chrono::steady_clock;
    Clock::time_point start_, last_frame_;
    Clock::time_point deadline_;  // when the next capped frame may end
    std::vector<double> frame_ms_;
};

// What a mode's loop does in a frame, around what every mode does (the
// window's events, the ImGui frame, the status line, the clear, screenshots,
// the swap and the frame cap).
struct ModeFrame {
    // After the window's events: scripted changes, training results.
    std::function<void(uint64_t frame)> before_ui;
    // Inside the ImGui frame: input, the view's update, the side panel.
    std::function<void(uint64_t frame, const ViewRect& area, float panel_width)> ui;
    // The view, under the UI.
    std::function<void(const ViewRect& area, int fb_width, int fb_height)> draw;
};

// Frames until the window closes or `frame_limit` frames are drawn (0: no
// limit). A limited run's final frame stays in the back buffer, unswapped,
// so `screenshot` (when set) is exactly what was drawn. Returns the frames drawn.
uint64_t run_frames(GlWindow& window, ImGuiLayer& layer, UiState& ui, FrameClock& clock, float scale,
                    uint64_t frame_limit, const std::string& screenshot, const ModeFrame& mode);

} // namespace fusedngp
