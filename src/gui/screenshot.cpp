#include "gui/screenshot.h"

#include <glad/gl.h>

#include <vector>

namespace fusedngp {

Image read_framebuffer(int width, int height) {
    std::vector<unsigned char> rgb((size_t)width * (size_t)height * 3);
    glBindFramebuffer(GL_READ_FRAMEBUFFER, 0);
    glReadBuffer(GL_BACK);
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    glReadPixels(0, 0, width, height, GL_RGB, GL_UNSIGNED_BYTE, rgb.data());
    Image image = make_image(width, height, 3, ColorSpace::Srgb);
    for (int y = 0; y < height; ++y) {
        const unsigned char* row = rgb.data() + (size_t)(height - 1 - y) * (size_t)width * 3;
        for (int i = 0; i < width * 3; ++i) image.pixels[(size_t)y * (size_t)width * 3 + (size_t)i] = row[i] / 255.0f;
    }
    return image;
}

void save_screenshot(const std::string& path, int width, int height) { save_png(read_framebuffer(width, height), path); }

} // namespace fusedngp
