// SipHash-2-4 (Aumasson and Bernstein) over 64-bit words: a keyed
// pseudo-random function. Without the 128-bit key, its outputs for inputs of
// one's choice tell nothing usable about its outputs for others, which the
// registration tokens (secret_token.hpp) need and mix64 does not give (mix64
// is invertible). Words are taken as little-endian 8-byte blocks, so the
// result equals SipHash-2-4 of their bytes on this (x86-64/little-endian)
// target.
#pragma once
#include <cstddef>
#include <cstdint>

namespace gdrpipe {

namespace siphash_detail {
constexpr std::uint64_t rotl(std::uint64_t x, int b) noexcept {
    return (x << b) | (x >> (64 - b));
}
struct State {
    std::uint64_t v0, v1, v2, v3;
    constexpr void round() noexcept {
        v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32);
        v2 += v3; v3 = rotl(v3, 16); v3 ^= v2;
        v0 += v3; v3 = rotl(v3, 21); v3 ^= v0;
        v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32);
    }
    constexpr void absorb(std::uint64_t m) noexcept {
        v3 ^= m;
        round();
        round();
        v0 ^= m;
    }
};
} // namespace siphash_detail

// SipHash-2-4 of n words (8 * n bytes) under the key (k0, k1)
constexpr std::uint64_t siphash24(std::uint64_t k0, std::uint64_t k1, const std::uint64_t *w,
                                  std::size_t n) noexcept {
    siphash_detail::State s{k0 ^ 0x736f6d6570736575ull, k1 ^ 0x646f72616e646f6dull,
                            k0 ^ 0x6c7967656e657261ull, k1 ^ 0x7465646279746573ull};
    for (std::size_t i = 0; i < n; ++i) s.absorb(w[i]);
    // the last block: the message length in bytes (mod 256) in the top byte;
    // no bytes are left over with whole words
    s.absorb(static_cast<std::uint64_t>((8 * n) & 0xff) << 56);
    s.v2 ^= 0xff;
    for (int i = 0; i < 4; ++i) s.round();
    return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

} // namespace gdrpipe
