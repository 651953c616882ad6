// Internal state of the region cache (not installed; see
// include/gdrpipe/cache/region_cache.hpp for the public API).
#pragma once
#include "flat_index.hpp"

#include <gdrpipe/cache/region_cache.hpp>

#include <condition_variable>
#include <list>
#include <mutex>
#include <thread>
#include <vector>

namespace gdrpipe::cache::detail {

struct Core;

struct Region : RegionHead {
    // LRU list of indexed regions (head = most recently acquired); under Core::mu
    Region *lru_prev = nullptr;
    Region *lru_next = nullptr;
    // keeps ops and counters alive while references outlive the cache
    std::shared_ptr<Core> core;
};

// A pin in progress outside the lock; other gets overlapping it wait for it.
struct PendingPin {
    SpaceId space;
    std::uintptr_t lo;
    std::uintptr_t hi;
    bool invalidated;
    std::thread::id owner;
};

using RegionList = std::vector<Region *>;

struct Core {
    Core(RegionOps o, CacheConfig c) : ops(std::move(o)), cfg(std::move(c)) {}

    RegionOps ops;
    CacheConfig cfg;

    mutable std::mutex mu;
    std::condition_variable pin_done;

    // ---- under mu ----
    // Indexed regions never overlap within a space.
    FlatIndex<Region> index;
    Region *lru_head = nullptr;
    Region *lru_tail = nullptr;
    std::list<PendingPin> pending;
    std::uint64_t bytes_cached = 0;
    std::uint64_t hits = 0; // hits without validate (counted under mu)
    std::uint64_t misses = 0, pin_waits = 0, pin_failures = 0, evictions = 0,
                  invalidations = 0, stale = 0, merges = 0, flushed = 0,
                  over_bound = 0, uncached = 0;

    // ---- lock-free (updated on release paths) ----
    std::atomic<std::uint64_t> validated_hits{0}, pins{0}, unpins{0}, pinned_regions{0},
        bytes_pinned{0}, peak_bytes_pinned{0};

    // helpers, all require mu held
    Region *find_covering(SpaceId space, std::uintptr_t a, std::uintptr_t b) const;
    // positions [first, last) of the indexed regions of `space` overlapping
    // [lo, hi) (a contiguous run: regions of a space do not overlap)
    std::pair<std::size_t, std::size_t> overlapping_run(SpaceId space, std::uintptr_t lo,
                                                        std::uintptr_t hi) const;
    void lru_unlink(Region *r) noexcept;
    void lru_push_front(Region *r) noexcept;
    void lru_touch(Region *r) noexcept {
        if (r != lru_head) {
            lru_unlink(r);
            lru_push_front(r);
        }
    }
    void insert(Region *r);
    // unlink from the LRU, uncount, mark retired; pushes r to `to_unpin` if
    // unreferenced. Does not touch the index.
    void retire_unindexed(Region *r, RegionList &to_unpin);
    // retire one region / a run of index positions
    void retire(Region *r, RegionList &to_unpin);
    void retire_run(std::size_t first, std::size_t last, RegionList &to_unpin);
    // evicts unreferenced regions (LRU first) until one more region of `len`
    // bytes fits the bounds; false if the bounds cannot be met
    bool make_room(std::size_t len, RegionList &to_unpin);
    bool pending_conflict(SpaceId space, std::uintptr_t lo, std::uintptr_t hi) const;
    void mark_pending_invalidated(SpaceId space, std::uintptr_t lo, std::uintptr_t hi);

    void note_pinned(std::size_t len) noexcept;
};

// Unpins and deletes regions owned by the caller (retired, unreferenced).
// Must be called without mu.
void unpin_all(RegionList &regions) noexcept;

} // namespace gdrpipe::cache::detail
