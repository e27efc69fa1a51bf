// Dear ImGui on a GlWindow: context, GLFW + OpenGL3 backends, style and
// HiDPI scaling. begin_frame / end_frame bracket each frame's UI.
#pragma once

namespace fusedngp {

class GlWindow;

class ImGuiLayer {
public:
    ImGuiLayer(const GlWindow& window, float scale);
    ~ImGuiLayer();
    ImGuiLayer(const ImGuiLayer&) = delete;
    ImGuiLayer& operator=(const ImGuiLayer&) = delete;

    void begin_frame();
    void end_frame();  // renders the draw data into the current framebuffer
};

} // namespace fusedngp
