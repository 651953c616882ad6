// The transfer engine's internals (engine.cc: the engine and its peers;
// engine_requester.cc: paths and transfers of the requesting side;
// engine_owner.cc: serving a peer's staged requests). Internal to the engine.
#pragma once
#include "gdrpipe/pipeline/engine.hpp"

#include "gdrpipe/pipeline/chunk_pipe.hpp"
#include "gdrpipe/pipeline/crossover.hpp"
#include "gdrpipe/pipeline/import_cache.hpp"
#include "gdrpipe/pipeline/local_mem.hpp"
#include "gdrpipe/pipeline/online_check.hpp"
#include "gdrpipe/pipeline/ring.hpp"

#include <chrono>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace gdrpipe::pipeline {
namespace engine_detail {
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
// the largest chunk normalize_config allows
constexpr size_t kMaxChunkSize = size_t{64} << 20;

// "GPU <n>" or "host" (log lines of configured thresholds)
inline std::string side_name(int dev) { return dev < 0 ? std::string("host") : "GPU " + std::to_string(dev); }

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
inline StreamCopier &copier_for(unsigned stream_slot) {
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

// One launch of the batched copy kernel: its transfers share its event.
struct CopyBatch {
    cuda::CopyToken tok;
    int state = 0; // 0 in flight, 1 landed, -1 failed
    std::string why;
    // 1 landed, 0 in flight, -1 failed (why)
    int poll();
    // blocks until it landed or failed
    void wait() noexcept;
    ~CopyBatch() { wait(); }
};

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
    Clock::time_point moved{};         // staged: the last step that moved anything
    LocalMem mem;
    // direct
    cache::RegionRef imp;
    Tokens toks;
    bool queued = false;               // waiting for the round's batched launch
    char *peer_ptr = nullptr;          // queued: the peer's memory, mapped here
    int remote_dev = -1;
    std::shared_ptr<CopyBatch> batch;  // copied by a batched launch
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
    Clock::time_point moved{};         // the last step that moved anything
};

using AttachKey = std::tuple<pid_t, uint64_t, uint64_t>;

} // namespace engine_detail

struct XferEngine::Impl {
    using Clock = engine_detail::Clock;
    using PairUse = engine_detail::PairUse;
    using Pipe = engine_detail::Pipe;
    using Xfer = engine_detail::Xfer;
    using PeerState = engine_detail::PeerState;
    using ServeOp = engine_detail::ServeOp;
    using AttachKey = engine_detail::AttachKey;

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
    unsigned round_depth = 0;          // begin_round() nesting
    std::vector<Xfer *> queued;        // direct copies of this round (flush_queued)
    bool batch_off = false;            // the kernel failed to load or launch

    PeerState *peer_state(wire::ShmPeer *peer);
    // A sampled transfer completed: into the pair's check; when that
    // completes a size class, the pair's rule is recomputed from the
    // corrected curves and the classes go into the cache.
    void record_sample(Xfer *x);
    void finish(Xfer *x, int status);
    void release_ring(Xfer *x, bool aborted);
    // A host segment of x the CPU cannot reach (a device buffer freed while
    // its transfer was in flight): counted as skipped and logged (bounded).
    bool local_gone(const Xfer &x, const PeerState *ps, bool is_get);
    // Fails every transfer of `ps` now and forgets its rings and imports.
    void drop_peer(PeerState *ps, int status, const char *why);
    bool ensure_segment(PeerState *ps);
    // 1 sent, 0 retry later, <0 failed
    int staged_kickoff(Xfer *x);
    // Direct path set-up and issue (start() calls it only with CUDA here):
    // 1 issued, 0 not possible (fall back to staged), -EINVAL the peer's
    // rkey does not match what its handle maps.
    int try_direct(Xfer *x);
    // Issues the direct copies of `x` between its local memory and `ptr`.
    cuda::Status copy_direct(Xfer *x, char *ptr, int remote_dev);
    // copy_direct(); when it fails, waits for what it issued and drops the
    // import (the caller falls back to staged): false
    bool issue_direct(Xfer *x, char *ptr, int remote_dev);
    // Whether x's copy can wait for the round's batched launch.
    bool can_queue(const Xfer *x, int remote_dev);
    // Launches the queued copies (one kernel per device and up to
    // GP_COPY_BATCH_MAX copies; a lone copy goes to the copy engine); a
    // transfer whose launch fails is copied alone, else staged.
    void flush_queued();
    // 1 landed, 0 in flight, -1 failed (why): tokens or batch
    int poll_direct(Xfer *x, std::string *why);
    void wait_direct(Xfer *x) noexcept;
    bool liveness_due(Clock::time_point &last, Clock::time_point now);
    void check_peers(Clock::time_point now);
    // whether a staged transfer that last moved at `moved` ran past the
    // stall timeout (XferConfig::stall_timeout_s)
    bool stalled(Clock::time_point moved, Clock::time_point now) const;
    void drop_requester(pid_t pid, uint64_t start);
    void run_callbacks();
    // The rule of the transfer's (source, destination) pair (PATH=auto,
    // device key). Also records the calibrated pipeline shape for the peer's
    // rings if not yet created. nullptr: configured/fallback threshold.
    PairUse *pair_for(Xfer *x);
    void control(const void *data, uint32_t len);
    unsigned progress();
};

} // namespace gdrpipe::pipeline
