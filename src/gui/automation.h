// Scripted runs for tests and benchmarks: quit after N frames, apply
// `--set KEY=VALUE@FRAME` changes at their frames, and report at exit.
#pragma once

#include "config/config_override.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fusedngp {

class TrainingSession;

struct AutomationOptions {
    uint64_t frames = 0;             // 0: run until the window closes
    std::string screenshot;          // written from the final frame when set
    std::vector<ScheduledChange> changes;
    // 0: the worker trains freely beside the UI. N: lockstep, exactly N steps
    // per frame while running (the loss curve of a scripted run then depends
    // on the frame count only, not on how fast frames are drawn).
    uint32_t steps_per_frame = 0;
    // 3-D modes: the camera orbits by this many pixels of a sideways drag
    // every frame, so a scripted run measures a moving view (0: still).
    float orbit_pixels = 0;
};

class Automation {
public:
    explicit Automation(AutomationOptions options) : options_(std::move(options)) {}

    // Applies the changes scheduled for `frame`. Throws (ConfigError,
    // InputError) when one is invalid: a scripted run must not go on silently.
    void apply_due(uint64_t frame, TrainingSession& session) const;
    uint64_t frame_limit() const { return options_.frames; }  // 0: none
    const std::string& screenshot_path() const { return options_.screenshot; }
    uint32_t steps_per_frame() const { return options_.steps_per_frame; }
    float orbit_pixels() const { return options_.orbit_pixels; }

    // One line per applied change, then the final loss and the mode's
    // quality (`quality`: "psnr=24.31" for images, "iou=0.9712" for SDFs):
    //   change frame=120 key=network.n_neurons value=128 loss_before=0.0123 loss_after=0.0130 params_carried=4416 kept=1
    //   final frames=300 steps=280 first_loss=0.91 loss=0.0051 psnr=24.31
    void print_report(TrainingSession& session, uint64_t frames_drawn, const std::string& quality) const;

private:
    AutomationOptions options_;
};

// The report's last line, for every mode: "final frames=.. steps=.. first_loss=.. loss=.. QUALITY".
void print_final_line(uint64_t frames_drawn, uint64_t steps, float first_loss, float loss, const std::string& quality);

} // namespace fusedngp
