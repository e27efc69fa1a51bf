// Training threads of the app run nicer than the UI thread (Linux nice is
// per thread, and the OpenMP team such a thread starts inherits it): a frame
// preempts training, not the other way round, so the UI keeps its rate on a
// busy CPU. No-op elsewhere.
#pragma once

namespace fusedngp {

void lower_this_thread_priority();

} // namespace fusedngp
