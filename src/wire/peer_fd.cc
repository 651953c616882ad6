// Descriptors of another process: pidfd_getfd, /proc/<pid>/fd, kcmp.
#include "gdrpipe/wire/peer_fd.hpp"

#include <fcntl.h>
#include <linux/kcmp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace gdrpipe::wire {
namespace {

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

int getfd_by_pidfd(pid_t pid, int fd) {
    int pfd = int(::syscall(SYS_pidfd_open, pid, 0));
    if (pfd < 0) return -1;
    int out = int(::syscall(SYS_pidfd_getfd, pfd, fd, 0)); // O_CLOEXEC is implied
    int e = errno;
    ::close(pfd);
    errno = e;
    return out;
}

} // namespace

int open_peer_fd(pid_t pid, int fd, std::string *err) {
    if (pid <= 0 || fd < 0) {
        *err = "invalid peer fd reference";
        return -1;
    }
    int out = getfd_by_pidfd(pid, fd);
    if (out >= 0) return out;
    const int getfd_errno = errno;
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/%d/fd/%d", int(pid), fd);
    // the peer names the fd: never a controlling terminal, never a block in
    // open (a FIFO, a serial line); the descriptor is blocking again after
    constexpr int kFlags = O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
    out = ::open(path, O_RDWR | kFlags);
    if (out < 0) out = ::open(path, O_RDONLY | kFlags);
    if (out < 0) {
        *err = std::string("pidfd_getfd: ") + std::strerror(getfd_errno) + "; open " + path +
               ": " + std::strerror(errno);
        return -1;
    }
    const int fl = ::fcntl(out, F_GETFL);
    if (fl < 0 || ::fcntl(out, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        *err = std::string("fcntl ") + path + ": " + std::strerror(errno);
        ::close(out);
        return -1;
    }
    return out;
}

int same_peer_file(pid_t pid, int fd, int local_fd) noexcept {
    long r = ::syscall(SYS_kcmp, ::getpid(), pid, KCMP_FILE, local_fd, fd);
    if (r == 0) return 1;
    if (r > 0) return 0;
    return errno == EBADF ? 0 : -errno;
}

} // namespace gdrpipe::wire
