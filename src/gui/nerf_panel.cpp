// The NeRF mode's side panel: training (start/pause/step, learning rate),
// its readouts (steps, loss, steps/s, rays and samples per step, test PSNR
// plotted live, occupied share of the grid), the networks (kernel, width and
// depth of both, changed live) and the 3-D view (render mode,
// background, camera, training views, screenshot).
#include "gui/nerf_panel.h"

#include "gui/nerf_session.h"
#include "gui/nerf_view.h"
#include "gui/panels.h"
#include "gui/view_3d.h"
#include "gui/ui_state.h"

#include <GLFW/glfw3.h>
#include <imgui.h>

#include <algorithm>
#include <cfloat>
#include <vector>

namespace fusedngp {

namespace {

void request(NerfSession& session, UiState& ui, const std::string& key, const json& value) {
    run_reporting_errors(ui, "setting " + key, [&] { session.request_change({key, value}); });
}

// The rate goes through request_change, so a later network change keeps it.
void training_controls(NerfSession& session, UiState& ui) {
    bool running = session.running;
    if (ImGui::Button(running ? "Pause (Space)" : "Train (Space)")) session.running = !running;
    ImGui::SameLine();
    if (ImGui::Button("Step (N)")) session.single_step();
    float lr = (float)session.learning_rate();
    if (ImGui::InputFloat("learning rate", &lr, 0, 0, "%.2e", ImGuiInputTextFlags_EnterReturnsTrue))
        request(session, ui, "optimizer.learning_rate", lr);
}

void training_readouts(const NerfSession& session) {
    if (session.step() == 0) {
        ImGui::Text("step 0: the first step is running");
    } else {
        ImGui::Text("step %llu  loss %.5f", (unsigned long long)session.step(), session.last_loss());
    }
    ImGui::Text("%.1f steps/s  %u rays, %zu samples per step", session.steps_per_second(), session.rays_per_step(),
                session.samples_per_step());
    ImGui::Text("%zu params, %.1f s of training", session.n_params(), session.train_seconds());
    plot_log_loss(session.loss_history(), 50);
}

void psnr_readout(const NerfSession& session) {
    const auto& h = session.psnr_history();
    if (h.empty()) {
        ImGui::TextDisabled("%s PSNR: not measured yet", session.scene().eval_split.c_str());
    } else {
        ImGui::Text("%s PSNR %.2f dB at step %llu", session.scene().eval_split.c_str(), h.back().psnr,
                    (unsigned long long)h.back().step);
    }
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("Mean PSNR over %zu %s views at %ux%u, measured on the training thread every %.0f s\n"
                          "of training, or less often so that it takes at most a fifth of the training time\n"
                          "(not counted as training time), on the current background.",
                          session.scene().eval.frames.size(), session.scene().eval_split.c_str(),
                          session.scene().eval.images.width, session.scene().eval.images.height,
                          NerfSession::kPsnrEverySeconds);
    if (h.size() >= 2) {
        std::vector<float> values;
        for (const auto& p : h) values.push_back((float)p.psnr);
        ImGui::PlotLines("##psnr", values.data(), (int)values.size(), 0, "PSNR dB", FLT_MAX, FLT_MAX,
                         ImVec2(ImGui::GetContentRegionAvail().x, 50));
    }
    ImGui::Text("occupancy grid: %.1f%% of cells occupied", 100.0 * session.occupancy_fraction());
}

// Applies on release: a rebuild per drag pixel would restart the trainer each frame.
void network_int(NerfSession& session, UiState& ui, const char* label, const std::string& key, int lo, int hi) {
    const json current = config_value(session.config(), key);
    int value = current.is_number_integer() ? current.get<int>() : lo;
    ImGui::SliderInt(label, &value, lo, hi, "%d", ImGuiSliderFlags_AlwaysClamp);
    if (ImGui::IsItemDeactivatedAfterEdit()) request(session, ui, key, value);
}

// Width and depth of both networks and the kernel that runs them; each
// change carries the learned weights (the panel's info line says how many).
void network_controls(NerfSession& session, UiState& ui) {
    const json otype = config_value(session.config(), "network.otype");
    const std::string kernel = session.backend_name() == "cpu" ? "CPU" : (otype.is_string() ? otype.get<std::string>() : "");
    if (ImGui::BeginCombo("kernel", kernel.c_str())) {
        for (const char* name : {"FullyFusedMLP", "CublasMLP", "CPU"}) {
            const bool selected = kernel == name;
            if (ImGui::Selectable(name, selected) && !selected) {
                // Both networks: the CPU entry moves the whole trainer.
                request(session, ui, "network.otype", name);
                if (std::string(name) != "CPU") request(session, ui, "rgb_network.otype", name);
            }
        }
        ImGui::EndCombo();
    }
    network_int(session, ui, "density width", "network.n_neurons", 16, 256);
    network_int(session, ui, "density layers", "network.n_hidden_layers", 1, 8);
    network_int(session, ui, "colour width", "rgb_network.n_neurons", 16, 256);
    network_int(session, ui, "colour layers", "rgb_network.n_hidden_layers", 1, 8);
}

void render_controls(NerfView& view) {
    int mode = (int)view.mode;
    ImGui::RadioButton("colour (1)", &mode, (int)NerfRenderMode::Colour);
    ImGui::SameLine();
    ImGui::RadioButton("depth (2)", &mode, (int)NerfRenderMode::Depth);
    ImGui::SameLine();
    ImGui::RadioButton("occupancy (3)", &mode, (int)NerfRenderMode::Occupancy);
    ImGui::SameLine();
    ImGui::RadioButton("normals (4)", &mode, (int)NerfRenderMode::Normals);
    ImGui::SameLine();
    ImGui::RadioButton("cost (5)", &mode, (int)NerfRenderMode::Cost);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("Samples the march places on each ray through the occupied cells, log scale:\n"
                          "dark blue few, pale yellow the most a ray may take.");
    view.mode = (NerfRenderMode)mode;
    float bg[3] = {view.background.x, view.background.y, view.background.z};
    if (ImGui::ColorEdit3("background", bg)) view.background = {bg[0], bg[1], bg[2]};
    const RenderSize size = view.render_size();
    ImGui::TextDisabled("render %dx%d, level %d, pass %.0f ms, %.0f us/px", size.width, size.height,
                        view.refinement(), view.last_pass_ms(), 1e3 * view.resolution().ms_per_pixel());
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("Rendered by the training thread between steps, a band of rows at a time, and shown\n"
                          "upscaled once complete: small while the camera moves, larger each pass while it\n"
                          "rests (level 0..3), then again at that size as training goes on.");
}

void camera_controls(NerfView& view) {
    CameraController& c = view.camera();
    fov_slider(c);
    if (ImGui::Button("reset camera")) c.reset();
    ImGui::SameLine();
    if (ImGui::Button("< (,)")) view.snap_to_training_view(view.training_view() - 1);
    ImGui::SameLine();
    if (ImGui::Button("snap to training view")) view.snap_to_training_view(std::max(view.training_view(), 0));
    ImGui::SameLine();
    if (ImGui::Button("(.) >")) view.snap_to_training_view(view.training_view() + 1);
    if (view.training_view() >= 0) {
        ImGui::TextDisabled("training view %d of %d", view.training_view() + 1, view.training_view_count());
    }
    ImGui::Checkbox("show training views", &view.show_frusta);
}

// The crop box, one range per axis within the scene's box.
void crop_controls(NerfView& view) {
    ImGui::Checkbox("crop box", &view.crop_enabled);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("Draw, and extract meshes of, only what lies inside the box (model space: the unit\n"
                          "cube holds the object). Training and the PSNR see the whole scene.");
    if (!view.crop_enabled) return;
    const char* labels[3] = {"crop x", "crop y", "crop z"};
    const Box3& limits = view.scene_box();
    for (int a = 0; a < 3; ++a) {
        float lo = view.crop.lo[a], hi = view.crop.hi[a];
        const float speed = 0.002f * (limits.hi[a] - limits.lo[a]);
        if (ImGui::DragFloatRange2(labels[a], &lo, &hi, speed, limits.lo[a], limits.hi[a], "%.3f", "%.3f",
                                   ImGuiSliderFlags_AlwaysClamp)) {
            view.crop.lo[a] = lo;
            view.crop.hi[a] = std::max(hi, lo);
        }
    }
    if (ImGui::Button("reset crop box")) view.crop = limits;
}

// Snapshots, weights and meshes are written by the worker (NerfSession's
// file jobs, in the command line's formats); the prompt's path goes there
// (nerf_app.cpp).
void file_controls(NerfView& view, UiState& ui) {
    const float w = (ImGui::GetContentRegionAvail().x - ImGui::GetStyle().ItemSpacing.x) * 0.5f;
    if (ImGui::Button("Save snapshot", ImVec2(w, 0))) open_file_prompt(ui, FileAction::SaveSnapshot);
    ImGui::SameLine();
    if (ImGui::Button("Load snapshot", ImVec2(w, 0))) open_file_prompt(ui, FileAction::LoadSnapshot);
    if (ImGui::Button("Export weights", ImVec2(w, 0))) open_file_prompt(ui, FileAction::ExportWeights);
    ImGui::SameLine();
    if (ImGui::Button("Extract mesh", ImVec2(w, 0))) open_file_prompt(ui, FileAction::ExtractMesh);
    ImGui::SetNextItemWidth(w);
    ImGui::InputInt("mesh resolution", &view.mesh_resolution, 32, 128);
    view.mesh_resolution = std::clamp(view.mesh_resolution, 2, 1024);
    ImGui::SetNextItemWidth(w);
    ImGui::InputFloat("mesh density", &view.mesh_density, 0.5f, 5.f, "%.2f");
    view.mesh_density = std::clamp(view.mesh_density, 1e-3f, 1e6f);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("The surface is where sigma crosses this value (instant-ngp: 2.5).");
    if (ImGui::Button("Screenshot (F12)", ImVec2(w, 0))) open_file_prompt(ui, FileAction::Screenshot);
    ImGui::SameLine();
    if (ImGui::Button("Help (F1)", ImVec2(w, 0))) ui.show_help = !ui.show_help;
    ImGui::Checkbox("vsync", &ui.vsync);
}

} // namespace

void draw_nerf_panel(NerfView& view, NerfSession& session, UiState& ui) {
    if (ImGui::CollapsingHeader("Training", ImGuiTreeNodeFlags_DefaultOpen)) {
        training_controls(session, ui);
        training_readouts(session);
        psnr_readout(session);
    }
    if (ImGui::CollapsingHeader("Networks", ImGuiTreeNodeFlags_DefaultOpen)) network_controls(session, ui);
    if (ImGui::CollapsingHeader("3-D view", ImGuiTreeNodeFlags_DefaultOpen)) {
        render_controls(view);
        camera_controls(view);
        crop_controls(view);
    }
    if (ImGui::CollapsingHeader("Files", ImGuiTreeNodeFlags_DefaultOpen)) file_controls(view, ui);
}

void handle_nerf_shortcuts(NerfSession& session, UiState& ui) {
    const ImGuiIO& io = ImGui::GetIO();
    if (io.WantTextInput || ui.prompt != FileAction::None) return;
    auto pressed = [](int key) { return ImGui::IsKeyPressed(key, false); };
    if (io.KeyCtrl) {
        if (pressed(GLFW_KEY_S)) open_file_prompt(ui, FileAction::SaveSnapshot);
        if (pressed(GLFW_KEY_L)) open_file_prompt(ui, FileAction::LoadSnapshot);
        if (pressed(GLFW_KEY_E)) open_file_prompt(ui, FileAction::ExportWeights);
        if (pressed(GLFW_KEY_M)) open_file_prompt(ui, FileAction::ExtractMesh);
        return;
    }
    if (pressed(GLFW_KEY_SPACE)) session.running = !session.running;
    if (pressed(GLFW_KEY_N)) session.single_step();
    if (pressed(GLFW_KEY_F12) || pressed(GLFW_KEY_P)) open_file_prompt(ui, FileAction::Screenshot);
    if (pressed(GLFW_KEY_F1) || pressed(GLFW_KEY_H)) ui.show_help = !ui.show_help;
}

} // namespace fusedngp
