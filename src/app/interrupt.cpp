#include "app/interrupt.h"

#include <csignal>
#include <unistd.h>

namespace fusedngp {

namespace {
std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free, "signal handler needs a lock-free flag");

void on_signal(int sig) {
    if (g_stop.load()) {
        // Second request: the user means it.
        std::signal(sig, SIG_DFL);
        std::raise(sig);
        return;
    }
    g_stop.store(true);
    const char msg[] = "\nfusedngp: stopping after this step and saving a snapshot (Ctrl-C again to abort)\n";
    ssize_t ignored = write(STDERR_FILENO, msg, sizeof(msg) - 1);
    (void)ignored;
}
} // namespace

void install_interrupt_handler() {
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
}

std::atomic<bool>& stop_requested() { return g_stop; }

} // namespace fusedngp
