// The NeRF mode's side panel (nerf_panel.cpp).
#pragma once

namespace fusedngp {

class NerfSession;
class NerfView;
struct UiState;

// Training controls and readouts, the live test PSNR, the 3-D view's
// render mode, background, camera and training views; files: snapshots,
// weights, a mesh, screenshots.
void draw_nerf_panel(NerfView& view, NerfSession& session, UiState& ui);
// Space, N, Ctrl+S / L / E / M and F12 / P / F1 / H, unless a text field has the keyboard.
void handle_nerf_shortcuts(NerfSession& session, UiState& ui);

} // namespace fusedngp
