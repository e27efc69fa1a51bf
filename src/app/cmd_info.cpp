// `fusedngp info`: what a config builds (parameter counts per component,
// memory) and which backends and kernels this build offers.
#include "app/commands.h"
#include "app/cli_checks.h"

#include "backends/backend.h"
#include "engine/engine_info.h"
#include "config/unused_fields.h"
#include "model/trainer.h"
#include "modes/mode.h"
#include "nerf/nerf_trainer.h"
#include "nerf/nerf_training.h"

#include <cstdio>
#include <string>

namespace fusedngp {

namespace {

struct InfoOptions {
    std::string mode = "image";
    std::string config;
    uint32_t n_output_dims = 0;
};

std::string human_bytes(double bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB"};
    int u = 0;
    while (bytes >= 1024 && u < 3) {
        bytes /= 1024;
        ++u;
    }
    char buf[64];
    std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.2f %s", bytes, units[u]);
    return buf;
}

void print_info(const InfoOptions& o) {
    const ModeSpec& spec = mode_spec(o.mode);
    json config = load_mode_config(spec.name, o.config);
    uint32_t n_out = o.n_output_dims ? o.n_output_dims : spec.n_output_dims;
    // A full Trainer validates every section, loss and optimizer included.
    Trainer<float> trainer(spec.n_input_dims, n_out, config, 0);
    const Model<float>& model = trainer.model();
    for (const auto& w : unused_config_fields(config)) std::fprintf(stderr, "fusedngp: warning: %s\n", w.c_str());

    std::printf("mode        %s (%u -> %u)%s\n", spec.name.c_str(), spec.n_input_dims, n_out,
                spec.implemented ? "" : "  [training not implemented yet]");
    std::printf("config      %s\n", o.config.empty() ? ("default (configs/" + spec.name + ".json)").c_str() : o.config.c_str());
    std::printf("encoding    %-40s %12zu params\n", model.encoding().describe().c_str(), model.n_encoding_params());
    if (spec.name == "nerf" && nerf::nerf_grid_scale_from_data(config)) {
        std::printf("            (no per_level_scale in the config: `train` and `gui` set it from the scene's cameras,\n"
                    "            about one cell per pixel at its centre, docs/NERF.md; counted here with the grid's default)\n");
    }
    std::printf("network     %-40s %12zu params\n", model.network().describe().c_str(), model.n_network_params());
    size_t n_params = model.n_params();
    if (spec.name == "nerf") {  // the second model: colour from direction and density features
        const Model<float> colour(nerf::kColourInputs, 3, nerf::nerf_colour_model_config(config), 0);
        std::printf("dir enc     %-40s %12zu params\n", colour.encoding().describe().c_str(), colour.n_encoding_params());
        std::printf("rgb net     %-40s %12zu params\n", colour.network().describe().c_str(), colour.n_network_params());
        n_params += colour.n_params();
    }
    std::printf("total                                                 %12zu params\n", n_params);
    std::printf("loss        %s\n", trainer.loss().otype().c_str());
    std::printf("optimizer   %s\n", trainer.optimizer().describe().dump().c_str());
    double param_bytes = 4.0 * (double)n_params;
    std::printf("memory      %s fp32 parameters, %s with gradients and Adam moments\n",
                human_bytes(param_bytes).c_str(), human_bytes(4 * param_bytes).c_str());
    std::printf("tensors     ");
    auto tensors = model.named_tensors();
    for (size_t i = 0; i < tensors.size(); ++i) {
        std::string shape;
        for (size_t k = 0; k < tensors[i].shape.size(); ++k) shape += (k ? "x" : "") + std::to_string(tensors[i].shape[k]);
        std::printf("%s%s [%s]", i ? ", " : "", tensors[i].name.c_str(), shape.c_str());
        if (i >= 5 && tensors.size() > 8) {
            std::printf(", ... (%zu tensors)", tensors.size());
            break;
        }
    }
    std::printf("\n");
    std::string backends;
    for (const auto& b : available_backends()) backends += (backends.empty() ? "" : ", ") + b;
    std::printf("backends    %s\n", backends.c_str());
    const EngineInfo engine = engine_info();
    std::printf("device      %s\n", engine.device.c_str());
    std::printf("kernels     cpu reference\n");
    for (const auto& k : engine.kernels) std::printf("            %s\n", k.c_str());
}

} // namespace

void add_info_command(CLI::App& app) {
    auto opts = std::make_shared<InfoOptions>();
    CLI::App* cmd = app.add_subcommand("info", "Describe a config: parameter counts per component, memory, backends");
    cmd->add_option("--mode", opts->mode, "image, sdf or nerf")->capture_default_str();
    cmd->add_option("--config", opts->config, "JSON config (tiny-cuda-nn schema); default: the mode's shipped config");
    cmd->add_option("--outputs", opts->n_output_dims, "output width (default: the mode's, 3 for image)")->check(positive_number());
    cmd->callback([opts]() { print_info(*opts); });
}

} // namespace fusedngp
