// Index, snapshot publication, recency and bound bookkeeping of the region
// cache (under Core::mu unless noted), and the lock-free hit path.
#include "region.hpp"

#include <algorithm>
#include <limits>

namespace gdrpipe::cache::detail {

namespace {
void delete_snapshot(void *p) { delete static_cast<const Snapshot *>(p); }
} // namespace

Region *find_covering(const FlatIndex<Region> &index, SpaceId space, std::uintptr_t a,
                      std::uintptr_t b) noexcept {
    // Indexed regions of a space do not overlap, so the only candidate is the
    // region with the greatest start <= a.
    const std::size_t pos = index.last_at_or_before(space, a);
    if (pos == index.npos) {
        return nullptr;
    }
    Region *r = index.at(pos);
    return r->info.space == space && r->info.end() >= b ? r : nullptr;
}

Core::~Core() {
    // every region left the index in ~RegionCache; no reader can be inside
    delete snapshot.exchange(nullptr, std::memory_order_relaxed);
}

// ---- lock-free ----

std::uint64_t Core::sharded_hits() const noexcept {
    std::uint64_t n = hit_overflow.load(std::memory_order_relaxed);
    for (const HitShard &h : hit_shards) {
        n += h.n.load(std::memory_order_relaxed);
    }
    return n;
}

// ---- under mu ----

std::pair<std::size_t, std::size_t> Core::overlapping_run(SpaceId space, std::uintptr_t lo,
                                                          std::uintptr_t hi) const {
    std::size_t first = index.last_at_or_before(space, lo);
    if (first == index.npos) {
        first = 0;
    } else {
        const Region *r = index.at(first);
        if (r->info.space != space || r->info.end() <= lo) {
            ++first;
        }
    }
    std::size_t last = first;
    while (last < index.size() && index.at(last)->info.space == space &&
           index.at(last)->info.addr < hi) {
        ++last;
    }
    return {first, last};
}

void Core::insert(Region *r) {
    // The clock moves by 2 per insertion: the new region is newer than every
    // hit before it and older than every hit after it.
    const std::uint64_t t = use_clock.load(std::memory_order_relaxed) + 1;
    r->last_use.store(t, std::memory_order_relaxed);
    use_clock.store(t + 1, std::memory_order_relaxed);
    index.insert(r);
    bytes_cached += r->info.len;
    dirty = true;
}

void Core::retire_unindexed(Region *r) {
    bytes_cached -= r->info.len;
    retiring.push_back(r);
    dirty = true;
}

void Core::retire(Region *r) {
    index.erase(r);
    retire_unindexed(r);
}

void Core::retire_run(std::size_t first, std::size_t last) {
    retiring.reserve(retiring.size() + (last - first));
    for (std::size_t i = first; i < last; ++i) {
        retire_unindexed(index.at(i));
    }
    index.erase_range(first, last);
}

bool Core::take_unreferenced(std::size_t pos, RegionList &to_unpin) {
    Region *r = index.at(pos);
    // A lock-free hit increments only a non-retired state, so winning this
    // CAS means nobody holds or can take a reference: we unpin it. No other
    // party can unpin it either, so it may stay in the published snapshot
    // until commit() (readers there see the bit and back off).
    std::uint64_t expected = 0;
    if (!r->state.compare_exchange_strong(expected, kRetiredBit, std::memory_order_acq_rel)) {
        return false;
    }
    bytes_cached -= r->info.len;
    to_unpin.push_back(r);
    dirty = true;
    return true;
}

bool Core::make_room(std::size_t len, RegionList &to_unpin) {
    auto over = [&] {
        return (cfg.max_regions != 0 && index.size() + 1 > cfg.max_regions) ||
               (cfg.max_bytes != 0 && bytes_cached + len > cfg.max_bytes);
    };
    // Approximate LRU: the unreferenced region with the oldest stamp goes
    // first (ties: the lowest address). One scan per eviction (O(n), next to
    // the pin that caused it). A region a lock-free hit grabs between the
    // scan and the CAS is skipped on the next scan.
    int lost_races = 0;
    while (over() && lost_races < 64) {
        std::size_t victim = index.npos;
        std::uint64_t oldest = std::numeric_limits<std::uint64_t>::max();
        for (std::size_t i = 0; i < index.size(); ++i) {
            const Region *r = index.at(i);
            if (r->state.load(std::memory_order_relaxed) == 0) {
                const std::uint64_t t = r->last_use.load(std::memory_order_relaxed);
                if (t < oldest) {
                    oldest = t;
                    victim = i;
                }
            }
        }
        if (victim == index.npos) {
            break;
        }
        if (take_unreferenced(victim, to_unpin)) {
            index.erase_range(victim, victim + 1);
            ++evictions;
        } else {
            ++lost_races;
        }
    }
    return !over();
}

void Core::commit(RegionList &to_unpin) {
    if (!dirty) {
        return;
    }
    dirty = false;
    // 1. publish: readers starting from now on cannot find removed regions
    const Snapshot *fresh = index.empty() ? nullptr : new Snapshot(index);
    const Snapshot *old = snapshot.exchange(fresh, std::memory_order_seq_cst);
    if (old != nullptr) {
        epoch::retire(const_cast<Snapshot *>(old), delete_snapshot);
    }
    // 2. retire: from here on a last release may unpin (and retire to the
    // epoch domain) these regions; no published snapshot points to them
    for (Region *r : retiring) {
        const std::uint64_t was = r->state.fetch_or(kRetiredBit, std::memory_order_acq_rel);
        if ((was & kRefMask) == 0) {
            to_unpin.push_back(r);
        }
    }
    retiring.clear();
}

bool Core::pending_conflict(SpaceId space, std::uintptr_t lo, std::uintptr_t hi) const {
    const auto self = std::this_thread::get_id();
    return std::any_of(pending.begin(), pending.end(), [&](const PendingPin &p) {
        // a pin() that re-enters get() never waits for itself
        return p.space == space && p.lo < hi && lo < p.hi && p.owner != self;
    });
}

void Core::mark_pending_invalidated(SpaceId space, std::uintptr_t lo, std::uintptr_t hi) {
    for (PendingPin &p : pending) {
        if (p.space == space && p.lo < hi && lo < p.hi) {
            p.invalidated = true;
        }
    }
}

void Core::note_pinned(std::size_t len) noexcept {
    pins.fetch_add(1, std::memory_order_relaxed);
    pinned_regions.fetch_add(1, std::memory_order_relaxed);
    std::uint64_t now = bytes_pinned.fetch_add(len, std::memory_order_relaxed) + len;
    std::uint64_t peak = peak_bytes_pinned.load(std::memory_order_relaxed);
    while (now > peak &&
           !peak_bytes_pinned.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
}

} // namespace gdrpipe::cache::detail
