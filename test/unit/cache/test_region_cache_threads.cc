// Region cache: re-entrancy from the ops, racing misses, invalidation during a
// pin, and a multi-threaded stress test against a shadow model.
#include "fake_pinner.hpp"

#include "gp_catch.hpp"

#include <chrono>
#include <random>
#include <thread>
#include <vector>

using namespace gdrpipe::cache;
using gdrpipe::cache::test::FakePinner;
using gdrpipe::cache::test::Pinned;
using gdrpipe::cache::test::pinned_of;

namespace {
constexpr std::size_t k64K = 64 * 1024;

CacheConfig gpu_config() {
    CacheConfig c;
    c.alignment = k64K;
    return c;
}

// Polls `pred` for up to 5 s (the tests do not depend on timing otherwise).
template <class Pred> bool eventually(Pred pred) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!pred()) {
        if (std::chrono::steady_clock::now() > deadline) {
            return false;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    return true;
}
} // namespace

TEST_CASE("cache threads: unpin() that invalidates and gets again does not deadlock",
          "[cache][reentrancy]") {
    FakePinner fp;
    RegionCache cache(fp.ops(), gpu_config());
    int nested = 0;
    fp.on_unpin = [&](const RegionInfo &info) {
        // like a hook firing because unpinning released memory
        if (info.addr == 0x100000) {
            nested += static_cast<int>(cache.invalidate(kLocalSpace, 0x200000, 1));
            auto h = cache.get(kLocalSpace, 0x300000, 1, 0);
            REQUIRE(h);
            (void)cache.stats();
        }
    };
    REQUIRE(cache.get(kLocalSpace, 0x100000, 1, 0));
    REQUIRE(cache.get(kLocalSpace, 0x200000, 1, 0));
    CHECK(cache.invalidate(kLocalSpace, 0x100000, 1) == 1);
    CHECK(nested == 1);
    CHECK_FALSE(cache.contains(kLocalSpace, 0x200000, 1, 0));
    CHECK(cache.contains(kLocalSpace, 0x300000, 1, 0));

    // same from a release-triggered unpin and from eviction
    auto h = cache.get(kLocalSpace, 0x100000, 1, 0);
    REQUIRE(h);
    REQUIRE(cache.get(kLocalSpace, 0x200000, 1, 0));
    cache.invalidate(kLocalSpace, 0x100000, 1);
    h->reset();
    CHECK(nested == 2);
    CHECK(fp.violations == 0);
}

TEST_CASE("cache threads: pin() may call invalidate() and stats()", "[cache][reentrancy]") {
    FakePinner fp;
    RegionCache cache(fp.ops(), gpu_config());
    REQUIRE(cache.get(kLocalSpace, 0x500000, 1, 0));
    fp.on_pin = [&](const RegionInfo &info) {
        if (info.addr == 0x100000) {
            cache.invalidate(kLocalSpace, 0x500000, 1);
            (void)cache.format_stats();
        }
    };
    auto h = cache.get(kLocalSpace, 0x100000, 1, 0);
    REQUIRE(h);
    CHECK(h->cached());
    CHECK_FALSE(cache.contains(kLocalSpace, 0x500000, 1, 0));
}

TEST_CASE("cache threads: memory invalidated while being pinned is not cached",
          "[cache][race]") {
    FakePinner fp;
    RegionCache cache(fp.ops(), gpu_config());
    // the invalidation arrives while pin() runs (as an intercepted free would)
    fp.on_pin = [&](const RegionInfo &info) { cache.invalidate(info.space, info.addr, 1); };
    auto h = cache.get(kLocalSpace, 0x100000, 64, 0);
    REQUIRE(h);
    CHECK_FALSE(h->cached());
    CHECK_FALSE(cache.contains(kLocalSpace, 0x100000, 64, 0));
    CHECK(cache.stats().uncached == 1);
    CHECK(pinned_of(*h)->pinned);
    h->reset();
    CHECK(fp.unpin_calls == 1);
    CHECK(cache.stats().pinned_regions == 0);
}

TEST_CASE("cache threads: two threads missing on one range pin it once",
          "[cache][race]") {
    FakePinner fp;
    RegionCache cache(fp.ops(), gpu_config());
    // the first pin waits until the second thread is blocked on it
    // (Catch2 assertions stay on the main thread)
    std::atomic<bool> saw_waiter{false};
    fp.on_pin = [&](const RegionInfo &) {
        if (fp.pin_calls == 0) {
            saw_waiter = eventually([&] { return cache.stats().pin_waits == 1; });
        }
    };
    Pinned *p1 = nullptr;
    Pinned *p2 = nullptr;
    std::thread t1([&] {
        auto h = cache.get(kLocalSpace, 0x100000, 100, 0);
        p1 = h ? pinned_of(*h) : nullptr;
    });
    REQUIRE(eventually([&] { return cache.stats().misses == 1; }));
    std::thread t2([&] {
        auto h = cache.get(kLocalSpace, 0x100100, 100, 0); // same granule
        p2 = h ? pinned_of(*h) : nullptr;
    });
    t1.join();
    t2.join();
    CHECK(saw_waiter);
    REQUIRE(p1 != nullptr);
    CHECK(p1 == p2);
    CHECK(fp.pin_calls == 1);
    const CacheStats s = cache.stats();
    CHECK(s.misses == 1);
    CHECK(s.hits == 1);
    CHECK(s.pin_waits == 1);
    CHECK(s.regions == 1);
}

TEST_CASE("cache threads: stress against a shadow model", "[cache][stress]") {
    // 8 "allocations" of 256 KiB in two spaces; each has a generation that a
    // "free" bumps (then invalidates), and gets use the generation as the tag.
    constexpr int kAllocs = 8;
    constexpr std::size_t kAllocLen = 4 * k64K;
    constexpr int kThreads = 4;
    constexpr int kOpsPerThread = 100000;
    auto alloc_base = [](int i) {
        return std::uintptr_t{0x10000000} + static_cast<std::uintptr_t>(i) * 0x100000;
    };
    std::atomic<std::uint64_t> generation[2][kAllocs] = {};

    FakePinner fp;
    CacheConfig cfg = gpu_config();
    cfg.max_regions = 12;
    cfg.max_bytes = 20 * k64K;
    RegionCache cache(fp.ops(/*with_validate=*/true), cfg);
    std::atomic<int> bad{0};

    auto worker = [&](unsigned seed) {
        std::mt19937_64 rng(seed);
        struct Held {
            RegionRef ref;
            std::uintptr_t addr;
            std::size_t len;
        };
        std::vector<Held> held;
        auto release_one = [&](std::size_t i) {
            Pinned *p = pinned_of(held[i].ref);
            if (!p->pinned || !held[i].ref.covers(held[i].addr, held[i].len)) {
                ++bad;
            }
            --p->users;
            held[i] = std::move(held.back());
            held.pop_back();
        };
        for (int op = 0; op < kOpsPerThread; ++op) {
            const unsigned what = static_cast<unsigned>(rng() % 100);
            const SpaceId space = rng() % 4 == 0 ? 7 : kLocalSpace;
            const int a = static_cast<int>(rng() % kAllocs);
            const std::uintptr_t ab = alloc_base(a);
            auto &gen = generation[space == kLocalSpace ? 0 : 1][a];
            if (what < 70) {
                const std::size_t off = rng() % kAllocLen;
                const std::size_t len = 1 + rng() % (kAllocLen - off);
                const std::uint64_t tag = gen.load();
                auto r = cache.get(space, ab + off, len, tag, AddrRange{ab, ab + kAllocLen});
                if (!r) {
                    ++bad;
                    continue;
                }
                Pinned *p = pinned_of(*r);
                ++p->users;
                if (!p->pinned || !r->covers(ab + off, len) || r->space() != space ||
                    r->tag() != tag || p->info.addr != r->addr() ||
                    r->addr() < ab || r->end() > ab + kAllocLen) {
                    ++bad;
                }
                held.push_back(Held{std::move(*r), ab + off, len});
                if (held.size() > 3) {
                    release_one(static_cast<std::size_t>(rng() % held.size()));
                }
            } else if (what < 90) {
                if (!held.empty()) {
                    release_one(static_cast<std::size_t>(rng() % held.size()));
                }
            } else if (what < 97) {
                // free: new generation, then invalidate the whole allocation
                ++gen;
                cache.invalidate(space, ab, kAllocLen);
            } else if (what < 99) {
                cache.invalidate_space(7);
            } else {
                cache.flush();
            }
            if (rng() % 64 == 0) {
                std::this_thread::yield();
            }
        }
        while (!held.empty()) {
            release_one(held.size() - 1);
        }
    };

    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back(worker, 1234u + static_cast<unsigned>(t));
    }
    for (auto &t : threads) {
        t.join();
    }

    CHECK(bad == 0);
    CHECK(fp.violations == 0);
    const CacheStats s = cache.stats();
    INFO(cache.format_stats());
    CHECK(s.hits > 0);
    CHECK(s.misses > 0);
    CHECK(s.invalidations > 0);
    CHECK(s.evictions > 0);
    CHECK(s.regions <= cfg.max_regions);  // nothing is held any more
    CHECK(s.bytes_cached <= cfg.max_bytes + kAllocLen);
    CHECK(s.pinned_regions == s.regions); // only cached regions remain pinned
    CHECK(static_cast<std::uint64_t>(fp.still_pinned()) == s.regions);
    CHECK(s.pins == static_cast<std::uint64_t>(fp.pin_calls.load()));
    CHECK(s.unpins == static_cast<std::uint64_t>(fp.unpin_calls.load()));

    cache.flush();
    CHECK(fp.still_pinned() == 0);
    int not_once = 0;
    for (auto &p : fp.all()) {
        not_once += p->unpin_calls == 1 ? 0 : 1;
    }
    CHECK(not_once == 0);
}
