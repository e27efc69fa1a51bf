// GLSL sources from shaders/*.glsl, embedded at build time (cmake/EmbedText.cmake).
#pragma once

#include <string>

namespace fusedngp {

// The file's text by name ("display.frag.glsl"), or nullptr when unknown.
const char* embedded_shader(const std::string& name);

} // namespace fusedngp
