// What the panels share: view choices, the status message, file prompts and
// settings. Plain data; the panels and the app loop read and write it.
#pragma once

#include "gui/image_view.h"

#include <chrono>
#include <cstdio>
#include <exception>
#include <string>

namespace fusedngp {

enum class FileAction { None, SaveSnapshot, LoadSnapshot, ExportWeights, Screenshot, OpenImage, ExtractMesh };

struct UiState {
    // Render resolution: 0 = the image's own, 1 = the display (panel) size, 2 = custom.
    int render_resolution = 0;
    int custom_width = 512, custom_height = 512;
    bool show_help = false;
    bool view_3d = false;  // the SDF mode's 3-D view is shown (its keys join the help)
    bool nerf = false;     // the NeRF mode: its own keys in the help
    bool autosave_on_exit = false;
    std::string autosave_path = "fusedngp_autosave.fusedngp";
    bool vsync = true;
    double max_fps = 60;  // frame cap (sleeps); 0: uncapped

    // A file prompt opened from a button or shortcut.
    FileAction prompt = FileAction::None;
    bool prompt_just_opened = false;
    char prompt_path[1024] = {};
    FileAction screenshot_after_frame = FileAction::None;  // a screenshot waits for the frame to finish
    std::string pending_screenshot_path;

    // The last status message (errors in red), shown under the view.
    std::string message;
    bool message_is_error = false;

    double fps = 0;
    double frame_ms = 0;

    void info(const std::string& text) {
        message = text;
        message_is_error = false;
    }
    void error(const std::string& text) {
        message = text;
        message_is_error = true;
    }
};

// Runs an action the user asked for; any error becomes the UI message and
// the app keeps running its current model.
template <typename F>
bool run_reporting_errors(UiState& ui, const std::string& what, F&& action) {
    try {
        action();
        return true;
    } catch (const std::exception& e) {
        ui.error(what + " failed: " + e.what());
        return false;
    }
}

} // namespace fusedngp
