#include "render/adaptive_resolution.h"

#include <algorithm>
#include <cmath>

namespace fusedngp {

namespace {
constexpr double kSmoothing = 0.3;  // weight of the newest measurement
}

void AdaptiveResolution::record(uint64_t pixels, double ms) {
    if (pixels == 0 || !(ms >= 0)) return;
    const double cost = ms / (double)pixels;
    ms_per_pixel_ = ms_per_pixel_ == 0 ? cost : ms_per_pixel_ + kSmoothing * (cost - ms_per_pixel_);
}

uint64_t AdaptiveResolution::pixels_per_budget() const {
    if (ms_per_pixel_ <= 0) return 0;
    return (uint64_t)std::max(1.0, budget_ms_ / ms_per_pixel_);
}

RenderSize AdaptiveResolution::size(int view_width, int view_height, double frames_per_pass) {
    view_width = std::max(1, view_width);
    view_height = std::max(1, view_height);
    if (ms_per_pixel_ > 0) {
        const double affordable = budget_ms_ * std::max(frames_per_pass, 1e-3) / ms_per_pixel_;
        const float wanted = (float)std::clamp(std::sqrt(affordable / ((double)view_width * view_height)),
                                               (double)kMinScale, 1.0);
        // A size that changes every frame would restart the picture every frame.
        if (std::abs(wanted - scale_) > kHysteresis * scale_ || wanted == 1.f || wanted == kMinScale) scale_ = wanted;
    }
    const int rows = std::min(view_height, std::max(kMinRows, (int)std::lround(scale_ * (float)view_height)));
    const int cols = std::max(1, (int)std::lround((double)rows * view_width / view_height));
    return {std::min(cols, view_width), rows};
}

} // namespace fusedngp
