// What the app's 3-D views (SDF, NeRF) share: the camera's mouse and keys,
// and a picture rendered in bands of rows into a back texture that is shown
// once its pass is complete (the CPU renderers cannot draw a whole frame in
// one go; the picture on screen never shows a half-finished pass).
#pragma once

#include "gui/display_texture.h"
#include "gui/image_view.h"
#include "io/image.h"
#include "render/adaptive_resolution.h"
#include "render/camera_controller.h"

#include <vector>

namespace fusedngp {

// Mouse and keys over `area` (framebuffer pixels), unless the UI has them:
// left drag orbit, right/middle drag pan, wheel zoom, WASD/QE fly (Shift
// faster), [ ] field of view, F fit `fit_box`, Home reset.
void handle_camera_input(CameraController& camera, const Box3& fit_box, const ViewRect& area, float dt_seconds);

// The panels' field-of-view slider.
void fov_slider(CameraController& camera);

// The camera of rows [y0, y0 + rows) of `full`: the same rays, a shifted principal point.
Camera band_camera(const Camera& full, int y0, int rows);

class BandedPicture {
public:
    BandedPicture();

    // A new pass of `size` into the back texture (the pass in flight is dropped).
    void start_pass(RenderSize size);
    // Rows [y0, y0 + band.height) of the pass; the last band shows the pass.
    // Returns true when it completed the pass.
    bool upload_band(const Image& band, int y0);
    RenderSize pass_size() const { return pass_size_; }
    int next_row() const { return next_row_; }

    // The shown texture, for renderers that write it whole (CUDA–GL interop).
    DisplayTexture& front() { return textures_[front_index_]; }
    void set_shown_size(RenderSize size) { shown_size_ = size; }
    RenderSize shown_size() const { return shown_size_; }

    // Upscaled over the area (rendered at its aspect, so it fills it).
    void draw(const ViewRect& area, int framebuffer_width, int framebuffer_height);

private:
    DisplayTexture& back() { return textures_[1 - front_index_]; }

    ImageView blit_;
    DisplayTexture textures_[2];  // one shown, one being rendered
    int front_index_ = 0;
    RenderSize shown_size_, pass_size_;
    int next_row_ = 0;
    std::vector<float> rgba_;
};

} // namespace fusedngp
