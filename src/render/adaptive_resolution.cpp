#include "render/adaptive_resolution.h"

#include <algorithm>
#include <cmath>

namespace fusedngp {

namespace {
constexpr double kSmoothing = 0.3;  // weight of the newest measurement
constexpr double kFitSpread = 1.3;  // largest / smallest pass size that determines the fixed part
}

void AdaptiveResolution::record(uint64_t pixels, double ms) {
    if (pixels == 0 || !(ms >= 0)) return;
    fit_pixels_[fit_next_] = (double)pixels;
    fit_ms_[fit_next_] = ms;
    fit_next_ = (fit_next_ + 1) % kFitPasses;
    fit_count_ = std::min(fit_count_ + 1, kFitPasses);
    fit_fixed_cost();
    // At least a tenth of each pass is charged to its pixels, so a fixed part
    // fitted too large never makes pixels look free.
    const double cost = std::max(ms - fixed_ms_, 0.1 * ms) / (double)pixels;
    ms_per_pixel_ = ms_per_pixel_ == 0 ? cost : ms_per_pixel_ + kSmoothing * (cost - ms_per_pixel_);
}

// ms = fixed + per_pixel * pixels over the recent passes; only when their
// sizes span enough (the line is otherwise undetermined: the fixed part
// stays as last fitted) and the fit is sensible (both parts >= 0).
void AdaptiveResolution::fit_fixed_cost() {
    double lo = 1e300, hi = 0, sp = 0, sm = 0;
    for (int i = 0; i < fit_count_; ++i) {
        lo = std::min(lo, fit_pixels_[i]);
        hi = std::max(hi, fit_pixels_[i]);
        sp += fit_pixels_[i];
        sm += fit_ms_[i];
    }
    if (fit_count_ < 4 || hi < kFitSpread * lo) return;
    const double mp = sp / fit_count_, mm = sm / fit_count_;
    double cov = 0, var = 0;
    for (int i = 0; i < fit_count_; ++i) {
        cov += (fit_pixels_[i] - mp) * (fit_ms_[i] - mm);
        var += (fit_pixels_[i] - mp) * (fit_pixels_[i] - mp);
    }
    const double slope = cov / var, fixed = mm - slope * mp;
    if (slope > 0 && fixed >= 0) fixed_ms_ = fixed;
}

uint64_t AdaptiveResolution::pixels_per_budget() const {
    if (ms_per_pixel_ <= 0) return 0;
    return (uint64_t)std::max(1.0, (budget_ms_ - fixed_ms_) / ms_per_pixel_);
}

RenderSize AdaptiveResolution::size(int view_width, int view_height, double frames_per_pass) {
    view_width = std::max(1, view_width);
    view_height = std::max(1, view_height);
    if (ms_per_pixel_ > 0) {
        const double affordable = std::max(0.0, budget_ms_ * std::max(frames_per_pass, 1e-3) - fixed_ms_) / ms_per_pixel_;
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
