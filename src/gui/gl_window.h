// The app window: GLFW, an OpenGL 3.3 core context loaded through glad,
// vsync, HiDPI content scale, and file drops.
#pragma once

#include <functional>
#include <string>
#include <vector>

struct GLFWwindow;

namespace fusedngp {

class GlWindow {
public:
    // Throws std::runtime_error when no display or no GL 3.3 context is available.
    GlWindow(const std::string& title, int width, int height, bool vsync);
    ~GlWindow();
    GlWindow(const GlWindow&) = delete;
    GlWindow& operator=(const GlWindow&) = delete;

    GLFWwindow* handle() const { return window_; }
    bool should_close() const;
    void poll_events() const;
    void swap_buffers() const;
    void set_vsync(bool on) const;
    void set_title(const std::string& title) const;

    // Pixels of the default framebuffer (differs from window size on HiDPI).
    void framebuffer_size(int& width, int& height) const;
    // The monitor's content scale (1 on a normal display, 2 on most HiDPI).
    float content_scale() const;
    std::string gl_renderer() const;

    // Paths dropped onto the window.
    void on_drop(std::function<void(const std::vector<std::string>&)> callback);

private:
    GLFWwindow* window_ = nullptr;
    std::function<void(const std::vector<std::string>&)> drop_callback_;
};

} // namespace fusedngp
