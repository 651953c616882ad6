// Region cache, lock-free hit path: invalidation is never bypassed by a hit
// (a get() that starts after invalidate() returned never sees the old
// region), references keep payloads pinned while regions are invalidated,
// evicted and re-pinned under racing hits, hit counters are exact, and the
// epoch domain frees nothing a running read section can still reach.
#include "epoch.hpp"
#include "fake_pinner.hpp"

#include "gp_catch.hpp"

#include <atomic>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

using namespace gdrpipe::cache;

namespace {
constexpr std::size_t k64K = 64 * 1024;
constexpr int kAllocs = 4;
constexpr std::size_t kAllocLen = 4 * k64K;
std::uintptr_t alloc_base(int i) {
    return std::uintptr_t{0x40000000} + static_cast<std::uintptr_t>(i) * 0x1000000;
}

// What a "mapping" of an allocation holds: the version of the memory's
// contents at pin time. The freeing thread bumps the version before it
// invalidates, so a payload older than the last completed invalidate is a
// stale mapping handed out after the free.
struct Mapping {
    std::uint64_t version = 0;
    int alloc = 0;
    std::atomic<bool> pinned{true};
    std::atomic<int> users{0};
};

struct World {
    std::atomic<std::uint64_t> current[kAllocs] = {};   // contents version now
    std::atomic<std::uint64_t> completed[kAllocs] = {}; // version whose invalidate returned
    std::atomic<int> violations{0};
    std::atomic<long> validate_calls{0};

    RegionOps ops(bool with_validate) {
        RegionOps o;
        o.pin = [this](const RegionInfo &info) -> Result<Payload> {
            auto m = std::make_shared<Mapping>();
            m->alloc = static_cast<int>((info.addr - alloc_base(0)) / 0x1000000);
            m->version = current[m->alloc].load(std::memory_order_acquire);
            return Payload(m);
        };
        o.unpin = [this](const RegionInfo &, Payload &&p) {
            auto *m = static_cast<Mapping *>(p.get());
            if (m->users.load() != 0 || !m->pinned.exchange(false)) {
                ++violations; // unpinned while referenced, or twice
            }
        };
        if (with_validate) {
            o.validate = [this](const RegionInfo &, const Payload &p) {
                ++validate_calls;
                return static_cast<const Mapping *>(p.get())->pinned.load();
            };
        }
        return o;
    }
};

void run_invalidation_race(bool with_validate, std::size_t max_regions) {
    World w;
    CacheConfig cfg;
    cfg.alignment = k64K;
    cfg.max_regions = max_regions;
    RegionCache cache(w.ops(with_validate), cfg);
    constexpr int kReaders = 3;
    constexpr int kFrees = 3000;
    std::atomic<bool> stop{false};
    std::atomic<int> stale_seen{0}, bad{0};
    std::atomic<long> gets{0};

    auto reader = [&](unsigned seed) {
        std::mt19937_64 rng(seed);
        std::vector<std::pair<RegionRef, Mapping *>> held;
        while (!stop.load(std::memory_order_relaxed)) {
            const int a = static_cast<int>(rng() % kAllocs);
            const std::uintptr_t off = rng() % (kAllocLen - 64);
            // every invalidate that returned before this get started
            const std::uint64_t floor = w.completed[a].load(std::memory_order_acquire);
            auto r = cache.get(kLocalSpace, alloc_base(a) + off, 64, /*tag=*/0,
                               AddrRange{alloc_base(a), alloc_base(a) + kAllocLen});
            ++gets;
            if (!r) {
                ++bad;
                continue;
            }
            auto *m = r->payload_as<Mapping>();
            if (m->version < floor) {
                ++stale_seen;
            }
            if (m->alloc != a || !m->pinned.load() || !r->covers(alloc_base(a) + off, 64)) {
                ++bad;
            }
            ++m->users;
            held.emplace_back(std::move(*r), m);
            // hold a few references across invalidations
            if (held.size() > 2 || rng() % 4 == 0) {
                auto &[ref, hm] = held.front();
                if (!hm->pinned.load()) {
                    ++bad;
                }
                --hm->users;
                ref.reset();
                held.erase(held.begin());
            }
        }
        for (auto &[ref, hm] : held) {
            if (!hm->pinned.load()) {
                ++bad;
            }
            --hm->users;
            ref.reset();
        }
    };
    std::vector<std::thread> readers;
    for (int t = 0; t < kReaders; ++t) {
        readers.emplace_back(reader, 99u + static_cast<unsigned>(t));
    }
    // the frees interleave with the readers however the threads are
    // scheduled: start once they run, go on until they did enough gets
    while (gets.load() < 100) {
        std::this_thread::yield();
    }
    std::mt19937_64 rng(7);
    for (int i = 0; i < kFrees || gets.load() < 20 * kFrees; ++i) {
        const int a = static_cast<int>(rng() % kAllocs);
        // free: the memory gets new contents, then the hook invalidates
        const std::uint64_t v = w.current[a].fetch_add(1) + 1;
        cache.invalidate(kLocalSpace, alloc_base(a), kAllocLen);
        w.completed[a].store(v, std::memory_order_release);
        if (i % 64 == 0) {
            std::this_thread::yield();
        }
    }
    stop = true;
    for (auto &t : readers) {
        t.join();
    }
    const CacheStats s = cache.stats();
    INFO(cache.format_stats() << " gets=" << gets.load());
    CHECK(stale_seen == 0);
    CHECK(bad == 0);
    CHECK(w.violations == 0);
    CHECK(s.hits > 0);
    CHECK(s.invalidations > 0);
    CHECK(s.hits + s.misses == static_cast<std::uint64_t>(gets.load()));
    if (with_validate) {
        // the hook runs on every hit (a stale-free validate never fails)
        CHECK(w.validate_calls.load() == static_cast<long>(s.hits));
    }
    if (max_regions != 0) {
        // an insertion while every cached region was referenced leaves the
        // cache over its bound (each reader holds at most 3, plus 1 in use)
        CHECK(s.regions <= max_regions + 4 * kReaders);
        CHECK(s.evictions > 0);
    }
    cache.flush();
    CHECK(s.pins - cache.stats().unpins == cache.stats().regions);
}
} // namespace

TEST_CASE("cache lock-free: no get() started after invalidate() returned sees the old "
          "region", "[cache][lockfree][race]") {
    SECTION("no validate hook") { run_invalidation_race(false, 0); }
    SECTION("validate hook runs on every hit") { run_invalidation_race(true, 0); }
    SECTION("with evictions racing the hits") { run_invalidation_race(true, 3); }
}

TEST_CASE("cache lock-free: a hit right after invalidate() on the same thread misses",
          "[cache][lockfree]") {
    gdrpipe::cache::test::FakePinner fp;
    CacheConfig cfg;
    cfg.alignment = k64K;
    RegionCache cache(fp.ops(), cfg);
    for (int i = 0; i < 100; ++i) {
        auto h = cache.get(kLocalSpace, 0x100000, 64, 0);
        REQUIRE(h);
        auto *old = gdrpipe::cache::test::pinned_of(*h);
        auto again = cache.get(kLocalSpace, 0x100010, 64, 0); // a lock-free hit
        REQUIRE(again);
        CHECK(gdrpipe::cache::test::pinned_of(*again) == old);
        again->reset();
        CHECK(cache.invalidate(kLocalSpace, 0x100000, 1) == 1);
        CHECK(h->cached() == false);
        auto after = cache.get(kLocalSpace, 0x100000, 64, 0);
        REQUIRE(after);
        CHECK(gdrpipe::cache::test::pinned_of(*after) != old);
        CHECK(old->pinned); // still referenced by h
        h->reset();
        CHECK_FALSE(old->pinned);
        cache.invalidate(kLocalSpace, 0x100000, 1);
    }
    CHECK(fp.violations == 0);
    const CacheStats s = cache.stats();
    CHECK(s.hits == 100);
    CHECK(s.misses == 200);
}

TEST_CASE("cache lock-free: hits counted per thread add up exactly", "[cache][lockfree]") {
    gdrpipe::cache::test::FakePinner fp;
    CacheConfig cfg;
    cfg.alignment = k64K;
    RegionCache cache(fp.ops(), cfg);
    REQUIRE(cache.get(kLocalSpace, 0x100000, 64, 0));
    constexpr int kThreads = 4;
    constexpr int kHits = 20000;
    std::vector<std::thread> threads;
    std::atomic<int> bad{0};
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&] {
            for (int i = 0; i < kHits; ++i) {
                if (!cache.get(kLocalSpace, 0x100000 + static_cast<std::uintptr_t>(i % 4096),
                               64, 0)) {
                    ++bad;
                }
            }
        });
    }
    for (auto &t : threads) {
        t.join();
    }
    CHECK(bad == 0);
    const CacheStats s = cache.stats();
    CHECK(s.hits == static_cast<std::uint64_t>(kThreads) * kHits);
    CHECK(s.misses == 1);
    CHECK(fp.pin_calls == 1);
}

TEST_CASE("cache lock-free: recency is kept approximately (hits between insertions)",
          "[cache][lockfree][lru]") {
    gdrpipe::cache::test::FakePinner fp;
    CacheConfig cfg;
    cfg.alignment = k64K;
    cfg.max_regions = 3;
    RegionCache cache(fp.ops(), cfg);
    auto base = [](int i) { return std::uintptr_t{0x1000000} + static_cast<std::uintptr_t>(i) * 0x100000; };
    for (int i = 0; i < 3; ++i) {
        REQUIRE(cache.get(kLocalSpace, base(i), 64, 0));
    }
    // hits on 0 and 2 (lock-free): 1 is the only region not used since the
    // last insertion, so it goes first
    REQUIRE(cache.get(kLocalSpace, base(2), 64, 0));
    REQUIRE(cache.get(kLocalSpace, base(0), 64, 0));
    REQUIRE(cache.get(kLocalSpace, base(3), 64, 0));
    CHECK_FALSE(cache.contains(kLocalSpace, base(1), 1, 0));
    CHECK(cache.contains(kLocalSpace, base(0), 1, 0));
    CHECK(cache.contains(kLocalSpace, base(2), 1, 0));
    // an insertion is newer than every hit before it: 0 and 2 (hit before 3
    // was inserted) go before 3
    REQUIRE(cache.get(kLocalSpace, base(4), 64, 0));
    REQUIRE(cache.get(kLocalSpace, base(5), 64, 0));
    CHECK(cache.contains(kLocalSpace, base(3), 1, 0));
    CHECK(cache.contains(kLocalSpace, base(4), 1, 0));
    CHECK(cache.contains(kLocalSpace, base(5), 1, 0));
    CHECK(cache.stats().evictions == 3);
}

TEST_CASE("epoch: nothing is freed while a read section that could reach it runs",
          "[cache][lockfree][epoch]") {
    namespace ep = gdrpipe::cache::detail::epoch;
    static std::atomic<int> freed{0};
    freed = 0;
    std::atomic<int> phase{0};
    std::thread reader([&] {
        ep::ReadGuard g;
        REQUIRE(static_cast<bool>(g));
        phase = 1;
        while (phase.load() != 2) {
            std::this_thread::yield();
        }
    });
    while (phase.load() != 1) {
        std::this_thread::yield();
    }
    int obj = 0;
    ep::retire(&obj, [](void *) { ++freed; });
    ep::reclaim();
    CHECK(freed == 0); // the reader entered before the retire
    {
        ep::ReadGuard mine; // a section that starts after the retire does not block it
        REQUIRE(static_cast<bool>(mine));
        ep::ReadGuard nested;
        CHECK_FALSE(static_cast<bool>(nested)); // not reentrant: an empty guard
    }
    phase = 2;
    reader.join();
    ep::reclaim();
    CHECK(freed == 1);
}

TEST_CASE("epoch: a forked child is not blocked by the parent's other threads",
          "[cache][lockfree][epoch]") {
    namespace ep = gdrpipe::cache::detail::epoch;
    std::atomic<int> phase{0};
    std::thread reader([&] {
        ep::ReadGuard g; // inside a read section while the main thread forks
        phase = 1;
        while (phase.load() != 2) {
            std::this_thread::yield();
        }
    });
    while (phase.load() != 1) {
        std::this_thread::yield();
    }
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        // the reader thread does not exist here: its section must not block
        static std::atomic<int> freed{0};
        static int obj = 0;
        ep::retire(&obj, [](void *) { ++freed; });
        ep::reclaim();
        // and the cache still works (membarrier registration of the child)
        gdrpipe::cache::test::FakePinner fp;
        RegionCache cache(fp.ops(), CacheConfig{});
        bool ok = freed.load() == 1;
        for (int i = 0; i < 100 && ok; ++i) {
            ok = cache.get(kLocalSpace, 0x100000, 64, 0).has_value() &&
                 cache.invalidate(kLocalSpace, 0x100000, 1) == 1;
        }
        ep::reclaim();
        ::_exit(ok && ep::pending() == 0 ? 0 : 1);
    }
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    phase = 2;
    reader.join();
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
}
