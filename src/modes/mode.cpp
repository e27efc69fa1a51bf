#include "modes/mode.h"

#include "config/config.h"
#include "config/default_configs.h"
#include "core/errors.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace fusedngp {

const std::vector<ModeSpec>& mode_specs() {
    static const std::vector<ModeSpec> specs = {
        {"image", 2, 3, true},
        {"sdf", 3, 1, true},
        {"nerf", 3, 16, true},    // density network: 3D position -> 16 features (instant-ngp layout)
    };
    return specs;
}

const ModeSpec& mode_spec(const std::string& name) {
    for (const auto& s : mode_specs()) {
        if (equals_ignore_case(s.name, name)) return s;
    }
    throw ConfigError("mode", "unknown mode \"" + name + "\"; allowed: image, sdf, nerf");
}

std::string infer_mode(const std::string& data_path) {
    namespace fs = std::filesystem;
    if (fs::is_directory(data_path)) return "nerf";
    std::string ext = fs::path(data_path).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return (char)std::tolower(c); });
    static const char* image_exts[] = {".png", ".jpg", ".jpeg", ".bmp", ".tga", ".exr", ".hdr"};
    for (const char* e : image_exts) {
        if (ext == e) return "image";
    }
    static const char* mesh_exts[] = {".obj", ".ply", ".stl", ".off", ".glb", ".gltf"};
    for (const char* e : mesh_exts) {
        if (ext == e) return "sdf";
    }
    if (ext == ".json") return "nerf";
    throw InputError(data_path + ": cannot infer the mode from the file name (expected an image " +
                     "(.png .jpg .jpeg .bmp .tga .exr .hdr), a mesh (.obj .ply .stl .off) or a NeRF transforms .json); pass --mode");
}

json load_mode_config(const std::string& mode, const std::string& config_path) {
    const char* text = default_config_text(mode_spec(mode).name);
    json defaults = text ? json::parse(text) : json::object();
    json user = config_path.empty() ? defaults : load_config_file(config_path);
    // Missing sections come from the mode's default first, then the built-in ones.
    for (const char* section : {"loss", "optimizer", "encoding", "network", "sampling", "dir_encoding", "rgb_network"}) {
        if (!user.contains(section) && defaults.contains(section)) user[section] = defaults[section];
    }
    return config_with_defaults(user);
}

} // namespace fusedngp
