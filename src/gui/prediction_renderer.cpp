#include "gui/prediction_renderer.h"

#include "gui/training_session.h"

#include <algorithm>
#include <chrono>

namespace fusedngp {

namespace {
constexpr int kBandPixels = 1 << 14;  // inference batch per band
}

void to_rgba(const float* pixels, int channels, size_t count, float* rgba) {
    for (size_t i = 0; i < count; ++i) {
        const float* p = pixels + i * (size_t)channels;
        float* o = rgba + i * 4;
        switch (channels) {
        case 1: o[0] = o[1] = o[2] = p[0]; o[3] = 1; break;
        case 2: o[0] = o[1] = o[2] = p[0]; o[3] = p[1]; break;
        case 3: o[0] = p[0]; o[1] = p[1]; o[2] = p[2]; o[3] = 1; break;
        default: std::copy(p, p + 4, o); break;
        }
    }
}

void PredictionRenderer::set_resolution(int width, int height) {
    if (width == width_ && height == height_) return;
    width_ = std::max(1, width);
    height_ = std::max(1, height);
    next_row_ = 0;
}

void PredictionRenderer::advance(TrainingSession& session, int channels, DisplayTexture& target, double budget_ms) {
    target.resize(width_, height_);
    const int band_rows = std::max(1, kBandPixels / width_);
    auto start = std::chrono::steady_clock::now();
    do {
        const int rows = std::min(band_rows, height_ - next_row_);
        const int count = rows * width_;
        coords_.resize(count, 2);
        for (int k = 0; k < count; ++k) {
            coords_(k, 0) = ((float)(k % width_) + 0.5f) / (float)width_;
            coords_(k, 1) = ((float)(next_row_ + k / width_) + 0.5f) / (float)height_;
        }
        session.display_inference(coords_, values_);
        rgba_.resize((size_t)count * 4);
        to_rgba(values_.data(), channels, (size_t)count, rgba_.data());
        target.upload_rows(rgba_.data(), next_row_, rows);
        next_row_ += rows;
        if (next_row_ >= height_) {
            next_row_ = 0;
            ++passes_;
        }
    } while (std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() < budget_ms);
}

bool PredictionRenderer::render_on_device(TrainingSession& session, DisplayTexture& target) {
    if (!session.renders_on_device()) return false;
    target.resize(width_, height_);
    float* rgba = static_cast<float*>(target.map_for_cuda());
    if (!rgba) return false;
    bool drawn = false;
    try {
        drawn = session.render_to_device(rgba, width_, height_);
    } catch (...) {
        target.unmap();
        throw;
    }
    target.unmap();
    if (!drawn) return true;  // no display copy yet: the last picture one frame longer
    target.commit_pbo();
    next_row_ = 0;
    ++passes_;
    return true;
}

} // namespace fusedngp
