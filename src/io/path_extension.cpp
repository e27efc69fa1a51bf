#include "io/path_extension.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace fusedngp {

std::string lower_extension(const std::string& path) {
    std::string ext = std::filesystem::path(path).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return (char)std::tolower(c); });
    return ext;
}

} // namespace fusedngp
