#include "gui/shader_program.h"

#include "gui/shader_sources.h"

#include <glad/gl.h>

#include <stdexcept>
#include <vector>

namespace fusedngp {

namespace {

unsigned compile(GLenum stage, const std::string& name) {
    const char* source = embedded_shader(name);
    if (!source) throw std::runtime_error("shader \"" + name + "\" is not embedded in this build");
    unsigned shader = glCreateShader(stage);
    glShaderSource(shader, 1, &source, nullptr);
    glCompileShader(shader);
    int ok = 0;
    glGetShaderiv(shader, GL_COMPILE_STATUS, &ok);
    if (!ok) {
        std::vector<char> log(4096);
        glGetShaderInfoLog(shader, (GLsizei)log.size(), nullptr, log.data());
        glDeleteShader(shader);
        throw std::runtime_error("compiling " + name + ": " + log.data());
    }
    return shader;
}

} // namespace

ShaderProgram::ShaderProgram(const std::string& vertex_name, const std::string& fragment_name) {
    unsigned vs = compile(GL_VERTEX_SHADER, vertex_name);
    unsigned fs = compile(GL_FRAGMENT_SHADER, fragment_name);
    program_ = glCreateProgram();
    glAttachShader(program_, vs);
    glAttachShader(program_, fs);
    glLinkProgram(program_);
    glDeleteShader(vs);
    glDeleteShader(fs);
    int ok = 0;
    glGetProgramiv(program_, GL_LINK_STATUS, &ok);
    if (!ok) {
        std::vector<char> log(4096);
        glGetProgramInfoLog(program_, (GLsizei)log.size(), nullptr, log.data());
        glDeleteProgram(program_);
        throw std::runtime_error("linking " + vertex_name + " + " + fragment_name + ": " + log.data());
    }
}

ShaderProgram::~ShaderProgram() { glDeleteProgram(program_); }

void ShaderProgram::use() const { glUseProgram(program_); }
void ShaderProgram::set_int(const char* name, int value) const { glUniform1i(glGetUniformLocation(program_, name), value); }
void ShaderProgram::set_float(const char* name, float value) const {
    glUniform1f(glGetUniformLocation(program_, name), value);
}
void ShaderProgram::set_vec4(const char* name, float x, float y, float z, float w) const {
    glUniform4f(glGetUniformLocation(program_, name), x, y, z, w);
}

} // namespace fusedngp
