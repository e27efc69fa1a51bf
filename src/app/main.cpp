// fusedngp: train neural fields (images, signed distance fields, NeRF scenes) with fully fused MLPs.
//
// Exit codes: 0 ok, 2 bad input or usage, 1 internal error, 3 training
// diverged (outputs written, stop_reason "diverged"). Errors print one
// line, never a stack dump.
#include "app/commands.h"
#include "app/output_dir.h"
#include "core/errors.h"

#include <cstdio>
#include <exception>
#include <new>
#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace {

// A CPU training step allocates its activations afresh (a NeRF step on lego:
// ~200 k samples x 64 floats per layer, tens of MB each). glibc serves blocks
// that large with mmap and returns them on free, so every step paid the page
// faults and zeroing again (~30% of a CPU NeRF step under perf). Keeping them
// in the heap, and freed memory with the process, made that step 1.9x faster
// (docs/BENCHMARKS.md).
void keep_large_allocations_in_the_heap() {
#ifdef __GLIBC__
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

int run(CLI::App& app, int argc, char** argv) {
    try {
        app.parse(argc, argv);
        if (app.get_subcommands().empty()) return fusedngp::run_default();
        return 0;
    } catch (const CLI::RuntimeError& e) {  // a command's own exit code (e.g. 3: training diverged)
        return e.get_exit_code();
    } catch (const CLI::ParseError& e) {
        int rc = app.exit(e);
        return rc == 0 ? 0 : 2;
    } catch (const fusedngp::ConfigError& e) {
        std::fprintf(stderr, "fusedngp: config error: %s\n", e.what());
        return 2;
    } catch (const fusedngp::InputError& e) {
        std::fprintf(stderr, "fusedngp: error: %s\n", e.what());
        return 2;
    } catch (const std::bad_alloc&) {
        // More host memory asked for than the machine has: in practice the
        // model's parameters (a hash grid holds n_levels x 2^log2_hashmap_size
        // x n_features_per_level of them, with Adam's two moments) or a batch.
        std::fprintf(stderr, "fusedngp: error: out of memory: an allocation failed; use a smaller model (the hash "
                             "grid's log2_hashmap_size or n_levels) or batch (--batch)\n");
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fusedngp: internal error: %s\n", e.what());
        return 1;
    }
}

} // namespace

int main(int argc, char** argv) {
    keep_large_allocations_in_the_heap();
    CLI::App app{"fusedngp: neural fields with fully fused MLPs (tiny-cuda-nn style configs)", "fusedngp"};
    app.require_subcommand(0, 1);
    app.set_version_flag("--version", "fusedngp 0.1.0");
    // Usage errors are one line, like every other error.
    app.failure_message([](const CLI::App*, const CLI::Error& e) {
        return "fusedngp: error: " + std::string(e.what()) + " (see --help)\n";
    });
    fusedngp::add_train_command(app);
    fusedngp::add_render_command(app);
    fusedngp::add_mesh_command(app);
    fusedngp::add_export_command(app);
    fusedngp::add_info_command(app);
    fusedngp::add_gui_command(app);
    fusedngp::add_bench_command(app);
    const int rc = run(app, argc, argv);
    if (rc != 0) fusedngp::remove_unused_output_dirs();
    return rc;
}
