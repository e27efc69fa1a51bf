#include "gui/worker_priority.h"

#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace fusedngp {

namespace {
constexpr int kWorkerNice = 5;
}

void lower_this_thread_priority() {
#ifdef __linux__
    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), kWorkerNice);
#endif
}

} // namespace fusedngp
