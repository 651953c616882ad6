// Keying of cached regions by (address space, address).
//
// One RegionCache can hold regions of many address spaces: space 0 is the
// local process (exports of local GPU buffers, host pinning, registrations);
// imports of a peer's buffers live in a space named by the caller (e.g. a
// peer/endpoint id), so peers' identical virtual addresses never collide and
// all of a peer's regions can be dropped at once (RegionCache::invalidate_space).
#pragma once
#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>

#include "gdrpipe/mix64.hpp"

namespace gdrpipe::cache {

using SpaceId = std::uint64_t;

// The local process. Peer spaces use any other value chosen by the caller.
inline constexpr SpaceId kLocalSpace = 0;

struct AddressSpaceKey {
    SpaceId space = kLocalSpace;
    std::uintptr_t addr = 0;

    friend constexpr auto operator<=>(const AddressSpaceKey &,
                                      const AddressSpaceKey &) = default;
    friend constexpr bool operator==(const AddressSpaceKey &,
                                     const AddressSpaceKey &) = default;
};

struct AddressSpaceKeyHash {
    std::size_t operator()(const AddressSpaceKey &k) const noexcept {
        // both words, mixed
        return static_cast<std::size_t>(mix64(k.space * 0x9e3779b97f4a7c15ull ^ k.addr));
    }
};

// Half-open address range [lo, hi). Used for allocation bounds (the clamp of
// the widened request) and for reporting region extents.
struct AddrRange {
    std::uintptr_t lo = 0;
    std::uintptr_t hi = std::numeric_limits<std::uintptr_t>::max();

    static constexpr AddrRange all() noexcept { return {}; }
    constexpr std::size_t size() const noexcept { return hi - lo; }
    constexpr bool contains(std::uintptr_t a, std::uintptr_t b) const noexcept {
        return lo <= a && b <= hi;
    }
    constexpr bool overlaps(std::uintptr_t a, std::uintptr_t b) const noexcept {
        return a < hi && lo < b;
    }
    friend constexpr bool operator==(const AddrRange &, const AddrRange &) = default;
};

} // namespace gdrpipe::cache
