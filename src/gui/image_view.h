// The image area: ground truth, prediction or error map (or truth and
// prediction side by side), with pan (drag) and zoom (wheel, about the cursor).
#pragma once

#include "gui/shader_program.h"

namespace fusedngp {

class DisplayTexture;

enum class ViewMode { SideBySide, Prediction, GroundTruth, Error };

struct ViewRect {
    float x = 0, y = 0, width = 0, height = 0;  // framebuffer pixels, origin top-left
};

class ImageView {
public:
    ImageView();
    ~ImageView();
    ImageView(const ImageView&) = delete;
    ImageView& operator=(const ImageView&) = delete;

    // Mouse input in framebuffer pixels; ignored when the UI has the mouse.
    void drag(float dx, float dy);
    void zoom_at(float wheel, float x, float y, const ViewRect& area);
    void reset_view();

    void draw(const DisplayTexture& truth, const DisplayTexture& prediction, bool linear, const ViewRect& area,
              int framebuffer_width, int framebuffer_height);

    ViewMode mode = ViewMode::SideBySide;
    float error_gain = 4.0f;
    float zoom() const { return zoom_; }

private:
    void draw_panel(int shader_mode, const ViewRect& panel, float image_aspect,
                    int framebuffer_width, int framebuffer_height) const;

    ShaderProgram program_;
    unsigned vao_ = 0;
    float zoom_ = 1.0f;             // 1 = fit the panel
    float pan_x_ = 0, pan_y_ = 0;   // framebuffer pixels
};

} // namespace fusedngp
