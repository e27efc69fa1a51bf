#include "gui/panels.h"

#include "gui/sdf_view.h"
#include "gui/training_session.h"
#include "gui/ui_state.h"

#include <imgui.h>

#include <algorithm>
#include <string>

namespace fusedngp {

namespace {

void render_controls(SdfView& view) {
    int mode = (int)view.mode;
    const char* names[] = {"shade", "normals", "depth", "ao", "cost"};
    for (int k = 0; k < 5; ++k) {
        if (k) ImGui::SameLine();
        ImGui::RadioButton(names[k], &mode, k);
    }
    view.mode = (SdfRenderMode)mode;
    const RenderSize size = view.render_size();
    const AdaptiveResolution& cost = view.resolution();
    ImGui::TextDisabled("%s %d x %d (%.0f%% of the view), %.1f ms + %.3f us/pixel", view.on_device() ? "CUDA" : "CPU",
                        size.width, size.height, 100.0 * cost.scale(), cost.fixed_ms(), 1e3 * cost.ms_per_pixel());
}

void camera_controls(SdfView& view) {
    CameraController& c = view.camera();
    fov_slider(c);
    if (ImGui::Button("fit")) c.fit(view.scene().bounds);
    ImGui::SameLine();
    if (ImGui::Button("reset camera")) c.reset();
    ImGui::SameLine();
    ImGui::TextDisabled("yaw %.0f pitch %.0f dist %.2f", c.yaw(), c.pitch(), c.distance());
}

void iou_readout(const SdfView& view) {
    ImGui::Text("IoU %.4f", view.iou());
    if (ImGui::IsItemHovered()) {
        ImGui::SetTooltip("Intersection over union of the model's inside (value < 0) and the mesh's,\n"
                          "over %u fixed points uniform in the unit cube (ground truth computed once),\n"
                          "measured every second from the display model.",
                          SdfIouProbe::kDefaultPoints);
    }
    const auto& h = view.iou_history();
    if (!h.empty())
        ImGui::PlotLines("##iou", h.data(), (int)h.size(), 0, "IoU", 0.0f, 1.0f, ImVec2(ImGui::GetContentRegionAvail().x, 60));
}

void mesh_export(SdfView& view, TrainingSession& session, UiState& ui) {
    ImGui::InputInt("resolution", &view.mesh_resolution, 32, 128);
    view.mesh_resolution = std::clamp(view.mesh_resolution, 2, 1024);
    ImGui::InputText("mesh file", view.mesh_path, sizeof(view.mesh_path));
    if (ImGui::Button("Extract mesh")) {
        const std::string path = view.mesh_path;
        run_reporting_errors(ui, "extracting " + path, [&] {
            const size_t triangles = view.export_mesh(session, (uint32_t)view.mesh_resolution, path);
            ui.info("wrote " + path + " (" + std::to_string(triangles) + " triangles, input coordinates)");
        });
    }
}

} // namespace

void draw_sdf_panel(SdfView& view, TrainingSession& session, UiState& ui) {
    if (!ImGui::CollapsingHeader("3-D view", ImGuiTreeNodeFlags_DefaultOpen)) return;
    render_controls(view);
    camera_controls(view);
    iou_readout(view);
    if (ImGui::TreeNode("Extract mesh")) {
        mesh_export(view, session, ui);
        ImGui::TreePop();
    }
}

} // namespace fusedngp
