// The per-entry-point hooks: one function template per driver prototype,
// instantiated kSlots times (template argument: the slot). Each calls its
// entry's trampoline and records the allocation or free in the table of live
// allocations (cuda_hooks.cc). Included by the table of entry points
// (cuda_hook_table.cc), which takes the instances' addresses.
#pragma once
#include "cuda_hook_table.hpp"

#include <cstddef>
#include <cstdint>
#include <cuda.h>

namespace gdrpipe::hooks::detail {

typedef unsigned int CUdeviceptr_v1_t; // legacy 32-bit device pointer of the unversioned exports

// ---- what the hooks call (cuda_hooks.cc) -----------------------------------

extern constinit thread_local int t_depth; // hook nesting on this thread

struct DepthGuard {
    DepthGuard() noexcept { ++t_depth; }
    ~DepthGuard() { --t_depth; }
    DepthGuard(const DepthGuard &) = delete;
    DepthGuard &operator=(const DepthGuard &) = delete;
};

// A block was allocated: record it and tell the listeners.
void after_alloc(uintptr_t addr, size_t len, MemKind kind, int device, uintptr_t owner,
                 const char *src) noexcept;
// A block is being freed: forget it (pool blocks move to the pool's freed
// blocks when `to_pool_freed`) and tell the listeners, before the driver frees it.
void before_free(uintptr_t addr, MemKind hint, const char *src, bool to_pool_freed = false) noexcept;
// Frees of a range [addr, addr+len): every recorded block starting inside it is forgotten.
void before_free_range(uintptr_t addr, size_t len, MemKind kind, const char *src) noexcept;
// Every live block of VMM handle `owner` (cuMemRelease) or every freed block of
// pool `owner` or of an unknown pool (trim/destroy).
void before_free_owned(bool pool, uintptr_t owner, const char *src) noexcept;
// The current context's device, or -1.
int current_device() noexcept;
// The device of VMM allocation `h` mapped at `mapped`, or -1.
int vmm_device(CUmemGenericAllocationHandle h, CUdeviceptr mapped) noexcept;

template <class F>
F orig(int g, int s) noexcept
{
    return reinterpret_cast<F>(g_orig[g][s].load(std::memory_order_acquire));
}

// ---- the hooks -------------------------------------------------------------

#define GP_ORIG(G, S, HOOK) orig<decltype(&HOOK<0>)>(G, S)

template <int S>
CUresult hk_alloc_v2(CUdeviceptr *dptr, size_t n)
{
    DepthGuard d;
    CUresult r = GP_ORIG(kAllocV2, S, hk_alloc_v2)(dptr, n);
    if (r == CUDA_SUCCESS && dptr != nullptr) {
        after_alloc(*dptr, n, MemKind::device, current_device(), 0, "cuMemAlloc_v2");
    }
    return r;
}
template <int S>
CUresult hk_alloc_v1(CUdeviceptr_v1_t *dptr, unsigned int n)
{
    DepthGuard d;
    CUresult r = GP_ORIG(kAllocV1, S, hk_alloc_v1)(dptr, n);
    if (r == CUDA_SUCCESS && dptr != nullptr) {
        after_alloc(*dptr, n, MemKind::device, current_device(), 0, "cuMemAlloc");
    }
    return r;
}
template <int S>
CUresult hk_pitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t w, size_t h, unsigned int elem)
{
    DepthGuard d;
    CUresult r = GP_ORIG(kPitchV2, S, hk_pitch_v2)(dptr, pitch, w, h, elem);
    if (r == CUDA_SUCCESS && dptr != nullptr && pitch != nullptr) {
        after_alloc(*dptr, *pitch * h, MemKind::device, current_device(), 0,
                    "cuMemAllocPitch_v2");
    }
    return r;
}
template <int S>
CUresult hk_pitch_v1(CUdeviceptr_v1_t *dptr, unsigned int *pitch, unsigned int w, unsigned int h,
                     unsigned int elem)
{
    DepthGuard d;
    CUresult r = GP_ORIG(kPitchV1, S, hk_pitch_v1)(dptr, pitch, w, h, elem);
    if (r == CUDA_SUCCESS && dptr != nullptr && pitch != nullptr) {
        after_alloc(*dptr, size_t{*pitch} * h, MemKind::device, current_device(), 0,
                    "cuMemAllocPitch");
    }
    return r;
}
template <int S>
CUresult hk_managed(CUdeviceptr *dptr, size_t n, unsigned int flags)
{
    DepthGuard d;
    CUresult r = GP_ORIG(kManaged, S, hk_managed)(dptr, n, flags);
    if (r == CUDA_SUCCESS && dptr != nullptr) {
        after_alloc(*dptr, n, MemKind::managed, -1, 0, "cuMemAllocManaged");
    }
    return r;
}
template <int S>
CUresult hk_free_v2(CUdeviceptr p)
{
    DepthGuard d;
    before_free(p, MemKind::device, "cuMemFree_v2");
    return GP_ORIG(kFreeV2, S, hk_free_v2)(p);
}
template <int S>
CUresult hk_free_v1(CUdeviceptr_v1_t p)
{
    DepthGuard d;
    before_free(p, MemKind::device, "cuMemFree");
    return GP_ORIG(kFreeV1, S, hk_free_v1)(p);
}
template <int S>
CUresult hk_alloc_host_v2(void **pp, size_t n)
{
    DepthGuard d;
    CUresult r = GP_ORIG(kAllocHostV2, S, hk_alloc_host_v2)(pp, n);
    if (r == CUDA_SUCCESS && pp != nullptr) {
        after_alloc(reinterpret_cast<uintptr_t>(*pp), n, MemKind::host_pinned, -1, 0,
                    "cuMemAllocHost_v2");
    }
    return r;
}
template <int S>
CUresult hk_alloc_host_v1(void **pp, unsigned int n)
{
    DepthGuard d;
    CUresult r = GP_ORIG(kAllocHostV1, S, hk_alloc_host_v1)(pp, n);
    if (r == CUDA_SUCCESS && pp != nullptr) {
        after_alloc(reinterpret_cast<uintptr_t>(*pp), n, MemKind::host_pinned, -1, 0,
                    "cuMemAllocHost");
    }
    return r;
}
template <int S>
CUresult hk_host_alloc(void **pp, size_t n, unsigned int flags)
{
    DepthGuard d;
    CUresult r = GP_ORIG(kHostAlloc, S, hk_host_alloc)(pp, n, flags);
    if (r == CUDA_SUCCESS && pp != nullptr) {
        after_alloc(reinterpret_cast<uintptr_t>(*pp), n, MemKind::host_pinned, -1, 0,
                    "cuMemHostAlloc");
    }
    return r;
}
template <int S>
CUresult hk_free_host(void *p)
{
    DepthGuard d;
    before_free(reinterpret_cast<uintptr_t>(p), MemKind::host_pinned, "cuMemFreeHost");
    return GP_ORIG(kFreeHost, S, hk_free_host)(p);
}
template <int S>
CUresult hk_host_reg_v2(void *p, size_t n, unsigned int flags)
{
    DepthGuard d;
    CUresult r = GP_ORIG(kHostRegV2, S, hk_host_reg_v2)(p, n, flags);
    if (r == CUDA_SUCCESS) {
        after_alloc(reinterpret_cast<uintptr_t>(p), n, MemKind::host_pinned, -1, 0,
                    "cuMemHostRegister_v2");
    }
    return r;
}
template <int S>
CUresult hk_host_reg_v1(void *p, size_t n, unsigned int flags)
{
    DepthGuard d;
    CUresult r = GP_ORIG(kHostRegV1, S, hk_host_reg_v1)(p, n, flags);
    if (r == CUDA_SUCCESS) {
        after_alloc(reinterpret_cast<uintptr_t>(p), n, MemKind::host_pinned, -1, 0,
                    "cuMemHostRegister");
    }
    return r;
}
template <int S>
CUresult hk_host_unreg(void *p)
{
    DepthGuard d;
    before_free(reinterpret_cast<uintptr_t>(p), MemKind::host_pinned, "cuMemHostUnregister");
    return GP_ORIG(kHostUnreg, S, hk_host_unreg)(p);
}
template <int S>
CUresult hk_alloc_async(CUdeviceptr *dptr, size_t n, CUstream st)
{
    DepthGuard d;
    CUresult r = GP_ORIG(kAllocAsync, S, hk_alloc_async)(dptr, n, st);
    if (r == CUDA_SUCCESS && dptr != nullptr) {
        after_alloc(*dptr, n, MemKind::pool, current_device(), 0, "cuMemAllocAsync");
    }
    return r;
}
template <int S>
CUresult hk_free_async(CUdeviceptr p, CUstream st)
{
    DepthGuard d;
    before_free(p, MemKind::pool, "cuMemFreeAsync", true);
    return GP_ORIG(kFreeAsync, S, hk_free_async)(p, st);
}
template <int S>
CUresult hk_alloc_pool(CUdeviceptr *dptr, size_t n, CUmemoryPool pool, CUstream st)
{
    DepthGuard d;
    CUresult r = GP_ORIG(kAllocPool, S, hk_alloc_pool)(dptr, n, pool, st);
    if (r == CUDA_SUCCESS && dptr != nullptr) {
        after_alloc(*dptr, n, MemKind::pool, current_device(),
                    reinterpret_cast<uintptr_t>(pool), "cuMemAllocFromPoolAsync");
    }
    return r;
}
template <int S>
CUresult hk_pool_trim(CUmemoryPool pool, size_t keep)
{
    DepthGuard d;
    before_free_owned(true, reinterpret_cast<uintptr_t>(pool), "cuMemPoolTrimTo");
    return GP_ORIG(kPoolTrim, S, hk_pool_trim)(pool, keep);
}
template <int S>
CUresult hk_pool_destroy(CUmemoryPool pool)
{
    DepthGuard d;
    before_free_owned(true, reinterpret_cast<uintptr_t>(pool), "cuMemPoolDestroy");
    return GP_ORIG(kPoolDestroy, S, hk_pool_destroy)(pool);
}
template <int S>
CUresult hk_map(CUdeviceptr p, size_t n, size_t off, CUmemGenericAllocationHandle h,
                unsigned long long flags)
{
    DepthGuard d;
    CUresult r = GP_ORIG(kMap, S, hk_map)(p, n, off, h, flags);
    if (r == CUDA_SUCCESS) {
        after_alloc(p, n, MemKind::vmm, vmm_device(h, p), static_cast<uintptr_t>(h), "cuMemMap");
    }
    return r;
}
template <int S>
CUresult hk_unmap(CUdeviceptr p, size_t n)
{
    DepthGuard d;
    before_free_range(p, n, MemKind::vmm, "cuMemUnmap");
    return GP_ORIG(kUnmap, S, hk_unmap)(p, n);
}
template <int S>
CUresult hk_release(CUmemGenericAllocationHandle h)
{
    DepthGuard d;
    before_free_owned(false, static_cast<uintptr_t>(h), "cuMemRelease");
    return GP_ORIG(kRelease, S, hk_release)(h);
}
template <int S>
CUresult hk_addr_free(CUdeviceptr p, size_t n)
{
    DepthGuard d;
    before_free_range(p, n, MemKind::vmm, "cuMemAddressFree");
    return GP_ORIG(kAddrFree, S, hk_addr_free)(p, n);
}

// The kSlots instances of a hook, for GroupDesc::hooks.
#define GP_SLOTS(fn)                                                                             \
    {                                                                                            \
        reinterpret_cast<void *>(&fn<0>), reinterpret_cast<void *>(&fn<1>),                      \
            reinterpret_cast<void *>(&fn<2>), reinterpret_cast<void *>(&fn<3>)                   \
    }

} // namespace gdrpipe::hooks::detail
