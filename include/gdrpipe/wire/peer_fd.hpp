// File descriptors of another process on this host: how the importer of a
// VMM allocation or of a memory pool gets the owner's shareable-handle fd
// (the rkey carries the owner's pid and fd number).
#pragma once

#include <sys/types.h>

#include <string>

namespace gdrpipe::wire {

// A descriptor of this process for the file open as `fd` in process `pid`
// (close-on-exec): pidfd_getfd(2) (the same open file, what CUDA's POSIX-fd
// handles need), else open(2) of /proc/<pid>/fd/<fd> (a new open of the same
// file: enough for memfds). Both need the ptrace access that CMA needs too.
// -1 with *err on failure.
int open_peer_fd(pid_t pid, int fd, std::string *err);

// Whether `local_fd` of this process and `fd` of process `pid` are the same
// open file (kcmp(2) KCMP_FILE): 1 yes, 0 no (or the owner's fd is closed),
// -errno when the kernel cannot tell (no kcmp, not permitted).
int same_peer_file(pid_t pid, int fd, int local_fd) noexcept;

} // namespace gdrpipe::wire
