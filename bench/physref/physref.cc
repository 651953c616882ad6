// gdrpipe_physref -- the physical reference: what the hardware reaches between
// two processes with no MPI, UCX or gdrpipe in between, measured in the same
// run as the benchmarks it is compared with (bench/run_device.sh).
//
//   single: one process, one copy at a time, for each way of waiting for it
//           (stream synchronize, cuStreamQuery spin, event spin, a flag the
//           stream writes into mapped pinned memory, the synchronous API)
//   pingpong: process A (GPU 0) and B (GPU 1) pull each other's buffer
//           through a CUDA IPC mapping; one-way time = round trip / 2
//   pull-bw: A pulls a window of messages from B's buffer, in flight on 1,
//           2 or 4 streams; GB/s
//   bibw:   both pull at once, then both push (write the peer's buffer); total GB/s
//   submit: A's CPU time to queue one copy into B's buffer, per API (the
//           generic async copy, with an event each, the typed D2D copy, one
//           batch call for the whole window), against a copy within its own
//           memory; and the window's GB/s including the wait
//   staged: A copies device->host into a pinned shared ring, B copies
//           host->device out of it; GB/s
//   handover (--handover): A and B take turns, each turn one kind of copy
//           of 8 bytes on its own GPU context: what a turn costs when the
//           other process's context used the GPU last, per pair of kinds
//           (pull: from the peer's buffer through IPC; local: within its own
//           memory; dtoh/htod: to/from pinned host memory; bounce: the
//           peer's buffer to pinned host memory, then to its own; pdtoh/
//           phtod: the synchronous copy to/from pageable memory; memset: a
//           memset of its own memory; none: no GPU work), then turns of
//           several copies, and three pairs from 1 KiB to 1 MiB
//
// Only the CUDA driver (dlopen'ed: $UCX_GDRPIPE_CUDA_LIB or libcuda.so.1).
#include <cuda.h>
#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace {

struct Api {
#define FN(name, sym) decltype(&::name) name = nullptr;
#include "physref_fns.def"
#undef FN
};
Api cu;

bool load() {
    const char *lib = std::getenv("UCX_GDRPIPE_CUDA_LIB");
    void *h = dlopen(lib != nullptr && *lib ? lib : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
        std::fprintf(stderr, "physref: %s\n", dlerror());
        return false;
    }
    bool ok = true;
#define FN(name, sym)                                                                    \
    cu.name = reinterpret_cast<decltype(&::name)>(dlsym(h, sym));                        \
    if (cu.name == nullptr && std::strcmp(sym, "cuStreamWriteValue64_v2") != 0 &&         \
        std::strcmp(sym, "cuMemcpyBatchAsync_v2") != 0 &&                                \
        std::strcmp(sym, "cuMemsetD8Async") != 0) {                                      \
        std::fprintf(stderr, "physref: %s missing\n", sym);                             \
        ok = false;                                                                      \
    }
#include "physref_fns.def"
#undef FN
    return ok;
}

#define CK(call)                                                                         \
    do {                                                                                 \
        CUresult r_ = (call);                                                            \
        if (r_ != CUDA_SUCCESS) {                                                        \
            const char *s_ = nullptr;                                                    \
            cu.cuGetErrorName(r_, &s_);                                                  \
            std::fprintf(stderr, "physref: %s: %s (line %d)\n", #call, s_ ? s_ : "?",   \
                         __LINE__);                                                      \
            std::_Exit(2);                                                               \
        }                                                                                \
    } while (0)

using Clock = std::chrono::steady_clock;
double us_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}
double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

// ---- shared state of the two processes ------------------------------------
struct Shared {
    std::atomic<int> ready[2];
    std::atomic<uint64_t> turn;      // ping-pong token
    std::atomic<uint64_t> barrier[2];
    CUipcMemHandle handle[2];        // each side's buffer
    std::atomic<uint64_t> produced;  // staged ring
    std::atomic<uint64_t> consumed;
    int ndev;
};

void barrier(Shared *sh, int me, uint64_t &gen) {
    ++gen;
    sh->barrier[me].store(gen, std::memory_order_release);
    while (sh->barrier[1 - me].load(std::memory_order_acquire) < gen) {
    }
}

struct Ctx {
    CUdevice dev{};
    CUcontext ctx{};
    std::vector<CUstream> streams;
    volatile uint64_t *flag = nullptr; // mapped pinned, written by the stream
    CUdeviceptr flag_d = 0;
    uint64_t seq = 0;
    bool has_wv = false;
};

void ctx_init(Ctx &c, int ordinal, int nstreams) {
    CK(cu.cuDeviceGet(&c.dev, ordinal));
    CK(cu.cuDevicePrimaryCtxRetain(&c.ctx, c.dev));
    CK(cu.cuCtxSetCurrent(c.ctx));
    c.streams.resize(size_t(nstreams));
    for (auto &s : c.streams) CK(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    void *p = nullptr;
    CK(cu.cuMemHostAlloc(&p, 4096, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
    std::memset(p, 0, 4096);
    c.flag = static_cast<volatile uint64_t *>(p);
    CK(cu.cuMemHostGetDevicePointer(&c.flag_d, p, 0));
    int attr = 0;
    if (cu.cuStreamWriteValue64 != nullptr &&
        cu.cuDeviceGetAttribute(&attr, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS,
                                c.dev) == CUDA_SUCCESS)
        c.has_wv = attr != 0;
}

enum class Wait { sync, query, event, flag, api };
const char *wait_name(Wait w) {
    switch (w) {
    case Wait::sync: return "stream-sync";
    case Wait::query: return "query-spin";
    case Wait::event: return "event-spin";
    case Wait::flag: return "flag-spin";
    case Wait::api: return "sync-api";
    }
    return "?";
}

// One copy and its completion, timed.
double timed_copy(Ctx &c, CUevent ev, Wait w, CUdeviceptr dst, CUdeviceptr src, size_t n) {
    CUstream s = c.streams[0];
    auto t0 = Clock::now();
    if (w == Wait::api) {
        // cuMemcpy returns before device-to-device and pageable
        // host-to-device copies have landed: wait for the legacy stream too
        // (a no-op for the others), so this times completion like the rest
        CK(cu.cuMemcpy(dst, src, n));
        CK(cu.cuStreamSynchronize(CU_STREAM_LEGACY));
        return us_since(t0);
    }
    CK(cu.cuMemcpyAsync(dst, src, n, s));
    switch (w) {
    case Wait::sync: CK(cu.cuStreamSynchronize(s)); break;
    case Wait::query:
        while (cu.cuStreamQuery(s) == CUDA_ERROR_NOT_READY) {
        }
        break;
    case Wait::event:
        CK(cu.cuEventRecord(ev, s));
        while (cu.cuEventQuery(ev) == CUDA_ERROR_NOT_READY) {
        }
        break;
    case Wait::flag: {
        const uint64_t want = ++c.seq;
        CK(cu.cuStreamWriteValue64(s, c.flag_d, want, 0));
        while (*c.flag < want) {
        }
        break;
    }
    case Wait::api: break;
    }
    return us_since(t0);
}

int run_single(int iters) {
    CK(cu.cuInit(0));
    int ndev = 0;
    CK(cu.cuDeviceGetCount(&ndev));
    Ctx c;
    ctx_init(c, 0, 1);
    CUevent ev;
    CK(cu.cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    const size_t maxn = 64 << 10;
    CUdeviceptr d0, d1 = 0;
    CK(cu.cuMemAlloc(&d0, maxn));
    void *pinned = nullptr;
    CK(cu.cuMemHostAlloc(&pinned, maxn, CU_MEMHOSTALLOC_PORTABLE));
    std::vector<char> pageable(maxn, 1);
    if (ndev > 1) {
        Ctx c1;
        ctx_init(c1, 1, 1);
        CK(cu.cuMemAlloc(&d1, maxn));
        CK(cu.cuCtxSetCurrent(c.ctx));
        cu.cuCtxEnablePeerAccess(c1.ctx, 0);
    }
    struct Op {
        const char *name;
        CUdeviceptr dst, src;
    };
    // every copy and wait there can be, the last one of each only where
    // there is a second device or stream memory operations
    const Op all_ops[] = {
        {"H2D pinned", d0, CUdeviceptr(pinned)},
        {"D2H pinned", CUdeviceptr(pinned), d0},
        {"H2D pageable", d0, CUdeviceptr(pageable.data())},
        {"D2H pageable", CUdeviceptr(pageable.data()), d0},
        {"D2D peer 0->1", d1, d0},
    };
    const std::span<const Op> ops(all_ops, d1 != 0 ? 5 : 4);
    std::printf("# single: one process, one copy at a time, median of %d (us)\n", iters);
    std::printf("%-14s %8s", "copy", "size");
    const Wait all_waits[] = {Wait::sync, Wait::query, Wait::event, Wait::api, Wait::flag};
    const std::span<const Wait> waits(all_waits, c.has_wv ? 5 : 4);
    for (Wait w : waits) std::printf(" %12s", wait_name(w));
    std::printf("\n");
    for (const Op &op : ops) {
        for (size_t n : {size_t(8), size_t(4096), size_t(64 << 10)}) {
            std::printf("%-14s %8zu", op.name, n);
            for (Wait w : waits) {
                std::vector<double> t;
                for (int i = 0; i < iters + 50; ++i) {
                    double us = timed_copy(c, ev, w, op.dst, op.src, n);
                    if (i >= 50) t.push_back(us);
                }
                std::printf(" %12.2f", median(t));
            }
            std::printf("\n");
        }
    }
    std::fflush(stdout);
    return 0;
}

// ---- two processes ---------------------------------------------------------
constexpr size_t kBufBytes = size_t(256) << 20;
bool submit_only = false; // --submit
bool handover_only = false; // --handover
constexpr size_t kRingChunk = size_t(2) << 20;
constexpr unsigned kRingDepth = 4;

struct Side {
    int me;
    Shared *sh;
    Ctx c;
    CUdeviceptr buf = 0;   // own buffer (pulled by the peer)
    CUdeviceptr dst = 0;   // own destination of pulls
    CUdeviceptr peer = 0;  // peer's buffer, imported
    CUdeviceptr host = 0;  // pinned host memory of this process (1 MiB)
    char pageable[64]{};   // and pageable
    uint64_t gen = 0;
};

void pull_wait(Side &s, CUdeviceptr dst, CUdeviceptr src, size_t n) {
    CK(cu.cuMemcpyAsync(dst, src, n, s.c.streams[0]));
    if (s.c.has_wv) {
        const uint64_t want = ++s.c.seq;
        CK(cu.cuStreamWriteValue64(s.c.streams[0], s.c.flag_d, want, 0));
        while (*s.c.flag < want) {
        }
    } else {
        CK(cu.cuStreamSynchronize(s.c.streams[0]));
    }
}

// A and B take turns (A first), each running `turn` in its own; the median
// of A's rounds (A's turn start to the end of B's), in us, warm-up left out.
template <class Turn>
double take_turns(Side &s, int iters, Turn &&turn) {
    barrier(s.sh, s.me, s.gen);
    std::vector<double> rt;
    const uint64_t base = s.sh->turn.load();
    barrier(s.sh, s.me, s.gen);
    for (int i = 0; i < iters + 20; ++i) {
        const uint64_t mine = base + 2 * uint64_t(i) + uint64_t(s.me);
        auto t0 = Clock::now();
        while (s.sh->turn.load(std::memory_order_acquire) != mine) {
        }
        turn();
        s.sh->turn.store(mine + 1, std::memory_order_release);
        if (s.me == 0) {
            while (s.sh->turn.load(std::memory_order_acquire) != mine + 2) {
            }
            if (i >= 20) rt.push_back(us_since(t0));
        }
    }
    if (s.me == 1) {
        while (s.sh->turn.load(std::memory_order_acquire) != base + 2 * uint64_t(iters + 20)) {
        }
    }
    return median(rt);
}

void pingpong(Side &s, int iters) {
    if (s.me == 0)
        std::printf("# pingpong: A pulls B's buffer, then B pulls A's; one-way us (median of "
                    "%d round trips)\n%10s %10s\n",
                    iters, "size", "one-way");
    for (size_t n : {size_t(8), size_t(4096), size_t(64) << 10, size_t(1) << 20,
                     size_t(4) << 20}) {
        const double rt = take_turns(s, iters, [&] { pull_wait(s, s.dst, s.peer, n); });
        if (s.me == 0) std::printf("%10zu %10.2f\n", n, rt / 2);
        std::fflush(stdout);
    }
}

// Streams a window of pulls (push: writes into the peer's buffer instead) on
// `nstreams` streams (round robin); GB/s.
double pull_window(Side &s, size_t n, unsigned window, unsigned nstreams, int reps,
                   bool push = false) {
    std::vector<double> gbs;
    for (int r = 0; r < reps; ++r) {
        auto t0 = Clock::now();
        for (unsigned i = 0; i < window; ++i) {
            size_t off = (size_t(i) * n) % (kBufBytes - n + 1);
            if (push)
                CK(cu.cuMemcpyAsync(s.peer + off, s.buf + off, n, s.c.streams[i % nstreams]));
            else
                CK(cu.cuMemcpyAsync(s.dst + off, s.peer + off, n, s.c.streams[i % nstreams]));
        }
        for (unsigned k = 0; k < nstreams; ++k) CK(cu.cuStreamSynchronize(s.c.streams[k]));
        gbs.push_back(double(n) * window / (us_since(t0) * 1e3));
    }
    return median(gbs);
}

void bandwidth(Side &s) {
    const size_t sizes[] = {size_t(64) << 10, size_t(1) << 20, size_t(4) << 20,
                            size_t(64) << 20};
    const unsigned streams[] = {1, 2, 4};
    barrier(s.sh, s.me, s.gen);
    if (s.me == 0) {
        std::printf("# pull-bw: A pulls from B (push: A writes into B), window of 64 (4 at 64 "
                    "MiB), GB/s\n%10s",
                    "size");
        for (unsigned k : streams) std::printf(" %6u-st-pull", k);
        std::printf(" %12s\n", "1-st-push");
        for (size_t n : sizes) {
            const unsigned window = n >= (size_t(64) << 20) ? 4 : 64;
            std::printf("%10zu", n);
            for (unsigned k : streams) std::printf(" %14.1f", pull_window(s, n, window, k, 7));
            std::printf(" %12.1f\n", pull_window(s, n, window, 1, 7, true));
            std::fflush(stdout);
        }
    }
    barrier(s.sh, s.me, s.gen);
    // both directions at once
    // [0] both pull, [1] both push (writes into the peer's buffer); 32
    // messages of 64 MiB in flight on 2 streams each
    double mine[2] = {0, 0};
    for (int push = 0; push < 2; ++push) {
        barrier(s.sh, s.me, s.gen);
        mine[push] = pull_window(s, size_t(64) << 20, 32, 2, 3, push != 0);
    }
    static_assert(sizeof(double) == sizeof(uint64_t));
    uint64_t bits[2];
    std::memcpy(bits, mine, sizeof(bits));
    barrier(s.sh, s.me, s.gen);
    if (s.me == 1) {
        s.sh->produced.store(bits[0]);
        s.sh->consumed.store(bits[1]);
    }
    barrier(s.sh, s.me, s.gen);
    if (s.me == 0) {
        uint64_t ob[2] = {s.sh->produced.load(), s.sh->consumed.load()};
        double other[2];
        std::memcpy(other, ob, sizeof(other));
        std::printf("# bibw: both move 64 MiB x32 at once, total GB/s: both pull %.1f, both push "
                    "%.1f\n",
                    mine[0] + other[0], mine[1] + other[1]);
        std::fflush(stdout);
    }
    s.sh->produced.store(0);
    s.sh->consumed.store(0);
    barrier(s.sh, s.me, s.gen);
}

// A (producer) D2H into the ring, B (consumer) H2D out of it. 64 MiB x reps.
void staged(Side &s, char *ring) {
    const size_t total = size_t(64) << 20;
    const uint64_t nchunks = total / kRingChunk;
    const int reps = 5;
    std::vector<double> gbs;
    CUstream st = s.c.streams[0];
    std::vector<CUevent> ev(kRingDepth);
    for (auto &e : ev) CK(cu.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    for (int r = 0; r < reps; ++r) {
        barrier(s.sh, s.me, s.gen);
        if (s.me == 0) {
            s.sh->produced.store(0);
            s.sh->consumed.store(0);
        }
        barrier(s.sh, s.me, s.gen);
        auto t0 = Clock::now();
        uint64_t issued = 0, done = 0;
        while (done < nchunks) {
            if (s.me == 0) {
                while (issued < nchunks && issued - s.sh->consumed.load() < kRingDepth &&
                       issued - done < kRingDepth) {
                    char *slot = ring + (issued % kRingDepth) * kRingChunk;
                    CK(cu.cuMemcpyAsync(CUdeviceptr(slot), s.buf + issued * kRingChunk, kRingChunk,
                                        st));
                    CK(cu.cuEventRecord(ev[issued % kRingDepth], st));
                    ++issued;
                }
                if (done < issued && cu.cuEventQuery(ev[done % kRingDepth]) == CUDA_SUCCESS) {
                    ++done;
                    s.sh->produced.store(done, std::memory_order_release);
                }
            } else {
                uint64_t avail = s.sh->produced.load(std::memory_order_acquire);
                while (issued < avail && issued - done < kRingDepth) {
                    char *slot = ring + (issued % kRingDepth) * kRingChunk;
                    CK(cu.cuMemcpyAsync(s.dst + issued * kRingChunk, CUdeviceptr(slot), kRingChunk,
                                        st));
                    CK(cu.cuEventRecord(ev[issued % kRingDepth], st));
                    ++issued;
                }
                if (done < issued && cu.cuEventQuery(ev[done % kRingDepth]) == CUDA_SUCCESS) {
                    ++done;
                    s.sh->consumed.store(done, std::memory_order_release);
                }
            }
        }
        barrier(s.sh, s.me, s.gen);
        gbs.push_back(double(total) / (us_since(t0) * 1e3));
    }
    if (s.me == 0) {
        std::printf("# staged: 64 MiB through a pinned shared ring (2 MiB x 4), GB/s: %.1f\n",
                    median(gbs));
        std::fflush(stdout);
    }
    for (auto &e : ev) cu.cuEventDestroy(e);
}

// Per-copy CPU cost of queueing a window of copies into the peer's buffer.
void submit(Side &s) {
    constexpr unsigned kWin = 64;
    constexpr int kReps = 9;
    const size_t sizes[] = {8, size_t(1) << 20};
    enum { generic, with_event, dtod, batch, local, nways };
    const char *names[] = {"async", "async+event", "dtod-async", "batch", "local-async"};
    std::vector<CUevent> ev(kWin);
    for (auto &e : ev) CK(cu.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    barrier(s.sh, s.me, s.gen);
    if (s.me == 0) {
        std::printf("# submit: A queues %u copies on one stream, then waits; per copy: queueing us / "
                    "GB/s with the wait (median of %d)\n%10s",
                    kWin, kReps, "size");
        for (const char *n : names) std::printf(" %22s", n);
        std::printf("\n");
        CUstream st = s.c.streams[0];
        std::vector<CUdeviceptr> dsts(kWin), srcs(kWin);
        std::vector<size_t> lens(kWin);
        for (size_t n : sizes) {
            std::printf("%10zu", n);
            for (int w = 0; w < nways; ++w) {
                if (w == batch && cu.cuMemcpyBatchAsync == nullptr) {
                    std::printf(" %22s", "n/a");
                    continue;
                }
                std::vector<double> q, gbs;
                for (int r = 0; r < kReps; ++r) {
                    for (unsigned i = 0; i < kWin; ++i) {
                        const size_t off = (size_t(i) * n) % (kBufBytes - n + 1);
                        dsts[i] = (w == local ? s.dst : s.peer) + off;
                        srcs[i] = s.buf + off;
                        lens[i] = n;
                    }
                    auto t0 = Clock::now();
                    if (w == batch) {
                        CUmemcpyAttributes attr{};
                        attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
                        attr.srcLocHint.type = CU_MEM_LOCATION_TYPE_DEVICE;
                        attr.dstLocHint.type = CU_MEM_LOCATION_TYPE_DEVICE;
                        size_t idx = 0;
                        CK(cu.cuMemcpyBatchAsync(dsts.data(), srcs.data(), lens.data(), kWin, &attr,
                                                 &idx, 1, st));
                    } else {
                        for (unsigned i = 0; i < kWin; ++i) {
                            if (w == dtod) CK(cu.cuMemcpyDtoDAsync(dsts[i], srcs[i], n, st));
                            else CK(cu.cuMemcpyAsync(dsts[i], srcs[i], n, st));
                            if (w == with_event) CK(cu.cuEventRecord(ev[i], st));
                        }
                    }
                    q.push_back(us_since(t0) / kWin);
                    CK(cu.cuStreamSynchronize(st));
                    gbs.push_back(double(n) * kWin / (us_since(t0) * 1e3));
                }
                std::printf(" %10.2f / %9.1f", median(q), median(gbs));
            }
            std::printf("\n");
            std::fflush(stdout);
        }
    }
    barrier(s.sh, s.me, s.gen);
    for (auto &e : ev) cu.cuEventDestroy(e);
}

// One turn's copy of the handover test, waited for.
enum class Kind { none, pull, local, dtoh, htod, bounce, pdtoh, phtod, memset };
const char *kind_name(Kind k) {
    switch (k) {
    case Kind::none: return "none";
    case Kind::pull: return "pull";
    case Kind::local: return "local";
    case Kind::dtoh: return "dtoh";
    case Kind::htod: return "htod";
    case Kind::bounce: return "bounce";
    case Kind::pdtoh: return "pdtoh";
    case Kind::phtod: return "phtod";
    case Kind::memset: return "memset";
    }
    return "?";
}

void turn_copy(Side &s, Kind k, size_t n) {
    CUstream st = s.c.streams[0];
    switch (k) {
    case Kind::none: return;
    case Kind::pull: CK(cu.cuMemcpyAsync(s.dst, s.peer, n, st)); break;
    case Kind::local: CK(cu.cuMemcpyAsync(s.dst, s.buf, n, st)); break;
    case Kind::dtoh: CK(cu.cuMemcpyAsync(s.host, s.buf, n, st)); break;
    case Kind::htod: CK(cu.cuMemcpyAsync(s.dst, s.host, n, st)); break;
    case Kind::bounce:
        CK(cu.cuMemcpyAsync(s.host, s.peer, n, st));
        CK(cu.cuMemcpyAsync(s.dst, s.host, n, st));
        break;
    case Kind::pdtoh:
        CK(cu.cuMemcpy(reinterpret_cast<CUdeviceptr>(s.pageable), s.buf, n));
        return;
    case Kind::phtod:
        CK(cu.cuMemcpy(s.dst, reinterpret_cast<CUdeviceptr>(s.pageable), n));
        CK(cu.cuStreamSynchronize(CU_STREAM_LEGACY)); // (see timed_copy)
        return;
    case Kind::memset: CK(cu.cuMemsetD8Async(s.dst, 0, n, st)); break;
    }
    CK(cu.cuStreamSynchronize(st));
}

using Turn = std::vector<Kind>;

std::string turn_name(const Turn &t) {
    std::string n;
    for (Kind k : t) n += (n.empty() ? "" : "+") + std::string(kind_name(k));
    return n;
}

// the median round of A doing turn a and B turn b, alternately; -1 when a
// copy kind is missing from the driver
double handover_round(Side &s, const Turn &a, const Turn &b, size_t n, int iters) {
    for (const Turn *t : {&a, &b})
        for (Kind k : *t)
            if (k == Kind::memset && cu.cuMemsetD8Async == nullptr) return -1;
    return take_turns(s, iters, [&] {
        for (Kind k : s.me == 0 ? a : b) turn_copy(s, k, n);
    });
}

void handover(Side &s, int iters) {
    const Kind a_kinds[] = {Kind::pull, Kind::local, Kind::dtoh, Kind::htod, Kind::phtod,
                            Kind::memset};
    const Kind b_kinds[] = {Kind::none, Kind::pull, Kind::local, Kind::dtoh, Kind::htod,
                            Kind::bounce, Kind::pdtoh, Kind::phtod, Kind::memset};
    // turns of several copies: a window's pulls then a packed acknowledgement
    // against its unpacking; packed messages both ways
    const std::pair<Turn, Turn> seqs[] = {
        {{Kind::pull, Kind::dtoh}, {Kind::htod}},
        {{Kind::pull, Kind::pdtoh}, {Kind::phtod}},
        {{Kind::pull, Kind::dtoh}, {Kind::pull}},
        {{Kind::htod, Kind::dtoh}, {Kind::htod, Kind::dtoh}},
        {{Kind::phtod, Kind::pdtoh}, {Kind::phtod, Kind::pdtoh}},
        {{Kind::pull, Kind::dtoh}, {Kind::bounce}},
    };
    constexpr size_t n = 8;
    if (s.me == 0)
        std::printf("# handover: A and B take turns, each a copy of %zu B (or several); us per "
                    "round (median of %d)\n%12s %12s %10s\n",
                    n, iters, "A", "B", "round");
    auto report = [&](const Turn &a, const Turn &b) {
        const double r = handover_round(s, a, b, n, iters);
        if (s.me == 0 && r >= 0)
            std::printf("%12s %12s %10.2f\n", turn_name(a).c_str(), turn_name(b).c_str(), r);
        std::fflush(stdout);
    };
    for (Kind a : a_kinds)
        for (Kind b : b_kinds) report(Turn{a}, Turn{b});
    for (const auto &ab : seqs) report(ab.first, ab.second);
    // whether the switch depends on the copy's size
    const std::pair<Kind, Kind> sized[] = {{Kind::htod, Kind::htod}, {Kind::pull, Kind::pull},
                                           {Kind::pull, Kind::htod}};
    if (s.me == 0) std::printf("# the same by size\n%12s %12s %10s %10s\n", "A", "B", "size", "round");
    for (const auto &ab : sized) {
        for (size_t m : {size_t(1) << 10, size_t(8) << 10, size_t(16) << 10, size_t(64) << 10,
                         size_t(1) << 20}) {
            const double r = handover_round(s, Turn{ab.first}, Turn{ab.second}, m, iters);
            if (s.me == 0)
                std::printf("%12s %12s %10zu %10.2f\n", kind_name(ab.first), kind_name(ab.second),
                            m, r);
            std::fflush(stdout);
        }
    }
}

int run_side(int me, Shared *sh, char *ring, int iters) {
    CK(cu.cuInit(0));
    Side s;
    s.me = me;
    s.sh = sh;
    int ndev = 0;
    CK(cu.cuDeviceGetCount(&ndev));
    ctx_init(s.c, me % ndev, 4);
    CK(cu.cuMemAlloc(&s.buf, kBufBytes));
    CK(cu.cuMemAlloc(&s.dst, kBufBytes));
    CK(cu.cuMemsetD8(s.buf, uint8_t(0x11 + me), kBufBytes));
    CK(cu.cuCtxSynchronize());
    CK(cu.cuIpcGetMemHandle(&sh->handle[me], s.buf));
    CK(cu.cuMemHostRegister(ring, kRingChunk * kRingDepth, CU_MEMHOSTREGISTER_PORTABLE));
    sh->ready[me].store(1);
    while (sh->ready[1 - me].load() == 0) {
    }
    CK(cu.cuIpcOpenMemHandle(&s.peer, sh->handle[1 - me], CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    void *host = nullptr;
    CK(cu.cuMemHostAlloc(&host, size_t(1) << 20, CU_MEMHOSTALLOC_PORTABLE));
    s.host = reinterpret_cast<CUdeviceptr>(host);
    if (submit_only) {
        submit(s);
    } else if (handover_only) {
        handover(s, iters);
    } else {
        pingpong(s, iters);
        bandwidth(s);
        submit(s);
        staged(s, ring);
    }
    barrier(sh, me, s.gen);
    CK(cu.cuIpcCloseMemHandle(s.peer));
    cu.cuMemFreeHost(host);
    cu.cuMemHostUnregister(ring);
    return 0;
}

} // namespace

int main(int argc, char **argv) {
    int iters = 1000;
    bool single = true, pair = true;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "-i" && i + 1 < argc) iters = std::atoi(argv[++i]);
        else if (a == "--single") pair = false;
        else if (a == "--pair") single = false;
        else if (a == "--submit") single = false, submit_only = true;
        else if (a == "--handover") single = false, handover_only = true;
        else {
            std::fprintf(stderr, "usage: %s [-i ITERS] [--single|--pair|--submit|--handover]\n", argv[0]);
            return 2;
        }
    }
    if (!load()) return 2;
    int rc = 0;
    if (single) {
        pid_t p = fork();
        if (p == 0) std::_Exit(run_single(iters));
        int st = 0;
        waitpid(p, &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) rc = 1;
    }
    if (pair) {
        auto *sh = static_cast<Shared *>(mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE,
                                              MAP_SHARED | MAP_ANONYMOUS, -1, 0));
        char *ring = static_cast<char *>(mmap(nullptr, kRingChunk * kRingDepth,
                                              PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                                              -1, 0));
        if (sh == MAP_FAILED || ring == MAP_FAILED) return 2;
        new (sh) Shared{};
        pid_t kids[2];
        for (int me = 0; me < 2; ++me) {
            kids[me] = fork();
            if (kids[me] == 0) std::_Exit(run_side(me, sh, ring, iters));
        }
        for (pid_t k : kids) {
            int st = 0;
            waitpid(k, &st, 0);
            if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) rc = 1;
        }
    }
    return rc;
}
