// A linked GLSL program (vertex + fragment) with uniform setters.
// Needs a current GL context for its whole lifetime.
#pragma once

#include <string>

namespace fusedngp {

class ShaderProgram {
public:
    // Compiles embedded shaders by file name. Throws std::runtime_error with
    // the driver's log when compiling or linking fails.
    ShaderProgram(const std::string& vertex_name, const std::string& fragment_name);
    ~ShaderProgram();
    ShaderProgram(const ShaderProgram&) = delete;
    ShaderProgram& operator=(const ShaderProgram&) = delete;

    void use() const;
    void set_int(const char* name, int value) const;
    void set_float(const char* name, float value) const;
    void set_vec4(const char* name, float x, float y, float z, float w) const;

private:
    unsigned program_ = 0;
};

} // namespace fusedngp
