// Byte-level helpers of the wire formats (RDMA endpoint addresses and remote
// keys, control messages, gdrpipe remote keys): little-endian fields, the
// 32-bit FNV-1a checksum and a word-wise checksum for per-message formats.
#pragma once
#include <cstddef>
#include <cstdint>

#include "gdrpipe/mix64.hpp"

namespace gdrpipe {

// Writes the sizeof(T) bytes of v at p, least significant first.
template <class T> void put_le(std::uint8_t *p, T v) {
    for (std::size_t i = 0; i < sizeof(T); ++i) {
        p[i] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(v) >> (8 * i));
    }
}

// Reads a T written by put_le.
template <class T> T get_le(const std::uint8_t *p) {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) {
        v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
    }
    return static_cast<T>(v);
}

// 32-bit FNV-1a of the n bytes at p.
inline std::uint32_t fnv1a32(const void *p, std::size_t n) noexcept {
    const auto *b = static_cast<const unsigned char *>(p);
    std::uint32_t h = 2166136261u;
    for (std::size_t i = 0; i < n; ++i) {
        h = (h ^ b[i]) * 16777619u;
    }
    return h;
}

// A 32-bit checksum of the n bytes at p, eight at a time: a multiply-xor
// step per 64-bit word (the tail zero-padded, the length mixed in), then
// mix64, so that any change of the input changes each output bit with
// probability about 1/2. About 8 times fewer steps than
// fnv1a32 for the per-message formats (remote keys, control messages).
// Detects corruption; it is not an authentication.
inline std::uint32_t hash32_words(const void *p, std::size_t n) noexcept {
    const auto *b = static_cast<const unsigned char *>(p);
    std::uint64_t h = 0xcbf29ce484222325ull ^ n;
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        std::uint64_t w;
        __builtin_memcpy(&w, b + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
    }
    if (i < n) {
        std::uint64_t w = 0;
        __builtin_memcpy(&w, b + i, n - i);
        h = (h ^ w) * 0x100000001b3ull;
    }
    return static_cast<std::uint32_t>(mix64(h));
}

} // namespace gdrpipe
