#include "gui/gl_window.h"

#include <glad/gl.h>
#include <GLFW/glfw3.h>

#include <algorithm>
#include <stdexcept>

namespace fusedngp {

namespace {

std::string last_glfw_error() {
    const char* description = nullptr;
    glfwGetError(&description);
    return description ? description : "unknown GLFW error";
}

} // namespace

GlWindow::GlWindow(const std::string& title, int width, int height, bool vsync) {
    if (!glfwInit()) throw std::runtime_error("cannot open a window: " + last_glfw_error());
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
    glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
    glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
    glfwWindowHint(GLFW_SCALE_TO_MONITOR, GLFW_TRUE);  // HiDPI: the window grows with the content scale
    // Not larger than the screen's work area (a window manager would clip it).
    if (GLFWmonitor* monitor = glfwGetPrimaryMonitor()) {
        if (const GLFWvidmode* mode = glfwGetVideoMode(monitor)) {
            width = std::min(width, mode->width);
            height = std::min(height, mode->height);
        }
    }
    window_ = glfwCreateWindow(width, height, title.c_str(), nullptr, nullptr);
    if (!window_) {
        std::string reason = last_glfw_error();
        glfwTerminate();
        throw std::runtime_error("cannot create an OpenGL 3.3 core window: " + reason);
    }
    glfwMakeContextCurrent(window_);
    if (!gladLoadGL(glfwGetProcAddress)) {
        glfwDestroyWindow(window_);
        glfwTerminate();
        throw std::runtime_error("cannot load OpenGL 3.3 functions");
    }
    set_vsync(vsync);
    glfwSetWindowUserPointer(window_, this);
    glfwSetDropCallback(window_, [](GLFWwindow* w, int count, const char** paths) {
        auto* self = static_cast<GlWindow*>(glfwGetWindowUserPointer(w));
        if (!self->drop_callback_) return;
        std::vector<std::string> list(paths, paths + count);
        self->drop_callback_(list);
    });
}

GlWindow::~GlWindow() {
    glfwDestroyWindow(window_);
    glfwTerminate();
}

bool GlWindow::should_close() const { return glfwWindowShouldClose(window_); }
void GlWindow::poll_events() const { glfwPollEvents(); }
void GlWindow::swap_buffers() const { glfwSwapBuffers(window_); }
void GlWindow::set_vsync(bool on) const { glfwSwapInterval(on ? 1 : 0); }
void GlWindow::set_title(const std::string& title) const { glfwSetWindowTitle(window_, title.c_str()); }
void GlWindow::framebuffer_size(int& width, int& height) const { glfwGetFramebufferSize(window_, &width, &height); }

float GlWindow::content_scale() const {
    float x = 1, y = 1;
    glfwGetWindowContentScale(window_, &x, &y);
    return x > 0 ? x : 1.0f;
}

std::string GlWindow::gl_renderer() const {
    const GLubyte* r = glGetString(GL_RENDERER);
    const GLubyte* v = glGetString(GL_VERSION);
    return std::string(r ? reinterpret_cast<const char*>(r) : "?") + ", GL " +
           (v ? reinterpret_cast<const char*>(v) : "?");
}

void GlWindow::on_drop(std::function<void(const std::vector<std::string>&)> callback) {
    drop_callback_ = std::move(callback);
}

} // namespace fusedngp
