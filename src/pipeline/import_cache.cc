// Imports of peers' GPU buffers through the process-wide import cache.
#include "gdrpipe/pipeline/import_cache.hpp"

#include "gdrpipe/cuda/context.hpp"
#include "gdrpipe/log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <mutex>

namespace gdrpipe::pipeline {
namespace {

struct PinCtx {
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
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/%d/fd/%d", int(k.pid), int(k.handle_fd));
    int fd = ::open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return cache::make_cache_error(0, std::string("open ") + path + ": " + std::strerror(errno));
    }
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

cache::Result<cache::Payload> pin_import(const cache::RegionInfo &) {
    const PinCtx *c = t_ctx;
    if (c == nullptr) return cache::make_cache_error(cache::kErrInvalidArgument, "no rkey");
    cuda::ScopedContext scope(c->device);
    if (!scope.ok()) return cuda_error(scope.status(), "context");
    switch (c->rkey->kind) {
    case GP_RKEY_CUDA_IPC: return open_ipc(*c->rkey, c->device);
    case GP_RKEY_CUDA_VMM: return open_vmm(*c->rkey, c->device);
    default: return cache::make_cache_error(cache::kErrInvalidArgument, "not importable");
    }
}

void unpin_import(const cache::RegionInfo &ri, cache::Payload &&p) {
    auto *imp = static_cast<Import *>(p.get());
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
    }
    if (r != CUDA_SUCCESS) {
        GP_DEBUG("import cache: closing peer buffer %#lx: %s", ri.addr, cuda::describe(r).c_str());
    }
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
    PinCtx c{&rkey, local_device};
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
