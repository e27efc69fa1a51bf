#include "gui/display_texture.h"

#include <glad/gl.h>

#include <cstddef>


namespace fusedngp {

namespace {
constexpr std::size_t kBytesPerPixel = 4 * sizeof(float);
}

DisplayTexture::~DisplayTexture() {
    release_cuda();
    if (pbo_) glDeleteBuffers(1, &pbo_);
    if (texture_) glDeleteTextures(1, &texture_);
}

void DisplayTexture::resize(int width, int height) {
    if (width == width_ && height == height_ && texture_) return;
    release_cuda();  // the registration pins the old buffer storage
    width_ = width;
    height_ = height;
    if (!texture_) glGenTextures(1, &texture_);
    if (!pbo_) glGenBuffers(1, &pbo_);
    glBindTexture(GL_TEXTURE_2D, texture_);
    glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA32F, width, height, 0, GL_RGBA, GL_FLOAT, nullptr);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
    set_nearest_filter(nearest_);
    glBindBuffer(GL_PIXEL_UNPACK_BUFFER, pbo_);
    glBufferData(GL_PIXEL_UNPACK_BUFFER, (GLsizeiptr)((std::size_t)width * (std::size_t)height * kBytesPerPixel), nullptr,
                 GL_STREAM_DRAW);
    glBindBuffer(GL_PIXEL_UNPACK_BUFFER, 0);
}

void DisplayTexture::set_nearest_filter(bool nearest) {
    nearest_ = nearest;
    if (!texture_) return;
    glBindTexture(GL_TEXTURE_2D, texture_);
    GLint filter = nearest ? GL_NEAREST : GL_LINEAR;
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, filter);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, filter);
}

void DisplayTexture::upload_from_host(const float* rgba, int width, int height) {
    resize(width, height);
    upload_rows(rgba, 0, height);
}

void DisplayTexture::upload_rows(const float* rgba, int y0, int rows) {
    if (rows <= 0 || !texture_) return;
    const std::size_t offset = (std::size_t)y0 * (std::size_t)width_ * kBytesPerPixel;
    const std::size_t bytes = (std::size_t)rows * (std::size_t)width_ * kBytesPerPixel;
    // Through the PBO, like the CUDA path, so both paths share the texture update.
    glBindBuffer(GL_PIXEL_UNPACK_BUFFER, pbo_);
    glBufferSubData(GL_PIXEL_UNPACK_BUFFER, (GLintptr)offset, (GLsizeiptr)bytes, rgba);
    glBindTexture(GL_TEXTURE_2D, texture_);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, y0, width_, rows, GL_RGBA, GL_FLOAT, reinterpret_cast<const void*>(offset));
    glBindBuffer(GL_PIXEL_UNPACK_BUFFER, 0);
}

void DisplayTexture::commit_pbo() {
    glBindBuffer(GL_PIXEL_UNPACK_BUFFER, pbo_);
    glBindTexture(GL_TEXTURE_2D, texture_);
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, width_, height_, GL_RGBA, GL_FLOAT, nullptr);
    glBindBuffer(GL_PIXEL_UNPACK_BUFFER, 0);
}

} // namespace fusedngp
