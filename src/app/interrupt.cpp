#include "app/interrupt.h"

#include <csignal>
#include <ctime>
#include <unistd.h>

namespace fusedngp {

namespace {
std::atomic<bool> g_stop{false};
std::atomic<long long> g_first_request_ns{0};
static_assert(std::atomic<bool>::is_always_lock_free, "signal handler needs a lock-free flag");
static_assert(std::atomic<long long>::is_always_lock_free, "signal handler needs a lock-free time");

// A second signal within this time of the first is the same request:
// `timeout -s INT` and job schedulers signal the process and then its whole
// group, so one request can arrive twice within microseconds.
constexpr long long kAbortAfterNs = 1000000000LL;

long long monotonic_ns() {  // clock_gettime is async-signal-safe
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void say(const char* msg, size_t size) {
    ssize_t ignored = write(STDERR_FILENO, msg, size);
    (void)ignored;
}

void on_signal(int sig) {
    const long long now = monotonic_ns();
    if (g_stop.load()) {
        if (now - g_first_request_ns.load() < kAbortAfterNs) return;
        // A later, separate request: the user means it.
        const char msg[] = "\nfusedngp: aborting without saving\n";
        say(msg, sizeof(msg) - 1);
        std::signal(sig, SIG_DFL);
        std::raise(sig);
        return;
    }
    g_first_request_ns.store(now);
    g_stop.store(true);
    const char msg[] =
        "\nfusedngp: stopping after this step and saving a snapshot (Ctrl-C again, a second from now, aborts)\n";
    say(msg, sizeof(msg) - 1);
}
} // namespace

void install_interrupt_handler() {
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
}

std::atomic<bool>& stop_requested() { return g_stop; }

} // namespace fusedngp
