// The 64-bit finalizer of splitmix64: every input bit changes each output bit
// with probability about 1/2. Shared by the hash of cache keys and the
// word-wise checksum of the wire formats.
#pragma once
#include <cstdint>

namespace gdrpipe {

constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

} // namespace gdrpipe
