// This process's pid without a system call per use: glibc's getpid() enters
// the kernel each time (it stopped caching in 2.25), which the per-message
// path paid several times a message. Cached once, renewed in a forked child.
#pragma once
#include <sys/types.h>

namespace gdrpipe {

pid_t self_pid() noexcept;

} // namespace gdrpipe
