// AddressSpaceKey ordering/hash and AddrRange helpers.
#include <gdrpipe/cache/address_space_key.hpp>

#include "gp_catch.hpp"

#include <map>
#include <unordered_set>

using namespace gdrpipe::cache;

TEST_CASE("address space key: ordered by space, then address", "[cache][spaces]") {
    std::map<AddressSpaceKey, int> m;
    m[{2, 0x10}] = 3;
    m[{1, 0xffff}] = 2;
    m[{1, 0x10}] = 1;
    m[{kLocalSpace, 0x20}] = 0;
    int expect = 0;
    for (auto &[k, v] : m) {
        CHECK(v == expect++);
    }
    CHECK(AddressSpaceKey{1, 5} == AddressSpaceKey{1, 5});
    CHECK(AddressSpaceKey{1, 5} != AddressSpaceKey{2, 5});
}

TEST_CASE("address space key: hash separates spaces with equal addresses",
          "[cache][spaces]") {
    std::unordered_set<AddressSpaceKey, AddressSpaceKeyHash> set;
    for (SpaceId s = 0; s < 64; ++s) {
        for (std::uintptr_t a = 0; a < 64; ++a) {
            set.insert({s, a << 16});
        }
    }
    CHECK(set.size() == 64 * 64);
    AddressSpaceKeyHash h;
    CHECK(h({1, 0x1000}) != h({2, 0x1000}));
}

TEST_CASE("address range: contains and overlaps are half-open", "[cache]") {
    const AddrRange r{0x100, 0x200};
    CHECK(r.size() == 0x100);
    CHECK(r.contains(0x100, 0x200));
    CHECK_FALSE(r.contains(0xff, 0x200));
    CHECK_FALSE(r.contains(0x100, 0x201));
    CHECK(r.overlaps(0x1ff, 0x300));
    CHECK_FALSE(r.overlaps(0x200, 0x300));
    CHECK_FALSE(r.overlaps(0x0, 0x100));
    CHECK(AddrRange::all().contains(0, UINTPTR_MAX));
}
