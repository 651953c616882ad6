// Shared segments (the wire's FIFO, the staging rings) are anonymous memfds
// that peers open through /proc/<pid>/fd. Sealed against resizing, so that
// no opener can ftruncate one under its mappers (a SIGBUS at their next
// access); a peer's segment that is not sealed so is refused.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

namespace gdrpipe::wire {

// A close-on-exec memfd of `size` bytes, sealed against shrinking, growing
// and further sealing; -1 and *err on failure.
int create_sealed_memfd(const char *name, size_t size, std::string *err);

// nullptr when fd is sealed against shrinking and growing, else the reason.
const char *check_sealed(int fd) noexcept;

// Opens a peer's segment, /proc/<pid>/fd/<fd>, read-write: never as a
// controlling terminal and never blocking in open (the pid and fd come from
// the peer and may name any file that process has open); accepted only if
// it is a regular file sealed as above. -1 and *err otherwise.
int open_peer_segment(pid_t pid, int fd, std::string *err);

} // namespace gdrpipe::wire
