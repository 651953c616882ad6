// Cross-memory attach for one-sided get/put of host memory between
// processes of one host (the peer's pid comes from its connection address).
#include "gdrpipe/wire/shm_iface.hpp"

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

namespace gdrpipe::wire {

namespace {

using CmaFn = ssize_t (*)(pid_t, const struct iovec *, unsigned long,
                          const struct iovec *, unsigned long, unsigned long);

// Moves every byte, resuming after partial transfers (the kernel may stop at
// a page it cannot pin). One remote iovec covers the contiguous remote range.
ssize_t cma_loop(CmaFn fn, pid_t pid, const struct iovec *local, size_t iovcnt,
                 uint64_t remote_addr) noexcept {
    size_t total = 0;
    for (size_t i = 0; i < iovcnt; ++i) total += local[i].iov_len;
    size_t done = 0;
    size_t idx = 0, off = 0;
    while (done < total) {
        struct iovec l[16];
        unsigned long nl = 0;
        size_t chunk = 0;
        for (size_t j = idx, o = off; j < iovcnt && nl < 16; ++j, o = 0) {
            if (local[j].iov_len == o) continue;
            l[nl].iov_base = static_cast<char *>(local[j].iov_base) + o;
            l[nl].iov_len = local[j].iov_len - o;
            chunk += l[nl].iov_len;
            ++nl;
        }
        struct iovec r{reinterpret_cast<void *>(remote_addr + done), chunk};
        ssize_t n = fn(pid, l, nl, &r, 1, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -errno;
        }
        if (n == 0) return -EFAULT;
        done += size_t(n);
        // advance (idx, off) by n bytes
        size_t left = size_t(n);
        while (left > 0 && idx < iovcnt) {
            size_t avail = local[idx].iov_len - off;
            if (left < avail) {
                off += left;
                left = 0;
            } else {
                left -= avail;
                ++idx;
                off = 0;
            }
        }
    }
    return ssize_t(total);
}

} // namespace

ssize_t cma_read(pid_t pid, const struct iovec *local, size_t iovcnt,
                 uint64_t remote_addr) noexcept {
    return cma_loop(::process_vm_readv, pid, local, iovcnt, remote_addr);
}

ssize_t cma_write(pid_t pid, const struct iovec *local, size_t iovcnt,
                  uint64_t remote_addr) noexcept {
    return cma_loop(::process_vm_writev, pid, local, iovcnt, remote_addr);
}

bool cma_available() noexcept {
    uint64_t src = 0x1234, dst = 0;
    struct iovec l{&dst, sizeof(dst)};
    return cma_read(::getpid(), &l, 1, reinterpret_cast<uint64_t>(&src)) ==
               ssize_t(sizeof(dst)) &&
           dst == src;
}

} // namespace gdrpipe::wire
