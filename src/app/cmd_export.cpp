// `fusedngp export`: write a model's weights as a standard .safetensors file
// (NeRF models: both networks and the occupancy grid, persist/nerf_weights.h).
#include "app/commands.h"

#include "app/output_dir.h"
#include "core/errors.h"
#include "engine/nerf_model_file.h"
#include "persist/nerf_weights.h"
#include "persist/model_file.h"
#include "persist/weights.h"

#include <cstdio>

namespace fusedngp {

namespace {

struct ExportOptions {
    std::string input;
    std::string out;
    std::string dtype = "f32";
};

void export_nerf(const ExportOptions& o, const SafetensorsContents& contents, TensorDtype dtype) {
    const OpenedNerfModel m = nerf_model_from_contents(contents, o.input, "cpu");
    prepare_output_file(o.out);
    export_nerf_weights(o.out, m.config, m.scene, *m.trainer, dtype);
    std::printf("exported NeRF: %zu density + %zu colour parameters and the occupancy grid (%s) from %s -> %s\n",
                m.trainer->density_model().n_params(), m.trainer->colour_model().n_params(), to_string(dtype),
                o.input.c_str(), o.out.c_str());
}

void run_export(const ExportOptions& o) {
    TensorDtype dtype;
    if (equals_ignore_case(o.dtype, "f32")) dtype = TensorDtype::F32;
    else if (equals_ignore_case(o.dtype, "f16")) dtype = TensorDtype::F16;
    else throw InputError("--dtype must be f32 or f16, got \"" + o.dtype + "\"");
    const SafetensorsContents contents = read_safetensors(o.input);
    if (is_nerf_model_file(contents)) return export_nerf(o, contents, dtype);
    TrainedModel t = open_trained_model(contents, o.input);
    prepare_output_file(o.out);
    export_weights(o.out, t.desc, *t.model, t.inference_params, dtype);
    std::printf("exported %zu parameters (%zu tensors, %s) from %s -> %s\n", t.model->n_params(),
                t.model->named_tensors().size(), to_string(dtype), o.input.c_str(), o.out.c_str());
}

} // namespace

void add_export_command(CLI::App& app) {
    auto o = std::make_shared<ExportOptions>();
    CLI::App* cmd = app.add_subcommand("export", "Export weights (from a snapshot) as .safetensors");
    cmd->add_option("snapshot", o->input, "snapshot written by train (or weights, to convert dtype)")->required();
    cmd->add_option("--out", o->out, "output .safetensors file")->required();
    cmd->add_option("--dtype", o->dtype, "f32 or f16")->capture_default_str();
    cmd->callback([o]() { run_export(*o); });
}

} // namespace fusedngp
