// Subcommands of the fusedngp CLI. Each file registers one subcommand whose
// callback does the work; errors are exceptions that main() turns into exit codes.
#pragma once

#include <CLI/CLI.hpp>

namespace fusedngp {

void add_info_command(CLI::App& app);
void add_train_command(CLI::App& app);
void add_render_command(CLI::App& app);
void add_export_command(CLI::App& app);
void add_gui_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_mesh_command(CLI::App& app);
// `bench sdf` under `bench` (app/cmd_bench_sdf.cpp).
void add_bench_sdf_command(CLI::App* bench);

// Built with the desktop app and a display ($DISPLAY or $WAYLAND_DISPLAY) present?
bool gui_available();
// The desktop app on the bundled image.
int run_gui_default();

// What `fusedngp` does with no subcommand.
int run_default();

} // namespace fusedngp
