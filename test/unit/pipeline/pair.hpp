// Two forked processes ("A" drives, "B" serves commands), each with a wire
// interface and a transfer engine, connected through a socketpair for the
// test's own commands. Both always pump (shm progress -> on_control, engine
// progress) while they wait. The Catch process itself never loads the CUDA
// driver: the simulator's state does not survive fork().
#pragma once

#include "gdrpipe/capi.h"
#include "gdrpipe/cuda/context.hpp"
#include "gdrpipe/cuda/driver.hpp"
#include "gdrpipe/pipeline/engine.hpp"

#include "gp_catch.hpp"

#include <cuda.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace pt {

using Clock = std::chrono::steady_clock;

// UCX_GDRPIPE_CUDA_LIB names the simulator (not the real driver, which the
// GPU machine's runs name too): it exports the simulator's own functions.
inline bool sim_present() {
    static const bool present = [] {
        const char *p = std::getenv("UCX_GDRPIPE_CUDA_LIB");
        if (p == nullptr || p[0] != '/' || access(p, R_OK) != 0) return false;
        void *h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
        const bool sim = h != nullptr && dlsym(h, "gdrpipe_sim_set_topology") != nullptr;
        if (h != nullptr) dlclose(h);
        return sim;
    }();
    return present;
}

// In a TEST_CASE: skip unless the simulator is there; 2 devices, full peer
// topology.
#define SKIP_WITHOUT_SIM()                                                     \
    do {                                                                       \
        if (!sim_present()) {                                                  \
            WARN("cudasim libcuda.so.1 not available: skipping");              \
            SUCCEED();                                                         \
            return;                                                            \
        }                                                                      \
        setenv("GDRPIPE_SIM_DEVICES", "2", 1);                                 \
        unsetenv("GDRPIPE_SIM_TOPO");                                          \
    } while (0)

// The simulator's topology (GDRPIPE_SIM_TOPO) for one test case: set while
// the guard lives, unset when it goes (also when a REQUIRE ends the case).
// With Clock::modeled the processes of the pair run on the simulator's
// virtual clock (docs/cudasim.md): their in-process calibration measures the
// topology's model exactly, so what a test expects of it cannot be moved by
// the machine's load. Transfers between the two processes then complete at
// once in real time: a test that times them (the check through the peer)
// keeps the real clock.
struct SimTopo {
    enum class Clock { real, modeled };
    explicit SimTopo(const char *topo, Clock clock = Clock::real) {
        setenv("GDRPIPE_SIM_TOPO", topo, 1);
        if (clock == Clock::modeled) setenv("GDRPIPE_SIM_CLOCK", "virtual", 1);
    }
    ~SimTopo() {
        unsetenv("GDRPIPE_SIM_TOPO");
        unsetenv("GDRPIPE_SIM_CLOCK");
    }
    SimTopo(const SimTopo &) = delete;
    SimTopo &operator=(const SimTopo &) = delete;
};

// The loaded driver is the simulator (not a real libcuda.so.1 given by path).
inline bool sim_model() {
    const char *p = std::getenv("UCX_GDRPIPE_CUDA_LIB");
    return p != nullptr && std::strstr(p, "cudasim") != nullptr;
}

// For tests whose expectations come from the simulator's topologies or
// timing (GDRPIPE_SIM_TOPO): they also run on a real driver given by path
// otherwise, where the machine decides.
#define SKIP_UNLESS_SIM_MODEL()                                                \
    do {                                                                       \
        SKIP_WITHOUT_SIM();                                                    \
        if (!sim_model()) {                                                    \
            WARN("needs the simulator's topology model: skipped on a real driver"); \
            SUCCEED();                                                         \
            return;                                                            \
        }                                                                      \
    } while (0)

#define PT_CHECK(cond)                                                                  \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            std::fprintf(stderr, "[pid %d] %s:%d: check failed: %s\n", int(getpid()),   \
                         __FILE__, __LINE__, #cond);                                    \
            return 1;                                                                   \
        }                                                                               \
    } while (0)

// where memory lives (kPool1: the default pool of device 1, not exportable;
// kXPool0: a pool of device 0 created with POSIX-fd handles, exportable)
enum Where : int { kHost = 0, kDev0 = 1, kDev1 = 2, kVmm0 = 3, kPool1 = 4, kXPool0 = 5 };

struct Buf {
    int where = kHost;
    size_t len = 0;
    void *p = nullptr;
    CUmemGenericAllocationHandle vmm = 0;
    size_t vmm_len = 0;
};

inline uint8_t pattern(uint64_t seed, size_t i) {
    uint64_t x = (seed + 1) * 0x9e3779b97f4a7c15ull + (i >> 3) * 0xbf58476d1ce4e5b9ull;
    x ^= x >> 29;
    return uint8_t(x >> (8 * (i & 7)));
}

inline uint64_t pattern_word(uint64_t seed, size_t w) {
    uint64_t x = (seed + 1) * 0x9e3779b97f4a7c15ull + w * 0xbf58476d1ce4e5b9ull;
    return x ^ (x >> 29);
}

inline void fill_host(uint8_t *p, size_t n, uint64_t seed) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w = pattern_word(seed, i >> 3);
        std::memcpy(p + i, &w, 8);
    }
    for (; i < n; ++i) p[i] = pattern(seed, i);
}

inline size_t first_mismatch(const uint8_t *p, size_t n, uint64_t seed) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w = pattern_word(seed, i >> 3), v;
        std::memcpy(&v, p + i, 8);
        if (v != w) break;
    }
    for (; i < n; ++i) {
        if (p[i] != pattern(seed, i)) return i;
    }
    return n;
}

inline const gdrpipe::cuda::Api &api() { return gdrpipe::cuda::driver().api(); }

inline int dev_of(int where) { return (where == kDev1 || where == kPool1) ? 1 : 0; }

inline bool is_pool(int where) { return where == kPool1 || where == kXPool0; }

// This process's exportable pool on device 0 (created on first use; the
// caller holds device 0's context). xpool_reset() destroys it (every block
// freed first) so that the next use creates a new one.
inline CUmemoryPool &xpool_slot() {
    static CUmemoryPool pool = nullptr;
    return pool;
}

inline CUmemoryPool xpool() {
    CUmemoryPool &p = xpool_slot();
    if (p == nullptr) {
        CUmemPoolProps props{};
        props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
        props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
        props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        props.location.id = 0;
        if (api().cuMemPoolCreate(&p, &props) != CUDA_SUCCESS) p = nullptr;
    }
    return p;
}

inline bool xpool_reset() {
    CUmemoryPool &p = xpool_slot();
    if (p == nullptr) return true;
    gdrpipe::cuda::ScopedContext sc(0);
    api().cuCtxSynchronize();
    bool ok = api().cuMemPoolDestroy(p) == CUDA_SUCCESS;
    p = nullptr;
    return ok;
}

inline bool buf_alloc(Buf &b, int where, size_t len) {
    b.where = where;
    b.len = len;
    size_t n = len == 0 ? 1 : len;
    if (where == kHost) {
        b.p = std::malloc(n);
        return b.p != nullptr;
    }
    gdrpipe::cuda::ScopedContext sc(dev_of(where));
    if (!sc.ok()) return false;
    CUdeviceptr d = 0;
    if (where == kDev0 || where == kDev1) {
        if (api().cuMemAlloc(&d, n) != CUDA_SUCCESS) return false;
    } else if (where == kPool1) {
        if (api().cuMemAllocAsync(&d, n, nullptr) != CUDA_SUCCESS) return false;
        api().cuCtxSynchronize();
    } else if (where == kXPool0) {
        CUmemoryPool pool = xpool();
        if (pool == nullptr) return false;
        if (api().cuMemAllocFromPoolAsync(&d, n, pool, nullptr) != CUDA_SUCCESS) return false;
        api().cuCtxSynchronize();
    } else {
        CUmemAllocationProp prop{};
        prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        prop.location.id = 0;
        prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
        size_t gran = size_t(2) << 20;
        b.vmm_len = (n + gran - 1) / gran * gran;
        if (api().cuMemCreate(&b.vmm, b.vmm_len, &prop, 0) != CUDA_SUCCESS) return false;
        if (api().cuMemAddressReserve(&d, b.vmm_len, 0, 0, 0) != CUDA_SUCCESS) return false;
        if (api().cuMemMap(d, b.vmm_len, 0, b.vmm, 0) != CUDA_SUCCESS) return false;
        CUmemAccessDesc acc{};
        acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        acc.location.id = 0;
        acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        if (api().cuMemSetAccess(d, b.vmm_len, &acc, 1) != CUDA_SUCCESS) return false;
    }
    b.p = reinterpret_cast<void *>(d);
    return true;
}

inline void buf_free(Buf &b) {
    if (b.p == nullptr) return;
    if (b.where == kHost) {
        std::free(b.p);
    } else {
        gdrpipe::cuda::ScopedContext sc(dev_of(b.where));
        CUdeviceptr d = reinterpret_cast<CUdeviceptr>(b.p);
        if (b.where == kDev0 || b.where == kDev1) {
            api().cuMemFree(d);
        } else if (is_pool(b.where)) {
            api().cuMemFreeAsync(d, nullptr);
            api().cuCtxSynchronize();
        } else {
            api().cuMemUnmap(d, b.vmm_len);
            api().cuMemAddressFree(d, b.vmm_len);
            api().cuMemRelease(b.vmm);
        }
    }
    b.p = nullptr;
}

// host <-> buffer through the driver
inline bool buf_write(const Buf &b, const void *src, size_t n) {
    if (n == 0) return true;
    if (b.where == kHost) {
        std::memcpy(b.p, src, n);
        return true;
    }
    gdrpipe::cuda::ScopedContext sc(dev_of(b.where));
    // a pageable cuMemcpyHtoD may return before its DMA lands (the real
    // driver); the engine's copies run on other streams, and these buffers
    // are not registered (no SYNC_MEMOPS): wait, as an application must
    return api().cuMemcpyHtoD(reinterpret_cast<CUdeviceptr>(b.p), src, n) == CUDA_SUCCESS &&
           api().cuCtxSynchronize() == CUDA_SUCCESS;
}

inline bool buf_read(const Buf &b, void *dst, size_t n) {
    if (n == 0) return true;
    if (b.where == kHost) {
        std::memcpy(dst, b.p, n);
        return true;
    }
    gdrpipe::cuda::ScopedContext sc(dev_of(b.where));
    return api().cuMemcpyDtoH(dst, reinterpret_cast<CUdeviceptr>(b.p), n) == CUDA_SUCCESS;
}

inline bool buf_fill(const Buf &b, uint64_t seed) {
    std::vector<uint8_t> h(b.len);
    fill_host(h.data(), b.len, seed);
    return buf_write(b, h.data(), b.len);
}

inline bool buf_zero(const Buf &b) {
    std::vector<uint8_t> h(b.len, 0);
    return buf_write(b, h.data(), b.len);
}

// true when the buffer holds pattern(seed)
inline bool buf_check(const Buf &b, uint64_t seed) {
    std::vector<uint8_t> h(b.len);
    if (!buf_read(b, h.data(), b.len)) return false;
    size_t i = first_mismatch(h.data(), b.len, seed);
    if (i != b.len) {
        std::fprintf(stderr, "[pid %d] mismatch at %zu of %zu (where %d)\n", int(getpid()), i,
                     b.len, b.where);
        return false;
    }
    return true;
}

// ------------------------------------------------------------------ node --
struct Node {
    int sock = -1;
    pid_t self = 0, other = 0;
    gp_shm_iface_t *iface = nullptr;
    gp_shm_peer_t *peer = nullptr;
    std::vector<gp_xfer_engine_t *> engines; // [0] receives control messages

    static void on_am(void *arg, uint8_t am_id, void *data, uint32_t len) {
        auto *n = static_cast<Node *>(arg);
        if (am_id == GP_CTRL_AM_ID) gp_xfer_on_control(n->engines[0], data, len);
    }

    void pump() {
        gp_shm_progress(iface, on_am, this, 64);
        for (auto *e : engines) gp_xfer_progress(e);
        sched_yield(); // 2 cores: leave room for the simulator's copy threads
    }

    gdrpipe::pipeline::XferEngine *eng(size_t i = 0) {
        return reinterpret_cast<gdrpipe::pipeline::XferEngine *>(engines[i]);
    }

    // raw bytes over the socket, pumping while waiting
    bool send_all(const void *p, size_t n) {
        const char *c = static_cast<const char *>(p);
        while (n > 0) {
            ssize_t k = ::send(sock, c, n, MSG_NOSIGNAL);
            if (k <= 0) return false;
            c += k;
            n -= size_t(k);
        }
        return true;
    }
    bool readable(int ms) {
        struct pollfd pfd{sock, POLLIN, 0};
        return ::poll(&pfd, 1, ms) > 0;
    }
    bool recv_all(void *p, size_t n, double timeout_s = 20) {
        char *c = static_cast<char *>(p);
        auto t0 = Clock::now();
        while (n > 0) {
            pump();
            if (!readable(0)) {
                if (std::chrono::duration<double>(Clock::now() - t0).count() > timeout_s) {
                    return false;
                }
                continue;
            }
            ssize_t k = ::recv(sock, c, n, 0);
            if (k <= 0) return false;
            c += k;
            n -= size_t(k);
        }
        return true;
    }
};

// Transfer completion record.
struct Done {
    bool done = false;
    int status = 0;
    static void cb(void *arg, int status) {
        auto *d = static_cast<Done *>(arg);
        d->done = true;
        d->status = status;
    }
};

// Starts and runs a transfer to completion (pumping); returns its status.
// `peer`: another connection than the node's (default: n.peer).
inline int xfer(Node &n, size_t eng, bool is_get, void *local, size_t len, uint64_t remote,
                const gp_rkey_t &rkey, double timeout_s = 20, gp_shm_peer_t *peer = nullptr) {
    Done d;
    struct iovec iov{local, len};
    int r = gp_xfer_start(n.engines[eng], peer != nullptr ? peer : n.peer, is_get ? 1 : 0, &iov,
                          1, remote, &rkey, Done::cb, &d);
    if (r <= 0) return r;
    auto t0 = Clock::now();
    while (!d.done) {
        n.pump();
        if (std::chrono::duration<double>(Clock::now() - t0).count() > timeout_s) return -9999;
    }
    return d.status;
}

inline gp_xfer_config_t config(int path, size_t thresh = 0, size_t chunk = 256 << 10,
                               unsigned depth = 4) {
    gp_xfer_config_t c{};
    c.path = path;
    c.thresh = thresh;
    c.chunk_size = chunk;
    c.depth = depth;
    return c;
}

// Sets up a node in a child: driver, wire, address exchange, engines.
inline int node_setup(Node &n, const std::vector<gp_xfer_config_t> &cfgs) {
    PT_CHECK(gdrpipe::cuda::driver().available());
    n.self = getpid();
    char err[256];
    PT_CHECK(gp_shm_iface_open(64, 512, &n.iface, err, sizeof(err)) == 0);
    std::vector<char> mine(gp_shm_address_length()), theirs(gp_shm_address_length());
    gp_shm_iface_address(n.iface, mine.data());
    PT_CHECK(n.send_all(mine.data(), mine.size()));
    PT_CHECK(n.send_all(&n.self, sizeof(n.self)));
    PT_CHECK(::recv(n.sock, theirs.data(), theirs.size(), MSG_WAITALL) == ssize_t(theirs.size()));
    PT_CHECK(::recv(n.sock, &n.other, sizeof(n.other), MSG_WAITALL) == ssize_t(sizeof(n.other)));
    n.peer = gp_shm_connect(n.iface, theirs.data(), theirs.size(), err, sizeof(err));
    PT_CHECK(n.peer != nullptr);
    for (const auto &c : cfgs) {
        gp_xfer_engine_t *e = gp_xfer_engine_create(n.iface, &c, err, sizeof(err));
        PT_CHECK(e != nullptr);
        n.engines.push_back(e);
    }
    return 0;
}

inline void node_teardown(Node &n) {
    for (auto *e : n.engines) gp_xfer_engine_destroy(e);
    n.engines.clear();
    if (n.peer != nullptr) gp_shm_disconnect(n.iface, n.peer);
    if (n.iface != nullptr) gp_shm_iface_close(n.iface);
}

// Forks A and B; returns "" when both exited 0, else a description.
inline std::string run_pair(const std::function<int(Node &)> &a,
                            const std::function<int(Node &)> &b, double timeout_s = 30,
                            bool b_may_die = false) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return "socketpair";
    std::fflush(nullptr);
    pid_t pids[2];
    for (int i = 0; i < 2; ++i) {
        pids[i] = ::fork();
        if (pids[i] == 0) {
            ::close(sv[1 - i]);
            Node n;
            n.sock = sv[i];
            int rc = (i == 0 ? a : b)(n);
            std::fflush(nullptr);
            ::_exit(rc);
        }
    }
    ::close(sv[0]);
    ::close(sv[1]);
    int st[2] = {-1, -1};
    bool reaped[2] = {false, false};
    auto t0 = Clock::now();
    while (!reaped[0] || !reaped[1]) {
        for (int i = 0; i < 2; ++i) {
            if (!reaped[i] && ::waitpid(pids[i], &st[i], WNOHANG) == pids[i]) reaped[i] = true;
        }
        if (std::chrono::duration<double>(Clock::now() - t0).count() > timeout_s) {
            for (int i = 0; i < 2; ++i) {
                if (!reaped[i]) {
                    ::kill(pids[i], SIGKILL);
                    ::waitpid(pids[i], &st[i], 0);
                    reaped[i] = true;
                    st[i] = -2;
                }
            }
        }
        ::usleep(2000);
    }
    std::string out;
    const char *names[2] = {"A", "B"};
    for (int i = 0; i < 2; ++i) {
        if (i == 1 && b_may_die && st[i] != -2 && WIFSIGNALED(st[i])) continue;
        if (st[i] == -2) out += std::string(names[i]) + " timed out; ";
        else if (WIFSIGNALED(st[i])) out += std::string(names[i]) + " killed by signal " +
                                            std::to_string(WTERMSIG(st[i])) + "; ";
        else if (WEXITSTATUS(st[i]) != 0) out += std::string(names[i]) + " failed; ";
    }
    return out;
}

} // namespace pt
