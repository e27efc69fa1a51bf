// AdaptiveResolution: the render size of a live 3-D view under a time
// budget. Sphere tracing costs far more per pixel than drawing an image, so
// the view renders fewer pixels (shown upscaled) when they are expensive:
// from the measured cost it picks the largest size whose full pass fits
// `frames_per_pass` frames of `budget_ms`, never above the view's size.
// The cost is modelled as a fixed part per pass plus a part per pixel: a
// device render beside training waits on the GPU for each of its many small
// launches, whatever its size, and charging that wait to the pixels would
// shrink the picture to a few thousand of them. The fixed part is fitted
// (least squares) over the recent passes once their sizes differ enough.
// Pure logic (no GL), shared by the CPU and GPU paths and the NeRF view.
#pragma once

#include <cstdint>

namespace fusedngp {

struct RenderSize {
    int width = 0, height = 0;
};

class AdaptiveResolution {
public:
    static constexpr float kMinScale = 1.f / 16.f;  // of the view's size per axis
    static constexpr float kHysteresis = 0.15f;     // the scale moves only past this relative change
    static constexpr int kMinRows = 8;

    explicit AdaptiveResolution(double budget_ms) : budget_ms_(budget_ms) {}

    // After a render: `pixels` took `ms`. Smoothed, so one slow frame does not halve the picture.
    void record(uint64_t pixels, double ms);
    // The size to render a view of view_width x view_height at, its aspect kept.
    RenderSize size(int view_width, int view_height, double frames_per_pass = 1);
    // The per-axis scale chosen last (1 = the view's own size).
    float scale() const { return scale_; }
    double ms_per_pixel() const { return ms_per_pixel_; }
    double fixed_ms() const { return fixed_ms_; }  // per pass, whatever its size
    double budget_ms() const { return budget_ms_; }
    // Pixels worth one budget at the measured cost (before any measurement: a guess).
    uint64_t pixels_per_budget() const;

private:
    double budget_ms_;
    void fit_fixed_cost();

    static constexpr int kFitPasses = 32;
    double ms_per_pixel_ = 0;  // 0: nothing measured yet
    double fixed_ms_ = 0;
    double fit_pixels_[kFitPasses] = {}, fit_ms_[kFitPasses] = {};
    int fit_count_ = 0, fit_next_ = 0;
    float scale_ = 0.25f;      // a cautious start: a quarter of the view per axis
};

} // namespace fusedngp
