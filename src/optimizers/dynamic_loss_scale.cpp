#include "optimizers/dynamic_loss_scale.h"

#include "core/errors.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

namespace fusedngp {

LossScaleSettings loss_scale_settings_from_environment(const LossScaleSettings& defaults) {
    LossScaleSettings s = defaults;
    const char* env = std::getenv("FUSEDNGP_LOSS_SCALE");
    if (!env || !*env) return s;
    char* end = nullptr;
    const double scale = std::strtod(env, &end);
    bool ok = end != env && scale >= 1.0 && scale <= 65536.0;
    if (ok && *end == ':') {
        const char* growth_text = end + 1;
        const unsigned long growth = std::strtoul(growth_text, &end, 10);
        ok = end != growth_text && std::isdigit((unsigned char)growth_text[0]) && growth > 0 && growth <= UINT32_MAX;
        s.growth_interval = (uint32_t)growth;
    }
    if (!ok || *end != 0) {
        throw InputError(std::string("FUSEDNGP_LOSS_SCALE=\"") + env +
                         "\": expected a loss scale in [1, 65536], optionally followed by :growth_interval_steps");
    }
    s.initial = (float)scale;
    s.max_scale = std::max(s.max_scale, s.initial);
    s.min_scale = std::min(s.min_scale, s.initial);
    return s;
}

DynamicLossScale::DynamicLossScale(const LossScaleSettings& settings) : settings_(settings), scale_(settings.initial) {}

void DynamicLossScale::set(float scale) {
    scale_ = scale;
    clean_steps_ = 0;
}

bool DynamicLossScale::on_step(float step_scale, bool non_finite) {
    if (non_finite) {
        clean_steps_ = 0;
        if (step_scale != scale_ || scale_ <= settings_.min_scale) return false;
        scale_ = std::max(settings_.min_scale, scale_ * 0.5f);
        return true;
    }
    if (++clean_steps_ < settings_.growth_interval) return false;
    clean_steps_ = 0;
    if (scale_ >= settings_.max_scale) return false;
    scale_ = std::min(settings_.max_scale, scale_ * 2.f);
    return true;
}

} // namespace fusedngp
