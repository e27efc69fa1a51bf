#include "gui/panels.h"

#include "gui/image_view.h"
#include "gui/ui_state.h"

#include <imgui.h>

#include <algorithm>

namespace fusedngp {

void draw_view_panel(ImageView& view, UiState& ui) {
    if (!ImGui::CollapsingHeader("View", ImGuiTreeNodeFlags_DefaultOpen)) return;
    int mode = (int)view.mode;
    ImGui::RadioButton("side by side", &mode, (int)ViewMode::SideBySide);
    ImGui::SameLine();
    ImGui::RadioButton("prediction", &mode, (int)ViewMode::Prediction);
    ImGui::RadioButton("ground truth", &mode, (int)ViewMode::GroundTruth);
    ImGui::SameLine();
    ImGui::RadioButton("error", &mode, (int)ViewMode::Error);
    view.mode = (ViewMode)mode;
    if (view.mode == ViewMode::Error) ImGui::SliderFloat("error gain", &view.error_gain, 1.0f, 64.0f, "%.0fx");
    ImGui::Text("zoom %.2fx", view.zoom());
    ImGui::SameLine();
    if (ImGui::SmallButton("fit")) view.reset_view();
    ImGui::Combo("render at", &ui.render_resolution, "image resolution\0display resolution\0custom\0");
    if (ui.render_resolution == 2) {
        ImGui::InputInt("width", &ui.custom_width);
        ImGui::InputInt("height", &ui.custom_height);
        ui.custom_width = std::clamp(ui.custom_width, 16, 8192);
        ui.custom_height = std::clamp(ui.custom_height, 16, 8192);
    }
}

} // namespace fusedngp
