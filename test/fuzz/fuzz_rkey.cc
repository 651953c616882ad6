// Remote keys (gp_rkey_t, include/gdrpipe/rkey.h) as UCP hands them over
// from a peer: any bytes, any length; checked as received and, to get past
// the checksum, also after sealing.
#include "fuzz_target.hpp"

#include "gdrpipe/rkey.h"

namespace {
void check_accepted(const gp_rkey_t &k) {
    GP_FUZZ_ASSERT(k.kind >= GP_RKEY_HOST && k.kind <= GP_RKEY_CUDA_NONE);
    GP_FUZZ_ASSERT(k.pid > 0);
    GP_FUZZ_ASSERT(k.base + k.length >= k.base);
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    gp_rkey_t k{};
    if (size != 0) std::memcpy(&k, data, size < sizeof(k) ? size : sizeof(k));
    if (gp_rkey_check(&k) == nullptr) check_accepted(k);
    gp_rkey_seal(&k);
    if (gp_rkey_check(&k) == nullptr) check_accepted(k);
    return 0;
}

std::vector<FuzzBytes> gp_fuzz_seeds() {
    std::vector<FuzzBytes> out;
    for (int kind = GP_RKEY_HOST; kind <= GP_RKEY_CUDA_NONE; ++kind) {
        gp_rkey_t k{};
        k.kind = std::uint16_t(kind);
        k.pid = 1234;
        k.device = kind == GP_RKEY_HOST ? -1 : 0;
        k.base = 0x7f0000000000ull;
        k.length = 1 << 20;
        k.buffer_id = 42;
        k.host_id = 0x1122334455667788ull;
        k.handle_fd = kind == GP_RKEY_CUDA_VMM || kind == GP_RKEY_CUDA_POOL ? 17 : -1;
        gp_rkey_seal(&k);
        out.push_back(fuzz_bytes_of(k));
    }
    return out;
}
