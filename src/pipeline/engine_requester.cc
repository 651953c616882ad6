// The transfer engine, requesting side: the path of each transfer (the pair's
// rule), the direct copy, the staged pipeline's requester, completion.
#include "engine_impl.hpp"

#include "gdrpipe/self_pid.hpp"

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

void XferEngine::Impl::record_sample(Xfer *x) {
    PairUse *u = x->pair;
    if (!u->check || !u->check->active()) return;
    const double secs = std::chrono::duration<double>(Clock::now() - x->t_start).count();
    const model::Path p = x->direct ? model::Path::direct : model::Path::staged;
    GP_DEBUG("crossover check for %s: %s %zu bytes in %.1f us", u->choice->label.c_str(), model::path_name(p),
             x->len, secs * 1e6);
    if (!u->check->record(p, x->len, secs)) return;
    const PairChoice &c = *u->choice;
    const std::vector<model::OnlineClass> &cl = u->check->classes();
    u->rule = u->check->rule(xcfg.max_bytes);
    u->corrected = "checked through the peer in " + std::to_string(cl.size()) + " size classes by " +
                   std::to_string(online_samples) + " + " + std::to_string(online_samples) +
                   " transfers each (" + describe_classes(cl) + "): " + u->rule.describe();
    GP_INFO("crossover for %s %s", c.label.c_str(), u->corrected.c_str());
    store_online_check(c, xcfg, cl);
}

void XferEngine::Impl::finish(Xfer *x, int status) {
    if (x->done) return;
    x->done = true;
    x->status = status;
    if (status == 0) {
        PathCounters &pc = x->direct ? st.direct : st.staged;
        pc.xfers++;
        pc.bytes += x->len;
        if (x->pair != nullptr) ++(x->direct ? x->pair->direct : x->pair->staged);
        if (x->sampled && x->pair != nullptr) record_sample(x);
    } else {
        st.failed++;
    }
    release_ring(x, status != 0);
    if (x->imp && x->rkey.kind == GP_RKEY_CUDA_POOL) {
        // CUDA: a pool pointer must be freed in every importing process
        // before the exporting process frees it. The owner may free once
        // this transfer completes, so the import is not kept: dropped
        // from the cache here, closed (cuMemFree) with its last reference
        // -- before the completion callback runs.
        import_cache().invalidate(x->imp.info().space, x->imp.info().addr, x->imp.info().len);
    }
    x->imp.reset();
}

void XferEngine::Impl::release_ring(Xfer *x, bool aborted) {
    if (x->ring < 0 || x->ps == nullptr) return;
    PeerState *ps = x->ps;
    if (ps->seg) {
        if (aborted && x->ctrl_sent) {
            // the owner may still touch the ring: tell it, never reuse it
            ps->seg->ring(unsigned(x->ring))->error.store(1, std::memory_order_release);
            ps->ring_retired[size_t(x->ring)] = true;
        }
        ps->ring_user[size_t(x->ring)] = 0;
    }
    x->ring = -1;
}

int XferEngine::Impl::staged_kickoff(Xfer *x) {
    PeerState *ps = x->ps;
    if (ps->peer->fifo().max_payload() < sizeof(CtrlMsg)) {
        GP_ERROR("xfer: the FIFO elements of pid %d hold %u bytes, a control message needs %zu",
                 int(ps->pid), ps->peer->fifo().max_payload(), sizeof(CtrlMsg));
        return -EMSGSIZE;
    }
    if (x->ring < 0) {
        if (!ensure_segment(ps)) return -ENOMEM;
        if (std::all_of(ps->ring_retired.begin(), ps->ring_retired.end(),
                        [](bool retired) { return retired; })) {
            // every ring was aborted while the owner may still touch it
            // (none is in use): a new segment. The owner may still write
            // into the old one, which then only it maps; it lets it go when
            // it attaches the new one.
            GP_DEBUG("xfer: every staging ring of pid %d was aborted: a new segment",
                     int(ps->pid));
            ps->seg.reset();
            if (!ensure_segment(ps)) return -ENOMEM;
            ++st.segments_renewed;
        }
        for (unsigned r = 0; r < kRingsPerPeer; ++r) {
            if (ps->ring_user[r] == 0 && !ps->ring_retired[r]) {
                x->ring = int(r);
                break;
            }
        }
        if (x->ring < 0) return 0; // all rings busy: queued
        ps->ring_user[size_t(x->ring)] = x->id;
        RingHeader *rh = ps->seg->ring(unsigned(x->ring));
        rh->produced.store(0, std::memory_order_relaxed);
        rh->consumed.store(0, std::memory_order_relaxed);
        rh->error.store(0, std::memory_order_relaxed);
        rh->xfer_id.store(x->id, std::memory_order_release);
        x->pipe.init(ps->seg.get(), unsigned(x->ring), x->id, x->mem, !x->is_get,
                     /*wait_drain=*/true, /*check_id=*/false, kSlotRequester);
    }
    uint64_t idx = 0;
    void *buf = ps->peer->fifo().reserve(&idx);
    if (buf == nullptr) return 0;
    CtrlMsg m{};
    m.type = x->is_get ? kStageOut : kStageIn;
    m.req_pid = ::getpid();
    m.seg_fd = ps->seg->fd();
    m.req_start_time = wire::process_start_time(::getpid());
    m.seg_id = ps->seg->seg_id();
    m.seg_size = ps->seg->size();
    m.ring = unsigned(x->ring);
    m.depth = ps->seg->depth();
    m.chunk = ps->seg->chunk();
    m.xfer_id = x->id;
    m.remote_addr = x->remote;
    m.length = x->len;
    m.token = x->rkey.token;
    ctrl_seal(m);
    std::memcpy(buf, &m, sizeof(m));
    ps->peer->fifo().commit(idx, kCtrlAmId, sizeof(m));
    x->ctrl_sent = true;
    return 1;
}

int XferEngine::Impl::try_direct(Xfer *x) {
    if (x->rkey.kind != GP_RKEY_CUDA_IPC && x->rkey.kind != GP_RKEY_CUDA_VMM &&
        x->rkey.kind != GP_RKEY_CUDA_POOL) {
        return 0;
    }
    const bool loopback = x->rkey.pid == self_pid();
    int remote_dev = loopback ? x->rkey.device : device_by_uuid(x->rkey.dev_uuid);
    if (remote_dev < 0) {
        GP_DEBUG("xfer %llu: peer device not visible here: staged",
                 static_cast<unsigned long long>(x->id));
        return 0;
    }
    for (const LocalSeg &s : x->mem.segs) {
        if (s.dev >= 0 && s.dev != remote_dev &&
            !cuda::devices().can_access_peer(s.dev, remote_dev)) {
            GP_DEBUG("xfer %llu: no peer access %d -> %d: staged",
                     static_cast<unsigned long long>(x->id), s.dev, remote_dev);
            return 0;
        }
    }
    const int dev = x->mem.dev >= 0 ? x->mem.dev : remote_dev;
    char *ptr = nullptr;
    if (loopback) {
        // an rkey naming this process: only memory registered here, as
        // for a peer's (a forged address or key must not reach the rest)
        bool host = false;
        if (!registered(x->remote, x->len, x->rkey.token, &host)) {
            GP_ERROR("xfer %llu: [%#llx, +%zu) of this process itself is not registered memory",
                     static_cast<unsigned long long>(x->id),
                     static_cast<unsigned long long>(x->remote), x->len);
            return -EACCES;
        }
        ptr = reinterpret_cast<char *>(x->remote);
    } else {
        auto res = import_buffer(x->ps->space, x->rkey, dev);
        if (!res && res.error().code == kImportExtentMismatch) {
            GP_PEER_ERROR("xfer %llu: remote key of pid %d for [%#llx, +%llu) rejected: %s",
                     static_cast<unsigned long long>(x->id), int(x->rkey.pid),
                     static_cast<unsigned long long>(x->rkey.base),
                     static_cast<unsigned long long>(x->rkey.length),
                     res.error().message.c_str());
            return -EINVAL;
        }
        if (!res) {
            GP_DEBUG("xfer %llu: import of pid %d buffer %#llx failed (%s): staged",
                     static_cast<unsigned long long>(x->id), int(x->rkey.pid),
                     static_cast<unsigned long long>(x->rkey.base),
                     res.error().message.c_str());
            return 0;
        }
        x->imp = std::move(res.value());
        if (x->sampled) x->t_start = Clock::now(); // the import is not the path's cost
        const auto *imp = x->imp.payload_as<Import>();
        // start() checked [remote, +len) against the rkey; the import
        // checked the rkey against the real allocation: check both again
        // against what is mapped, since imp may come from the cache
        const uint64_t off = x->remote - x->rkey.base;
        if (off > imp->size || x->len > imp->size - off) {
            GP_ERROR("xfer %llu: [%#llx, +%zu) of pid %d is outside the %zu bytes its handle maps",
                     static_cast<unsigned long long>(x->id),
                     static_cast<unsigned long long>(x->remote), x->len, int(x->rkey.pid),
                     imp->size);
            x->imp.reset();
            return -EINVAL;
        }
        ptr = reinterpret_cast<char *>(imp->ptr + off);
    }
    if (can_queue(x, remote_dev)) {
        // launched with the round's other copies (copy_round.cc)
        x->peer_ptr = ptr;
        x->remote_dev = remote_dev;
        x->queued = true;
        x->direct = true;
        queued.push_back(x);
        return 1;
    }
    if (!issue_direct(x, ptr, remote_dev)) return 0;
    x->direct = true;
    return 1;
}

bool XferEngine::Impl::issue_direct(Xfer *x, char *ptr, int remote_dev) {
    cuda::Status s = copy_direct(x, ptr, remote_dev);
    if (s.ok()) return true;
    // nothing is lost: what was issued completes, then the staged path redoes it all
    wait_tokens(x->toks);
    x->imp.reset();
    GP_DEBUG("xfer %llu: direct copy failed (%s): staged", static_cast<unsigned long long>(x->id),
             s.message.c_str());
    return false;
}

cuda::Status XferEngine::Impl::copy_direct(Xfer *x, char *ptr, int remote_dev) {
    return copy_local(x->mem, 0, x->len, ptr, remote_dev, !x->is_get, kSlotDirect, x->toks);
}

PairUse *XferEngine::Impl::pair_for(Xfer *x) {
    if (x->rkey.kind != GP_RKEY_CUDA_IPC && x->rkey.kind != GP_RKEY_CUDA_VMM) return nullptr;
    if (!cuda::driver().available()) return nullptr;
    // -1: pageable/host local memory; mixed host and device: no pair
    const int local = x->mem.all_host ? -1 : x->mem.dev;
    if (local < 0 && !x->mem.all_host) return nullptr;
    const bool loopback = x->rkey.pid == self_pid();
    const int remote = loopback ? x->rkey.device : device_by_uuid(x->rkey.dev_uuid);
    if (remote < 0) return nullptr; // not visible here: the direct path falls back
    // device pairs are keyed local -> remote whatever the direction (the
    // prober times local's copy engine pushing to remote; NVLink and
    // PCIe peer copies are measured about symmetric); host memory has
    // two different shapes: D2H to pageable memory (a get) and H2D
    // from it (a put)
    const bool host_get = local < 0 && x->is_get;
    const int src = host_get ? remote : local, dst = host_get ? local : remote;
    auto key = std::make_pair(src, dst);
    auto it = pairs.find(key);
    if (it == pairs.end()) {
        PairUse u;
        if (cfg.thresh == kThreshAuto) {
            u.choice = &pair_choice(src, dst, xcfg);
            u.rule = u.choice->rule;
            // the calibrated rule is checked through the peer around
            // its in-process crossing (not the margin-shifted threshold),
            // in the size classes the cache entry does not hold yet
            if (cfg.path == PathMode::automatic && u.choice->have_fits) {
                auto check = std::make_unique<OnlineCheck>(online_samples, u.choice->direct_fit,
                                                           u.choice->staged_fit, u.choice->model_thresh,
                                                           u.choice->online, u.choice->table);
                if (check->active()) u.check = std::move(check);
            }
        } else {
            u.rule = SizeRule::single(cfg.thresh, model::Path::direct);
            GP_INFO("crossover for %s->%s = %s (configured)", side_name(src).c_str(), side_name(dst).c_str(),
                    cfg.thresh == SIZE_MAX ? "never (direct at every size)"
                                           : (std::to_string(cfg.thresh) + " bytes").c_str());
        }
        it = pairs.emplace(key, std::move(u)).first;
    }
    PairUse *u = &it->second;
    PeerState *ps = x->ps;
    if (u->choice != nullptr && u->choice->have_pipeline && !ps->seg && !ps->have_shape &&
        (chunk_auto || depth_auto)) {
        ps->have_shape = true;
        ps->shape = u->choice->pipeline;
    }
    return u;
}

void XferEngine::Impl::run_callbacks() {
    for (auto it = xfers.begin(); it != xfers.end();) {
        if ((*it)->done) {
            completed.push_back(std::move(*it));
            it = xfers.erase(it);
        } else {
            ++it;
        }
    }
    auto done = std::move(completed);
    completed.clear();
    for (auto &x : done) {
        if (x->cb != nullptr) x->cb(x->arg, x->status);
    }
}

} // namespace gdrpipe::pipeline
