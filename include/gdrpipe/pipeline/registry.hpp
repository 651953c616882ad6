// Exporter side: registration of local memory for peers (gp_mem_register).
//
// Host memory gets a GP_RKEY_HOST key (pid, range). Device memory is exported
// once per allocation through the process-wide EXPORT cache (a RegionCache,
// 64 KiB alignment, clamped to the allocation, tag = CUDA BUFFER_ID,
// invalidated by the CUDA free hooks): legacy IPC handle, VMM POSIX fd (kept
// open here), or GP_RKEY_CUDA_NONE (staged only). The registry of live
// registrations lets the staged pipeline's owner side refuse requests for
// memory nobody registered.
#pragma once

#include "gdrpipe/cache/region_cache.hpp"
#include "gdrpipe/rkey.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace gdrpipe::pipeline {

struct Registration;

// Fills *rkey (sealed) and returns a registration to release with
// deregister(); nullptr with *err on failure (never for exportability:
// unexportable device memory gives GP_RKEY_CUDA_NONE).
// Whether memory of exportable stream-ordered pools is exported for the
// direct path (GP_RKEY_CUDA_POOL). Off by default (UCX_GDRPIPE_POOL_IPC):
// on the H200 machine it gave wrong data; off, pool memory is staged.
void set_pool_ipc(bool enable) noexcept;

Registration *register_memory(void *addr, size_t len, uint64_t host_id, gp_rkey_t *rkey,
                              std::string *err);
void deregister(Registration *reg) noexcept;

// Whether [addr, addr+len) lies inside one live registration whose token
// (the rkey's, handed only to the peers given that rkey) is `token`; *host
// tells whether that registration is host memory. Knowing an address is not
// enough to reach memory registered for others (security review M4).
bool registered(uintptr_t addr, size_t len, uint64_t token, bool *host);

// The process-wide export cache (created on first use; registers the free
// listener with the CUDA hooks).
cache::RegionCache &export_cache();
// Whether export_cache() was created (stats without creating it).
bool export_cache_exists() noexcept;

} // namespace gdrpipe::pipeline
