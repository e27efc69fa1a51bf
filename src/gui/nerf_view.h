// The NeRF mode's 3-D view: the radiance field being trained, seen from the
// interactive camera (render/camera_controller.h, shared with the SDF view).
// The session's worker renders it between training steps, a band of rows at
// a time; the view asks for passes and shows each once complete. The pass
// size follows AdaptiveResolution from the measured cost per pixel: small
// while the camera moves (one urgent pass of kMovingPassMs), then each
// finished pass of a resting camera asks for a larger one (up to
// kMaxRestingPasses budgets, never above the view's pixels), and the largest
// repeats while training goes on, so the picture refines when idle and
// follows training.
#pragma once

#include "gui/nerf_session.h"
#include "gui/view_3d.h"

#include <cstdint>

namespace fusedngp {

class NerfView {
public:
    explicit NerfView(const NerfAppScene& scene);

    // Camera input (view_3d.h) plus 1 - 5 for the render modes, , . for the
    // previous / next training view.
    void handle_input(const ViewRect& area, float dt_seconds);
    // Picks up finished bands and asks for the next pass.
    void update(NerfSession& session, const ViewRect& area);
    void draw(const ViewRect& area, int framebuffer_width, int framebuffer_height);
    // The worker reported an error (a pass it could not draw is dropped):
    // back to the colour mode, with a new pass.
    void worker_failed();
    // The training views as frusta, projected with the current camera (ImGui's background draw list).
    void draw_training_views(const ViewRect& area) const;
    // The crop box's edges, when it is on (the same draw list).
    void draw_crop_box(const ViewRect& area) const;

    // Looks from training view `index` (wraps around).
    void snap_to_training_view(int index);
    int training_view() const { return training_view_; }
    int training_view_count() const { return (int)scene_.train.frames.size(); }

    CameraController& camera() { return camera_; }
    NerfRenderMode mode = NerfRenderMode::Colour;
    bool show_frusta = true;
    // The crop box (model space): the views draw, and "Extract mesh" meshes,
    // only what lies inside it. Starts as the scene's box.
    bool crop_enabled = false;
    Box3 crop;
    Box3 active_crop() const { return crop_enabled ? crop : unbounded_box(); }
    const Box3& scene_box() const { return scene_box_; }
    int mesh_resolution = 256;  // "Extract mesh": cells per axis over the scene box (its cropped part)
    float mesh_density = 2.5f;  // and the iso value of sigma
    Vec3 background{0.07f, 0.075f, 0.08f};  // the app's clear colour: misses blend into the window
    RenderSize render_size() const { return picture_.shown_size(); }
    const AdaptiveResolution& resolution() const { return budget_; }
    int refinement() const { return level_; }
    double last_pass_ms() const { return last_pass_ms_; }
    // Passes shown so far: the picture's own frame rate, which a moving
    // camera's fps does not tell.
    uint64_t passes_shown() const { return passes_shown_; }

    static constexpr double kMovingPassMs = 40;
    static constexpr int kMaxRestingPasses = 64;

private:
    bool view_changed(const ViewRect& area, Vec3 shown_background);
    void request_pass(NerfSession& session, bool urgent);

    const NerfAppScene& scene_;
    Box3 scene_box_;  // nerf_scene_box: the crop box's limits
    CameraController camera_;
    BandedPicture picture_;
    AdaptiveResolution budget_{kMovingPassMs};
    uint64_t pass_ = 0, seen_camera_ = ~0ull, pass_step_ = 0;
    NerfRenderMode seen_mode_ = NerfRenderMode::Colour;
    Vec3 seen_background_{-1, -1, -1};
    Box3 seen_crop_;
    int seen_width_ = 0, seen_height_ = 0;
    int level_ = 0;  // refinement of a resting camera: passes of 4^level budgets
    bool pass_in_flight_ = false, pass_urgent_ = false;
    bool stale_ = false;  // the view changed while a small pass was in flight
    double pass_ms_ = 0, last_pass_ms_ = 0, pass_budget_ms_ = 0;
    uint64_t passes_shown_ = 0;
    int training_view_ = -1;
};

} // namespace fusedngp
