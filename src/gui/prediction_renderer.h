// Renders the model's prediction into a DisplayTexture a band of rows at a
// time, under a time budget per frame, so any resolution keeps the UI
// responsive. The image refreshes continuously while training (top to bottom).
#pragma once

#include "backends/backend.h"
#include "gui/display_texture.h"

#include <vector>

namespace fusedngp {

class TrainingSession;

// Interleaves 1-4 channel pixels into RGBA (gray -> rgb, gray+alpha, rgb + 1).
void to_rgba(const float* pixels, int channels, size_t count, float* rgba);

class PredictionRenderer {
public:
    // Chooses the render resolution; restarts the pass when it changes.
    void set_resolution(int width, int height);
    int width() const { return width_; }
    int height() const { return height_; }

    // Host path (CPU backend): renders rows through the session's display
    // inference until `budget_ms` is used (at least one band) and uploads them.
    void advance(TrainingSession& session, int channels, DisplayTexture& target, double budget_ms);
    // CUDA–GL interop path: the whole image in one go, rendered by a CUDA
    // kernel into the texture's mapped PBO, never through host memory.
    // False (nothing drawn) when the session or the PBO cannot do that.
    bool render_on_device(TrainingSession& session, DisplayTexture& target);
    // Completed full passes (a pass = every row once).
    uint64_t passes() const { return passes_; }
    void restart() { next_row_ = 0; }

private:
    int width_ = 0, height_ = 0;
    int next_row_ = 0;
    uint64_t passes_ = 0;
    Matrix<float> coords_, values_;
    std::vector<float> rgba_;
};

} // namespace fusedngp
