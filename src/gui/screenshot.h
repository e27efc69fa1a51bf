// Reading back the default framebuffer (what the window shows) as an image.
#pragma once

#include "io/image.h"

namespace fusedngp {

// The current default framebuffer as an 8-bit-range RGB image, top row first
// (GL reads bottom-up; flipped here).
Image read_framebuffer(int width, int height);

// read_framebuffer + save_png (atomic). Throws InputError on write failure.
void save_screenshot(const std::string& path, int width, int height);

} // namespace fusedngp
