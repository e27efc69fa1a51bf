// fusedngp: train neural fields (image and sdf, later nerf) with fully fused MLPs.
//
// Exit codes: 0 ok, 2 bad input or usage, 1 internal error. Errors print one
// line, never a stack dump.
#include "app/commands.h"
#include "core/errors.h"

#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
    CLI::App app{"fusedngp: neural fields with fully fused MLPs (tiny-cuda-nn style configs)", "fusedngp"};
    app.require_subcommand(0, 1);
    app.set_version_flag("--version", "fusedngp 0.1.0");
    fusedngp::add_train_command(app);
    fusedngp::add_render_command(app);
    fusedngp::add_mesh_command(app);
    fusedngp::add_export_command(app);
    fusedngp::add_info_command(app);
    fusedngp::add_gui_command(app);
    fusedngp::add_bench_command(app);
    try {
        app.parse(argc, argv);
        if (app.get_subcommands().empty()) return fusedngp::run_default();
        return 0;
    } catch (const CLI::ParseError& e) {
        int rc = app.exit(e);
        return rc == 0 ? 0 : 2;
    } catch (const fusedngp::ConfigError& e) {
        std::fprintf(stderr, "fusedngp: config error: %s\n", e.what());
        return 2;
    } catch (const fusedngp::InputError& e) {
        std::fprintf(stderr, "fusedngp: error: %s\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fusedngp: internal error: %s\n", e.what());
        return 1;
    }
}
