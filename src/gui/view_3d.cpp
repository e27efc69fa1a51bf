#include "gui/view_3d.h"

#include "gui/prediction_renderer.h"

#include <GLFW/glfw3.h>
#include <imgui.h>

#include <algorithm>

namespace fusedngp {

namespace {

constexpr float kFovStepDegrees = 5.f;
constexpr float kMaxFlySeconds = 0.1f;  // a stalled frame (a rebuild, a mesh export) does not fling the camera

void handle_camera_keys(CameraController& camera, const Box3& fit_box, const ViewRect& area, float dt_seconds) {
    const ImGuiIO& io = ImGui::GetIO();
    if (io.WantCaptureKeyboard || io.WantTextInput || io.KeyCtrl) return;
    auto pressed = [](int key) { return ImGui::IsKeyPressed(key, false); };
    auto down = [](int key) { return ImGui::IsKeyDown(key); };
    FlyKeys keys;
    keys.forward = down(GLFW_KEY_W);
    keys.back = down(GLFW_KEY_S);
    keys.left = down(GLFW_KEY_A);
    keys.right = down(GLFW_KEY_D);
    keys.up = down(GLFW_KEY_E);
    keys.down = down(GLFW_KEY_Q);
    keys.fast = io.KeyShift;
    camera.fly(keys, std::min(dt_seconds, kMaxFlySeconds));
    if (pressed(GLFW_KEY_LEFT_BRACKET)) camera.set_fov(camera.fov() - kFovStepDegrees);
    if (pressed(GLFW_KEY_RIGHT_BRACKET)) camera.set_fov(camera.fov() + kFovStepDegrees);
    if (pressed(GLFW_KEY_F)) camera.fit(fit_box, area.width / std::max(area.height, 1.f));
    if (pressed(GLFW_KEY_HOME)) camera.reset();
}

} // namespace

void handle_camera_input(CameraController& camera, const Box3& fit_box, const ViewRect& area, float dt_seconds) {
    handle_camera_keys(camera, fit_box, area, dt_seconds);
    const ImGuiIO& io = ImGui::GetIO();
    if (io.WantCaptureMouse) return;
    const float sx = io.DisplayFramebufferScale.x, sy = io.DisplayFramebufferScale.y;
    const float mx = io.MousePos.x * sx, my = io.MousePos.y * sy;
    if (mx < area.x || mx > area.x + area.width || my < area.y || my > area.y + area.height) return;
    const float dx = io.MouseDelta.x * sx, dy = io.MouseDelta.y * sy;
    if (ImGui::IsMouseDragging(ImGuiMouseButton_Left, 0.0f)) camera.orbit(dx, dy);
    if (ImGui::IsMouseDragging(ImGuiMouseButton_Right, 0.0f) || ImGui::IsMouseDragging(ImGuiMouseButton_Middle, 0.0f))
        camera.pan(dx, dy, area.height);
    if (io.MouseWheel != 0) camera.zoom(io.MouseWheel);
}

void fov_slider(CameraController& camera) {
    float fov = camera.fov();
    ImGui::SliderFloat("field of view", &fov, CameraController::kMinFov, CameraController::kMaxFov, "%.0f deg");
    if (fov != camera.fov()) camera.set_fov(fov);
}

Camera band_camera(const Camera& full, int y0, int rows) {
    Camera band = full;
    band.intrinsics.height = (uint32_t)rows;
    band.intrinsics.cy = full.intrinsics.cy - (float)y0;
    return band;
}

BandedPicture::BandedPicture() { blit_.mode = ViewMode::Prediction; }

void BandedPicture::start_pass(RenderSize size) {
    pass_size_ = size;
    next_row_ = 0;
    back().resize(size.width, size.height);
}

bool BandedPicture::upload_band(const Image& band, int y0) {
    rgba_.resize(band.pixel_count() * 4);
    to_rgba(band.pixels.data(), band.channels, band.pixel_count(), rgba_.data());
    back().upload_rows(rgba_.data(), y0, band.height);
    next_row_ = y0 + band.height;
    if (next_row_ < pass_size_.height) return false;
    front_index_ = 1 - front_index_;  // the finished pass is shown; the old front is the next back
    shown_size_ = pass_size_;
    next_row_ = 0;
    return true;
}

void BandedPicture::draw(const ViewRect& area, int framebuffer_width, int framebuffer_height) {
    const DisplayTexture& shown = front();
    if (shown.width() == 0) return;
    blit_.draw(shown, shown, /*linear=*/false, area, framebuffer_width, framebuffer_height);
}

} // namespace fusedngp
