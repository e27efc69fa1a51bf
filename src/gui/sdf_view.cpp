#include "gui/sdf_view.h"

#include "gui/prediction_renderer.h"
#include "gui/sdf_device_render.h"
#include "gui/training_session.h"

#include <GLFW/glfw3.h>
#include <imgui.h>

#include <algorithm>
#include <chrono>

namespace fusedngp {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// Host path: a share of a ~33 ms frame on the UI thread (the worker trains
// on the other cores). Device path: the sphere tracing's share of a 60 fps
// frame; the rest of the GPU's time goes to training steps.
constexpr double kHostBudgetMs = 10.0;
constexpr double kDeviceBudgetMs = 3.0;
// A resting camera: after this many unchanged frames the view renders at the
// larger size whose pass spans kRestingPassFrames frames (host) or one (device).
constexpr uint64_t kSettleFrames = 4;
constexpr double kRestingPassFrames = 12;
constexpr double kDeviceRestingFrames = 2;  // the device may spend two budgets on a still frame
constexpr float kFovStepDegrees = 5.f;
constexpr float kMaxFlySeconds = 0.1f;  // a stalled frame (a rebuild, a mesh export) does not fling the camera
// The app's clear colour: misses blend into the window.
const Vec3 kBackground{0.07f, 0.075f, 0.08f};

// The camera of rows [y0, y0 + rows) of `full`: the same rays, a shifted principal point.
Camera band_camera(const Camera& full, int y0, int rows) {
    Camera band = full;
    band.intrinsics.height = (uint32_t)rows;
    band.intrinsics.cy = full.intrinsics.cy - (float)y0;
    return band;
}

SdfBatchFn display_field(TrainingSession& session) {
    return [&session](const Matrix<float>& points, Matrix<float>& values) { session.display_inference(points, values); };
}

} // namespace

SdfView::SdfView(SdfSceneInfo scene)
    : scene_(std::move(scene)), camera_(scene_.bounds), host_budget_(kHostBudgetMs), device_budget_(kDeviceBudgetMs) {
    blit_.mode = ViewMode::Prediction;
    settings.background = kBackground;
    if (scene_.truth) iou_probe_ = std::make_unique<SdfIouProbe>(scene_.truth);
}

void SdfView::handle_input(const ViewRect& area, float dt_seconds) {
    const ImGuiIO& io = ImGui::GetIO();
    if (!io.WantCaptureKeyboard && !io.WantTextInput) {
        auto pressed = [](int key) { return ImGui::IsKeyPressed(key, false); };
        auto down = [](int key) { return ImGui::IsKeyDown(key); };
        for (int k = 0; k < 5; ++k)
            if (pressed(GLFW_KEY_1 + k)) mode = (SdfRenderMode)k;
        if (!io.KeyCtrl) {
            FlyKeys keys;
            keys.forward = down(GLFW_KEY_W);
            keys.back = down(GLFW_KEY_S);
            keys.left = down(GLFW_KEY_A);
            keys.right = down(GLFW_KEY_D);
            keys.up = down(GLFW_KEY_E);
            keys.down = down(GLFW_KEY_Q);
            keys.fast = io.KeyShift;
            camera_.fly(keys, std::min(dt_seconds, kMaxFlySeconds));
            if (pressed(GLFW_KEY_LEFT_BRACKET)) camera_.set_fov(camera_.fov() - kFovStepDegrees);
            if (pressed(GLFW_KEY_RIGHT_BRACKET)) camera_.set_fov(camera_.fov() + kFovStepDegrees);
            if (pressed(GLFW_KEY_F)) camera_.fit(scene_.bounds, area.width / std::max(area.height, 1.f));
            if (pressed(GLFW_KEY_HOME)) camera_.reset();
        }
    }
    if (io.WantCaptureMouse) return;
    const float sx = io.DisplayFramebufferScale.x, sy = io.DisplayFramebufferScale.y;
    const float mx = io.MousePos.x * sx, my = io.MousePos.y * sy;
    if (mx < area.x || mx > area.x + area.width || my < area.y || my > area.y + area.height) return;
    const float dx = io.MouseDelta.x * sx, dy = io.MouseDelta.y * sy;
    if (ImGui::IsMouseDragging(ImGuiMouseButton_Left, 0.0f)) camera_.orbit(dx, dy);
    if (ImGui::IsMouseDragging(ImGuiMouseButton_Right, 0.0f) || ImGui::IsMouseDragging(ImGuiMouseButton_Middle, 0.0f))
        camera_.pan(dx, dy, area.height);
    if (io.MouseWheel != 0) camera_.zoom(io.MouseWheel);
}

bool SdfView::camera_moving() const { return frames_since_move_ < kSettleFrames; }

void SdfView::render(TrainingSession& session, const ViewRect& area) {
    const int view_w = std::max(1, (int)area.width), view_h = std::max(1, (int)area.height);
    if (camera_.version() != seen_camera_ || mode != seen_mode_ || view_w != seen_width_ || view_h != seen_height_) {
        seen_camera_ = camera_.version();
        seen_mode_ = mode;
        seen_width_ = view_w;
        seen_height_ = view_h;
        frames_since_move_ = 0;
        next_row_ = 0;  // the pass in flight shows an old view: start over
    } else {
        ++frames_since_move_;
    }
    on_device_ = session.renders_on_device() && !front().cuda_interop_failed();
    if (on_device_) {
        const RenderSize size = device_budget_.size(view_w, view_h, camera_moving() ? 1 : kDeviceRestingFrames);
        if (render_on_device(session, camera_.camera((uint32_t)size.width, (uint32_t)size.height))) return;
        on_device_ = false;
    }
    render_on_host(session, view_w, view_h);
}

bool SdfView::render_on_device(TrainingSession& session, const Camera& camera) {
    const int w = (int)camera.intrinsics.width, h = (int)camera.intrinsics.height;
    front().resize(w, h);
    float* rgba = static_cast<float*>(front().map_for_cuda());
    if (!rgba) return false;
    bool drawn = false;
    double ms = 0;
    try {
        session.render_on_device(
            [&](Backend& backend) { drawn = render_sdf_on_device(backend, camera, mode, settings, rgba, ms); });
    } catch (...) {
        front().unmap();
        throw;
    }
    front().unmap();
    if (!drawn) return false;
    front().commit_pbo();
    device_budget_.record((uint64_t)w * (uint64_t)h, ms);
    shown_size_ = {w, h};
    return true;
}

void SdfView::render_on_host(TrainingSession& session, int view_w, int view_h) {
    const SdfBatchFn field = display_field(session);
    if (next_row_ == 0) {
        // A new pass: moving, it fits one frame; resting, kRestingPassFrames.
        pass_size_ = host_budget_.size(view_w, view_h, camera_moving() ? 1 : kRestingPassFrames);
        back().resize(pass_size_.width, pass_size_.height);
    }
    const Camera full = camera_.camera((uint32_t)pass_size_.width, (uint32_t)pass_size_.height);
    const auto start = Clock::now();
    do {
        // A budget's worth of rows at the measured cost; unmeasured, a few rows to measure it.
        const uint64_t affordable = host_budget_.pixels_per_budget();
        const int wanted = affordable ? (int)(affordable / (uint64_t)pass_size_.width) : AdaptiveResolution::kMinRows;
        const int rows = std::clamp(wanted, 1, pass_size_.height - next_row_);
        const auto band_start = Clock::now();
        Image band = render_sdf(band_camera(full, next_row_, rows), field, mode, settings);
        host_budget_.record((uint64_t)rows * (uint64_t)pass_size_.width, ms_since(band_start));
        rgba_.resize(band.pixel_count() * 4);
        to_rgba(band.pixels.data(), band.channels, band.pixel_count(), rgba_.data());
        back().upload_rows(rgba_.data(), next_row_, rows);
        next_row_ += rows;
        if (next_row_ >= pass_size_.height) {
            front_index_ = 1 - front_index_;  // the finished pass is shown; the old front is the next back
            shown_size_ = pass_size_;
            next_row_ = 0;
            break;
        }
    } while (ms_since(start) < host_budget_.budget_ms());
}

void SdfView::draw(const ViewRect& area, int fb_width, int fb_height) {
    const DisplayTexture& shown = front();
    if (shown.width() == 0) return;
    // Rendered at the view's aspect: the blit's fit fills the area, upscaled.
    blit_.draw(shown, shown, /*linear=*/false, area, fb_width, fb_height);
}

double SdfView::measure_iou(TrainingSession& session) {
    if (!iou_probe_) return 0;
    const double value = iou_probe_->measure(display_field(session));
    if (iou_history_.size() >= 2000) iou_history_.erase(iou_history_.begin(), iou_history_.begin() + 1000);
    iou_history_.push_back((float)value);
    return value;
}

size_t SdfView::export_mesh(TrainingSession& session, uint32_t resolution, const std::string& path) {
    IsosurfaceSettings iso;
    iso.resolution = resolution;  // the extractors check the range
    TriangleMesh mesh;
    bool extracted = false;
    if (session.renders_on_device())
        session.render_on_device([&](Backend& backend) { extracted = extract_isosurface_on_device(backend, iso, mesh); });
    if (!extracted) mesh = extract_isosurface(display_field(session), iso);
    return save_in_input_coordinates(std::move(mesh), scene_.transform, path);
}

} // namespace fusedngp
