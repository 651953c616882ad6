// Registration of local memory and the process-wide export cache.
#include "gdrpipe/pipeline/registry.hpp"

#include "gdrpipe/cuda/context.hpp"
#include "gdrpipe/cuda/memory.hpp"
#include "gdrpipe/hooks/cuda_hooks.hpp"
#include "gdrpipe/log.hpp"
#include "gdrpipe/secret_token.hpp"

#include <pthread.h>

#include <atomic>
#include <cstdio>
#include <unistd.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>

namespace gdrpipe::pipeline {

struct Registration {
    uintptr_t addr = 0;
    size_t len = 0;
    bool host = true;
    uint64_t token = 0;
    cache::RegionRef exp; // device memory: keeps the export alive
};

namespace {

// A pool's POSIX-fd shareable handle, exported once per pool and kept open
// while any region of the pool is in the export cache.
struct PoolExport {
    CUmemoryPool pool = nullptr;
    int fd = -1;
    ~PoolExport() {
        if (fd >= 0) ::close(fd);
    }
};

struct Export {
    uint16_t kind = GP_RKEY_CUDA_NONE;
    CUipcMemHandle ipc{};
    int fd = -1; // VMM: shareable handle, open in this process
    std::shared_ptr<PoolExport> pool; // pool memory: the pool's fd
    CUmemPoolPtrExportData pool_ptr{};
    ~Export() {
        if (fd >= 0) ::close(fd);
    }
};

std::mutex g_pool_mu;
std::map<CUmemoryPool, std::weak_ptr<PoolExport>> g_pools; // pool -> its export

// The export of `pool` (made on first use); null with *r set on failure.
std::shared_ptr<PoolExport> export_pool(CUmemoryPool pool, CUresult *r) {
    std::lock_guard<std::mutex> g(g_pool_mu);
    auto &slot = g_pools[pool];
    if (auto pe = slot.lock()) return pe;
    int fd = -1;
    *r = cuda::driver().api().cuMemPoolExportToShareableHandle(
        &fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    if (*r != CUDA_SUCCESS) {
        g_pools.erase(pool);
        return nullptr;
    }
    auto pe = std::make_shared<PoolExport>();
    pe->pool = pool;
    pe->fd = fd;
    slot = pe;
    for (auto it = g_pools.begin(); it != g_pools.end();) { // forget expired pools
        it = it->second.expired() ? g_pools.erase(it) : std::next(it);
    }
    return pe;
}

// Whether `pool` is the default pool of `device` (cuMemAllocAsync,
// cudaMallocAsync): never exportable, no export attempt needed.
bool is_default_pool(CUmemoryPool pool, int device) {
    const auto &api = cuda::driver().api();
    CUdevice dev = 0;
    CUmemoryPool def = nullptr;
    return api.cuDeviceGet(&dev, device) == CUDA_SUCCESS &&
           api.cuDeviceGetDefaultMemPool(&def, dev) == CUDA_SUCCESS && def == pool;
}

// Pool memory: the pool's fd plus the pointer's export data, when the pool
// was created with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR. Pools have no
// attribute for their handle types: the pool export itself is the test.
std::atomic<bool> g_pool_ipc{true};

void export_pool_ptr(Export &e, const cuda::MemInfo &mi, uintptr_t addr) {
    const auto &api = cuda::driver().api();
    if (!g_pool_ipc.load(std::memory_order_relaxed)) {
        GP_DEBUG("export %#lx: pool memory, UCX_GDRPIPE_POOL_IPC=n: staged only", addr);
        return;
    }
    if (is_default_pool(mi.mempool, mi.device)) {
        GP_DEBUG("export %#lx: default pool of device %d (cuMemAllocAsync/cudaMallocAsync), "
                 "not exportable: staged only",
                 addr, mi.device);
        return;
    }
    CUresult r = CUDA_SUCCESS;
    auto pe = export_pool(mi.mempool, &r);
    if (!pe) {
        GP_DEBUG("export %#lx: pool %p not exportable (created without "
                 "CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR?): "
                 "cuMemPoolExportToShareableHandle: %s: staged only",
                 addr, static_cast<void *>(mi.mempool), cuda::describe(r).c_str());
        return;
    }
    r = api.cuMemPoolExportPointer(&e.pool_ptr, CUdeviceptr(addr));
    if (r != CUDA_SUCCESS) {
        GP_DEBUG("export %#lx: cuMemPoolExportPointer: %s (staged only)", addr,
                 cuda::describe(r).c_str());
        return;
    }
    e.pool = std::move(pe);
    e.kind = GP_RKEY_CUDA_POOL;
}

// What the pin callback needs beyond the range (set around get()).
thread_local const cuda::MemInfo *t_pin_info = nullptr;

cache::Result<cache::Payload> pin_export(const cache::RegionInfo &ri) {
    auto e = std::make_shared<Export>();
    const cuda::MemInfo *mi = t_pin_info;
    if (mi == nullptr) return cache::Payload(e); // NONE
    const auto &api = cuda::driver().api();
    cuda::ScopedContext scope(mi->device);
    if (mi->legacy_ipc) {
        CUresult r = api.cuIpcGetMemHandle(&e->ipc, CUdeviceptr(ri.addr));
        if (r == CUDA_SUCCESS) {
            e->kind = GP_RKEY_CUDA_IPC;
        } else {
            GP_DEBUG("export %#lx: cuIpcGetMemHandle: %s (staged only)", ri.addr,
                     cuda::describe(r).c_str());
        }
    } else if (mi->vmm) {
        CUmemGenericAllocationHandle h = 0;
        CUresult r = api.cuMemRetainAllocationHandle(&h, reinterpret_cast<void *>(ri.addr));
        if (r == CUDA_SUCCESS) {
            int fd = -1;
            r = api.cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                                 0);
            api.cuMemRelease(h);
            if (r == CUDA_SUCCESS) {
                e->fd = fd;
                e->kind = GP_RKEY_CUDA_VMM;
            }
        }
        if (r != CUDA_SUCCESS) {
            GP_DEBUG("export %#lx: VMM export: %s (staged only)", ri.addr,
                     cuda::describe(r).c_str());
        }
    } else if (mi->pool && mi->mempool != nullptr) {
        export_pool_ptr(*e, *mi, ri.addr);
    }
    return cache::Payload(e);
}

std::mutex g_mu;
cache::RegionCache *g_export = nullptr;
struct Live {
    size_t len;
    bool host;
    uint64_t token;
};
std::multimap<uintptr_t, Live> g_live; // by start address

void on_cuda_event(const hooks::Event &e, void *) {
    if (e.type != hooks::EventType::free) return;
    size_t n = e.length == 0 ? 1 : e.length;
    std::size_t dropped = export_cache().invalidate(reinterpret_cast<const void *>(e.address), n);
    if (dropped != 0) {
        GP_TRACE("export cache: free of %#lx+%zu dropped %zu region(s)", e.address, n, dropped);
    }
}

void live_add(const Registration &r) {
    std::lock_guard<std::mutex> g(g_mu);
    g_live.emplace(r.addr, Live{r.len, r.host, r.token});
}

void live_remove(const Registration &r) {
    std::lock_guard<std::mutex> g(g_mu);
    auto [lo, hi] = g_live.equal_range(r.addr);
    for (auto it = lo; it != hi; ++it) {
        if (it->second.token == r.token) {
            g_live.erase(it);
            return;
        }
    }
}

} // namespace

bool export_cache_exists() noexcept {
    std::lock_guard<std::mutex> g(g_mu);
    return g_export != nullptr;
}

cache::RegionCache &export_cache() {
    std::lock_guard<std::mutex> g(g_mu);
    if (g_export == nullptr) {
        cache::RegionOps ops;
        ops.pin = pin_export;
        cache::CacheConfig cfg;
        cfg.alignment = size_t{64} << 10;
        cfg.merge_overlaps = false;
        cfg.flush_and_retry_on_pin_failure = false;
        cfg.name = "export";
        g_export = new cache::RegionCache(std::move(ops), cfg); // process lifetime
        if (!hooks::add_listener(on_cuda_event, nullptr)) {
            GP_WARN("export cache: cannot add a CUDA free listener; BUFFER_ID tags "
                    "alone protect against stale exports");
        }
    }
    return *g_export;
}

bool registered(uintptr_t addr, size_t len, uint64_t token, bool *host) {
    if (addr + len < addr || token == 0) return false;
    std::lock_guard<std::mutex> g(g_mu);
    for (auto it = g_live.upper_bound(addr); it != g_live.begin();) {
        --it;
        if (it->second.token == token && addr + len <= it->first + it->second.len) {
            *host = it->second.host;
            return true;
        }
    }
    return false;
}

// getpid() is a system call; registrations happen per message. A forked
// child resets the cache before anything else runs in it.
namespace {
std::atomic<pid_t> g_pid{0};
pid_t own_pid() noexcept {
    pid_t p = g_pid.load(std::memory_order_relaxed);
    if (p == 0) {
        static const int once = ::pthread_atfork(nullptr, nullptr, [] { g_pid.store(0); });
        (void)once;
        p = ::getpid();
        g_pid.store(p, std::memory_order_relaxed);
    }
    return p;
}
} // namespace

void set_pool_ipc(bool enable) noexcept { g_pool_ipc.store(enable, std::memory_order_relaxed); }

Registration *register_memory(void *addr, size_t len, uint64_t host_id, gp_rkey_t *rkey,
                              std::string *err) {
    std::memset(rkey, 0, sizeof(*rkey));
    rkey->pid = own_pid();
    rkey->host_id = host_id;
    rkey->device = -1;
    rkey->handle_fd = -1;
    auto reg = std::make_unique<Registration>();
    cuda::MemInfo mi;
    if (cuda::driver().available()) {
        CUresult r = cuda::query(addr, &mi);
        if (r != CUDA_SUCCESS) {
            *err = "cuPointerGetAttributes: " + cuda::describe(r);
            return nullptr;
        }
    }
    if (mi.kind != cuda::MemKind::host && (mi.pool || mi.vmm)) {
        // before exposing it (cuda::wait_legacy; measured on the H200
        // machine: stale data without this)
        cuda::wait_legacy(cuda::devices(), mi.device);
    }
    if (mi.kind == cuda::MemKind::host) {
        rkey->kind = GP_RKEY_HOST;
        rkey->base = reinterpret_cast<uintptr_t>(addr);
        rkey->length = len;
        reg->addr = rkey->base;
        reg->len = len;
        reg->host = true;
    } else {
        if (mi.base == 0 || mi.length == 0) {
            *err = "device memory without a known allocation range";
            return nullptr;
        }
        uintptr_t a = reinterpret_cast<uintptr_t>(addr);
        if (a < mi.base || a >= mi.base + mi.length) {
            char b[160];
            std::snprintf(b, sizeof(b), "address outside its CUDA allocation %#lx+%zu",
                          (unsigned long)mi.base, mi.length);
            *err = b;
            return nullptr;
        }
        // UCX rounds the length of whole-allocation registrations up (e.g.
        // to 16 bytes); the driver reports the requested size. The tail past
        // the allocation is padding nobody transfers: clamp it.
        if (a + len > mi.base + mi.length) {
            len = mi.base + mi.length - a;
        }
        if (mi.kind == cuda::MemKind::managed) {
            mi.legacy_ipc = false; // managed memory is never exported
            mi.vmm = false;
        }
        t_pin_info = &mi;
        auto res = export_cache().get(cache::kLocalSpace, mi.base, mi.length, mi.buffer_id,
                                      cache::AddrRange{mi.base, mi.base + mi.length});
        t_pin_info = nullptr;
        if (!res) {
            *err = "export: " + res.error().message;
            return nullptr;
        }
        reg->exp = std::move(res.value());
        const auto *e = reg->exp.payload_as<Export>();
        rkey->kind = e->kind;
        rkey->device = mi.device;
        rkey->base = mi.base;
        rkey->length = mi.length;
        rkey->buffer_id = mi.buffer_id;
        if (e->kind == GP_RKEY_CUDA_IPC) std::memcpy(rkey->handle, &e->ipc, sizeof(e->ipc));
        if (e->kind == GP_RKEY_CUDA_VMM) rkey->handle_fd = e->fd;
        if (e->kind == GP_RKEY_CUDA_POOL) {
            static_assert(sizeof(e->pool_ptr) == sizeof(rkey->handle), "pool export data size");
            std::memcpy(rkey->handle, &e->pool_ptr, sizeof(rkey->handle));
            rkey->handle_fd = e->pool->fd;
        }
        if (const auto *p = cuda::devices().props(mi.device)) {
            std::memcpy(rkey->dev_uuid, p->uuid.bytes, sizeof(rkey->dev_uuid));
        }
        reg->addr = mi.base;
        reg->len = mi.length;
        reg->host = false;
    }
    reg->token = new_secret_token();
    rkey->token = reg->token;
    gp_rkey_seal(rkey);
    live_add(*reg);
    return reg.release();
}

void deregister(Registration *reg) noexcept {
    if (reg == nullptr) return;
    live_remove(*reg);
    delete reg;
}

} // namespace gdrpipe::pipeline
