#include "gui/imgui_layer.h"

#include "gui/gl_window.h"

#include <imgui.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>

namespace fusedngp {

namespace {

// A calm dark theme: flat panels, one accent colour, readable spacing.
void apply_style(float scale) {
    ImGui::StyleColorsDark();
    ImGuiStyle& style = ImGui::GetStyle();
    style.WindowRounding = 0;
    style.FrameRounding = 3;
    style.GrabRounding = 3;
    style.WindowBorderSize = 0;
    style.FramePadding = ImVec2(6, 3);
    style.ItemSpacing = ImVec2(8, 5);
    style.WindowPadding = ImVec2(10, 10);
    ImVec4* c = style.Colors;
    const ImVec4 accent(0.26f, 0.59f, 0.98f, 1.0f);
    c[ImGuiCol_WindowBg] = ImVec4(0.11f, 0.115f, 0.125f, 1.0f);
    c[ImGuiCol_ChildBg] = ImVec4(0.13f, 0.135f, 0.145f, 1.0f);
    c[ImGuiCol_FrameBg] = ImVec4(0.18f, 0.19f, 0.20f, 1.0f);
    c[ImGuiCol_Header] = ImVec4(0.20f, 0.22f, 0.25f, 1.0f);
    c[ImGuiCol_HeaderHovered] = ImVec4(0.25f, 0.28f, 0.33f, 1.0f);
    c[ImGuiCol_SliderGrab] = accent;
    c[ImGuiCol_CheckMark] = accent;
    c[ImGuiCol_PlotLines] = ImVec4(0.40f, 0.75f, 1.0f, 1.0f);
    style.ScaleAllSizes(scale);
}

} // namespace

ImGuiLayer::ImGuiLayer(const GlWindow& window, float scale) {
    IMGUI_CHECKVERSION();
    ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;  // the layout is fixed; no imgui.ini in the user's directory
    ImFontConfig font;
    font.SizePixels = 13.0f * scale;
    io.Fonts->AddFontDefault(&font);
    apply_style(scale);
    ImGui_ImplGlfw_InitForOpenGL(window.handle(), true);
    ImGui_ImplOpenGL3_Init("#version 330 core");
}

ImGuiLayer::~ImGuiLayer() {
    ImGui_ImplOpenGL3_Shutdown();
    ImGui_ImplGlfw_Shutdown();
    ImGui::DestroyContext();
}

void ImGuiLayer::begin_frame() {
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    ImGui::NewFrame();
}

void ImGuiLayer::end_frame() {
    ImGui::Render();
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
}

} // namespace fusedngp
