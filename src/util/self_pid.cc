// self_pid(): the cached pid (self_pid.hpp).
#include "gdrpipe/self_pid.hpp"

#include "gdrpipe/capi.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>

namespace gdrpipe {
namespace {

std::atomic<pid_t> g_pid{0};

void forget_in_child() { g_pid.store(0, std::memory_order_relaxed); }

} // namespace

pid_t self_pid() noexcept {
    pid_t p = g_pid.load(std::memory_order_relaxed);
    if (p != 0) return p;
    static const bool hooked = [] { return ::pthread_atfork(nullptr, nullptr, forget_in_child) == 0; }();
    p = ::getpid();
    // without the fork hook every call asks the kernel (never a stale pid)
    if (hooked) g_pid.store(p, std::memory_order_relaxed);
    return p;
}

} // namespace gdrpipe

extern "C" pid_t gp_self_pid(void) { return gdrpipe::self_pid(); }
