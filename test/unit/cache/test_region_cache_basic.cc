// Region cache: lookup, widening, merging, invalidation, staleness, spaces.
#include "fake_pinner.hpp"

#include "gp_catch.hpp"

using namespace gdrpipe::cache;
using gdrpipe::cache::test::FakePinner;
using gdrpipe::cache::test::pinned_of;

namespace {
constexpr std::size_t k64K = 64 * 1024;

CacheConfig gpu_config() {
    CacheConfig c;
    c.alignment = k64K;
    c.name = "test";
    return c;
}
} // namespace

TEST_CASE("cache: miss then hit returns the same pinned region", "[cache]") {
    FakePinner fp;
    RegionCache cache(fp.ops(), gpu_config());

    auto a = cache.get(kLocalSpace, 0x100000, 4096, 7);
    REQUIRE(a);
    CHECK(a->covers(0x100000, 4096));
    CHECK(a->tag() == 7);
    CHECK(a->cached());
    CHECK(fp.pin_calls == 1);
    const int id = pinned_of(*a)->id;
    a->reset();

    auto b = cache.get(kLocalSpace, 0x100000, 4096, 7);
    REQUIRE(b);
    CHECK(pinned_of(*b)->id == id);
    CHECK(fp.pin_calls == 1);
    CHECK(fp.unpin_calls == 0);

    auto c = cache.get(kLocalSpace, 0x900000, 100, 7); // elsewhere: miss
    REQUIRE(c);
    CHECK(pinned_of(*c)->id != id);

    const CacheStats s = cache.stats();
    CHECK(s.hits == 1);
    CHECK(s.misses == 2);
    CHECK(s.pins == 2);
    CHECK(s.regions == 2);
    CHECK(s.bytes_cached == 2 * k64K);
}

TEST_CASE("cache: requests are widened to the alignment and interior requests hit",
          "[cache]") {
    FakePinner fp;
    RegionCache cache(fp.ops(), gpu_config());

    auto a = cache.get(kLocalSpace, 0x10010, 100, 1);
    REQUIRE(a);
    CHECK(a->addr() == 0x10000);
    CHECK(a->len() == k64K);
    CHECK(a->offset_of(0x10010) == 0x10);
    a->reset();

    // interior ranges, including both ends of the granule
    for (auto [addr, len] : {std::pair<std::uintptr_t, std::size_t>{0x10000, 1},
                             {0x1ffff, 1}, {0x18000, 0x8000}, {0x10000, k64K}}) {
        auto h = cache.get(kLocalSpace, addr, len, 1);
        REQUIRE(h);
        CHECK(h->addr() == 0x10000);
    }
    CHECK(fp.pin_calls == 1);
    CHECK(cache.stats().hits == 4);

    // a request crossing the granule end spans two granules
    auto x = cache.get(kLocalSpace, 0x2fff0, 0x20, 1);
    REQUIRE(x);
    CHECK(x->addr() == 0x20000);
    CHECK(x->len() == 2 * k64K);
}

TEST_CASE("cache: bounds clamp the widening; bounds not containing the request are "
          "ignored", "[cache]") {
    FakePinner fp;
    RegionCache cache(fp.ops(), gpu_config());

    auto a = cache.get(kLocalSpace, 0x10100, 0x100, 1, AddrRange{0x10080, 0x10400});
    REQUIRE(a);
    CHECK(a->addr() == 0x10080);
    CHECK(a->len() == 0x380);

    auto b = cache.get(kLocalSpace, 0x50100, 0x100, 1, AddrRange{0x60000, 0x70000});
    REQUIRE(b);
    CHECK(b->addr() == 0x50000);
    CHECK(b->len() == k64K);
}

TEST_CASE("cache: a partial overlap is merged into one region covering the union",
          "[cache]") {
    FakePinner fp;
    CacheConfig cfg;
    cfg.alignment = 4096;
    RegionCache cache(fp.ops(), cfg);

    auto a = cache.get(kLocalSpace, 0x10000, 0x2000, 1); // [0x10000, 0x12000)
    auto b = cache.get(kLocalSpace, 0x14000, 0x2000, 1); // [0x14000, 0x16000)
    REQUIRE(a);
    REQUIRE(b);
    auto *pa = pinned_of(*a);
    b->reset(); // b unreferenced, a still referenced

    // [0x11000, 0x15000) overlaps both: one region [0x10000, 0x16000)
    auto m = cache.get(kLocalSpace, 0x11000, 0x4000, 1);
    REQUIRE(m);
    CHECK(m->addr() == 0x10000);
    CHECK(m->end() == 0x16000);
    CHECK(cache.stats().merges == 2);
    CHECK(cache.stats().regions == 1);
    // b was unreferenced: unpinned at once; a only when released
    CHECK(fp.unpin_calls == 1);
    CHECK(pa->pinned);
    CHECK_FALSE(a->cached());
    a->reset();
    CHECK(fp.unpin_calls == 2);
    CHECK_FALSE(pa->pinned);

    // both old ranges now hit the merged region
    CHECK(cache.contains(kLocalSpace, 0x10000, 0x2000, 1));
    CHECK(cache.contains(kLocalSpace, 0x14000, 0x2000, 1));
    CHECK(fp.violations == 0);
}

TEST_CASE("cache: a union outside the bounds is not merged; the overlapped region is "
          "replaced", "[cache]") {
    FakePinner fp;
    RegionCache cache(fp.ops(), gpu_config());
    auto a = cache.get(kLocalSpace, 0x10000, 0x100, 1, AddrRange{0x10000, 0x20000});
    REQUIRE(a);
    a->reset();
    // new allocation [0x1f000, 0x40000) overlapping the old region's granule
    auto b = cache.get(kLocalSpace, 0x1f000, 0x2000, 1, AddrRange{0x1f000, 0x40000});
    REQUIRE(b);
    CHECK(b->addr() == 0x1f000);
    CHECK(b->end() == 0x30000);
    CHECK(cache.stats().regions == 1);
    CHECK_FALSE(cache.contains(kLocalSpace, 0x10000, 0x100, 1));
    CHECK(fp.unpin_calls == 1);
}

TEST_CASE("cache: merging can be disabled", "[cache]") {
    FakePinner fp;
    CacheConfig cfg;
    cfg.merge_overlaps = false;
    RegionCache cache(fp.ops(), cfg);
    REQUIRE(cache.get(kLocalSpace, 0x10000, 0x2000, 1));
    auto m = cache.get(kLocalSpace, 0x11000, 0x2000, 1);
    REQUIRE(m);
    CHECK(m->addr() == 0x11000);
    CHECK(m->len() == 0x2000);
    CHECK(cache.stats().regions == 1);
}

TEST_CASE("cache: invalidate removes at once, unpins unreferenced regions now and "
          "referenced ones at release", "[cache]") {
    FakePinner fp;
    RegionCache cache(fp.ops(), gpu_config());
    auto held = cache.get(kLocalSpace, 0x100000, 100, 1);
    auto idle = cache.get(kLocalSpace, 0x200000, 100, 1);
    auto other = cache.get(kLocalSpace, 0x400000, 100, 1);
    REQUIRE(held);
    REQUIRE(idle);
    REQUIRE(other);
    auto *p_held = pinned_of(*held);
    auto *p_idle = pinned_of(*idle);
    idle->reset();
    other->reset();

    // one call covering both the held and the idle region
    CHECK(cache.invalidate(kLocalSpace, 0x100000, 0x110000) == 2);
    CHECK_FALSE(cache.contains(kLocalSpace, 0x100000, 100, 1));
    CHECK_FALSE(cache.contains(kLocalSpace, 0x200000, 100, 1));
    CHECK(cache.contains(kLocalSpace, 0x400000, 100, 1));
    CHECK_FALSE(p_idle->pinned);
    CHECK(p_held->pinned);
    CHECK_FALSE(held->cached());
    CHECK(fp.unpin_calls == 1);

    // a new lookup does not see the invalidated region
    auto again = cache.get(kLocalSpace, 0x100000, 100, 1);
    REQUIRE(again);
    CHECK(pinned_of(*again) != p_held);

    held->reset();
    CHECK_FALSE(p_held->pinned);
    CHECK(fp.unpin_calls == 2);
    CHECK(cache.stats().invalidations == 2);
    CHECK(cache.invalidate(kLocalSpace, 0x800000, 4096) == 0);
    CHECK(cache.invalidate(kLocalSpace, 0x100000, 0) == 0);
    CHECK(fp.violations == 0);
}

TEST_CASE("cache: invalidate only touches overlapping regions (edges exclusive)",
          "[cache]") {
    FakePinner fp;
    RegionCache cache(fp.ops(), gpu_config());
    REQUIRE(cache.get(kLocalSpace, 0x10000, 1, 1));
    REQUIRE(cache.get(kLocalSpace, 0x20000, 1, 1));
    REQUIRE(cache.get(kLocalSpace, 0x30000, 1, 1));
    // one byte of the middle granule
    CHECK(cache.invalidate(kLocalSpace, 0x20000, 1) == 1);
    CHECK(cache.contains(kLocalSpace, 0x10000, k64K, 1));
    CHECK(cache.contains(kLocalSpace, 0x30000, k64K, 1));
    // [0x1ffff, 0x30001): one byte of the first and one of the last
    CHECK(cache.invalidate(kLocalSpace, 0x1ffff, 0x10002) == 2);
    CHECK(cache.stats().regions == 0);
}

TEST_CASE("cache: a tag mismatch makes the region stale and re-pins", "[cache]") {
    FakePinner fp;
    RegionCache cache(fp.ops(), gpu_config());
    auto old = cache.get(kLocalSpace, 0x100000, 4096, 111);
    REQUIRE(old);
    auto *p_old = pinned_of(*old);

    // same address, new allocation (other BUFFER_ID) while the old one is held
    auto fresh = cache.get(kLocalSpace, 0x100000, 4096, 222);
    REQUIRE(fresh);
    CHECK(fresh->tag() == 222);
    CHECK(pinned_of(*fresh) != p_old);
    CHECK(p_old->pinned); // still referenced
    CHECK_FALSE(cache.contains(kLocalSpace, 0x100000, 4096, 111));
    CHECK(cache.contains(kLocalSpace, 0x100000, 4096, 222));
    old->reset();
    CHECK_FALSE(p_old->pinned);

    fresh->reset();
    auto third = cache.get(kLocalSpace, 0x100000, 4096, 333); // unreferenced: unpinned now
    REQUIRE(third);
    CHECK(fp.unpin_calls == 2);
    const CacheStats s = cache.stats();
    CHECK(s.stale == 2);
    CHECK(s.misses == 3);
    CHECK(s.hits == 0);
    CHECK(s.regions == 1);
}

TEST_CASE("cache: overlapping regions of another tag are dropped, not merged", "[cache]") {
    FakePinner fp;
    CacheConfig cfg;
    RegionCache cache(fp.ops(), cfg);
    REQUIRE(cache.get(kLocalSpace, 0x10000, 0x2000, 1));
    auto b = cache.get(kLocalSpace, 0x11000, 0x2000, 2);
    REQUIRE(b);
    CHECK(b->addr() == 0x11000);
    CHECK(b->end() == 0x13000);
    CHECK(cache.stats().stale == 1);
    CHECK(cache.stats().merges == 0);
    CHECK(fp.unpin_calls == 1);
}

TEST_CASE("cache: validate() false on a hit drops the region and re-pins", "[cache]") {
    FakePinner fp;
    RegionCache cache(fp.ops(/*with_validate=*/true), gpu_config());
    REQUIRE(cache.get(kLocalSpace, 0x100000, 64, 5));
    REQUIRE(cache.get(kLocalSpace, 0x100000, 64, 5));
    CHECK(cache.stats().hits == 1);
    fp.invalid_all = true;
    auto h = cache.get(kLocalSpace, 0x100000, 64, 5);
    fp.invalid_all = false;
    REQUIRE(h);
    CHECK(fp.pin_calls == 2);
    CHECK(fp.unpin_calls == 1);
    const CacheStats s = cache.stats();
    CHECK(s.stale == 1);
    CHECK(s.hits == 1);
    CHECK(s.misses == 2);
    CHECK(h->cached());
}

TEST_CASE("cache: pin failures are reported; flush-and-retry frees idle regions",
          "[cache]") {
    FakePinner fp;
    RegionCache cache(fp.ops(), gpu_config());
    fp.fail_pins = 1;
    auto e = cache.get(kLocalSpace, 0x100000, 64, 1); // nothing to flush
    REQUIRE_FALSE(e);
    CHECK(e.error().code == 42);
    CHECK(cache.stats().pin_failures == 1);

    REQUIRE(cache.get(kLocalSpace, 0x200000, 64, 1));
    fp.fail_pins = 1;
    auto ok = cache.get(kLocalSpace, 0x300000, 64, 1);
    REQUIRE(ok);
    CHECK(cache.stats().flushed == 1);
    CHECK(cache.stats().pin_failures == 1); // the retry succeeded
    CHECK(fp.unpin_calls == 1);

    RegionCache bad(RegionOps{}, gpu_config());
    auto none = bad.get(kLocalSpace, 0x100000, 64, 1);
    REQUIRE_FALSE(none);
    CHECK(none.error().code == kErrInvalidArgument);
    auto ovf = cache.get(kLocalSpace, UINTPTR_MAX - 10, 64, 1);
    REQUIRE_FALSE(ovf);
    CHECK(ovf.error().code == kErrInvalidArgument);
}

TEST_CASE("cache: a pin() that throws is an error, not a crash", "[cache]") {
    RegionOps ops;
    ops.pin = [](const RegionInfo &) -> Result<Payload> { throw std::runtime_error("boom"); };
    RegionCache cache(ops, gpu_config());
    auto e = cache.get(kLocalSpace, 0x100000, 64, 1);
    REQUIRE_FALSE(e);
    CHECK(e.error().code == kErrPinException);
    CHECK(e.error().message == "boom");
}

TEST_CASE("cache: spaces keep peers' identical addresses apart", "[cache][spaces]") {
    FakePinner fp;
    RegionCache cache(fp.ops(), gpu_config());
    const SpaceId peer1 = 1, peer2 = 0xffffffffffffffffull;
    auto l = cache.get(kLocalSpace, 0x100000, 64, 1);
    auto p1 = cache.get(peer1, 0x100000, 64, 1);
    auto p2 = cache.get(peer2, 0x100000, 64, 1);
    REQUIRE(l);
    REQUIRE(p1);
    REQUIRE(p2);
    CHECK(p1->space() == peer1);
    CHECK(pinned_of(*l) != pinned_of(*p1));
    CHECK(pinned_of(*p1) != pinned_of(*p2));
    REQUIRE(cache.get(peer1, 0x300000, 64, 1));
    l->reset();
    p1->reset();
    p2->reset();
    CHECK(cache.stats().regions == 4);

    // a local free does not touch peer imports
    CHECK(cache.invalidate(reinterpret_cast<const void *>(std::uintptr_t{0x100000}), 64) == 1);
    CHECK(cache.contains(peer1, 0x100000, 64, 1));

    CHECK(cache.invalidate_space(peer1) == 2);
    CHECK_FALSE(cache.contains(peer1, 0x100000, 64, 1));
    CHECK_FALSE(cache.contains(peer1, 0x300000, 64, 1));
    CHECK(cache.contains(peer2, 0x100000, 64, 1));
    CHECK(cache.invalidate_space(peer2) == 1);
    CHECK(cache.invalidate_space(peer2) == 0);
    CHECK(cache.stats().regions == 0);
    CHECK(fp.unpin_calls == 4);
}

TEST_CASE("cache: flush unpins unreferenced regions only", "[cache]") {
    FakePinner fp;
    RegionCache cache(fp.ops(), gpu_config());
    auto held = cache.get(kLocalSpace, 0x100000, 64, 1);
    REQUIRE(held);
    REQUIRE(cache.get(kLocalSpace, 0x200000, 64, 1));
    REQUIRE(cache.get(kLocalSpace, 0x300000, 64, 1));
    CHECK(cache.flush() == 2);
    CHECK(fp.unpin_calls == 2);
    CHECK(cache.contains(kLocalSpace, 0x100000, 64, 1));
    CHECK(held->cached());
    CHECK(cache.stats().flushed == 2);
}

TEST_CASE("cache: references may outlive the cache", "[cache]") {
    FakePinner fp;
    Result<RegionRef> kept = make_cache_error(0, "");
    {
        RegionCache cache(fp.ops(), gpu_config());
        REQUIRE(cache.get(kLocalSpace, 0x200000, 64, 1));
        kept = cache.get(kLocalSpace, 0x100000, 64, 1);
        REQUIRE(kept);
    }
    CHECK(fp.unpin_calls == 1); // the idle region, at destruction
    CHECK(pinned_of(*kept)->pinned);
    RegionRef copy = *kept; // copies count as references
    kept->reset();
    CHECK(fp.unpin_calls == 1);
    copy.reset();
    CHECK(fp.unpin_calls == 2);
    CHECK(fp.violations == 0);
}

TEST_CASE("cache: format_stats is one line naming every counter", "[cache]") {
    FakePinner fp;
    RegionCache cache(fp.ops(), gpu_config());
    REQUIRE(cache.get(kLocalSpace, 0x100000, 64, 1));
    REQUIRE(cache.get(kLocalSpace, 0x100000, 64, 1));
    const std::string line = cache.format_stats();
    CHECK(line.find('\n') == std::string::npos);
    CHECK(line.rfind("test: ", 0) == 0);
    CHECK(line.find("hits=1 ") != std::string::npos);
    CHECK(line.find("misses=1 ") != std::string::npos);
    CHECK(line.find("hit%=50.0") != std::string::npos);
    CHECK(line.find("peak_bytes_pinned=65536") != std::string::npos);
}
