#include "gui/sdf_view.h"

#include "core/clock.h"
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

// Host path: a share of a ~33 ms frame on the UI thread (the worker trains
// on the other cores). Device path: the wall time of a render beside
// training. Most of a moving frame's render is a fixed wait for the GPU
// between its many small launches (~5 ms on the H200 while a 2^18 batch
// trains), so the moving budget below it keeps 60 fps at the smallest
// picture (AdaptiveResolution::kMinScale); a resting camera's picture,
// redrawn at 10 Hz, may take longer and renders much larger. Each has its
// own cost estimate: the fixed wait differs between the two.
constexpr double kHostBudgetMs = 10.0;
constexpr double kDeviceMovingMs = 4.0;
constexpr double kDeviceRestingMs = 10.0;
// A resting camera: after this many unchanged frames the view renders at the
// larger size whose pass spans kRestingPassFrames frames (host).
constexpr uint64_t kSettleFrames = 4;
constexpr double kRestingPassFrames = 12;
// A resting camera's picture changes only as training goes on: the device
// redraws it at this interval (10 Hz) and gives the frames between to training.
constexpr double kRestingRefreshMs = 100.0;
// The app's clear colour: misses blend into the window.
const Vec3 kBackground{0.07f, 0.075f, 0.08f};

SdfBatchFn display_field(TrainingSession& session) {
    return [&session](const Matrix<float>& points, Matrix<float>& values) { session.display_inference(points, values); };
}

} // namespace

SdfView::SdfView(SdfSceneInfo scene)
    : scene_(std::move(scene)), camera_(scene_.bounds), host_budget_(kHostBudgetMs), device_moving_(kDeviceMovingMs),
      device_resting_(kDeviceRestingMs) {
    settings.background = kBackground;
    if (scene_.truth) iou_probe_ = std::make_unique<SdfIouProbe>(scene_.truth);
}

void SdfView::handle_input(const ViewRect& area, float dt_seconds) {
    const ImGuiIO& io = ImGui::GetIO();
    if (!io.WantCaptureKeyboard && !io.WantTextInput) {
        for (int k = 0; k < 5; ++k)
            if (ImGui::IsKeyPressed(GLFW_KEY_1 + k, false)) mode = (SdfRenderMode)k;
    }
    handle_camera_input(camera_, scene_.bounds, area, dt_seconds);
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
        restart_pass_ = true;
    } else {
        ++frames_since_move_;
    }
    on_device_ = session.renders_on_device() && !picture_.front().cuda_interop_failed();
    if (on_device_) {
        const bool resting = !camera_moving();
        if (resting && shown_resting_ && ms_since(last_device_render_) < kRestingRefreshMs) return;
        AdaptiveResolution& budget = resting ? device_resting_ : device_moving_;
        const RenderSize size = budget.size(view_w, view_h);
        const DeviceRenderResult result =
            render_on_device(session, camera_.camera((uint32_t)size.width, (uint32_t)size.height), budget);
        if (result == DeviceRenderResult::Drawn) {
            shown_resting_ = resting;
            last_device_render_ = Clock::now();
        }
        if (result != DeviceRenderResult::Unavailable) return;  // NotReady: the last picture a frame longer
        on_device_ = false;
    }
    shown_resting_ = false;
    render_on_host(session, view_w, view_h);
}

DeviceRenderResult SdfView::render_on_device(TrainingSession& session, const Camera& camera,
                                             AdaptiveResolution& budget) {
    const int w = (int)camera.intrinsics.width, h = (int)camera.intrinsics.height;
    picture_.front().resize(w, h);
    float* rgba = static_cast<float*>(picture_.front().map_for_cuda());
    if (!rgba) return DeviceRenderResult::Unavailable;
    DeviceRenderResult result = DeviceRenderResult::Unavailable;
    double ms = 0;
    try {
        session.render_beside_training(
            [&](Backend& backend) { result = render_sdf_beside_training(backend, camera, mode, settings, rgba, ms); });
    } catch (...) {
        picture_.front().unmap();
        throw;
    }
    picture_.front().unmap();
    if (result != DeviceRenderResult::Drawn) return result;
    picture_.front().commit_pbo();
    budget.record((uint64_t)w * (uint64_t)h, ms);
    picture_.set_shown_size({w, h});
    return result;
}

void SdfView::render_on_host(TrainingSession& session, int view_w, int view_h) {
    const SdfBatchFn field = display_field(session);
    if (restart_pass_ || picture_.next_row() == 0) {
        // A new pass: moving, it fits one frame; resting, kRestingPassFrames.
        picture_.start_pass(host_budget_.size(view_w, view_h, camera_moving() ? 1 : kRestingPassFrames));
        restart_pass_ = false;
    }
    const RenderSize pass = picture_.pass_size();
    const Camera full = camera_.camera((uint32_t)pass.width, (uint32_t)pass.height);
    const auto start = Clock::now();
    do {
        // A budget's worth of rows at the measured cost; unmeasured, a few rows to measure it.
        const uint64_t affordable = host_budget_.pixels_per_budget();
        const int wanted = affordable ? (int)(affordable / (uint64_t)pass.width) : AdaptiveResolution::kMinRows;
        const int y0 = picture_.next_row(), rows = std::clamp(wanted, 1, pass.height - y0);
        const auto band_start = Clock::now();
        Image band = render_sdf(band_camera(full, y0, rows), field, mode, settings);
        host_budget_.record((uint64_t)rows * (uint64_t)pass.width, ms_since(band_start));
        if (picture_.upload_band(band, y0)) break;
    } while (ms_since(start) < host_budget_.budget_ms());
}

void SdfView::draw(const ViewRect& area, int fb_width, int fb_height) { picture_.draw(area, fb_width, fb_height); }

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
