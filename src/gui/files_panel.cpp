#include "gui/panels.h"

#include "gui/image_view.h"
#include "gui/training_session.h"
#include "gui/ui_state.h"

#include <GLFW/glfw3.h>
#include <imgui.h>

#include <cstring>
#include <iterator>

namespace fusedngp {

namespace {

struct Shortcut {
    const char* keys;
    const char* what;
};

const Shortcut kShortcuts[] = {
    {"Space", "start / pause training"}, {"N", "single step"},           {"R", "reset the model"},
    {"Ctrl+S", "save snapshot"},         {"Ctrl+L", "load snapshot"},     {"Ctrl+E", "export weights"},
    {"Ctrl+O", "open image"},            {"F12 / P", "screenshot"},       {"V", "cycle view mode"},
    {"F", "fit view (reset zoom)"},      {"F1 / H", "this help"},         {"drag / wheel", "pan / zoom"},
    {"drop a file", "open image or snapshot"},
};

// The SDF mode's 3-D view adds these.
const Shortcut kShortcuts3d[] = {
    {"left drag", "orbit"},        {"right / middle drag", "pan"}, {"wheel", "zoom"},
    {"W A S D / Q E", "fly (Shift: faster)"}, {"1 - 5", "shade, normals, depth, ao, cost"},
    {"[ / ]", "narrower / wider field of view"}, {"F / Home", "fit the mesh / reset the camera"},
};

// The NeRF mode's keys.
const Shortcut kShortcutsNerf[] = {
    {"Space", "start / pause training"},  {"N", "single step"},
    {"Ctrl+S", "save snapshot"},          {"Ctrl+L", "load snapshot"},
    {"Ctrl+E", "export weights"},         {"Ctrl+M", "extract mesh"},
    {"F12 / P", "screenshot"},             {"F1 / H", "this help"},
    {"left drag", "orbit"},                {"right / middle drag", "pan"},
    {"wheel", "zoom"},                     {"W A S D / Q E", "fly (Shift: faster)"},
    {"1 - 5", "colour / depth / occupancy grid / normals / cost"}, {", / .", "previous / next training view"},
    {"[ / ]", "narrower / wider field of view"}, {"F / Home", "fit the scene / reset the camera"},
};

const char* default_path(FileAction action) {
    switch (action) {
    case FileAction::SaveSnapshot: return "fusedngp.fusedngp";
    case FileAction::LoadSnapshot: return "fusedngp.fusedngp";
    case FileAction::ExportWeights: return "fusedngp_weights.safetensors";
    case FileAction::Screenshot: return "fusedngp_screenshot.png";
    case FileAction::OpenImage: return "";
    case FileAction::ExtractMesh: return "fusedngp_mesh.ply";
    case FileAction::None: break;
    }
    return "";
}

const char* title(FileAction action) {
    switch (action) {
    case FileAction::SaveSnapshot: return "Save snapshot";
    case FileAction::LoadSnapshot: return "Load snapshot";
    case FileAction::ExportWeights: return "Export weights (safetensors)";
    case FileAction::Screenshot: return "Save screenshot (PNG)";
    case FileAction::OpenImage: return "Open image";
    case FileAction::ExtractMesh: return "Extract mesh (.ply or .obj)";
    case FileAction::None: break;
    }
    return "";
}

void open_prompt(UiState& ui, FileAction action) {
    ui.prompt = action;
    ui.prompt_just_opened = true;
    std::strncpy(ui.prompt_path, default_path(action), sizeof(ui.prompt_path) - 1);
}

// `session` is null in the NeRF mode: `act` takes its actions but screenshots.
void perform(TrainingSession* session, UiState& ui, FileAction action, const std::string& path,
             const std::function<void(FileAction, const std::string&)>& act) {
    if (!session && action != FileAction::Screenshot) {
        if (act) act(action, path);
        return;
    }
    switch (action) {
    case FileAction::SaveSnapshot:
        if (run_reporting_errors(ui, "saving " + path, [&] { session->save_snapshot(path); })) ui.info("saved " + path);
        break;
    case FileAction::LoadSnapshot:
        if (run_reporting_errors(ui, "loading " + path, [&] { session->load_snapshot(path); })) ui.info("loaded " + path);
        break;
    case FileAction::ExportWeights:
        if (run_reporting_errors(ui, "exporting " + path, [&] { session->export_weights(path); })) ui.info("exported " + path);
        break;
    case FileAction::OpenImage:
        if (run_reporting_errors(ui, "opening " + path, [&] { session->load_image(path); })) ui.info("opened " + path);
        break;
    case FileAction::Screenshot:
        // Read back after this frame is drawn, without the prompt on it.
        ui.screenshot_after_frame = FileAction::Screenshot;
        ui.pending_screenshot_path = path;
        break;
    case FileAction::ExtractMesh:  // the SDF view extracts from its own panel
    case FileAction::None: break;
    }
}

} // namespace

void open_file_prompt(UiState& ui, FileAction action) { open_prompt(ui, action); }

void draw_files_panel(TrainingSession& session, UiState& ui) {
    (void)session;
    if (!ImGui::CollapsingHeader("Files", ImGuiTreeNodeFlags_DefaultOpen)) return;
    const float w = (ImGui::GetContentRegionAvail().x - ImGui::GetStyle().ItemSpacing.x) * 0.5f;
    if (ImGui::Button("Save snapshot", ImVec2(w, 0))) open_prompt(ui, FileAction::SaveSnapshot);
    ImGui::SameLine();
    if (ImGui::Button("Load snapshot", ImVec2(w, 0))) open_prompt(ui, FileAction::LoadSnapshot);
    if (ImGui::Button("Export weights", ImVec2(w, 0))) open_prompt(ui, FileAction::ExportWeights);
    ImGui::SameLine();
    if (ImGui::Button("Screenshot", ImVec2(w, 0))) open_prompt(ui, FileAction::Screenshot);
    if (ImGui::Button("Open image", ImVec2(w, 0))) open_prompt(ui, FileAction::OpenImage);
    ImGui::SameLine();
    if (ImGui::Button("Help (F1)", ImVec2(w, 0))) ui.show_help = !ui.show_help;
    ImGui::Checkbox("autosave snapshot on exit", &ui.autosave_on_exit);
    if (ImGui::Checkbox("vsync", &ui.vsync)) {
        // applied by the app loop
    }
}

void draw_file_prompt(TrainingSession* session, UiState& ui,
                      const std::function<void(FileAction, const std::string&)>& act) {
    if (ui.prompt == FileAction::None) return;
    if (ui.prompt_just_opened) {
        ImGui::OpenPopup("file");
        ui.prompt_just_opened = false;
    }
    if (!ImGui::BeginPopupModal("file", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
        ui.prompt = FileAction::None;
        return;
    }
    ImGui::TextUnformatted(title(ui.prompt));
    if (ImGui::IsWindowAppearing()) ImGui::SetKeyboardFocusHere();
    bool enter = ImGui::InputText("##path", ui.prompt_path, sizeof(ui.prompt_path), ImGuiInputTextFlags_EnterReturnsTrue);
    if (ImGui::Button("OK", ImVec2(90, 0)) || enter) {
        FileAction action = ui.prompt;
        ui.prompt = FileAction::None;
        ImGui::CloseCurrentPopup();
        if (ui.prompt_path[0] == '\0') ui.error("no file name given");
        else perform(session, ui, action, ui.prompt_path, act);
    }
    ImGui::SameLine();
    if (ImGui::Button("Cancel", ImVec2(90, 0)) || ImGui::IsKeyPressed(GLFW_KEY_ESCAPE)) {
        ui.prompt = FileAction::None;
        ImGui::CloseCurrentPopup();
    }
    ImGui::EndPopup();
}

void draw_help_window(UiState& ui) {
    if (!ui.show_help) return;
    ImGui::SetNextWindowPos(ImGui::GetMainViewport()->GetCenter(), ImGuiCond_Appearing, ImVec2(0.5f, 0.5f));
    if (ImGui::Begin("Keyboard shortcuts", &ui.show_help, ImGuiWindowFlags_AlwaysAutoResize)) {
        if (ImGui::BeginTable("keys", 2)) {
            auto rows = [](const Shortcut* first, const Shortcut* last) {
                for (const Shortcut* s = first; s != last; ++s) {
                    ImGui::TableNextRow();
                    ImGui::TableNextColumn();
                    ImGui::TextColored(ImVec4(0.45f, 0.75f, 1.0f, 1.0f), "%s", s->keys);
                    ImGui::TableNextColumn();
                    ImGui::TextUnformatted(s->what);
                }
            };
            if (ui.nerf) {
                rows(std::begin(kShortcutsNerf), std::end(kShortcutsNerf));
            } else {
                rows(std::begin(kShortcuts), std::end(kShortcuts));
                if (ui.view_3d) rows(std::begin(kShortcuts3d), std::end(kShortcuts3d));
            }
            ImGui::EndTable();
        }
    }
    ImGui::End();
}

void handle_shortcuts(TrainingSession& session, ImageView& view, UiState& ui) {
    const ImGuiIO& io = ImGui::GetIO();
    if (io.WantTextInput || ui.prompt != FileAction::None) return;
    auto pressed = [](int key) { return ImGui::IsKeyPressed(key, false); };
    if (io.KeyCtrl) {
        if (pressed(GLFW_KEY_S)) open_prompt(ui, FileAction::SaveSnapshot);
        if (pressed(GLFW_KEY_L)) open_prompt(ui, FileAction::LoadSnapshot);
        if (pressed(GLFW_KEY_E)) open_prompt(ui, FileAction::ExportWeights);
        if (pressed(GLFW_KEY_O)) open_prompt(ui, FileAction::OpenImage);
        return;
    }
    if (pressed(GLFW_KEY_SPACE)) session.running = !session.running;
    if (pressed(GLFW_KEY_N)) session.single_step();
    if (pressed(GLFW_KEY_R)) run_reporting_errors(ui, "reset", [&] { session.reset(); });
    if (pressed(GLFW_KEY_F12) || pressed(GLFW_KEY_P)) open_prompt(ui, FileAction::Screenshot);
    if (pressed(GLFW_KEY_V)) view.mode = (ViewMode)(((int)view.mode + 1) % 4);
    if (pressed(GLFW_KEY_F)) view.reset_view();
    if (pressed(GLFW_KEY_F1) || pressed(GLFW_KEY_H)) ui.show_help = !ui.show_help;
}

} // namespace fusedngp
