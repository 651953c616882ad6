// The transfer engine: creation, its peers (state, liveness, failures),
// progress and the public interface (engine_impl.hpp for the parts).
#include "engine_impl.hpp"

#include "gdrpipe/cuda/context.hpp"
#include "gdrpipe/cuda/copy_kernel_abi.h"
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

XferConfig normalize_config(const XferConfig &in) noexcept {
    XferConfig c = in;
    if (c.path != PathMode::direct && c.path != PathMode::staged) c.path = PathMode::automatic;
    if (c.thresh == 0) c.thresh = SIZE_MAX;
    if (c.chunk_size == 0) c.chunk_size = size_t{2} << 20;
    if (c.chunk_size > kMaxChunkSize) c.chunk_size = kMaxChunkSize;
    c.chunk_size = (c.chunk_size + kMinChunk - 1) / kMinChunk * kMinChunk;
    if (c.depth == 0) c.depth = 4;
    if (c.depth > kMaxDepth) c.depth = kMaxDepth;
    return c;
}

bool process_alive(pid_t pid, uint64_t start_time) noexcept {
    if (pid <= 0) return false;
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/%d/stat", int(pid));
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    char buf[512];
    ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
    ::close(fd);
    if (n <= 0) return false;
    buf[n] = '\0';
    const char *p = std::strrchr(buf, ')');
    if (p == nullptr || p[1] != ' ') return false;
    const char state = p[2];
    if (state == 'Z' || state == 'X' || state == 'x') return false;
    return start_time == 0 || wire::process_start_time(pid) == start_time;
}

PeerState *XferEngine::Impl::peer_state(wire::ShmPeer *peer) {
    const pid_t pid = peer->pid();
    const uint64_t start = peer->start_time(); // never the shared header's
    auto it = peers.find(peer);
    if (it != peers.end()) {
        if (it->second->pid == pid && it->second->start == start) return it->second.get();
        drop_peer(it->second.get(), -ECONNRESET, "peer object reused");
        it = peers.find(peer);
        if (it != peers.end()) peers.erase(it);
    }
    auto ps = std::make_unique<PeerState>();
    ps->peer = peer;
    ps->pid = pid;
    ps->start = start;
    ps->space = peer_space(pid, start);
    ps->last_check = Clock::now();
    PeerState *raw = ps.get();
    peers.emplace(peer, std::move(ps));
    return raw;
}

void XferEngine::Impl::drop_peer(PeerState *ps, int status, const char *why) {
    unsigned n = 0;
    if (!queued.empty()) flush_queued(); // nothing may stay queued for memory being dropped
    for (auto &x : xfers) {
        if (x->done || x->ps != ps) continue;
        wait_direct(x.get());
        x->pipe.abort_copies();
        finish(x.get(), status);
        x->ps = nullptr;
        ++n;
    }
    for (auto it = serving.begin(); it != serving.end();) {
        if ((*it)->pid == ps->pid) {
            (*it)->pipe.abort_copies();
            it = serving.erase(it);
        } else {
            ++it;
        }
    }
    for (auto it = attached.begin(); it != attached.end();) {
        if (std::get<0>(it->first) == ps->pid) it = attached.erase(it);
        else ++it;
    }
    if (import_cache_exists()) import_cache().invalidate_space(ps->space);
    ps->seg.reset();
    ps->ring_user.clear();
    ps->ring_retired.clear();
    st.peers_failed++;
    GP_DEBUG("xfer: peer pid %d: %s; %u transfer(s) failed", int(ps->pid), why, n);
}

bool XferEngine::Impl::ensure_segment(PeerState *ps) {
    if (ps->seg) return true;
    std::string err;
    size_t chunk = cfg.chunk_size;
    unsigned depth = cfg.depth;
    if (ps->have_shape) {
        if (chunk_auto) chunk = ps->shape.chunk_bytes;
        if (depth_auto) depth = unsigned(ps->shape.depth);
        while (depth > 2 && chunk * depth > kMaxCalibratedRing) --depth;
        XferConfig want = cfg;
        want.chunk_size = chunk;
        want.depth = depth;
        want = normalize_config(want);
        chunk = want.chunk_size;
        depth = want.depth;
        GP_DEBUG("xfer: staging rings for pid %d: calibrated shape %zu x %u", int(ps->pid),
                 chunk, depth);
    }
    ps->seg = StagingSegment::create(kRingsPerPeer, depth, chunk, &err);
    if (!ps->seg) {
        GP_ERROR("xfer: staging rings for pid %d: %s", int(ps->pid), err.c_str());
        return false;
    }
    ps->ring_user.assign(kRingsPerPeer, 0);
    ps->ring_retired.assign(kRingsPerPeer, false);
    return true;
}

bool XferEngine::Impl::liveness_due(Clock::time_point &last, Clock::time_point now) {
    if (now - last < kLivenessPeriod) return false;
    last = now;
    return true;
}

bool XferEngine::Impl::stalled(Clock::time_point moved, Clock::time_point now) const {
    return cfg.stall_timeout_s > 0 &&
           std::chrono::duration<double>(now - moved).count() > cfg.stall_timeout_s;
}

void XferEngine::Impl::check_peers(Clock::time_point now) {
    for (auto &kv : peers) {
        PeerState *ps = kv.second.get();
        if (now - ps->last_check < kLivenessPeriod) continue;
        bool waiting = false;
        for (auto &x : xfers) {
            if (!x->done && x->ps == ps && !x->direct) {
                waiting = true;
                break;
            }
        }
        if (!waiting || !liveness_due(ps->last_check, now)) continue;
        if (!process_alive(ps->pid, ps->start)) drop_peer(ps, -ECONNRESET, "died");
    }
    std::vector<std::pair<pid_t, uint64_t>> dead;
    for (auto &op : serving) {
        auto key = std::make_pair(op->pid, op->start);
        auto &last = req_checked[key];
        if (last == Clock::time_point{}) last = now;
        if (liveness_due(last, now) && !process_alive(op->pid, op->start)) {
            dead.push_back(key);
        }
    }
    for (auto &d : dead) drop_requester(d.first, d.second);
}

unsigned XferEngine::Impl::progress() {
    unsigned events = 0;
    if (!queued.empty()) flush_queued();
    // nothing in flight on either side: no liveness to check and nothing to
    // poll, so host-only progress loops read no clock (check_peers would
    // find nothing to do)
    if (xfers.empty() && serving.empty()) return 0;
    const auto now = Clock::now();
    check_peers(now);
    std::string why;
    // (device, stream slot) pairs seen with a copy pending: copies issued
    // later on the same stream are pending too, so they are not queried
    uint64_t blocked = 0;
    auto stream_bit = [](const cuda::CopyToken &t) -> uint64_t {
        const unsigned b = unsigned(t.device) * cuda::DeviceManager::kStreamSlots + t.slot;
        return t.device >= 0 && b < 64 ? uint64_t{1} << b : 0;
    };
    for (auto &xp : xfers) {
        Xfer *x = xp.get();
        if (x->done) continue;
        bool busy = false;
        int r = 0;
        if (x->direct) {
            if (!x->toks.empty() && (blocked & stream_bit(x->toks.front())) != 0) continue;
            r = poll_direct(x, &why);
            if (r < 0) r = -EIO;
            if (r == 0 && !x->toks.empty()) blocked |= stream_bit(x->toks.front());
        } else {
            if (!x->ctrl_sent) {
                r = staged_kickoff(x);
                if (r <= 0) {
                    if (r < 0) {
                        finish(x, r);
                        ++events;
                    }
                    continue;
                }
                busy = true;
            }
            r = x->pipe.step(&busy, &why); // a failed pipe has aborted its copies
            if (busy || r != 0 || x->moved == Clock::time_point{}) {
                x->moved = now;
            } else if (stalled(x->moved, now)) {
                // a live peer that stopped serving (security review M1 c)
                GP_ERROR("xfer %llu: staged transfer with pid %d moved nothing for %.1f s: "
                         "failed (UCX_GDRPIPE_STALL_TIMEOUT)",
                         static_cast<unsigned long long>(x->id), int(x->ps->pid),
                         cfg.stall_timeout_s);
                x->pipe.abort_copies();
                r = -ETIMEDOUT;
                why = "stalled";
            }
        }
        if (r == -ESTALE) {
            // the owner's buffer was freed in flight (its application's
            // error): nothing was served, the data is undefined; completing
            // lets UCP end both sides' requests (an error here would leave
            // the peer's waiting for an acknowledgement that never comes)
            st.skipped++;
            GP_PEER_ERROR("xfer %llu with pid %d: %s: completed without its data",
                          static_cast<unsigned long long>(x->id), int(x->ps->pid), why.c_str());
            x->sampled = false;
            finish(x, 0);
        } else if (r < 0) {
            GP_DEBUG("xfer %llu failed: %s", static_cast<unsigned long long>(x->id), why.c_str());
            finish(x, r);
        } else if (r == 1) {
            finish(x, 0);
        }
        if (busy || r != 0) ++events;
    }
    for (auto it = serving.begin(); it != serving.end();) {
        ServeOp *op = it->get();
        bool busy = false;
        int r = op->pipe.step(&busy, &why);
        if (busy) ++events;
        if (busy || r != 0) {
            op->moved = now;
        } else if (stalled(op->moved, now)) {
            GP_ERROR("xfer: serving pid %d transfer %llu: the requester moved nothing for "
                     "%.1f s: dropped (UCX_GDRPIPE_STALL_TIMEOUT)", int(op->pid),
                     static_cast<unsigned long long>(op->pipe.xfer_id()), cfg.stall_timeout_s);
            op->pipe.abort_copies();
            r = -ETIMEDOUT;
        }
        if (r == 0) {
            ++it;
            continue;
        }
        if (r == 1) {
            st.served.xfers++;
            st.served.bytes += op->pipe.len();
        } else {
            if (r != -ECANCELED) op->pipe.ring()->error.store(EIO, std::memory_order_release);
            GP_DEBUG("xfer: serving pid %d transfer %llu failed: %s", int(op->pid),
                     static_cast<unsigned long long>(op->pipe.xfer_id()), why.c_str());
        }
        it = serving.erase(it);
        ++events;
    }
    run_callbacks();
    return events;
}

XferEngine::XferEngine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

std::unique_ptr<XferEngine> XferEngine::create(wire::ShmIface *wire, const XferConfig &cfg,
                                               std::string *err) {
    if (wire == nullptr) {
        *err = "no wire interface";
        return nullptr;
    }
    auto impl = std::make_unique<Impl>();
    impl->wire = wire;
    impl->cfg = normalize_config(cfg);
    impl->chunk_auto = cfg.chunk_size == 0;
    impl->depth_auto = cfg.depth == 0;
    {
        // the first engine of this process (a forked child counts anew)
        static pid_t first_pid = 0;
        static double first_time = 0.0;
        if (first_pid != ::getpid()) {
            first_pid = ::getpid();
            first_time = model::wall_clock_now();
        }
        impl->xcfg.fresh_after = first_time;
    }
    impl->xcfg.mode = cfg.calibrate;
    if (!cfg.calib_dir.empty()) impl->xcfg.dir = cfg.calib_dir;
    if (cfg.calib_budget_s > 0) impl->xcfg.budget_s = cfg.calib_budget_s;
    if (cfg.calib_wait_s > 0) impl->xcfg.wait_s = cfg.calib_wait_s;
    impl->online_samples = cfg.calib_online;
    if (cfg.calib_max_size > 0) impl->xcfg.max_bytes = cfg.calib_max_size;
    if (segment_bytes(kRingsPerPeer, impl->cfg.depth, impl->cfg.chunk_size) == 0) {
        *err = "invalid staged pipeline shape";
        return nullptr;
    }
    import_cache_configure(impl->cfg.cache_max_regions, impl->cfg.cache_max_bytes);
    return std::unique_ptr<XferEngine>(new XferEngine(std::move(impl)));
}

XferEngine::~XferEngine() {
    Impl &m = *impl_;
    const char *env = std::getenv("UCX_GDRPIPE_STATS");
    if (env != nullptr && (env[0] == 'y' || env[0] == 'Y' || env[0] == '1')) {
        std::string s = format_stats();
        size_t pos = 0;
        while (pos < s.size()) {
            size_t nl = s.find('\n', pos);
            if (nl == std::string::npos) nl = s.size();
            GP_INFO("%s", s.substr(pos, nl - pos).c_str());
            pos = nl + 1;
        }
    }
    if (!m.queued.empty()) m.flush_queued();
    for (auto &x : m.xfers) {
        if (x->done) continue;
        m.wait_direct(x.get());
        x->pipe.abort_copies();
        m.finish(x.get(), -ECANCELED);
    }
    m.run_callbacks();
    for (auto &op : m.serving) op->pipe.abort_copies();
    m.serving.clear();
    m.attached.clear();
    for (auto &kv : m.peers) {
        if (import_cache_exists()) import_cache().invalidate_space(kv.second->space);
    }
    m.peers.clear();
}

bool XferEngine::Impl::local_gone(const Xfer &x, const PeerState *ps, bool is_get) {
    for (const LocalSeg &s : x.mem.segs) {
        if (s.dev >= 0 || cpu_accessible(s)) continue;
        st.skipped++;
        GP_PEER_ERROR("xfer: %s of %zu B with pid %d: local buffer %p is neither device memory "
                      "nor accessible host memory (freed while its transfer was in flight?): "
                      "completed without its data", is_get ? "get" : "put", x.len, int(ps->pid),
                      static_cast<void *>(s.p));
        return true;
    }
    return false;
}

int XferEngine::start(wire::ShmPeer *peer, bool is_get, const struct iovec *local, size_t iovcnt,
                      uint64_t remote_addr, const gp_rkey_t *rkey, DoneCb cb, void *arg) {
    Impl &m = *impl_;
    if (peer == nullptr || rkey == nullptr || (local == nullptr && iovcnt != 0)) return -EINVAL;
    if (const char *why = gp_rkey_check(rkey)) {
        GP_PEER_ERROR("xfer: remote key rejected: %s", why);
        return -EINVAL;
    }
    if (m.queued.size() >= GP_COPY_BATCH_MAX) m.flush_queued(); // a round's launch is full
    auto x = std::make_unique<Xfer>();
    if (!classify(local, iovcnt, &x->mem)) return -EINVAL;
    x->len = x->mem.len;
    if (x->len == 0) return 0;
    if (remote_addr < rkey->base || remote_addr + x->len > rkey->base + rkey->length ||
        remote_addr + x->len < remote_addr) {
        GP_ERROR("xfer: [%#llx, +%zu) outside the remote key's range",
                 static_cast<unsigned long long>(remote_addr), x->len);
        return -EINVAL;
    }
    PeerState *ps = m.peer_state(peer);
    if (rkey->pid != ps->pid) {
        GP_ERROR("xfer: remote key of pid %d used with peer pid %d", int(rkey->pid), int(ps->pid));
        return -EINVAL;
    }
    // A dead peer is caught here (at most one liveness period late) or by
    // check_peers() while a transfer waits; /proc costs a few us, too much
    // for every message.
    const auto now = Clock::now();
    if (now - ps->last_alive >= kLivenessPeriod) {
        if (!process_alive(ps->pid, ps->start)) return -ECONNRESET;
        ps->last_alive = now;
    }
    // a host segment of a transfer the driver or the staging copies carry
    // must be memory the CPU can touch: an application that freed a device
    // buffer while its transfer is in flight (erroneous, its data undefined)
    // gets the transfer completed without data instead of a fault
    if ((rkey->kind != GP_RKEY_HOST || !x->mem.all_host) && m.local_gone(*x, ps, is_get)) {
        return 0;
    }
    x->id = m.next_id++;
    x->ps = ps;
    x->is_get = is_get;
    x->remote = remote_addr;
    x->rkey = *rkey;
    x->cb = cb;
    x->arg = arg;

    if (rkey->kind == GP_RKEY_HOST && x->mem.all_host && wire::cma_available()) {
        std::vector<iovec> iov;
        for (const LocalSeg &s : x->mem.segs) iov.push_back({s.p, s.len});
        ssize_t n = is_get ? wire::cma_read(ps->pid, iov.data(), iov.size(), remote_addr)
                           : wire::cma_write(ps->pid, iov.data(), iov.size(), remote_addr);
        if (n == ssize_t(x->len)) {
            m.st.cma.xfers++;
            m.st.cma.bytes += x->len;
            return 0;
        }
        if (m.local_gone(*x, ps, is_get)) return 0;
        GP_DEBUG("xfer: CMA with pid %d: %zd (%s): staged", int(ps->pid), n,
                 n < 0 ? std::strerror(int(-n)) : "short");
        m.st.fallbacks++;
    }

    // host keys are served by CMA above or staged; device keys prefer the
    // direct path below the threshold (GP_RKEY_CUDA_NONE: counted fallback)
    // (thresh: configured, or measured per device pair: crossover.hpp)
    const size_t thresh = m.cfg.thresh == kThreshAuto ? kFallbackThresh : m.cfg.thresh;
    bool auto_direct = x->len < thresh;
    if (m.cfg.path == PathMode::automatic) {
        x->pair = m.pair_for(x.get());
        if (x->pair != nullptr) auto_direct = x->pair->rule.path_for(x->len) == model::Path::direct;
    }
    if (x->pair != nullptr && x->pair->check && x->pair->check->active()) {
        if (auto p = x->pair->check->pick(x->len, m.xfers.empty())) {
            auto_direct = *p == model::Path::direct;
            // steady-state costs only: a staged sample needs the peer's
            // staging segment in place (made, and attached by the owner, at
            // the first staged transfer); a direct one restarts its clock
            // after the import (try_direct)
            x->sampled = auto_direct || (x->ps->seg != nullptr);
            x->t_start = Clock::now();
        }
    }
    // without CUDA here the staged path is the only one (not a fallback)
    const bool want_direct =
        rkey->kind != GP_RKEY_HOST && cuda::driver().available() &&
        (m.cfg.path == PathMode::direct || (m.cfg.path == PathMode::automatic && auto_direct));
    if (want_direct) {
        const int d = m.try_direct(x.get());
        if (d < 0) {
            m.finish(x.get(), d);
            return d;
        }
        if (d == 0) m.st.fallbacks++;
    }
    if (x->direct && x->toks.empty() && !x->queued) {
        m.finish(x.get(), 0); // copied synchronously: complete, no callback
        return 0;
    }
    if (!x->direct) {
        int r = m.staged_kickoff(x.get());
        if (r < 0) {
            m.finish(x.get(), r);
            return r;
        }
    }
    m.xfers.push_back(std::move(x));
    return 1;
}

unsigned XferEngine::progress() { return impl_->progress(); }

void XferEngine::on_control(const void *data, uint32_t len) { impl_->control(data, len); }

size_t XferEngine::outstanding() const noexcept {
    return impl_->xfers.size() + impl_->serving.size();
}

void XferEngine::peer_failed(wire::ShmPeer *peer) {
    Impl &m = *impl_;
    auto it = m.peers.find(peer);
    if (it != m.peers.end()) {
        m.drop_peer(it->second.get(), -ECONNRESET, "failed (reported)");
        m.peers.erase(it);
    }
    m.run_callbacks();
}

const XferConfig &XferEngine::config() const noexcept { return impl_->cfg; }
XferStats XferEngine::stats() const noexcept { return impl_->st; }

std::string XferEngine::format_stats() const {
    std::string s = pipeline::format_stats(impl_->st);
    for (const auto &kv : impl_->peers) {
        const PeerState *ps = kv.second.get();
        if (!ps->seg) continue;
        char buf[128];
        std::snprintf(buf, sizeof(buf), "\nstaging rings to pid %d: %zu B x %u (%s)", int(ps->pid),
                      ps->seg->chunk(), ps->seg->depth(),
                      ps->have_shape ? "calibrated" : "configured");
        s += buf;
    }
    for (const auto &kv : impl_->pairs) {
        const PairUse &u = kv.second;
        char buf[96];
        std::snprintf(buf, sizeof(buf), " -> direct=%llu staged=%llu",
                      static_cast<unsigned long long>(u.direct),
                      static_cast<unsigned long long>(u.staged));
        if (u.choice != nullptr) {
            s += "\ncrossover for " + u.choice->label + " " + u.choice->describe() + buf;
            if (!u.corrected.empty()) s += "\n  then " + u.corrected;
        } else {
            s += "\ncrossover for " + side_name(kv.first.first) + "->" + side_name(kv.first.second) + " = " +
                 u.rule.describe() + " (configured)" + buf;
        }
    }
    if (export_cache_exists()) s += "\n" + export_cache().format_stats();
    if (import_cache_exists()) s += "\n" + import_cache().format_stats();
    return s;
}

std::string format_stats(const XferStats &s) {
    char buf[512];
    std::snprintf(buf, sizeof(buf),
                  "xfer: direct=%llu (%llu B) staged=%llu (%llu B) cma=%llu (%llu B) "
                  "served=%llu (%llu B) failed=%llu skipped=%llu fallbacks=%llu ctrl_dropped=%llu "
                  "peers_failed=%llu copy_batches=%llu (%llu transfers)",
                  static_cast<unsigned long long>(s.direct.xfers),
                  static_cast<unsigned long long>(s.direct.bytes),
                  static_cast<unsigned long long>(s.staged.xfers),
                  static_cast<unsigned long long>(s.staged.bytes),
                  static_cast<unsigned long long>(s.cma.xfers),
                  static_cast<unsigned long long>(s.cma.bytes),
                  static_cast<unsigned long long>(s.served.xfers),
                  static_cast<unsigned long long>(s.served.bytes),
                  static_cast<unsigned long long>(s.failed),
                  static_cast<unsigned long long>(s.skipped),
                  static_cast<unsigned long long>(s.fallbacks),
                  static_cast<unsigned long long>(s.ctrl_dropped),
                  static_cast<unsigned long long>(s.peers_failed),
                  static_cast<unsigned long long>(s.copy_batches),
                  static_cast<unsigned long long>(s.batched));
    return buf;
}

} // namespace gdrpipe::pipeline
