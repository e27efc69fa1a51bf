// The SDF mode's 3-D view: the model being trained, sphere traced from an
// interactive camera (render/camera_controller.h, the unit NeRF reuses).
//
// CUDA backend: gpu::DeviceSdfRenderer writes the whole frame into the
// display texture's mapped PBO (CUDA–GL interop, as the image mode does)
// from the backend's display copy, on a stream of its own while training
// goes on (TrainingSession::render_beside_training).
// CPU backend: render_sdf through the session's display parameter snapshot,
// a band of rows at a time under a per-frame time budget, into a back
// texture shown once its pass is complete. Both paths pick the render size
// with AdaptiveResolution: small while the camera moves, larger when it
// rests, never more than the view's pixels; the picture is shown upscaled.
// A resting camera's device picture is redrawn at 10 Hz, the frames between
// showing the last one.
#pragma once

#include "gui/sdf_device_render.h"
#include "gui/sdf_iou_probe.h"
#include "gui/sdf_setup.h"
#include "gui/view_3d.h"
#include "render/adaptive_resolution.h"
#include "render/camera_controller.h"
#include "render/sdf_render.h"

#include <chrono>
#include <memory>
#include <vector>

namespace fusedngp {

class TrainingSession;

class SdfView {
public:
    explicit SdfView(SdfSceneInfo scene);

    // Mouse and keys over `area` (framebuffer pixels), unless the UI has them:
    // left drag orbit, right/middle drag pan, wheel zoom, WASD/QE fly, 1-5
    // render modes, [ ] field of view, F fit, Home reset.
    void handle_input(const ViewRect& area, float dt_seconds);
    // Renders the current model for this frame (device or host path).
    void render(TrainingSession& session, const ViewRect& area);
    void draw(const ViewRect& area, int framebuffer_width, int framebuffer_height);

    // The live IoU (sdf_iou_probe.h) through the display model, kept in iou_history().
    double measure_iou(TrainingSession& session);
    // Marching cubes of the model into `path`, in the input mesh's coordinates.
    size_t export_mesh(TrainingSession& session, uint32_t resolution, const std::string& path);

    CameraController& camera() { return camera_; }
    const SdfSceneInfo& scene() const { return scene_; }
    SdfRenderMode mode = SdfRenderMode::Shade;
    SphereTraceSettings settings;
    double iou() const { return iou_history_.empty() ? 0.0 : iou_history_.back(); }
    const std::vector<float>& iou_history() const { return iou_history_; }
    RenderSize render_size() const { return picture_.shown_size(); }
    bool on_device() const { return on_device_; }
    // The cost estimate of the picture shown.
    const AdaptiveResolution& resolution() const {
        return on_device_ ? (shown_resting_ ? device_resting_ : device_moving_) : host_budget_;
    }

    // Export settings, edited by the panel.
    int mesh_resolution = 256;
    char mesh_path[1024] = "fusedngp_mesh.ply";

private:
    DeviceRenderResult render_on_device(TrainingSession& session, const Camera& camera, AdaptiveResolution& budget);
    void render_on_host(TrainingSession& session, int view_width, int view_height);
    bool camera_moving() const;

    SdfSceneInfo scene_;
    CameraController camera_;
    BandedPicture picture_;          // the host path's bands; the device path writes its front whole
    AdaptiveResolution host_budget_, device_moving_, device_resting_;
    std::unique_ptr<SdfIouProbe> iou_probe_;
    std::vector<float> iou_history_;
    bool restart_pass_ = true;       // the pass in flight shows an old view
    uint64_t seen_camera_ = ~0ull, frames_since_move_ = 0;
    SdfRenderMode seen_mode_ = SdfRenderMode::Shade;
    int seen_width_ = 0, seen_height_ = 0;
    bool on_device_ = false;
    bool shown_resting_ = false;     // the device picture shown was drawn with the camera resting
    std::chrono::steady_clock::time_point last_device_render_;
};

} // namespace fusedngp
