// Byte-level helpers of the wire formats (RDMA endpoint addresses and remote
// keys, control messages, gdrpipe remote keys): little-endian fields and the
// 32-bit FNV-1a checksum.
#pragma once
#include <cstddef>
#include <cstdint>

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

} // namespace gdrpipe
