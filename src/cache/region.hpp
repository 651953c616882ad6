// Internal state of the region cache (not installed; see
// include/gdrpipe/cache/region_cache.hpp for the public API).
#pragma once
#include "epoch.hpp"
#include "flat_index.hpp"
#include "snapshot.hpp"

#include <gdrpipe/cache/region_cache.hpp>

#include <array>
#include <condition_variable>
#include <list>
#include <mutex>
#include <thread>
#include <vector>

namespace gdrpipe::cache::detail {

struct Core;

struct Region : RegionHead {
    // approximate recency: Core::use_clock at the last hit (relaxed; written by
    // lock-free hits on the line the reference count already dirtied)
    std::atomic<std::uint64_t> last_use{0};
    // keeps ops and counters alive while references outlive the cache
    std::shared_ptr<Core> core;
};

// Immutable copy of the index that lock-free readers search; replaced (and
// the old one retired to the epoch domain) after every change of the index.
using Snapshot = SortedSnapshot<Region>;

// The region of `space` covering [a, b) in `index`, or nullptr.
Region *find_covering(const FlatIndex<Region> &index, SpaceId space, std::uintptr_t a,
                      std::uintptr_t b) noexcept;

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
    ~Core();

    RegionOps ops;
    CacheConfig cfg;

    mutable std::mutex mu;
    std::condition_variable pin_done;

    // ---- under mu ----
    // The master index; indexed regions never overlap within a space and are
    // never retired (their retired bit is set when they leave it).
    FlatIndex<Region> index;
    // Removed from the index, retired bit not set yet: set by commit() after
    // the snapshot without them is published (a last release may free a
    // retired region, so no snapshot may still point to it by then).
    RegionList retiring;
    bool dirty = false; // index changed since the last publish
    std::list<PendingPin> pending;
    std::uint64_t bytes_cached = 0;
    std::uint64_t hits = 0; // hits on the locked path without validate
    std::uint64_t misses = 0, pin_waits = 0, pin_failures = 0, evictions = 0,
                  invalidations = 0, stale = 0, merges = 0, flushed = 0,
                  over_bound = 0, uncached = 0;

    // ---- lock-free ----
    // What readers search (nullptr: empty). Written under mu by commit().
    std::atomic<const Snapshot *> snapshot{nullptr};
    // Recency clock: +2 per insertion (under mu), read by hits. Own line:
    // written only on misses.
    alignas(64) std::atomic<std::uint64_t> use_clock{0};
    // Hits counted by the thread owning epoch slot i (single writer: a plain
    // load+store, no locked instruction); threads with slot ids beyond the
    // shards share `hit_overflow` (fetch_add).
    static constexpr std::size_t kHitShards = 64;
    struct alignas(64) HitShard {
        std::atomic<std::uint64_t> n{0};
    };
    std::array<HitShard, kHitShards> hit_shards;
    alignas(64) std::atomic<std::uint64_t> hit_overflow{0};
    // updated on pin/release paths
    std::atomic<std::uint64_t> pins{0}, unpins{0}, pinned_regions{0}, bytes_pinned{0},
        peak_bytes_pinned{0};

    // Lock-free hit: a reference to the indexed region of `space` covering
    // [a, b) with `tag`, or nullptr (miss, tag mismatch, region being
    // removed, or no epoch slot: take the locked path). *slot_id: for
    // count_hit().
    Region *try_hit(SpaceId space, std::uintptr_t a, std::uintptr_t b, std::uint64_t tag,
                    std::uint32_t *slot_id) noexcept {
        epoch::ReadGuard guard;
        if (!guard) {
            return nullptr;
        }
        *slot_id = guard.slot_id();
        const Snapshot *snap = snapshot.load(std::memory_order_seq_cst);
        Region *r = snap != nullptr ? snap->find_covering(space, a, b) : nullptr;
        if (r == nullptr || r->info.tag != tag) {
            return nullptr; // miss or stale: the locked path decides
        }
        // A reference is taken only while the region is not retired: a
        // remover sets the bit (fetch_or / CAS 0 -> retired), so either we
        // win and it sees our reference, or we see the bit and back off.
        std::uint64_t s = r->state.load(std::memory_order_relaxed);
        do {
            if ((s & kRetiredBit) != 0) {
                return nullptr;
            }
        } while (!r->state.compare_exchange_weak(s, s + 1, std::memory_order_acquire,
                                                 std::memory_order_relaxed));
        touch(r);
        return r;
    }
    // lock-free contains(); -1: no epoch slot, take the locked path
    int try_contains(SpaceId space, std::uintptr_t a, std::uintptr_t b,
                     std::uint64_t tag) const noexcept {
        epoch::ReadGuard guard;
        if (!guard) {
            return -1;
        }
        const Snapshot *snap = snapshot.load(std::memory_order_seq_cst);
        const Region *r = snap != nullptr ? snap->find_covering(space, a, b) : nullptr;
        return r != nullptr && r->info.tag == tag &&
               (r->state.load(std::memory_order_acquire) & kRetiredBit) == 0;
    }
    void count_hit(std::uint32_t slot_id) noexcept {
        if (slot_id < kHitShards) {
            std::atomic<std::uint64_t> &n = hit_shards[slot_id].n;
            n.store(n.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        } else {
            hit_overflow.fetch_add(1, std::memory_order_relaxed);
        }
    }
    std::uint64_t sharded_hits() const noexcept;
    void touch(Region *r) noexcept {
        const std::uint64_t now = use_clock.load(std::memory_order_relaxed);
        if (r->last_use.load(std::memory_order_relaxed) != now) {
            r->last_use.store(now, std::memory_order_relaxed);
        }
    }

    // helpers, all require mu held
    Region *find_covering(SpaceId space, std::uintptr_t a, std::uintptr_t b) const {
        return detail::find_covering(index, space, a, b);
    }
    // positions [first, last) of the indexed regions of `space` overlapping
    // [lo, hi) (a contiguous run: regions of a space do not overlap)
    std::pair<std::size_t, std::size_t> overlapping_run(SpaceId space, std::uintptr_t lo,
                                                        std::uintptr_t hi) const;
    void insert(Region *r);
    // uncount and queue for retirement (commit()). Does not touch the index.
    void retire_unindexed(Region *r);
    // retire one region / a run of index positions
    void retire(Region *r);
    void retire_run(std::size_t first, std::size_t last);
    // removes an unreferenced region at once (CAS 0 -> retired; false if it
    // is referenced) and queues it in `to_unpin`
    bool take_unreferenced(std::size_t pos, RegionList &to_unpin);
    // evicts unreferenced regions (least recently used first) until one more
    // region of `len` bytes fits the bounds; false if the bounds cannot be met
    bool make_room(std::size_t len, RegionList &to_unpin);
    // Publishes the index (if it changed), then sets the retired bit of the
    // regions removed since the last commit, queueing the unreferenced ones
    // in `to_unpin`. Call before every release of mu that follows a change.
    void commit(RegionList &to_unpin);
    bool pending_conflict(SpaceId space, std::uintptr_t lo, std::uintptr_t hi) const;
    void mark_pending_invalidated(SpaceId space, std::uintptr_t lo, std::uintptr_t hi);

    void note_pinned(std::size_t len) noexcept;
};

// Unpins and deletes regions owned by the caller (retired, unreferenced).
// Must be called without mu.
void unpin_all(RegionList &regions) noexcept;

} // namespace gdrpipe::cache::detail
