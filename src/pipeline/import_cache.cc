// Imports of peers' GPU buffers through the process-wide import cache.
#include "gdrpipe/pipeline/import_cache.hpp"

#include "gdrpipe/cuda/context.hpp"
#include "gdrpipe/log.hpp"
#include "gdrpipe/wire/peer_fd.hpp"

#include <unistd.h>

#include <cstring>
#include <map>
#include <mutex>

namespace gdrpipe::pipeline {

// A peer's memory pool imported here (cuMemPoolImportFromShareableHandle),
// shared by the imports of its pointers; destroyed with the last of them.
struct ImportedPool {
    CUmemoryPool pool = nullptr;
    int fd = -1;           // our copy of the owner's pool fd (identity check)
    uint64_t access = 0;   // local devices granted access (bit = ordinal)
    ~ImportedPool() {
        if (pool != nullptr && cuda::driver().available()) {
            CUresult r = cuda::driver().api().cuMemPoolDestroy(pool);
            if (r != CUDA_SUCCESS) {
                GP_DEBUG("import cache: destroying imported pool %p: %s",
                         static_cast<void *>(pool), cuda::describe(r).c_str());
            }
        }
        if (fd >= 0) ::close(fd);
    }
};

namespace {

struct PinCtx {
    cache::SpaceId space;
    const gp_rkey_t *rkey;
    int device;
};
thread_local const PinCtx *t_ctx = nullptr;

cache::CacheError cuda_error(CUresult r, const char *what) {
    return cache::make_cache_error(int(r), std::string(what) + ": " + cuda::describe(r));
}

cache::Result<cache::Payload> open_ipc(const gp_rkey_t &k, int dev) {
    const auto &api = cuda::driver().api();
    CUipcMemHandle h;
    std::memcpy(&h, k.handle, sizeof(h));
    CUdeviceptr p = 0;
    CUresult r = api.cuIpcOpenMemHandle(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    if (r != CUDA_SUCCESS) return cuda_error(r, "cuIpcOpenMemHandle");
    auto imp = std::make_shared<Import>();
    imp->kind = GP_RKEY_CUDA_IPC;
    imp->device = dev;
    imp->ptr = uintptr_t(p);
    imp->size = k.length;
    return cache::Payload(imp);
}

cache::Result<cache::Payload> open_vmm(const gp_rkey_t &k, int dev) {
    const auto &api = cuda::driver().api();
    std::string err;
    int fd = wire::open_peer_fd(k.pid, k.handle_fd, &err);
    if (fd < 0) return cache::make_cache_error(0, "VMM handle: " + err);
    CUmemGenericAllocationHandle h = 0;
    CUresult r = api.cuMemImportFromShareableHandle(
        &h, reinterpret_cast<void *>(intptr_t(fd)), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    ::close(fd);
    if (r != CUDA_SUCCESS) return cuda_error(r, "cuMemImportFromShareableHandle");
    CUdeviceptr va = 0;
    r = api.cuMemAddressReserve(&va, k.length, 0, 0, 0);
    if (r != CUDA_SUCCESS) {
        api.cuMemRelease(h);
        return cuda_error(r, "cuMemAddressReserve");
    }
    r = api.cuMemMap(va, k.length, 0, h, 0);
    if (r != CUDA_SUCCESS) {
        api.cuMemAddressFree(va, k.length);
        api.cuMemRelease(h);
        return cuda_error(r, "cuMemMap");
    }
    CUmemAccessDesc acc{};
    acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    acc.location.id = dev;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    r = api.cuMemSetAccess(va, k.length, &acc, 1);
    if (r != CUDA_SUCCESS) {
        api.cuMemUnmap(va, k.length);
        api.cuMemAddressFree(va, k.length);
        api.cuMemRelease(h);
        return cuda_error(r, "cuMemSetAccess");
    }
    auto imp = std::make_shared<Import>();
    imp->kind = GP_RKEY_CUDA_VMM;
    imp->device = dev;
    imp->ptr = uintptr_t(va);
    imp->size = k.length;
    imp->vmm_handle = h;
    imp->vmm_reserved = k.length;
    return cache::Payload(imp);
}

// Imported pools by (peer, the owner's pool fd number). An entry is reused
// only while the owner's fd is still the same open file as ours (a pool fd
// closed and its number reused for another pool gives a new import).
std::mutex g_pool_mu;
std::map<std::pair<cache::SpaceId, int>, std::weak_ptr<ImportedPool>> g_pools;

cache::Result<std::shared_ptr<ImportedPool>> import_pool(cache::SpaceId space, const gp_rkey_t &k,
                                                          int dev) {
    const auto &api = cuda::driver().api();
    std::lock_guard<std::mutex> g(g_pool_mu);
    auto &slot = g_pools[{space, int(k.handle_fd)}];
    std::shared_ptr<ImportedPool> ip = slot.lock();
    if (ip && wire::same_peer_file(k.pid, k.handle_fd, ip->fd) != 1) ip.reset();
    if (!ip) {
        for (auto it = g_pools.begin(); it != g_pools.end();) { // forget released pools
            it = (it->second.expired() && &it->second != &slot) ? g_pools.erase(it)
                                                                 : std::next(it);
        }
        std::string err;
        int fd = wire::open_peer_fd(k.pid, k.handle_fd, &err);
        if (fd < 0) return cache::make_cache_error(0, "pool handle: " + err);
        ip = std::make_shared<ImportedPool>();
        ip->fd = fd;
        CUresult r = api.cuMemPoolImportFromShareableHandle(
            &ip->pool, reinterpret_cast<void *>(intptr_t(fd)),
            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
        if (r != CUDA_SUCCESS) {
            ip->pool = nullptr;
            return cuda_error(r, "cuMemPoolImportFromShareableHandle");
        }
        slot = ip;
    }
    if (dev >= 0 && dev < 64 && (ip->access & (uint64_t{1} << dev)) == 0) {
        CUmemAccessDesc acc{};
        acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        acc.location.id = dev;
        acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        CUresult r = api.cuMemPoolSetAccess(ip->pool, &acc, 1);
        // the pool's own device has access anyway (and may refuse the call)
        if (r != CUDA_SUCCESS && device_by_uuid(k.dev_uuid) != dev) {
            return cuda_error(r, "cuMemPoolSetAccess");
        }
        ip->access |= uint64_t{1} << dev;
    }
    return ip;
}

cache::Result<cache::Payload> open_pool(cache::SpaceId space, const gp_rkey_t &k, int dev) {
    auto ip = import_pool(space, k, dev);
    if (!ip) return ip.error();
    CUmemPoolPtrExportData data;
    static_assert(sizeof(data) == sizeof(k.handle), "pool export data size");
    std::memcpy(&data, k.handle, sizeof(data));
    CUdeviceptr p = 0;
    CUresult r = cuda::driver().api().cuMemPoolImportPointer(&p, ip.value()->pool, &data);
    if (r != CUDA_SUCCESS) return cuda_error(r, "cuMemPoolImportPointer");
    auto imp = std::make_shared<Import>();
    imp->kind = GP_RKEY_CUDA_POOL;
    imp->device = dev;
    imp->ptr = uintptr_t(p);
    imp->size = k.length;
    imp->pool = std::move(ip.value());
    return cache::Payload(imp);
}

// Closes an import (in its device's context).
void close_import(Import *imp) {
    if (imp == nullptr || !cuda::driver().available()) return;
    const auto &api = cuda::driver().api();
    cuda::ScopedContext scope(imp->device);
    CUresult r = CUDA_SUCCESS;
    if (imp->kind == GP_RKEY_CUDA_IPC) {
        r = api.cuIpcCloseMemHandle(CUdeviceptr(imp->ptr));
    } else if (imp->kind == GP_RKEY_CUDA_VMM) {
        r = api.cuMemUnmap(CUdeviceptr(imp->ptr), imp->vmm_reserved);
        api.cuMemAddressFree(CUdeviceptr(imp->ptr), imp->vmm_reserved);
        api.cuMemRelease(imp->vmm_handle);
    } else if (imp->kind == GP_RKEY_CUDA_POOL) {
        r = api.cuMemFree(CUdeviceptr(imp->ptr)); // before the pool goes
        imp->pool.reset();
    }
    if (r != CUDA_SUCCESS) {
        GP_DEBUG("import cache: closing an imported buffer at %#lx: %s",
                 static_cast<unsigned long>(imp->ptr), cuda::describe(r).c_str());
    }
}

// The handle maps a real allocation whose extent the driver knows; the
// rkey's length is only the peer's word. The import keeps the measured size,
// and an rkey that claims more than [ptr, end of the allocation) is refused.
// (VMM: cuMemMap of k.length from the handle already fails when the handle
// is smaller.)
cache::Result<cache::Payload> check_extent(cache::Result<cache::Payload> res, const gp_rkey_t &k) {
    if (!res || k.kind == GP_RKEY_CUDA_VMM) return res;
    auto *imp = static_cast<Import *>(res.value().get());
    CUdeviceptr base = 0;
    size_t size = 0;
    CUresult r = cuda::driver().api().cuMemGetAddressRange(&base, &size, CUdeviceptr(imp->ptr));
    std::string why;
    if (r != CUDA_SUCCESS) {
        why = "cuMemGetAddressRange of the imported buffer: " + cuda::describe(r);
    } else if (imp->ptr < uintptr_t(base) || imp->ptr - uintptr_t(base) >= size) {
        why = "the imported pointer lies outside the allocation the driver reports";
    } else if (k.length > size - (imp->ptr - uintptr_t(base))) {
        why = "the remote key claims " + std::to_string(k.length) + " bytes, the allocation behind its handle has " +
              std::to_string(size - (imp->ptr - uintptr_t(base)));
    }
    if (why.empty()) {
        imp->size = size - (imp->ptr - uintptr_t(base));
        return res;
    }
    close_import(imp);
    return cache::make_cache_error(kImportExtentMismatch, why);
}

cache::Result<cache::Payload> open_import(const PinCtx &c) {
    switch (c.rkey->kind) {
    case GP_RKEY_CUDA_IPC: return open_ipc(*c.rkey, c.device);
    case GP_RKEY_CUDA_VMM: return open_vmm(*c.rkey, c.device);
    case GP_RKEY_CUDA_POOL: return open_pool(c.space, *c.rkey, c.device);
    default: return cache::make_cache_error(cache::kErrInvalidArgument, "not importable");
    }
}

cache::Result<cache::Payload> pin_import(const cache::RegionInfo &) {
    const PinCtx *c = t_ctx;
    if (c == nullptr) return cache::make_cache_error(cache::kErrInvalidArgument, "no rkey");
    cuda::ScopedContext scope(c->device);
    if (!scope.ok()) return cuda_error(scope.status(), "context");
    return check_extent(open_import(*c), *c->rkey);
}

void unpin_import(const cache::RegionInfo &, cache::Payload &&p) {
    close_import(static_cast<Import *>(p.get()));
}

std::mutex g_mu;
cache::RegionCache *g_import = nullptr;
size_t g_max_regions = 0, g_max_bytes = 0;

} // namespace

cache::SpaceId peer_space(pid_t pid, uint64_t start_time) noexcept {
    uint64_t s = (uint64_t(uint32_t(pid)) << 40) ^ (start_time * 0x9e3779b97f4a7c15ull);
    return s == cache::kLocalSpace ? 1 : s;
}

void import_cache_configure(size_t max_regions, size_t max_bytes) {
    {
        std::lock_guard<std::mutex> g(g_mu);
        if (g_import != nullptr) return;
        g_max_regions = max_regions;
        g_max_bytes = max_bytes;
    }
    import_cache();
}

bool import_cache_exists() noexcept {
    std::lock_guard<std::mutex> g(g_mu);
    return g_import != nullptr;
}

cache::RegionCache &import_cache() {
    std::lock_guard<std::mutex> g(g_mu);
    if (g_import == nullptr) {
        cache::RegionOps ops;
        ops.pin = pin_import;
        ops.unpin = unpin_import;
        cache::CacheConfig cfg;
        cfg.alignment = size_t{64} << 10;
        cfg.max_regions = g_max_regions;
        cfg.max_bytes = g_max_bytes;
        cfg.merge_overlaps = false;
        cfg.flush_and_retry_on_pin_failure = true;
        cfg.name = "import";
        g_import = new cache::RegionCache(std::move(ops), cfg); // process lifetime
    }
    return *g_import;
}

cache::Result<cache::RegionRef> import_buffer(cache::SpaceId space, const gp_rkey_t &rkey,
                                              int local_device) {
    PinCtx c{space, &rkey, local_device};
    t_ctx = &c;
    auto res = import_cache().get(space, rkey.base, rkey.length, rkey.buffer_id,
                                  cache::AddrRange{rkey.base, rkey.base + rkey.length});
    t_ctx = nullptr;
    return res;
}

int device_by_uuid(const uint8_t *uuid) {
    auto &dm = cuda::devices();
    int n = dm.count();
    for (int i = 0; i < n; ++i) {
        const auto *p = dm.props(i);
        if (p != nullptr && std::memcmp(p->uuid.bytes, uuid, 16) == 0) return i;
    }
    return -1;
}

} // namespace gdrpipe::pipeline
