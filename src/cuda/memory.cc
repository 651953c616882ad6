// Pointer queries through cuPointerGetAttributes.
#include "gdrpipe/cuda/memory.hpp"

#include <atomic>

namespace gdrpipe::cuda {
namespace {

// Attributes asked in one call. The last ones are newer (CUDA 11.x): if the
// driver refuses the full set, the basic set is used from then on.
constexpr CUpointer_attribute kAttrs[] = {
    CU_POINTER_ATTRIBUTE_MEMORY_TYPE,      CU_POINTER_ATTRIBUTE_IS_MANAGED,
    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,   CU_POINTER_ATTRIBUTE_BUFFER_ID,
    CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
    CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
    CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,
};
constexpr unsigned kAllAttrs = sizeof(kAttrs) / sizeof(kAttrs[0]);
constexpr unsigned kBasicAttrs = 6; // up to RANGE_SIZE

std::atomic<bool> g_basic_only{false};

} // namespace

const char *to_string(MemKind kind) noexcept {
    switch (kind) {
    case MemKind::host: return "host";
    case MemKind::device: return "cuda";
    case MemKind::managed: return "cuda-managed";
    }
    return "?";
}

CUresult query(const void *ptr, MemInfo *out, const Driver &drv) {
    *out = MemInfo{};
    if (!drv.available() || ptr == nullptr) return CUDA_SUCCESS;

    unsigned mem_type = 0;
    unsigned is_managed = 0; // zeroed: a driver may write only a bool-sized value
    int ordinal = -1;
    unsigned long long buf_id = 0;
    CUdeviceptr start = 0;
    std::size_t size = 0;
    unsigned legacy_ipc = 0;
    CUmemoryPool pool = nullptr;
    void *data[kAllAttrs] = {&mem_type, &is_managed, &ordinal,    &buf_id,
                             &start,    &size,       &legacy_ipc, &pool};

    CUpointer_attribute attrs[kAllAttrs];
    for (unsigned i = 0; i < kAllAttrs; ++i) attrs[i] = kAttrs[i];
    const auto dptr = reinterpret_cast<CUdeviceptr>(ptr);
    const Api &api = drv.api();
    bool basic = g_basic_only.load(std::memory_order_relaxed);
    CUresult r = api.cuPointerGetAttributes(basic ? kBasicAttrs : kAllAttrs, attrs, data, dptr);
    if (r == CUDA_ERROR_INVALID_VALUE && !basic) {
        r = api.cuPointerGetAttributes(kBasicAttrs, attrs, data, dptr);
        if (r == CUDA_SUCCESS) g_basic_only.store(true, std::memory_order_relaxed);
    }
    if (r != CUDA_SUCCESS) return r;

    if (mem_type == 0) return CUDA_SUCCESS; // not known to CUDA: plain host memory

    out->base = static_cast<std::uintptr_t>(start);
    out->length = size;
    out->buffer_id = buf_id;
    out->device = ordinal;
    out->mempool = pool;
    out->pool = pool != nullptr;
    out->legacy_ipc = legacy_ipc != 0;
    if (is_managed != 0) {
        out->kind = MemKind::managed;
    } else if (mem_type == CU_MEMORYTYPE_DEVICE) {
        out->kind = MemKind::device;
        // VMM: neither legacy-IPC capable nor from a pool (only decidable when
        // the driver answered the newer attributes).
        out->vmm = !basic && !g_basic_only.load(std::memory_order_relaxed) &&
                   !out->legacy_ipc && !out->pool;
    } else {
        out->kind = MemKind::host;
        out->pinned = true;
    }
    return CUDA_SUCCESS;
}

CUresult query(const void *ptr, MemInfo *out) { return query(ptr, out, driver()); }

CUresult query_kind(const void *ptr, MemInfo *out) { return query_kind(ptr, out, driver()); }

CUresult query_kind(const void *ptr, MemInfo *out, const Driver &drv) {
    *out = MemInfo{};
    if (!drv.available() || ptr == nullptr) return CUDA_SUCCESS;
    unsigned mem_type = 0;
    unsigned is_managed = 0;
    int ordinal = -1;
    void *data[3] = {&mem_type, &is_managed, &ordinal};
    CUpointer_attribute attrs[3] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                    CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    CUresult r = drv.api().cuPointerGetAttributes(3, attrs, data,
                                                  reinterpret_cast<CUdeviceptr>(ptr));
    if (r != CUDA_SUCCESS || mem_type == 0) return r;
    out->device = ordinal;
    if (is_managed != 0) {
        out->kind = MemKind::managed;
    } else if (mem_type == CU_MEMORYTYPE_DEVICE) {
        out->kind = MemKind::device;
    } else {
        out->pinned = true;
    }
    return CUDA_SUCCESS;
}

std::optional<MemInfo> query(const void *ptr) {
    MemInfo info;
    if (query(ptr, &info, driver()) != CUDA_SUCCESS) return std::nullopt;
    return info;
}

CUresult set_sync_memops(const void *ptr, const Driver &drv) {
    if (!drv.available()) return CUDA_ERROR_NOT_INITIALIZED;
    unsigned one = 1;
    CUresult r = drv.api().cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
                                                 reinterpret_cast<CUdeviceptr>(ptr));
    return r == CUDA_ERROR_NOT_SUPPORTED ? CUDA_SUCCESS : r;
}

CUresult set_sync_memops(const void *ptr) { return set_sync_memops(ptr, driver()); }

std::uint64_t buffer_id(const void *ptr, const Driver &drv) noexcept {
    if (!drv.available()) return 0;
    unsigned long long id = 0;
    CUresult r = drv.api().cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                                 reinterpret_cast<CUdeviceptr>(ptr));
    return r == CUDA_SUCCESS ? id : 0;
}

std::uint64_t buffer_id(const void *ptr) noexcept { return buffer_id(ptr, driver()); }

} // namespace gdrpipe::cuda
