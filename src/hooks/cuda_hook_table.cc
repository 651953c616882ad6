// The table of hooked CUDA entry points: per group (driver prototype) the
// exports looked up with dlsym, the cuGetProcAddress name, the install()
// option it depends on, and its hook instances.
#include "cuda_hook_table.hpp"

#include "cuda_hook_templates.hpp"

namespace gdrpipe::hooks::detail {

const GroupDesc *groups()
{
    static const GroupDesc g[kGroups] = {
        {{"cuMemAlloc_v2", nullptr}, "cuMemAlloc", kOptAlloc, GP_SLOTS(hk_alloc_v2)},
        {{"cuMemAlloc", nullptr}, nullptr, kOptAlloc, GP_SLOTS(hk_alloc_v1)},
        {{"cuMemAllocPitch_v2", nullptr}, "cuMemAllocPitch", kOptAlloc, GP_SLOTS(hk_pitch_v2)},
        {{"cuMemAllocPitch", nullptr}, nullptr, kOptAlloc, GP_SLOTS(hk_pitch_v1)},
        {{"cuMemAllocManaged", nullptr}, "cuMemAllocManaged", kOptAlloc, GP_SLOTS(hk_managed)},
        {{"cuMemFree_v2", nullptr}, "cuMemFree", kOptFree, GP_SLOTS(hk_free_v2)},
        {{"cuMemFree", nullptr}, nullptr, kOptFree, GP_SLOTS(hk_free_v1)},
        {{"cuMemAllocHost_v2", nullptr}, "cuMemAllocHost", kOptHostAlloc, GP_SLOTS(hk_alloc_host_v2)},
        {{"cuMemAllocHost", nullptr}, nullptr, kOptHostAlloc, GP_SLOTS(hk_alloc_host_v1)},
        {{"cuMemHostAlloc", nullptr}, "cuMemHostAlloc", kOptHostAlloc, GP_SLOTS(hk_host_alloc)},
        {{"cuMemFreeHost", nullptr}, "cuMemFreeHost", kOptHostFree, GP_SLOTS(hk_free_host)},
        {{"cuMemHostRegister_v2", nullptr}, "cuMemHostRegister", kOptHostAlloc, GP_SLOTS(hk_host_reg_v2)},
        {{"cuMemHostRegister", nullptr}, nullptr, kOptHostAlloc, GP_SLOTS(hk_host_reg_v1)},
        {{"cuMemHostUnregister", nullptr}, "cuMemHostUnregister", kOptHostFree, GP_SLOTS(hk_host_unreg)},
        {{"cuMemAllocAsync", "cuMemAllocAsync_ptsz"}, "cuMemAllocAsync", kOptAsyncAlloc,
         GP_SLOTS(hk_alloc_async)},
        {{"cuMemFreeAsync", "cuMemFreeAsync_ptsz"}, "cuMemFreeAsync", kOptAsyncFree,
         GP_SLOTS(hk_free_async)},
        {{"cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync_ptsz"}, "cuMemAllocFromPoolAsync",
         kOptAsyncAlloc, GP_SLOTS(hk_alloc_pool)},
        {{"cuMemPoolTrimTo", nullptr}, "cuMemPoolTrimTo", kOptAsyncFree, GP_SLOTS(hk_pool_trim)},
        {{"cuMemPoolDestroy", nullptr}, "cuMemPoolDestroy", kOptAsyncFree, GP_SLOTS(hk_pool_destroy)},
        {{"cuMemMap", nullptr}, "cuMemMap", kOptVmmAlloc, GP_SLOTS(hk_map)},
        {{"cuMemUnmap", nullptr}, "cuMemUnmap", kOptVmmFree, GP_SLOTS(hk_unmap)},
        {{"cuMemRelease", nullptr}, "cuMemRelease", kOptVmmFree, GP_SLOTS(hk_release)},
        {{"cuMemAddressFree", nullptr}, "cuMemAddressFree", kOptVmmFree, GP_SLOTS(hk_addr_free)},
    };
    return g;
}

bool wanted(OptionClass c, const Options &o)
{
    switch (c) {
    case kOptFree: return true;
    case kOptAlloc: return o.hook_allocs;
    case kOptHostFree: return o.hook_host;
    case kOptHostAlloc: return o.hook_host && o.hook_allocs;
    case kOptAsyncFree: return o.hook_async;
    case kOptAsyncAlloc: return o.hook_async && o.hook_allocs;
    case kOptVmmFree: return o.hook_vmm;
    case kOptVmmAlloc: return o.hook_vmm && o.hook_allocs;
    }
    return false;
}

} // namespace gdrpipe::hooks::detail
