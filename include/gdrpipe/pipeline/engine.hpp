// The transfer engine: one-sided get/put between local memory and a peer
// process's registered memory, over the direct path (CUDA IPC / VMM import +
// peer copy), the host-staged pipeline (shared pinned rings) or CMA.
// docs/data-paths.md describes the protocol.
//
// Threading: an engine is used by one thread at a time (the UCX worker's);
// the process-wide export/import caches are thread-safe.
#pragma once

#include "gdrpipe/pipeline/xfer_config.hpp"
#include "gdrpipe/rkey.h"
#include "gdrpipe/wire/shm_iface.hpp"

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace gdrpipe::pipeline {

struct PathCounters {
    uint64_t xfers = 0;
    uint64_t bytes = 0;
};

struct XferStats {
    PathCounters direct;       // requester side, completed ok
    PathCounters staged;
    PathCounters cma;
    PathCounters served;       // owner side: staged requests served ok
    uint64_t failed = 0;       // transfers completed with an error
    uint64_t skipped = 0;      // completed without data: a buffer freed in flight
    uint64_t fallbacks = 0;    // direct impossible/failed -> staged
    uint64_t ctrl_dropped = 0; // malformed / unusable control messages
    uint64_t peers_failed = 0;
    uint64_t segments_renewed = 0; // requester: all staging rings of a peer aborted
    uint64_t copy_batches = 0;     // direct copies queued together: kernel launches
    uint64_t batched = 0;          // direct transfers copied by them
};

// The effective configuration (defaults filled in, bounds applied).
XferConfig normalize_config(const XferConfig &cfg) noexcept;

class XferEngine {
public:
    using DoneCb = XferDoneCb;

    static std::unique_ptr<XferEngine> create(wire::ShmIface *wire, const XferConfig &cfg,
                                              std::string *err);
    ~XferEngine();
    XferEngine(const XferEngine &) = delete;
    XferEngine &operator=(const XferEngine &) = delete;

    // A round of calls (the interface's progress): direct device copies
    // started inside it are queued and launched together when it ends, or at
    // the next progress(), with one batched copy kernel per device
    // (cuda/copy_kernel.hpp). Rounds nest; outside one each copy is queued
    // on the copy engine at once.
    void begin_round() noexcept;
    void end_round();

    // 0 complete, 1 in progress (cb later from progress()), <0 error (-errno)
    int start(wire::ShmPeer *peer, bool is_get, const struct iovec *local, size_t iovcnt,
              uint64_t remote_addr, const gp_rkey_t *rkey, DoneCb cb, void *arg);
    unsigned progress();
    void on_control(const void *data, uint32_t len);
    size_t outstanding() const noexcept;
    void peer_failed(wire::ShmPeer *peer);

    const XferConfig &config() const noexcept;
    XferStats stats() const noexcept;
    // One block of lines: paths, export cache, import cache.
    std::string format_stats() const;

    struct Impl;

private:
    explicit XferEngine(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

std::string format_stats(const XferStats &s);

// /proc/<pid>/stat says the process exists, is not a zombie, and started at
// `start_time` (0: any).
bool process_alive(pid_t pid, uint64_t start_time) noexcept;

} // namespace gdrpipe::pipeline
