#include "gdrpipe/rkey.h"

#include <cstddef>

extern "C" uint32_t gp_rkey_checksum(const gp_rkey_t *rkey) {
    // FNV-1a over the fields before the checksum
    const auto *p = reinterpret_cast<const unsigned char *>(rkey);
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < offsetof(gp_rkey_t, checksum); ++i) {
        h = (h ^ p[i]) * 16777619u;
    }
    return h;
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
    return nullptr;
}
