// The remote-key format of the core (include/gdrpipe/rkey.h: a plain C
// layout, so that the UCX glue packs and reads it too): checksum, seal, check.
#include "gdrpipe/rkey.h"

#include "gdrpipe/bytes.hpp"

#include <cstddef>

extern "C" uint32_t gp_rkey_checksum(const gp_rkey_t *rkey) {
    // over the fields before the checksum, word-wise (one per message)
    return gdrpipe::hash32_words(rkey, offsetof(gp_rkey_t, checksum));
}

extern "C" void gp_rkey_seal(gp_rkey_t *rkey) {
    rkey->magic = GP_RKEY_MAGIC;
    rkey->version = GP_RKEY_VERSION;
    rkey->checksum = gp_rkey_checksum(rkey);
}

extern "C" const char *gp_rkey_check(const gp_rkey_t *rkey) {
    if (rkey->magic != GP_RKEY_MAGIC) return "not a gdrpipe remote key";
    if (rkey->version != GP_RKEY_VERSION) return "unsupported remote key version";
    if (rkey->checksum != gp_rkey_checksum(rkey)) return "remote key checksum mismatch";
    if (rkey->kind < GP_RKEY_HOST || rkey->kind > GP_RKEY_CUDA_NONE) return "unknown remote key kind";
    if (rkey->pid <= 0) return "remote key without owner";
    if (rkey->base + rkey->length < rkey->base) return "remote key range overflows";
    // what the packer writes for each kind (pipeline/registry.cc)
    switch (rkey->kind) {
    case GP_RKEY_HOST:
        if (rkey->device != -1 || rkey->handle_fd != -1) return "host remote key with a device";
        break;
    case GP_RKEY_CUDA_IPC:
        if (rkey->device < 0 || rkey->handle_fd != -1) return "inconsistent device remote key";
        break;
    case GP_RKEY_CUDA_NONE: // managed memory may have no device (-1)
        if (rkey->device < -1 || rkey->handle_fd != -1) return "inconsistent device remote key";
        break;
    default: // VMM, POOL: the owner's fd of the shareable handle
        if (rkey->device < 0 || rkey->handle_fd < 0) return "device remote key without its fd";
        break;
    }
    return nullptr;
}
