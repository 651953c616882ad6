// Importer side: mappings of peers' GPU buffers (legacy IPC, VMM fd, pointer
// of an exportable memory pool), kept in
// a process-wide RegionCache. Space = the peer (pid + start time), address =
// the peer's allocation base, tag = the rkey's BUFFER_ID: a peer buffer freed
// and reallocated at the same address has a new BUFFER_ID, so the old mapping
// is dropped (closed) and the new one opened -- never reused stale. Pools are
// imported once per (peer, owner's pool fd) and released with the last
// pointer imported from them.
#pragma once

#include "gdrpipe/cache/region_cache.hpp"
#include "gdrpipe/rkey.h"

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace gdrpipe::pipeline {

struct ImportedPool;

struct Import {
    uint16_t kind = 0;        // GP_RKEY_CUDA_IPC / _VMM / _POOL
    int device = -1;          // local ordinal of the context that opened it
    uintptr_t ptr = 0;        // mapping of the peer allocation's base
    size_t size = 0;          // bytes mapped from ptr on (measured, not the rkey's)
    unsigned long long vmm_handle = 0;
    size_t vmm_reserved = 0;
    std::shared_ptr<ImportedPool> pool; // GP_RKEY_CUDA_POOL: the imported pool
};

// Address space of a peer process in the import cache (never 0).
cache::SpaceId peer_space(pid_t pid, uint64_t start_time) noexcept;

// Configures the bounds (first call wins); creates the cache.
void import_cache_configure(size_t max_regions, size_t max_bytes);
cache::RegionCache &import_cache();
bool import_cache_exists() noexcept;

// Error code of import_buffer() when the rkey's range is larger than the
// allocation its handle really maps (a CUresult is below 1000).
inline constexpr int kImportExtentMismatch = 100000;

// A mapping of the peer allocation described by `rkey` (kind IPC, VMM or POOL),
// opened in device `local_device`'s context. The pointer for a remote address
// a is payload->ptr + (a - rkey->base). The rkey's [base, base + length) is
// the peer's claim: the import measures the mapped allocation and fails with
// kImportExtentMismatch when `length` does not fit in it.
cache::Result<cache::RegionRef> import_buffer(cache::SpaceId space, const gp_rkey_t &rkey,
                                              int local_device);

// Local device ordinal whose UUID is `uuid` (16 bytes), -1 if none.
int device_by_uuid(const uint8_t *uuid);

} // namespace gdrpipe::pipeline
