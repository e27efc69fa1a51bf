#include "gui/panels.h"

#include "gui/training_session.h"
#include "gui/ui_state.h"

#include <imgui.h>

#include <cmath>
#include <string>
#include <vector>

namespace fusedngp {

namespace {

void apply(TrainingSession& session, UiState& ui, const std::string& key, const json& value, uint64_t frame) {
    run_reporting_errors(ui, "setting " + key, [&] {
        session.apply({key, value}, frame);
        ui.info("applied " + key + " = " + value_text(value) + "; " + function_kept_text(session.changes().back()));
    });
}

// A combo over fixed names; returns the chosen one when it changed.
bool choice(const char* label, const std::vector<const char*>& names, const std::string& current, std::string& chosen) {
    bool changed = false;
    if (ImGui::BeginCombo(label, current.c_str())) {
        for (const char* name : names) {
            bool selected = equals_ignore_case(current, name);
            if (ImGui::Selectable(name, selected) && !selected) {
                chosen = name;
                changed = true;
            }
        }
        ImGui::EndCombo();
    }
    return changed;
}

// An integer slider that applies on release (a rebuild per drag pixel would stall the UI).
void int_field(TrainingSession& session, UiState& ui, uint64_t frame, const char* label, const std::string& key,
               int fallback, int lo, int hi) {
    json current = config_value(session.config(), key);
    int value = current.is_number() ? current.get<int>() : fallback;
    ImGui::SliderInt(label, &value, lo, hi, "%d", ImGuiSliderFlags_AlwaysClamp);
    if (ImGui::IsItemDeactivatedAfterEdit()) apply(session, ui, key, value, frame);
}

void float_field(TrainingSession& session, UiState& ui, uint64_t frame, const char* label, const std::string& key,
                 float fallback, float lo, float hi) {
    json current = config_value(session.config(), key);
    float value = current.is_number() ? current.get<float>() : fallback;
    ImGui::SliderFloat(label, &value, lo, hi, "%.4f", ImGuiSliderFlags_AlwaysClamp);
    if (ImGui::IsItemDeactivatedAfterEdit()) apply(session, ui, key, value, frame);
}

void string_choice(TrainingSession& session, UiState& ui, uint64_t frame, const char* label, const std::string& key,
                   const std::vector<const char*>& names) {
    json current = config_value(session.config(), key);
    std::string chosen, shown = current.is_string() ? current.get<std::string>() : names.front();
    if (choice(label, names, shown, chosen)) apply(session, ui, key, chosen, frame);
}

void training_controls(TrainingSession& session, UiState& ui, uint64_t frame) {
    if (ImGui::Button(session.running ? "Pause" : "Start", ImVec2(70, 0))) session.running = !session.running;
    ImGui::SameLine();
    if (ImGui::Button("Step")) session.single_step();
    ImGui::SameLine();
    if (ImGui::Button("Reset")) run_reporting_errors(ui, "reset", [&] { session.reset(); });
    ImGui::SameLine();
    ImGui::TextDisabled("step %llu", (unsigned long long)session.step());

    int log2_batch = (int)std::lround(std::log2((double)session.batch_size()));
    ImGui::SliderInt("batch size", &log2_batch, 8, 20, "2^%d", ImGuiSliderFlags_AlwaysClamp);
    if (ImGui::IsItemDeactivatedAfterEdit()) apply(session, ui, "batch_size", 1 << log2_batch, frame);

    float lr = (float)session.learning_rate();
    ImGui::InputFloat("learning rate", &lr, 0, 0, "%.2e");
    if (ImGui::IsItemDeactivatedAfterEdit()) {
        if (lr > 0 && lr < 10) apply(session, ui, "optimizer.learning_rate", lr, frame);
        else ui.error("learning rate must be in (0, 10); kept " + std::to_string(session.learning_rate()));
    }
    string_choice(session, ui, frame, "loss", "loss.otype",
                  {"L2", "L1", "RelativeL2", "RelativeL1", "MAPE", "SMAPE", "Huber"});
}

void network_controls(TrainingSession& session, UiState& ui, uint64_t frame) {
    string_choice(session, ui, frame, "kernel", "network.otype", {"FullyFusedMLP", "CublasMLP", "CPU"});
    json kernel = config_value(session.config(), "network.otype");
    if (session.backend_name() == "cpu" && kernel.is_string() && !equals_ignore_case(kernel.get<std::string>(), "CPU")) {
        ImGui::TextColored(ImVec4(0.95f, 0.75f, 0.3f, 1), "needs CUDA: the CPU reference MLP runs it");
    }
    int_field(session, ui, frame, "width", "network.n_neurons", 64, 16, 256);
    int_field(session, ui, frame, "hidden layers", "network.n_hidden_layers", 2, 1, 16);
    string_choice(session, ui, frame, "activation", "network.activation",
                  {"ReLU", "LeakyReLU", "Sigmoid", "Squareplus", "Softplus", "Tanh", "Sine", "Exponential", "None"});
    string_choice(session, ui, frame, "output act.", "network.output_activation",
                  {"None", "Sigmoid", "ReLU", "Squareplus", "Softplus", "Exponential"});
    ImGui::Checkbox("carry weights over on resize", &session.carry_weights);
}

void encoding_controls(TrainingSession& session, UiState& ui, uint64_t frame) {
    string_choice(session, ui, frame, "encoding", "encoding.otype",
                  {"HashGrid", "DenseGrid", "TiledGrid", "Frequency", "TriangleWave", "OneBlob", "Identity"});
    json otype = config_value(session.config(), "encoding.otype");
    std::string t = otype.is_string() ? otype.get<std::string>() : "";
    if (t.find("Grid") != std::string::npos || t.find("grid") != std::string::npos) {
        int_field(session, ui, frame, "levels", "encoding.n_levels", 16, 1, 32);
        int_field(session, ui, frame, "features/level", "encoding.n_features_per_level", 2, 1, 8);
        int_field(session, ui, frame, "log2 table size", "encoding.log2_hashmap_size", 19, 8, 24);
        int_field(session, ui, frame, "base resolution", "encoding.base_resolution", 16, 1, 512);
        float_field(session, ui, frame, "level scale", "encoding.per_level_scale", 2.0f, 1.0f, 4.0f);
    } else if (equals_ignore_case(t, "Frequency") || equals_ignore_case(t, "TriangleWave")) {
        int_field(session, ui, frame, "frequencies", "encoding.n_frequencies", 12, 1, 24);
    }
}

} // namespace

void draw_control_panel(TrainingSession& session, UiState& ui, uint64_t frame) {
    ImGui::PushItemWidth(ImGui::GetContentRegionAvail().x * 0.6f);
    if (ImGui::CollapsingHeader("Training", ImGuiTreeNodeFlags_DefaultOpen)) training_controls(session, ui, frame);
    if (ImGui::CollapsingHeader("Network", ImGuiTreeNodeFlags_DefaultOpen)) network_controls(session, ui, frame);
    if (ImGui::CollapsingHeader("Encoding", ImGuiTreeNodeFlags_DefaultOpen)) encoding_controls(session, ui, frame);
    ImGui::PopItemWidth();
}

} // namespace fusedngp
