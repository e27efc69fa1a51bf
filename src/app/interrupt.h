// Ctrl-C handling: the first SIGINT/SIGTERM asks training to stop cleanly
// (it saves a snapshot); a second one exits at once.
#pragma once

#include <atomic>

namespace fusedngp {

void install_interrupt_handler();
std::atomic<bool>& stop_requested();

} // namespace fusedngp
