// Ctrl-C handling: the first SIGINT/SIGTERM asks training to stop cleanly
// (it saves a snapshot); signals within a second of it are the same request
// (a signal sent to the process and its group arrives twice); a later one
// exits at once without saving.
#pragma once

#include <atomic>

namespace fusedngp {

void install_interrupt_handler();
std::atomic<bool>& stop_requested();

} // namespace fusedngp
