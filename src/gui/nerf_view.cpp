#include "gui/nerf_view.h"

#include <GLFW/glfw3.h>
#include <imgui.h>

#include <algorithm>

namespace fusedngp {

namespace {

// The frusta's depth, in unit-cube units (the scene is about one unit across).
constexpr float kFrustumDepth = 0.12f;
// A pass whose measured cost exceeds its budget this many times is asked again, smaller.
constexpr double kOverrunFactor = 4;

bool same(Vec3 a, Vec3 b) { return a.x == b.x && a.y == b.y && a.z == b.z; }
bool same(const Box3& a, const Box3& b) { return same(a.lo, b.lo) && same(a.hi, b.hi); }

// `p` in view pixels of `camera` (framebuffer units offset by the area); false behind the camera.
bool project(const Camera& camera, Vec3 p, const ViewRect& area, ImVec2& out) {
    const Vec3 d = p - camera.pose.position;
    const float z = dot(d, camera.pose.forward);
    if (z < 1e-3f) return false;
    const CameraIntrinsics& k = camera.intrinsics;
    const float x = k.cx + k.fx * dot(d, camera.pose.right) / z, y = k.cy - k.fy * dot(d, camera.pose.up) / z;
    const ImVec2 scale = ImGui::GetIO().DisplayFramebufferScale;
    out = ImVec2((area.x + x) / scale.x, (area.y + y) / scale.y);
    return true;
}

} // namespace

NerfView::NerfView(const NerfAppScene& scene)
    : crop(nerf_scene_box(scene.train)), scene_(scene), scene_box_(nerf_scene_box(scene.train)), camera_(scene.bounds) {}

void NerfView::handle_input(const ViewRect& area, float dt_seconds) {
    const ImGuiIO& io = ImGui::GetIO();
    if (!io.WantCaptureKeyboard && !io.WantTextInput && !io.KeyCtrl) {
        if (ImGui::IsKeyPressed(GLFW_KEY_1, false)) mode = NerfRenderMode::Colour;
        if (ImGui::IsKeyPressed(GLFW_KEY_2, false)) mode = NerfRenderMode::Depth;
        if (ImGui::IsKeyPressed(GLFW_KEY_3, false)) mode = NerfRenderMode::Occupancy;
        if (ImGui::IsKeyPressed(GLFW_KEY_4, false)) mode = NerfRenderMode::Normals;
        if (ImGui::IsKeyPressed(GLFW_KEY_5, false)) mode = NerfRenderMode::Cost;
        if (ImGui::IsKeyPressed(GLFW_KEY_COMMA)) snap_to_training_view(training_view_ - 1);
        if (ImGui::IsKeyPressed(GLFW_KEY_PERIOD)) snap_to_training_view(training_view_ + 1);
    }
    handle_camera_input(camera_, scene_.bounds, area, dt_seconds);
}

void NerfView::snap_to_training_view(int index) {
    const int n = training_view_count();
    if (n == 0) return;
    training_view_ = ((index % n) + n) % n;
    const Camera& c = scene_.train.frames[(size_t)training_view_].camera;
    camera_.look_from(c.pose, fov_y_degrees(c.intrinsics));
}

bool NerfView::view_changed(const ViewRect& area, Vec3 shown_background) {
    const int w = std::max(1, (int)area.width), h = std::max(1, (int)area.height);
    const bool changed = camera_.version() != seen_camera_ || mode != seen_mode_ || w != seen_width_ ||
                         h != seen_height_ || !same(shown_background, seen_background_) ||
                         !same(active_crop(), seen_crop_);
    seen_camera_ = camera_.version();
    seen_mode_ = mode;
    seen_width_ = w;
    seen_height_ = h;
    seen_background_ = shown_background;
    seen_crop_ = active_crop();
    return changed;
}

void NerfView::request_pass(NerfSession& session, bool urgent) {
    const double passes = urgent ? 1.0 : (double)std::min(kMaxRestingPasses, 1 << (2 * level_));
    // Until a band measured the cost, the smallest size: an untrained field
    // costs ~1000 samples a ray on the CPU, and a guess could take seconds.
    const RenderSize size = budget_.ms_per_pixel() > 0
                                ? budget_.size(seen_width_, seen_height_, passes)
                                : RenderSize{std::max(1, (int)((float)seen_width_ * AdaptiveResolution::kMinScale)),
                                             std::max(1, (int)((float)seen_height_ * AdaptiveResolution::kMinScale))};
    pass_budget_ms_ = passes * budget_.budget_ms();
    NerfRenderRequest request;
    request.pass = ++pass_;
    request.camera = camera_.camera((uint32_t)size.width, (uint32_t)size.height);
    request.mode = mode;
    request.crop = active_crop();
    request.urgent = urgent;
    session.request_render(request);
    picture_.start_pass(size);
    pass_in_flight_ = true;
    pass_urgent_ = urgent;
    stale_ = false;
    pass_ms_ = 0;
    pass_step_ = session.step();
}

void NerfView::update(NerfSession& session, const ViewRect& area) {
    for (const NerfBand& band : session.take_bands()) {
        if (band.pass != pass_) continue;
        budget_.record((uint64_t)band.pixels.pixel_count(), band.ms);
        pass_ms_ += band.ms;
        if (picture_.upload_band(band.pixels, band.y0)) {
            pass_in_flight_ = false;
            last_pass_ms_ = pass_ms_;
            ++passes_shown_;
        }
    }
    if (view_changed(area, background)) {
        session.set_background(background);
        level_ = 0;
        // A drag changes the camera every frame: replacing a small pass each
        // time would never let one finish. It finishes, then the view follows.
        stale_ = pass_in_flight_ && pass_urgent_;
        if (!stale_) request_pass(session, /*urgent=*/true);
        return;
    }
    if (pass_in_flight_) {
        // The field got costlier than the pass was sized for (the start of
        // training, a denser grid): ask again at the measured cost.
        const RenderSize pass = picture_.pass_size();
        const double pixels = (double)pass.width * pass.height;
        if (budget_.ms_per_pixel() * pixels > kOverrunFactor * pass_budget_ms_) {
            const RenderSize smaller = budget_.size(seen_width_, seen_height_, 1);
            if ((double)smaller.width * smaller.height < 0.5 * pixels) {
                level_ = 0;
                request_pass(session, true);
            }
        }
        return;
    }
    if (stale_) {
        request_pass(session, /*urgent=*/true);
        return;
    }
    const bool larger = (1 << (2 * level_)) < kMaxRestingPasses &&
                        (picture_.shown_size().width < seen_width_ || picture_.shown_size().height < seen_height_);
    if (larger) {
        ++level_;
        request_pass(session, false);
    } else if (session.step() != pass_step_) {
        request_pass(session, false);  // the same size again: training moved on
    }
}

void NerfView::worker_failed() {
    mode = NerfRenderMode::Colour;
    pass_in_flight_ = false;
    seen_camera_ = ~0ull;
}

void NerfView::draw(const ViewRect& area, int framebuffer_width, int framebuffer_height) {
    picture_.draw(area, framebuffer_width, framebuffer_height);
}

void NerfView::draw_training_views(const ViewRect& area) const {
    if (!show_frusta) return;
    const Camera view = camera_.camera((uint32_t)std::max(1.f, area.width), (uint32_t)std::max(1.f, area.height));
    ImDrawList* lines = ImGui::GetBackgroundDrawList();
    const ImVec2 scale = ImGui::GetIO().DisplayFramebufferScale;
    lines->PushClipRect(ImVec2(area.x / scale.x, area.y / scale.y),
                        ImVec2((area.x + area.width) / scale.x, (area.y + area.height) / scale.y));
    for (size_t i = 0; i < scene_.train.frames.size(); ++i) {
        const Camera& c = scene_.train.frames[i].camera;
        const CameraIntrinsics& k = c.intrinsics;
        const float u[4] = {0, (float)k.width, (float)k.width, 0}, v[4] = {0, 0, (float)k.height, (float)k.height};
        Vec3 corner[4];
        for (int j = 0; j < 4; ++j) {
            const Vec3 d = c.pose.forward + c.pose.right * ((u[j] - k.cx) / k.fx) - c.pose.up * ((v[j] - k.cy) / k.fy);
            corner[j] = c.pose.position + d * kFrustumDepth;
        }
        const ImU32 colour = (int)i == training_view_ ? IM_COL32(255, 200, 60, 255) : IM_COL32(120, 180, 255, 160);
        ImVec2 apex, a, b;
        const bool apex_visible = project(view, c.pose.position, area, apex);
        for (int j = 0; j < 4; ++j) {
            const bool a_visible = project(view, corner[j], area, a);
            if (a_visible && apex_visible) lines->AddLine(apex, a, colour);
            if (a_visible && project(view, corner[(j + 1) % 4], area, b)) lines->AddLine(a, b, colour);
        }
    }
    lines->PopClipRect();
}

void NerfView::draw_crop_box(const ViewRect& area) const {
    if (!crop_enabled || crop.empty()) return;
    const Camera view = camera_.camera((uint32_t)std::max(1.f, area.width), (uint32_t)std::max(1.f, area.height));
    ImDrawList* lines = ImGui::GetBackgroundDrawList();
    const ImVec2 scale = ImGui::GetIO().DisplayFramebufferScale;
    lines->PushClipRect(ImVec2(area.x / scale.x, area.y / scale.y),
                        ImVec2((area.x + area.width) / scale.x, (area.y + area.height) / scale.y));
    // Corner i has x from bit 0, y from bit 1, z from bit 2; an edge joins
    // corners that differ in one bit.
    auto corner = [&](int i) {
        return Vec3{(i & 1) ? crop.hi.x : crop.lo.x, (i & 2) ? crop.hi.y : crop.lo.y, (i & 4) ? crop.hi.z : crop.lo.z};
    };
    for (int i = 0; i < 8; ++i) {
        for (int bit = 1; bit < 8; bit <<= 1) {
            if (i & bit) continue;
            ImVec2 a, b;
            if (project(view, corner(i), area, a) && project(view, corner(i | bit), area, b))
                lines->AddLine(a, b, IM_COL32(255, 120, 60, 220), 1.5f);
        }
    }
    lines->PopClipRect();
}

} // namespace fusedngp
