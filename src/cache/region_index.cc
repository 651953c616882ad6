// Index, LRU and bound bookkeeping of the region cache (all under Core::mu).
#include "region.hpp"

#include <algorithm>

namespace gdrpipe::cache::detail {

Region *Core::find_covering(SpaceId space, std::uintptr_t a, std::uintptr_t b) const {
    // Indexed regions of a space do not overlap, so the only candidate is the
    // region with the greatest start <= a.
    const std::size_t pos = index.last_at_or_before(space, a);
    if (pos == index.npos) {
        return nullptr;
    }
    Region *r = index.at(pos);
    return r->info.space == space && r->info.end() >= b ? r : nullptr;
}

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

void Core::lru_unlink(Region *r) noexcept {
    if (r->lru_prev != nullptr) {
        r->lru_prev->lru_next = r->lru_next;
    } else {
        lru_head = r->lru_next;
    }
    if (r->lru_next != nullptr) {
        r->lru_next->lru_prev = r->lru_prev;
    } else {
        lru_tail = r->lru_prev;
    }
    r->lru_prev = r->lru_next = nullptr;
}

void Core::lru_push_front(Region *r) noexcept {
    r->lru_prev = nullptr;
    r->lru_next = lru_head;
    if (lru_head != nullptr) {
        lru_head->lru_prev = r;
    } else {
        lru_tail = r;
    }
    lru_head = r;
}

void Core::insert(Region *r) {
    index.insert(r);
    lru_push_front(r);
    bytes_cached += r->info.len;
}

void Core::retire_unindexed(Region *r, RegionList &to_unpin) {
    lru_unlink(r);
    bytes_cached -= r->info.len;
    // After this, the holder whose release sees (retired | 1) unpins; if no
    // one holds it, we do. (r may be freed by that holder right after.)
    std::uint64_t old = r->state.fetch_or(kRetiredBit, std::memory_order_acq_rel);
    if ((old & kRefMask) == 0) {
        to_unpin.push_back(r);
    }
}

void Core::retire(Region *r, RegionList &to_unpin) {
    index.erase(r);
    retire_unindexed(r, to_unpin);
}

void Core::retire_run(std::size_t first, std::size_t last, RegionList &to_unpin) {
    for (std::size_t i = first; i < last; ++i) {
        retire_unindexed(index.at(i), to_unpin);
    }
    index.erase_range(first, last);
}

bool Core::make_room(std::size_t len, RegionList &to_unpin) {
    auto over = [&] {
        return (cfg.max_regions != 0 && index.size() + 1 > cfg.max_regions) ||
               (cfg.max_bytes != 0 && bytes_cached + len > cfg.max_bytes);
    };
    Region *cur = lru_tail;
    while (cur != nullptr && over()) {
        Region *prev = cur->lru_prev;
        // Only unreferenced regions: nobody can take a reference from 0
        // without holding mu, so the CAS cannot race with a new reference.
        std::uint64_t expected = 0;
        if (cur->state.compare_exchange_strong(expected, kRetiredBit,
                                               std::memory_order_acq_rel)) {
            index.erase(cur);
            lru_unlink(cur);
            bytes_cached -= cur->info.len;
            ++evictions;
            to_unpin.push_back(cur);
        }
        cur = prev;
    }
    return !over();
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
