// The transfer engine: path choice, direct copies, the staged pipeline on
// both sides (requester and owner), liveness and failure handling.
#include "gdrpipe/pipeline/engine.hpp"

#include "gdrpipe/cuda/context.hpp"
#include "gdrpipe/cuda/memory.hpp"
#include "gdrpipe/log.hpp"
#include "gdrpipe/pipeline/chunk_pipe.hpp"
#include "gdrpipe/pipeline/control.hpp"
#include "gdrpipe/pipeline/crossover.hpp"
#include "gdrpipe/pipeline/online_check.hpp"
#include "gdrpipe/pipeline/import_cache.hpp"
#include "gdrpipe/pipeline/registry.hpp"
#include "gdrpipe/pipeline/ring.hpp"
#include "gdrpipe/pipeline/local_mem.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <map>
#include <tuple>
#include <unordered_map>

namespace gdrpipe::pipeline {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kLivenessPeriod = std::chrono::milliseconds(50);
constexpr unsigned kRingsPerPeer = 4;
constexpr unsigned kSlotRequester = 2;
constexpr unsigned kSlotOwner = 3;
// Direct copies run on one stream: on the H200 pair several streams gave no
// more peer-copy bandwidth (one direction uses one copy engine; gdrpipe_physref
// "pull-bw", bench/RESULTS.md), and each stream costs a thread in the simulator.
constexpr unsigned kSlotDirect = 1;
// calibrated pipeline shapes are capped at this many bytes per ring
constexpr size_t kMaxCalibratedRing = size_t{32} << 20;

// "GPU <n>" or "host" (log lines of configured thresholds)
std::string side_name(int dev) { return dev < 0 ? std::string("host") : "GPU " + std::to_string(dev); }

// The threshold of one (source, destination) pair as this engine
// uses it, and what it did with it (stats report).
struct PairUse {
    const PairChoice *choice = nullptr; // null: configured threshold
    SizeRule rule;                       // the path per size
    uint64_t direct = 0, staged = 0;    // completed transfers
    std::unique_ptr<OnlineCheck> check;  // measured pairs: the calibration checked
    std::string corrected;               // what the check changed (stats report)
};

// One side of a staged transfer on one ring: the shared chunk pipeline
// (chunk_pipe.hpp) over the ring (RingWire), copies on a stream slot.
StreamCopier &copier_for(unsigned stream_slot) {
    static StreamCopier requester(kSlotRequester), owner(kSlotOwner);
    return stream_slot == kSlotOwner ? owner : requester;
}

struct Pipe {
    RingWire wire;
    ChunkPipe chunks;
    bool active = false;

    void init(StagingSegment *s, unsigned r, uint64_t id, LocalMem mem, bool producer,
              bool wait_drain, bool check_id, unsigned stream_slot) {
        wire.reset(s, r, id, check_id);
        chunks.init(producer ? ChunkPipe::Role::producer : ChunkPipe::Role::consumer, &wire,
                    &copier_for(stream_slot), std::move(mem), s->chunk(), s->depth(),
                    wait_drain);
        active = true;
    }
    RingHeader *ring() const noexcept { return wire.ring(); }
    uint64_t xfer_id() const noexcept { return wire.xfer_id(); }
    size_t len() const noexcept { return chunks.len(); }
    void abort_copies() noexcept {
        if (active) chunks.abort();
    }
    // 1 done, 0 in progress, <0 failed. *busy: something moved.
    int step(bool *busy, std::string *why) { return chunks.step(busy, why); }
};

struct PeerState;

struct Xfer {
    uint64_t id = 0;
    PeerState *ps = nullptr;
    bool is_get = false;
    size_t len = 0;
    uint64_t remote = 0;
    gp_rkey_t rkey{};
    XferDoneCb cb = nullptr;
    void *arg = nullptr;
    bool direct = false;
    PairUse *pair = nullptr;
    bool sampled = false;          // timed for the pair's OnlineCheck
    Clock::time_point t_start{};
    LocalMem mem;
    // direct
    cache::RegionRef imp;
    Tokens toks;
    // staged
    int ring = -1;
    bool ctrl_sent = false;
    Pipe pipe;
    // completion
    bool done = false;
    int status = 0;
};

struct PeerState {
    wire::ShmPeer *peer = nullptr;
    pid_t pid = -1;
    uint64_t start = 0;
    cache::SpaceId space = 0;
    std::unique_ptr<StagingSegment> seg;
    std::vector<uint64_t> ring_user;   // xfer id using the ring, 0 free
    std::vector<bool> ring_retired;    // aborted while the owner may still touch it
    Clock::time_point last_check{};
    Clock::time_point last_alive{}; // last time start() saw it alive
    bool have_shape = false;           // calibrated pipeline shape for the segment
    model::PipelineParams shape;
};

struct ServeOp {
    pid_t pid = -1;
    uint64_t start = 0;
    std::shared_ptr<StagingSegment> seg;
    Pipe pipe;
};

using AttachKey = std::tuple<pid_t, uint64_t, uint64_t>;

} // namespace

XferConfig normalize_config(const XferConfig &in) noexcept {
    XferConfig c = in;
    if (c.path != PathMode::direct && c.path != PathMode::staged) c.path = PathMode::automatic;
    if (c.thresh == 0) c.thresh = SIZE_MAX;
    if (c.chunk_size == 0) c.chunk_size = size_t{2} << 20;
    if (c.chunk_size > (size_t{64} << 20)) c.chunk_size = size_t{64} << 20;
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

struct XferEngine::Impl {
    wire::ShmIface *wire = nullptr;
    XferConfig cfg{};
    bool chunk_auto = false; // CHUNK_SIZE / PIPELINE_DEPTH not set: calibrated shape
    bool depth_auto = false;
    CrossoverConfig xcfg;
    unsigned online_samples = 8; // per path (UCX_GDRPIPE_CALIB_ONLINE; 0: off)
    std::map<std::pair<int, int>, PairUse> pairs;
    XferStats st;
    uint64_t next_id = 1;
    std::unordered_map<wire::ShmPeer *, std::unique_ptr<PeerState>> peers;
    std::list<std::unique_ptr<Xfer>> xfers;
    std::list<std::unique_ptr<ServeOp>> serving;
    std::map<AttachKey, std::shared_ptr<StagingSegment>> attached;
    std::map<std::pair<pid_t, uint64_t>, Clock::time_point> req_checked;
    std::vector<std::unique_ptr<Xfer>> completed; // callbacks pending

    PeerState *peer_state(wire::ShmPeer *peer) {
        const pid_t pid = peer->pid();
        const uint64_t start = peer->fifo().header()->owner_start_time;
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

    // A sampled transfer completed: into the pair's check; when that
    // completes a size class, the pair's rule is recomputed from the
    // corrected curves and the classes go into the cache.
    void record_sample(Xfer *x) {
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

    void finish(Xfer *x, int status) {
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

    void release_ring(Xfer *x, bool aborted) {
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

    // Fails every transfer of `ps` now and forgets its rings and imports.
    void drop_peer(PeerState *ps, int status, const char *why) {
        unsigned n = 0;
        for (auto &x : xfers) {
            if (x->done || x->ps != ps) continue;
            wait_tokens(x->toks);
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

    bool ensure_segment(PeerState *ps) {
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

    // 1 sent, 0 retry later, <0 failed
    int staged_kickoff(Xfer *x) {
        PeerState *ps = x->ps;
        if (ps->peer->fifo().max_payload() < sizeof(CtrlMsg)) {
            GP_ERROR("xfer: the FIFO elements of pid %d hold %u bytes, a control message needs %zu",
                     int(ps->pid), ps->peer->fifo().max_payload(), sizeof(CtrlMsg));
            return -EMSGSIZE;
        }
        if (x->ring < 0) {
            if (!ensure_segment(ps)) return -ENOMEM;
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
        ctrl_seal(m);
        std::memcpy(buf, &m, sizeof(m));
        ps->peer->fifo().commit(idx, kCtrlAmId, sizeof(m));
        x->ctrl_sent = true;
        return 1;
    }

    // Direct path set-up and issue: 1 issued, 0 not possible (fall back to
    // staged), -EINVAL the peer's rkey does not match what its handle maps.
    int try_direct(Xfer *x) {
        if (x->rkey.kind != GP_RKEY_CUDA_IPC && x->rkey.kind != GP_RKEY_CUDA_VMM &&
            x->rkey.kind != GP_RKEY_CUDA_POOL) {
            return 0;
        }
        if (!cuda::driver().available()) return 0;
        const bool loopback = x->rkey.pid == ::getpid();
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
            ptr = reinterpret_cast<char *>(x->remote);
        } else {
            auto res = import_buffer(x->ps->space, x->rkey, dev);
            if (!res && res.error().code == kImportExtentMismatch) {
                GP_ERROR("xfer %llu: remote key of pid %d for [%#llx, +%llu) rejected: %s",
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
        cuda::Status s = copy_direct(x, ptr, remote_dev);
        if (!s.ok()) {
            // nothing is lost: what was issued completes, then the staged path redoes it all
            wait_tokens(x->toks);
            x->imp.reset();
            GP_DEBUG("xfer %llu: direct copy failed (%s): staged",
                     static_cast<unsigned long long>(x->id), s.message.c_str());
            return 0;
        }
        x->direct = true;
        return 1;
    }

    // Issues the direct copies of `x` between its local memory and `ptr`.
    // Small single-buffer device transfers complete before this returns.
    cuda::Status copy_direct(Xfer *x, char *ptr, int remote_dev) {
        // cfg.sync_copy_max (UCX_GDRPIPE_SYNC_COPY_MAX, default 0): small
        // copies through the synchronous driver copy, which must then also
        // wait for the legacy stream (cuMemcpy returns before a D2D copy
        // lands); measured slower than an async copy plus event on the H200
        // pair (gdrpipe_physref "single"), kept as an option
        if (x->len <= cfg.sync_copy_max && x->mem.segs.size() == 1 &&
            x->mem.segs[0].dev >= 0) {
            const LocalSeg &s = x->mem.segs[0];
            cuda::CopyOptions opt;
            opt.device = s.dev;
            opt.sync_api = true;
            return x->is_get ? cuda::copy(s.p, ptr, x->len, opt)
                             : cuda::copy(ptr, s.p, x->len, opt);
        }
        return copy_local(x->mem, 0, x->len, ptr, remote_dev, !x->is_get, kSlotDirect, x->toks);
    }

    bool liveness_due(Clock::time_point &last, Clock::time_point now) {
        if (now - last < kLivenessPeriod) return false;
        last = now;
        return true;
    }

    void check_peers(Clock::time_point now) {
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

    void drop_requester(pid_t pid, uint64_t start) {
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

    void run_callbacks() {
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

    // The rule of the transfer's (source, destination) pair (PATH=auto,
    // device key). Also records the calibrated pipeline shape for the peer's
    // rings if not yet created. nullptr: configured/fallback threshold.
    PairUse *pair_for(Xfer *x) {
        if (x->rkey.kind != GP_RKEY_CUDA_IPC && x->rkey.kind != GP_RKEY_CUDA_VMM) return nullptr;
        if (!cuda::driver().available()) return nullptr;
        // -1: pageable/host local memory; mixed host and device: no pair
        const int local = x->mem.all_host ? -1 : x->mem.dev;
        if (local < 0 && !x->mem.all_host) return nullptr;
        const bool loopback = x->rkey.pid == ::getpid();
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

    void control(const void *data, uint32_t len);
    unsigned progress();
};

void XferEngine::Impl::control(const void *data, uint32_t len) {
    if (const char *why = ctrl_check(data, len)) {
        st.ctrl_dropped++;
        GP_ERROR("xfer: dropped a control message (%u bytes): %s", unsigned(len), why);
        return;
    }
    CtrlMsg m;
    std::memcpy(&m, data, sizeof(m));
    auto drop = [&](const char *why) {
        st.ctrl_dropped++;
        GP_ERROR("xfer: dropped control message of pid %d transfer %llu: %s", int(m.req_pid),
                 static_cast<unsigned long long>(m.xfer_id), why);
    };
    if (!process_alive(m.req_pid, m.req_start_time)) return drop("requester not alive");
    AttachKey key{m.req_pid, m.req_start_time, m.seg_id};
    std::shared_ptr<StagingSegment> seg;
    auto it = attached.find(key);
    if (it != attached.end()) {
        seg = it->second;
    } else {
        std::string err;
        auto s = StagingSegment::attach(m.req_pid, m.seg_fd, m.seg_id, m.seg_size, &err);
        if (!s) return drop(err.c_str());
        seg = std::shared_ptr<StagingSegment>(std::move(s));
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
    if (!registered(m.remote_addr, m.length, &host)) {
        rh->error.store(EACCES, std::memory_order_release);
        return drop("range not registered");
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
            rh->error.store(EFAULT, std::memory_order_release);
            return drop("registered device memory is gone");
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
    serving.push_back(std::move(op));
}

unsigned XferEngine::Impl::progress() {
    unsigned events = 0;
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
            r = poll_tokens(x->toks, &why);
            if (r < 0) r = -EIO;
            if (r == 0) blocked |= stream_bit(x->toks.front());
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
        }
        if (r < 0) {
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
    for (auto &x : m.xfers) {
        if (x->done) continue;
        wait_tokens(x->toks);
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

int XferEngine::start(wire::ShmPeer *peer, bool is_get, const struct iovec *local, size_t iovcnt,
                      uint64_t remote_addr, const gp_rkey_t *rkey, DoneCb cb, void *arg) {
    Impl &m = *impl_;
    if (peer == nullptr || rkey == nullptr || (local == nullptr && iovcnt != 0)) return -EINVAL;
    if (const char *why = gp_rkey_check(rkey)) {
        GP_ERROR("xfer: remote key rejected: %s", why);
        return -EINVAL;
    }
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
    const bool want_direct =
        rkey->kind != GP_RKEY_HOST &&
        (m.cfg.path == PathMode::direct || (m.cfg.path == PathMode::automatic && auto_direct));
    if (want_direct) {
        const int d = m.try_direct(x.get());
        if (d < 0) {
            m.finish(x.get(), d);
            return d;
        }
        if (d == 0) m.st.fallbacks++;
    }
    if (x->direct && x->toks.empty()) {
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
                  "served=%llu (%llu B) failed=%llu fallbacks=%llu ctrl_dropped=%llu "
                  "peers_failed=%llu",
                  static_cast<unsigned long long>(s.direct.xfers),
                  static_cast<unsigned long long>(s.direct.bytes),
                  static_cast<unsigned long long>(s.staged.xfers),
                  static_cast<unsigned long long>(s.staged.bytes),
                  static_cast<unsigned long long>(s.cma.xfers),
                  static_cast<unsigned long long>(s.cma.bytes),
                  static_cast<unsigned long long>(s.served.xfers),
                  static_cast<unsigned long long>(s.served.bytes),
                  static_cast<unsigned long long>(s.failed),
                  static_cast<unsigned long long>(s.fallbacks),
                  static_cast<unsigned long long>(s.ctrl_dropped),
                  static_cast<unsigned long long>(s.peers_failed));
    return buf;
}

} // namespace gdrpipe::pipeline
