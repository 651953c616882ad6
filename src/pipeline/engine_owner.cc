// The transfer engine, owning side: a peer's staged requests (control
// messages, checked), served through the shared rings.
#include "engine_impl.hpp"

#include "gdrpipe/cuda/context.hpp"
#include "gdrpipe/cuda/memory.hpp"
#include "gdrpipe/log.hpp"
#include "gdrpipe/pipeline/control.hpp"
#include "gdrpipe/pipeline/registry.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gdrpipe::pipeline {
using namespace engine_detail;

void XferEngine::Impl::drop_requester(pid_t pid, uint64_t start) {
    for (auto it = serving.begin(); it != serving.end();) {
        if ((*it)->pid == pid && (*it)->start == start) {
            (*it)->pipe.abort_copies();
            it = serving.erase(it);
        } else {
            ++it;
        }
    }
    for (auto it = attached.begin(); it != attached.end();) {
        if (std::get<0>(it->first) == pid && std::get<1>(it->first) == start) {
            it = attached.erase(it);
        } else {
            ++it;
        }
    }
    req_checked.erase(std::make_pair(pid, start));
    GP_DEBUG("xfer: requester pid %d gone: its staged requests dropped", int(pid));
}

void XferEngine::Impl::control(const void *data, uint32_t len) {
    if (const char *why = ctrl_check(data, len)) {
        st.ctrl_dropped++;
        GP_PEER_ERROR("xfer: dropped a control message (%u bytes): %s", unsigned(len), why);
        return;
    }
    CtrlMsg m;
    std::memcpy(&m, data, sizeof(m));
    auto drop = [&](const char *why) {
        st.ctrl_dropped++;
        GP_PEER_ERROR("xfer: dropped control message of pid %d transfer %llu: %s", int(m.req_pid),
                 static_cast<unsigned long long>(m.xfer_id), why);
    };
    if (!process_alive(m.req_pid, m.req_start_time)) return drop("requester not alive");
    AttachKey key{m.req_pid, m.req_start_time, m.seg_id};
    std::shared_ptr<StagingSegment> seg;
    auto it = attached.find(key);
    if (it != attached.end()) {
        seg = it->second;
    } else {
        // no requester of this version creates more (ensure_segment): a
        // bigger one would only make us map and pin what the peer chose
        if (m.seg_size > segment_bytes(kRingsPerPeer, kMaxDepth, kMaxChunkSize)) {
            return drop("staging segment larger than any requester creates");
        }
        std::string err;
        auto s = StagingSegment::attach(m.req_pid, m.seg_fd, m.seg_id, m.seg_size, &err);
        if (!s) return drop(err.c_str());
        seg = std::shared_ptr<StagingSegment>(std::move(s));
        // a requester has one segment at a time: an older one of the same
        // process was given up (its rings aborted); requests still being
        // served keep it mapped until they end
        for (auto a = attached.begin(); a != attached.end();) {
            if (std::get<0>(a->first) == m.req_pid && std::get<1>(a->first) == m.req_start_time) {
                a = attached.erase(a);
            } else {
                ++a;
            }
        }
        attached.emplace(key, seg);
    }
    // against the shape checked at attach (never the shared header)
    if (m.ring >= seg->nrings() || m.depth != seg->depth() || m.chunk != seg->chunk()) {
        return drop("ring shape mismatch");
    }
    RingHeader *rh = seg->ring(m.ring);
    if (rh->xfer_id.load(std::memory_order_acquire) != m.xfer_id) {
        return drop("ring serves another transfer");
    }
    bool host = true;
    if (!registered(m.remote_addr, m.length, m.token, &host)) {
        rh->error.store(EACCES, std::memory_order_release);
        return drop("range not inside a live registration with the request's token");
    }
    auto op = std::make_unique<ServeOp>();
    op->pid = m.req_pid;
    op->start = m.req_start_time;
    op->seg = seg;
    LocalSeg ls;
    ls.p = reinterpret_cast<char *>(m.remote_addr);
    ls.len = m.length;
    if (!host) {
        cuda::MemInfo mi;
        if (!cuda::driver().available() || cuda::query(ls.p, &mi) != CUDA_SUCCESS ||
            mi.kind == cuda::MemKind::host) {
            // the application freed it while the transfer was in flight:
            // nothing is served, the requester completes without data
            rh->error.store(ESTALE, std::memory_order_release);
            return drop("registered device memory is gone (freed in flight)");
        }
        ls.dev = mi.device < 0 ? 0 : mi.device;
    }
    LocalMem mem;
    mem.segs.push_back(ls);
    mem.len = ls.len;
    mem.all_host = host;
    mem.dev = ls.dev;
    op->pipe.init(seg.get(), m.ring, m.xfer_id, std::move(mem), m.type == kStageOut,
                  /*wait_drain=*/false, /*check_id=*/true, kSlotOwner);
    op->moved = Clock::now();
    serving.push_back(std::move(op));
}

} // namespace gdrpipe::pipeline
