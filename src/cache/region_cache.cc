// Pinned-region cache: lookup, miss handling, invalidation, flush.
// Policies and the thread-safety contract: docs/region-cache.md.
#include "region.hpp"

#include <gdrpipe/log.hpp>

#include <algorithm>
#include <cinttypes>
#include <exception>
#include <limits>

namespace gdrpipe::cache {

namespace detail {

void finish_region(RegionHead *head) noexcept {
    auto *r = static_cast<Region *>(head);
    std::shared_ptr<Core> core = std::move(r->core);
    const RegionInfo info = r->info;
    Payload payload = std::move(r->payload);
    // lock-free readers may still hold a pointer to r (from an old snapshot)
    // and try its reference count: free the memory only after they left
    epoch::retire(r, [](void *p) { delete static_cast<Region *>(p); });
    if (core->ops.unpin) {
        try {
            core->ops.unpin(info, std::move(payload));
        } catch (const std::exception &e) {
            GP_ERROR("%s: unpin of [0x%" PRIxPTR ", +%zu) threw: %s",
                     core->cfg.name.c_str(), info.addr, info.len, e.what());
        } catch (...) {
            GP_ERROR("%s: unpin of [0x%" PRIxPTR ", +%zu) threw",
                     core->cfg.name.c_str(), info.addr, info.len);
        }
    }
    payload.reset();
    core->unpins.fetch_add(1, std::memory_order_relaxed);
    core->pinned_regions.fetch_sub(1, std::memory_order_relaxed);
    core->bytes_pinned.fetch_sub(info.len, std::memory_order_relaxed);
    // `core` may be the last owner (cache destroyed, last reference released)
}

void unpin_all(RegionList &regions) noexcept {
    for (Region *r : regions) {
        finish_region(r);
    }
    regions.clear();
}

namespace {

Result<Payload> call_pin(Core &c, const RegionInfo &info) {
    try {
        return c.ops.pin(info);
    } catch (const std::exception &e) {
        return make_cache_error(kErrPinException, e.what());
    } catch (...) {
        return make_cache_error(kErrPinException, "pin threw");
    }
}

bool call_validate(Core &c, const RegionInfo &info, const Payload &p) {
    try {
        return c.ops.validate(info, p);
    } catch (...) {
        return false;
    }
}

} // namespace
} // namespace detail

using detail::Core;
namespace epoch = detail::epoch;
using detail::Region;
using detail::RegionList;

RegionCache::RegionCache(RegionOps ops, CacheConfig config) {
    if (config.alignment == 0 || (config.alignment & (config.alignment - 1)) != 0) {
        GP_WARN("%s: alignment %zu is not a power of two, using 1", config.name.c_str(),
                config.alignment);
        config.alignment = 1;
    }
    core_ = std::make_shared<Core>(std::move(ops), std::move(config));
}

RegionCache::~RegionCache() {
    Core &c = *core_;
    RegionList to_unpin;
    {
        std::lock_guard<std::mutex> lk(c.mu);
        if (!c.pending.empty()) {
            GP_ERROR("%s: destroyed while %zu pin(s) are in flight", c.cfg.name.c_str(),
                     c.pending.size());
        }
        assert(c.pending.empty());
        c.flushed += c.index.size();
        c.retire_run(0, c.index.size());
        c.commit(to_unpin);
    }
    detail::unpin_all(to_unpin);
    const std::uint64_t left = c.pinned_regions.load(std::memory_order_relaxed);
    if (left != 0) {
        GP_DEBUG("%s: destroyed with %" PRIu64 " region(s) still referenced; they are "
                 "unpinned at their last release", c.cfg.name.c_str(), left);
    }
}

const CacheConfig &RegionCache::config() const noexcept { return core_->cfg; }

Result<RegionRef> RegionCache::get(SpaceId space, std::uintptr_t addr, std::size_t len,
                                   std::uint64_t tag, AddrRange bounds) {
    Core &c = *core_;
    constexpr std::uintptr_t kMax = std::numeric_limits<std::uintptr_t>::max();
    if (len == 0) {
        len = 1;
    }
    if (addr > kMax - len || !c.ops.pin) {
        return make_cache_error(kErrInvalidArgument,
                                !c.ops.pin ? "no pin op" : "address range overflows");
    }
    const std::uintptr_t req_lo = addr;
    const std::uintptr_t req_hi = addr + len;

    // Lock-free hit (the common case): no mutex, no shared write but the
    // region's reference count and this thread's hit shard.
    RegionList to_unpin;
    std::uint32_t slot_id = epoch::kNoSlot;
    Region *fast = c.try_hit(space, req_lo, req_hi, tag, &slot_id);
    if (fast != nullptr) {
        RegionRef ref(fast);
        if (!c.ops.validate || detail::call_validate(c, fast->info, fast->payload)) {
            c.count_hit(slot_id);
            return ref;
        }
        // stale: drop it and continue as a miss
        {
            std::lock_guard<std::mutex> lk(c.mu);
            ++c.stale;
            if ((fast->state.load(std::memory_order_relaxed) & detail::kRetiredBit) == 0) {
                c.retire(fast);
                c.commit(to_unpin); // we hold a reference: not queued
            }
        }
        ref.reset(); // may unpin (we may be the last holder)
    }
    const std::uintptr_t mask = c.cfg.alignment - 1;
    // widened target [lo, hi), clamped to the caller's bounds
    std::uintptr_t lo = req_lo & ~mask;
    std::uintptr_t hi = req_hi > kMax - mask ? req_hi : (req_hi + mask) & ~mask;
    if (!bounds.contains(req_lo, req_hi)) {
        bounds = AddrRange::all();
    }
    lo = std::max(lo, bounds.lo);
    hi = std::min(hi, bounds.hi);

    RegionList overlapping;
    std::unique_lock<std::mutex> lk(c.mu);
    std::uintptr_t plo = lo;
    std::uintptr_t phi = hi;
    for (;;) {
        if (Region *r = c.find_covering(space, req_lo, req_hi)) {
            if (r->info.tag == tag) {
                // indexed regions are not retired: a plain increment is safe
                r->state.fetch_add(1, std::memory_order_relaxed);
                c.touch(r);
                if (!c.ops.validate) {
                    ++c.hits;
                    c.commit(to_unpin);
                    lk.unlock();
                    detail::unpin_all(to_unpin);
                    return RegionRef(r);
                }
                c.commit(to_unpin);
                lk.unlock();
                detail::unpin_all(to_unpin);
                RegionRef ref(r);
                if (detail::call_validate(c, r->info, r->payload)) {
                    c.count_hit(slot_id);
                    return ref;
                }
                lk.lock();
                ++c.stale;
                if ((r->state.load(std::memory_order_relaxed) & detail::kRetiredBit) == 0) {
                    c.retire(r);
                    c.commit(to_unpin); // we hold a reference: not queued
                }
                lk.unlock();
                ref.reset(); // may unpin (we may be the last holder)
                lk.lock();
                continue;
            }
            ++c.stale;
            c.retire(r);
        }

        // Miss. Regions overlapping the target with another tag are stale;
        // those with the same tag are merged into the union when allowed.
        overlapping.clear();
        const auto [first, last] = c.overlapping_run(space, lo, hi);
        for (std::size_t i = first; i < last; ++i) {
            overlapping.push_back(c.index.at(i));
        }
        plo = lo;
        phi = hi;
        for (Region *r : overlapping) {
            if (r->info.tag != tag) {
                ++c.stale;
                c.retire(r);
            } else {
                plo = std::min(plo, r->info.addr);
                phi = std::max(phi, r->info.end());
            }
        }
        if (!c.cfg.merge_overlaps || !bounds.contains(plo, phi) ||
            (c.cfg.max_bytes != 0 && phi - plo > c.cfg.max_bytes)) {
            plo = lo;
            phi = hi;
        }
        if (c.pending_conflict(space, plo, phi)) {
            // another thread is pinning an overlapping range: use its result
            ++c.pin_waits;
            c.commit(to_unpin); // publish before the wait releases mu
            c.pin_done.wait(lk);
            continue;
        }
        break;
    }

    ++c.misses;
    auto pit = c.pending.insert(c.pending.end(),
                                detail::PendingPin{space, plo, phi, false,
                                                   std::this_thread::get_id()});
    c.commit(to_unpin);
    lk.unlock();
    detail::unpin_all(to_unpin);

    const RegionInfo info{space, plo, phi - plo, tag};
    Result<Payload> pinned = detail::call_pin(c, info);
    if (!pinned && c.cfg.flush_and_retry_on_pin_failure && flush() != 0) {
        pinned = detail::call_pin(c, info);
    }

    lk.lock();
    const bool invalidated = pit->invalidated;
    c.pending.erase(pit);
    c.pin_done.notify_all();
    if (!pinned) {
        ++c.pin_failures;
        lk.unlock();
        GP_DEBUG("%s: pin of [0x%" PRIxPTR ", +%zu) failed: %d %s", c.cfg.name.c_str(),
                 info.addr, info.len, pinned.error().code, pinned.error().message.c_str());
        return pinned.error();
    }

    auto *nr = new Region;
    nr->info = info;
    nr->payload = std::move(*pinned);
    nr->core = core_;
    c.note_pinned(info.len);
    if (invalidated || (c.cfg.max_bytes != 0 && info.len > c.cfg.max_bytes)) {
        // memory freed while we pinned it, or too large to ever fit: hand it
        // out for this use only
        nr->state.store(detail::kRetiredBit | 1, std::memory_order_relaxed);
        ++c.uncached;
    } else {
        nr->state.store(1, std::memory_order_relaxed);
        // Normally nothing overlapping was inserted meanwhile (overlapping
        // gets wait for us); retire whatever overlaps to keep the index
        // disjoint (the regions merged into ours, stale ones, a re-entrant pin).
        const auto [first, last] = c.overlapping_run(space, plo, phi);
        for (std::size_t i = first; i < last; ++i) {
            if (c.index.at(i)->info.tag == tag) {
                ++c.merges;
            } else {
                ++c.stale;
            }
        }
        c.retire_run(first, last);
        if (!c.make_room(info.len, to_unpin)) {
            ++c.over_bound;
        }
        c.insert(nr);
        c.commit(to_unpin);
    }
    lk.unlock();
    detail::unpin_all(to_unpin);
    return RegionRef(nr);
}

std::size_t RegionCache::invalidate(SpaceId space, std::uintptr_t addr, std::size_t len) {
    Core &c = *core_;
    if (len == 0) {
        return 0;
    }
    constexpr std::uintptr_t kMax = std::numeric_limits<std::uintptr_t>::max();
    const std::uintptr_t hi = addr > kMax - len ? kMax : addr + len;
    RegionList to_unpin;
    std::size_t n = 0;
    {
        std::lock_guard<std::mutex> lk(c.mu);
        const auto [first, last] = c.overlapping_run(space, addr, hi);
        n = last - first;
        c.retire_run(first, last);
        c.invalidations += n;
        if (!c.pending.empty()) {
            c.mark_pending_invalidated(space, addr, hi);
        }
        c.commit(to_unpin);
    }
    detail::unpin_all(to_unpin);
    return n;
}

std::size_t RegionCache::invalidate_space(SpaceId space) {
    Core &c = *core_;
    RegionList to_unpin;
    std::size_t n = 0;
    {
        std::lock_guard<std::mutex> lk(c.mu);
        const std::size_t first = c.index.lower_bound(space, 0);
        const std::size_t last = c.index.end_of_space(space);
        n = last - first;
        c.retire_run(first, last);
        c.invalidations += n;
        c.mark_pending_invalidated(space, 0, std::numeric_limits<std::uintptr_t>::max());
        c.commit(to_unpin);
    }
    detail::unpin_all(to_unpin);
    return n;
}

std::size_t RegionCache::flush() {
    Core &c = *core_;
    RegionList to_unpin;
    {
        std::lock_guard<std::mutex> lk(c.mu);
        for (std::size_t i = 0; i < c.index.size(); ++i) {
            if (c.take_unreferenced(i, to_unpin)) {
                c.index.clear_slot(i);
                ++c.flushed;
            }
        }
        c.index.compact();
        c.commit(to_unpin);
    }
    const std::size_t n = to_unpin.size();
    detail::unpin_all(to_unpin);
    return n;
}

bool RegionCache::contains(SpaceId space, std::uintptr_t addr, std::size_t len,
                           std::uint64_t tag) const {
    const Core &c = *core_;
    if (len == 0) {
        len = 1;
    }
    if (addr > std::numeric_limits<std::uintptr_t>::max() - len) {
        return false;
    }
    const int fast = c.try_contains(space, addr, addr + len, tag);
    if (fast >= 0) {
        return fast != 0;
    }
    std::lock_guard<std::mutex> lk(c.mu);
    const Region *r = c.find_covering(space, addr, addr + len);
    return r != nullptr && r->info.tag == tag;
}

CacheStats RegionCache::stats() const {
    const Core &c = *core_;
    CacheStats s;
    std::lock_guard<std::mutex> lk(c.mu);
    s.hits = c.hits + c.sharded_hits();
    s.misses = c.misses;
    s.pin_waits = c.pin_waits;
    s.pin_failures = c.pin_failures;
    s.evictions = c.evictions;
    s.invalidations = c.invalidations;
    s.stale = c.stale;
    s.merges = c.merges;
    s.flushed = c.flushed;
    s.over_bound = c.over_bound;
    s.uncached = c.uncached;
    s.pins = c.pins.load(std::memory_order_relaxed);
    s.unpins = c.unpins.load(std::memory_order_relaxed);
    s.regions = c.index.size();
    s.bytes_cached = c.bytes_cached;
    s.pinned_regions = c.pinned_regions.load(std::memory_order_relaxed);
    s.bytes_pinned = c.bytes_pinned.load(std::memory_order_relaxed);
    s.peak_bytes_pinned = c.peak_bytes_pinned.load(std::memory_order_relaxed);
    return s;
}

std::string RegionCache::format_stats() const {
    return cache::format_stats(stats(), core_->cfg.name);
}

} // namespace gdrpipe::cache
