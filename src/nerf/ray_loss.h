// The per-channel loss on ray colours as host/device functions, for the GPU
// trainer's per-ray kernel. The CPU trainer uses the Loss components
// (losses/basic_losses.h); a test checks these agree with them.
#pragma once

#include "core/host_device.h"

#include <cmath>
#include <cstdint>

namespace fusedngp::nerf {

enum class RayLossKind : uint32_t { L2, L1, Huber };

struct RayLoss {
    RayLossKind kind = RayLossKind::Huber;
    float huber_delta = 1.f;
};

FUSEDNGP_HD float ray_loss_value(const RayLoss& l, float pred, float target) {
    const float r = pred - target, a = fabsf(r);
    switch (l.kind) {
    case RayLossKind::L2: return r * r;
    case RayLossKind::L1: return a;
    case RayLossKind::Huber: return a <= l.huber_delta ? 0.5f * r * r : l.huber_delta * (a - 0.5f * l.huber_delta);
    }
    return 0.f;
}

FUSEDNGP_HD float ray_loss_gradient(const RayLoss& l, float pred, float target) {
    const float r = pred - target;
    const float sign = r > 0.f ? 1.f : (r < 0.f ? -1.f : 0.f);
    switch (l.kind) {
    case RayLossKind::L2: return 2.f * r;
    case RayLossKind::L1: return sign;
    case RayLossKind::Huber: return fabsf(r) <= l.huber_delta ? r : l.huber_delta * sign;
    }
    return 0.f;
}

} // namespace fusedngp::nerf
