// Region cache: LRU eviction under max_regions / max_bytes, referenced regions
// never evicted, exact counters.
#include "fake_pinner.hpp"

#include "gp_catch.hpp"

using namespace gdrpipe::cache;
using gdrpipe::cache::test::FakePinner;
using gdrpipe::cache::test::pinned_of;

namespace {
constexpr std::size_t k64K = 64 * 1024;
constexpr std::uintptr_t base(int i) { return 0x1000000 + static_cast<std::uintptr_t>(i) * 0x100000; }

CacheConfig bounded(std::size_t max_regions, std::size_t max_bytes) {
    CacheConfig c;
    c.alignment = k64K;
    c.max_regions = max_regions;
    c.max_bytes = max_bytes;
    return c;
}
bool has(const RegionCache &c, int i) { return c.contains(kLocalSpace, base(i), 1, 0); }
} // namespace

TEST_CASE("cache bounds: max_regions evicts the least recently used", "[cache][lru]") {
    FakePinner fp;
    RegionCache cache(fp.ops(), bounded(3, 0));
    for (int i = 0; i < 3; ++i) {
        REQUIRE(cache.get(kLocalSpace, base(i), 64, 0));
    }
    REQUIRE(cache.get(kLocalSpace, base(0), 64, 0)); // 0 is now most recent
    REQUIRE(cache.get(kLocalSpace, base(3), 64, 0)); // evicts 1
    CHECK(has(cache, 0));
    CHECK_FALSE(has(cache, 1));
    CHECK(has(cache, 2));
    CHECK(has(cache, 3));
    REQUIRE(cache.get(kLocalSpace, base(4), 64, 0)); // evicts 2
    CHECK_FALSE(has(cache, 2));
    CHECK(has(cache, 0));
    REQUIRE(cache.get(kLocalSpace, base(5), 64, 0)); // evicts 0
    CHECK_FALSE(has(cache, 0));

    const CacheStats s = cache.stats();
    CHECK(s.evictions == 3);
    CHECK(s.regions == 3);
    CHECK(s.over_bound == 0);
    CHECK(fp.unpin_calls == 3);
    CHECK(fp.still_pinned() == 3);
}

TEST_CASE("cache bounds: max_bytes evicts LRU regions until the new one fits",
          "[cache][lru]") {
    FakePinner fp;
    RegionCache cache(fp.ops(), bounded(0, 4 * k64K));
    REQUIRE(cache.get(kLocalSpace, base(0), k64K, 0));     // 1 granule
    REQUIRE(cache.get(kLocalSpace, base(1), 2 * k64K, 0)); // 2 granules
    REQUIRE(cache.get(kLocalSpace, base(2), k64K, 0));     // 1 granule: full
    CHECK(cache.stats().bytes_cached == 4 * k64K);
    CHECK(cache.stats().evictions == 0);
    // needs 2 granules: evicting 0 frees 1, then 1 frees 2
    REQUIRE(cache.get(kLocalSpace, base(3), 2 * k64K, 0));
    CHECK_FALSE(has(cache, 0));
    CHECK_FALSE(has(cache, 1));
    CHECK(has(cache, 2));
    CHECK(has(cache, 3));
    const CacheStats s = cache.stats();
    CHECK(s.evictions == 2);
    CHECK(s.bytes_cached == 3 * k64K);
    CHECK(s.peak_bytes_pinned == 6 * k64K); // new region pinned before the evicted unpin
    CHECK(s.bytes_pinned == 3 * k64K);
}

TEST_CASE("cache bounds: referenced regions are never evicted; the cache goes over "
          "the bound instead", "[cache][lru]") {
    FakePinner fp;
    RegionCache cache(fp.ops(), bounded(2, 0));
    auto a = cache.get(kLocalSpace, base(0), 64, 0);
    auto b = cache.get(kLocalSpace, base(1), 64, 0);
    REQUIRE(a);
    REQUIRE(b);
    auto c = cache.get(kLocalSpace, base(2), 64, 0);
    REQUIRE(c);
    CHECK(c->cached());
    CHECK(fp.unpin_calls == 0);
    CHECK(cache.stats().over_bound == 1);
    CHECK(cache.stats().regions == 3);

    // only b released: a (older) is referenced and skipped, b goes
    b->reset();
    REQUIRE(cache.get(kLocalSpace, base(3), 64, 0));
    CHECK(has(cache, 0));
    CHECK_FALSE(has(cache, 1));
    CHECK(cache.stats().evictions == 1);
    CHECK(cache.stats().over_bound == 2); // 3 regions still > 2
    CHECK(pinned_of(*a)->pinned);
    CHECK(fp.violations == 0);

    a->reset();
    c->reset();
    REQUIRE(cache.get(kLocalSpace, base(4), 64, 0)); // back under the bound
    CHECK(cache.stats().regions == 2);
    CHECK(cache.stats().over_bound == 2);
}

TEST_CASE("cache bounds: a region larger than max_bytes is handed out uncached",
          "[cache][lru]") {
    FakePinner fp;
    RegionCache cache(fp.ops(), bounded(0, 2 * k64K));
    REQUIRE(cache.get(kLocalSpace, base(0), 64, 0));
    auto big = cache.get(kLocalSpace, base(1), 3 * k64K, 0);
    REQUIRE(big);
    CHECK_FALSE(big->cached());
    CHECK(has(cache, 0)); // nothing evicted for it
    CHECK(cache.stats().uncached == 1);
    CHECK(cache.stats().bytes_pinned == 4 * k64K);
    big->reset();
    CHECK(fp.unpin_calls == 1);
    CHECK(cache.stats().bytes_pinned == k64K);
}

TEST_CASE("cache bounds: every counter follows a scripted sequence exactly",
          "[cache][counters]") {
    FakePinner fp;
    RegionCache cache(fp.ops(/*with_validate=*/false), bounded(2, 0));
    auto expect = [&](std::uint64_t hits, std::uint64_t misses, std::uint64_t evictions,
                      std::uint64_t invalidations, std::uint64_t stale,
                      std::uint64_t regions, std::uint64_t pinned) {
        const CacheStats s = cache.stats();
        CHECK(s.hits == hits);
        CHECK(s.misses == misses);
        CHECK(s.evictions == evictions);
        CHECK(s.invalidations == invalidations);
        CHECK(s.stale == stale);
        CHECK(s.regions == regions);
        CHECK(s.bytes_cached == regions * k64K);
        CHECK(s.pinned_regions == pinned);
        CHECK(s.bytes_pinned == pinned * k64K);
        CHECK(s.pins - s.unpins == pinned);
        CHECK(s.pins == static_cast<std::uint64_t>(fp.pin_calls.load()));
        CHECK(s.unpins == static_cast<std::uint64_t>(fp.unpin_calls.load()));
    };
    REQUIRE(cache.get(kLocalSpace, base(0), 10, 1));
    expect(0, 1, 0, 0, 0, 1, 1);
    REQUIRE(cache.get(kLocalSpace, base(0) + 100, 10, 1));
    expect(1, 1, 0, 0, 0, 1, 1);
    auto held = cache.get(kLocalSpace, base(1), 10, 1);
    REQUIRE(held);
    expect(1, 2, 0, 0, 0, 2, 2);
    REQUIRE(cache.get(kLocalSpace, base(2), 10, 1)); // evicts 0
    expect(1, 3, 1, 0, 0, 2, 2);
    REQUIRE(cache.get(kLocalSpace, base(1), 10, 2)); // stale: held one stays pinned
    expect(1, 4, 1, 0, 1, 2, 3);
    held->reset();
    expect(1, 4, 1, 0, 1, 2, 2);
    CHECK(cache.invalidate(kLocalSpace, base(0), 0x300000) == 2);
    expect(1, 4, 1, 2, 1, 0, 0);
    CHECK(cache.stats().peak_bytes_pinned == 3 * k64K);
}
