// What CUDA knows about a pointer, in one cuPointerGetAttributes call.
#pragma once

#include "gdrpipe/cuda/driver.hpp"

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <optional>

namespace gdrpipe::cuda {

enum class MemKind : std::uint8_t {
    host,    // host memory: unknown to CUDA, or pinned (MemInfo::pinned)
    device,  // device memory (cuMemAlloc, pools, VMM)
    managed, // unified memory (cuMemAllocManaged)
};

const char *to_string(MemKind kind) noexcept;

struct MemInfo {
    MemKind kind = MemKind::host;
    bool pinned = false;     // host memory allocated or registered with CUDA
    std::uintptr_t base = 0; // start of the whole allocation (0 if unknown)
    std::size_t length = 0;  // length of the whole allocation (0 if unknown)
    int device = -1;         // device ordinal (-1 for host memory unknown to CUDA)
    std::uint64_t buffer_id = 0; // unique per allocation (0 if unknown to CUDA)
    bool vmm = false;        // device memory from cuMemCreate/cuMemMap
    bool pool = false;       // device memory from a memory pool (cuMemAllocAsync)
    bool legacy_ipc = false; // usable with cuIpcGetMemHandle
    CUmemoryPool mempool = nullptr;

    bool is_cuda() const noexcept { return kind != MemKind::host || pinned; }
};

// Fill `out` for `ptr`. Memory unknown to CUDA (and every pointer when CUDA is
// off) gives kind host, not pinned, base/length 0, CUDA_SUCCESS. Other errors
// are the driver's.
CUresult query(const void *ptr, MemInfo *out, const Driver &drv);
CUresult query(const void *ptr, MemInfo *out);
// As above; nullopt on a driver error.
std::optional<MemInfo> query(const void *ptr);
// Only kind, pinned and device (3 attributes instead of 8: the per-message
// path, which needs no allocation range, buffer id or pool).
CUresult query_kind(const void *ptr, MemInfo *out, const Driver &drv);
CUresult query_kind(const void *ptr, MemInfo *out);

// CU_POINTER_ATTRIBUTE_SYNC_MEMOPS = 1 for the allocation holding ptr.
// CUDA_ERROR_NOT_SUPPORTED (VMM memory) counts as success.
CUresult set_sync_memops(const void *ptr, const Driver &drv);
CUresult set_sync_memops(const void *ptr);

// CU_POINTER_ATTRIBUTE_BUFFER_ID with one cuPointerGetAttribute call: a new
// value means a new allocation at that address. 0 when unknown to CUDA.
std::uint64_t buffer_id(const void *ptr, const Driver &drv) noexcept;
std::uint64_t buffer_id(const void *ptr) noexcept;

} // namespace gdrpipe::cuda
