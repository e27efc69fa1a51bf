// The desktop app: a window where a model trains live. The loop interleaves
// training steps with frames under a per-frame time budget.
#pragma once

#include "gui/automation.h"

#include "core/json_fields.h"
#include "geometry/vec3.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fusedngp {

struct GuiOptions {
    std::string data;     // image, mesh or NeRF scene to train on (the mode follows the path)
    std::string backend;  // "cpu", "cuda"; empty: best available
    std::string config;   // empty: the mode's configs/MODE.json (embedded)
    uint32_t batch_size = 0;  // samples (NeRF: rays) per step; 0: the mode's default for the backend
    uint64_t seed = 1337;
    std::optional<Vec3> background;  // NeRF: the view's starting background; none: the app's colour
    std::optional<Box3> crop;        // NeRF: the view starts with this crop box on
    int window_width = 1600, window_height = 900;  // initial window size (screen pixels)
    double max_fps = 60;                           // frame cap; 0: as fast as the loop goes
    AutomationOptions automation;
};

// Runs until the window closes (or --frames); a NeRF scene runs run_nerf_gui. Throws InputError/ConfigError
// for bad input before the window opens, or when no window can be opened.
int run_gui(const GuiOptions& options);
int run_nerf_gui(const GuiOptions& options);  // nerf_app.cpp

// Checks scripted changes against the config before anything runs: each
// `--set` applied in frame order must give a buildable model. Throws.
void validate_scheduled_changes(const json& config, uint32_t n_input_dims, uint32_t n_output_dims,
                                const std::vector<ScheduledChange>& changes);

} // namespace fusedngp
