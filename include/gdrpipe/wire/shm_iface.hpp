// The intra-host wire: each interface owns a receive FIFO in a memfd
// segment; peers are other interfaces' segments mapped on demand and shared by
// every endpoint that talks to the same peer. One-sided get/put of host memory
// uses cross-memory attach (process_vm_readv/writev).
#pragma once

#include "gdrpipe/wire/shm_fifo.hpp"

#include <sys/types.h>
#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace gdrpipe::wire {

// Connection address of an interface, as carried by UCX (fixed size,
// validated field by field on the receiving side).
struct ShmAddress {
    uint32_t magic;
    uint16_t version;
    uint16_t reserved;
    int32_t pid;
    int32_t fd;
    uint64_t seg_id;
};
static_assert(sizeof(ShmAddress) == 24);

struct ShmConfig {
    uint32_t num_elems = 256;        // receive FIFO depth (rounded up to 2^k)
    uint32_t seg_size = 8192;        // payload bytes per element
};

class ShmIface;

// A peer interface's FIFO, mapped into this process.
class ShmPeer {
public:
    ~ShmPeer();
    pid_t pid() const noexcept { return pid_; }
    uint64_t seg_id() const noexcept { return seg_id_; }
    Fifo &fifo() noexcept { return fifo_; }
    // the peer process's start time, checked against the kernel's at connect
    // and kept here: the copy in the shared FIFO header can be rewritten by
    // any producer (review finding M2)
    uint64_t start_time() const noexcept { return start_time_; }
    // false once the peer process has exited (or its pid was reused)
    bool alive() const noexcept;

private:
    friend class ShmIface;
    ShmPeer() = default;
    pid_t pid_ = -1;
    uint64_t seg_id_ = 0;
    uint64_t start_time_ = 0;
    void *map_ = nullptr;
    size_t map_size_ = 0;
    Fifo fifo_;
    unsigned refs_ = 0;
};

class ShmIface {
public:
    static std::unique_ptr<ShmIface> open(const ShmConfig &cfg, std::string *err);
    ~ShmIface();
    ShmIface(const ShmIface &) = delete;
    ShmIface &operator=(const ShmIface &) = delete;

    ShmAddress address() const noexcept;
    Fifo &rx() noexcept { return rx_; }
    // The largest message this interface receives, and the largest it sends:
    // connect() refuses a peer whose elements are smaller.
    uint32_t max_payload() const noexcept { return rx_.max_payload(); }

    // Checks an address received from the network; nullptr when acceptable.
    static const char *check_address(const void *addr, size_t len) noexcept;

    // Maps (or shares the existing mapping of) the peer at `addr`. Fails when
    // the peer's FIFO elements hold less than max_payload() (a different
    // UCX_GDRPIPE_SEG_SIZE), with an error naming both sizes.
    ShmPeer *connect(const void *addr, size_t len, std::string *err);
    void release(ShmPeer *peer);
    size_t num_peers() const;

private:
    ShmIface() = default;
    int fd_ = -1;
    void *map_ = nullptr;
    size_t map_size_ = 0;
    uint64_t seg_id_ = 0;
    Fifo rx_;
    mutable std::mutex lock_;
    std::unordered_map<uint64_t, ShmPeer *> peers_;   // key: pid ^ seg_id
};

// Cross-memory attach. Returns bytes moved (all of them) or -errno.
ssize_t cma_read(pid_t pid, const struct iovec *local, size_t iovcnt,
                 uint64_t remote_addr) noexcept;
ssize_t cma_write(pid_t pid, const struct iovec *local, size_t iovcnt,
                  uint64_t remote_addr) noexcept;
// Whether this process may use CMA on itself (ptrace policy, kernel support).
bool cma_available() noexcept;

uint64_t process_start_time(pid_t pid) noexcept;

} // namespace gdrpipe::wire
