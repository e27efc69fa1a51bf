#include "gui/image_view.h"

#include "gui/display_texture.h"

#include <glad/gl.h>

#include <algorithm>
#include <cmath>

namespace fusedngp {

ImageView::ImageView() : program_("display.vert.glsl", "display.frag.glsl") { glGenVertexArrays(1, &vao_); }

ImageView::~ImageView() { glDeleteVertexArrays(1, &vao_); }

void ImageView::drag(float dx, float dy) {
    pan_x_ += dx;
    pan_y_ += dy;
}

void ImageView::zoom_at(float wheel, float x, float y, const ViewRect& area) {
    const float factor = std::pow(1.15f, wheel);
    const float new_zoom = std::clamp(zoom_ * factor, 0.1f, 64.0f);
    // Keep the point under the cursor fixed: pan is relative to the area's centre.
    const float cx = x - (area.x + area.width * 0.5f), cy = y - (area.y + area.height * 0.5f);
    const float applied = new_zoom / zoom_;
    pan_x_ = cx - (cx - pan_x_) * applied;
    pan_y_ = cy - (cy - pan_y_) * applied;
    zoom_ = new_zoom;
}

void ImageView::reset_view() {
    zoom_ = 1.0f;
    pan_x_ = pan_y_ = 0;
}

void ImageView::draw_panel(int shader_mode, const ViewRect& panel, float image_aspect,
                           int fb_width, int fb_height) const {
    // Fit the image into the panel, then zoom and pan about the panel's centre.
    float w = panel.width, h = panel.width / image_aspect;
    if (h > panel.height) {
        h = panel.height;
        w = h * image_aspect;
    }
    w *= zoom_;
    h *= zoom_;
    const float cx = panel.x + panel.width * 0.5f + pan_x_, cy = panel.y + panel.height * 0.5f + pan_y_;
    auto ndc_x = [&](float px) { return px / (float)fb_width * 2.0f - 1.0f; };
    auto ndc_y = [&](float py) { return 1.0f - py / (float)fb_height * 2.0f; };
    glScissor((int)panel.x, (int)((float)fb_height - panel.y - panel.height), (int)panel.width, (int)panel.height);
    program_.set_int("u_mode", shader_mode);
    program_.set_vec4("u_rect", ndc_x(cx - w * 0.5f), ndc_y(cy - h * 0.5f), ndc_x(cx + w * 0.5f), ndc_y(cy + h * 0.5f));
    glDrawArrays(GL_TRIANGLE_STRIP, 0, 4);
}

void ImageView::draw(const DisplayTexture& truth, const DisplayTexture& prediction, bool linear, const ViewRect& area,
                     int fb_width, int fb_height) {
    if (truth.width() == 0 || area.width < 2 || area.height < 2) return;
    const float aspect = (float)truth.width() / (float)truth.height();
    glViewport(0, 0, fb_width, fb_height);
    glEnable(GL_SCISSOR_TEST);
    program_.use();
    program_.set_int("u_truth", 0);
    program_.set_int("u_prediction", 1);
    program_.set_int("u_linear", linear ? 1 : 0);
    program_.set_float("u_error_gain", error_gain);
    glActiveTexture(GL_TEXTURE0);
    glBindTexture(GL_TEXTURE_2D, truth.texture());
    glActiveTexture(GL_TEXTURE1);
    glBindTexture(GL_TEXTURE_2D, prediction.texture());
    glBindVertexArray(vao_);
    if (mode == ViewMode::SideBySide) {
        const float gap = 4.0f, half = (area.width - gap) * 0.5f;
        draw_panel(0, {area.x, area.y, half, area.height}, aspect, fb_width, fb_height);
        draw_panel(1, {area.x + half + gap, area.y, half, area.height}, aspect, fb_width, fb_height);
    } else {
        int m = mode == ViewMode::GroundTruth ? 0 : mode == ViewMode::Prediction ? 1 : 2;
        draw_panel(m, area, aspect, fb_width, fb_height);
    }
    glBindVertexArray(0);
    glActiveTexture(GL_TEXTURE0);
    glDisable(GL_SCISSOR_TEST);
}

} // namespace fusedngp
