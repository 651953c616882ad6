// Pinned-region cache: keeps expensive pinnings/exports/imports/registrations
// of memory ranges after use (lazy unpinning) and drops them when the memory
// is freed (invalidate) or the cache is over its bounds (LRU eviction).
//
// Generic over what "pinning" means: the caller supplies RegionOps. Design,
// policies and the thread-safety contract: docs/region-cache.md.
#pragma once
#include <gdrpipe/cache/address_space_key.hpp>
#include <gdrpipe/expected.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace gdrpipe::cache {

// The cache's results are gdrpipe::Expected values (gdrpipe/expected.hpp);
// the cache's own names for them:
template <class T> using Result = Expected<T>;
using CacheError = Error;
inline constexpr auto &make_cache_error = make_error;

// Error codes >= 0 are the caller's (pin() may return e.g. a CUresult);
// negative codes are the cache's own.
enum : int {
    kErrInvalidArgument = -1, // len overflow, bad alignment, no pin op
    kErrPinException = -2,    // pin() threw
};

// Opaque per-region data produced by pin() (an IPC handle, a mapping, an MR).
using Payload = std::shared_ptr<void>;

// What a region is: the (widened) range that was pinned and the caller's tag.
struct RegionInfo {
    SpaceId space = kLocalSpace;
    std::uintptr_t addr = 0;
    std::size_t len = 0;
    std::uint64_t tag = 0;
    std::uintptr_t end() const noexcept { return addr + len; }
};

struct RegionOps {
    // Required. Pins info.addr..info.end(). Called WITHOUT the cache lock; may
    // call invalidate()/flush()/stats() of the same cache, but must not call
    // get() on an overlapping range of the same cache from another thread and
    // wait for it (that thread waits for this pin).
    std::function<Result<Payload>(const RegionInfo &)> pin;
    // Optional. Called exactly once per successful pin, WITHOUT the cache lock
    // and never while a RegionRef references the region. May re-enter the
    // cache (invalidate, get, ...). Must not throw (exceptions are logged).
    std::function<void(const RegionInfo &, Payload &&)> unpin;
    // Optional. Called on every hit, WITHOUT the cache lock, while the caller
    // already holds a reference. false => the region is stale: it is removed
    // (counted in `stale`) and the lookup proceeds as a miss.
    std::function<bool(const RegionInfo &, const Payload &)> validate;
};

struct CacheConfig {
    // Requests are widened to [align_down(addr), align_up(addr+len)) (power of
    // two; GPU regions 64 KiB, host regions the page size), then clamped to
    // the bounds given to get().
    std::size_t alignment = 4096;
    // Bounds on the cached (indexed) regions; 0 = unbounded.
    std::size_t max_regions = 0;
    std::size_t max_bytes = 0;
    // Merge a request that partially overlaps cached regions (same tag) into
    // one region covering the union, if the union lies within the bounds.
    bool merge_overlaps = true;
    // On a failed pin: flush all unreferenced regions and try once more.
    bool flush_and_retry_on_pin_failure = true;
    // Name used in format_stats() and logs.
    std::string name = "rcache";
};

struct CacheStats {
    std::uint64_t hits = 0;          // get() served by a cached region
    std::uint64_t misses = 0;        // get() that had to pin
    std::uint64_t pin_waits = 0;     // get() that waited for another thread's pin
    std::uint64_t pin_failures = 0;  // pin() returned an error (per get)
    std::uint64_t evictions = 0;     // regions removed by LRU (bounds)
    std::uint64_t invalidations = 0; // regions removed by invalidate*()
    std::uint64_t stale = 0;         // regions removed: tag mismatch / validate false
    std::uint64_t merges = 0;        // regions removed: absorbed into a union
    std::uint64_t flushed = 0;       // regions removed by flush() / destructor
    std::uint64_t over_bound = 0;    // inserts that left the cache over a bound
    std::uint64_t uncached = 0;      // handles given out without caching
    std::uint64_t pins = 0;          // successful pin() calls
    std::uint64_t unpins = 0;        // unpin() calls (== pins once all released)
    std::uint64_t regions = 0;       // cached regions now
    std::uint64_t bytes_cached = 0;  // bytes of cached regions now
    std::uint64_t pinned_regions = 0;    // pinned now (cached + retired-in-use + uncached)
    std::uint64_t bytes_pinned = 0;      // bytes pinned now
    std::uint64_t peak_bytes_pinned = 0; // max of bytes_pinned
};

namespace detail {
inline constexpr std::uint64_t kRetiredBit = std::uint64_t{1} << 63;
inline constexpr std::uint64_t kRefMask = kRetiredBit - 1;

// Public head of the internal region object (src/cache/region.hpp).
struct RegionHead {
    RegionInfo info;
    Payload payload;
    // bit 63: retired (not in the index); bits 0..62: reference count.
    std::atomic<std::uint64_t> state{0};
};
// Unpins and frees a region whose last reference went away after retirement.
void finish_region(RegionHead *region) noexcept;
} // namespace detail

// RAII reference to a pinned region covering the requested range. While any
// RegionRef to a region exists, the region is never unpinned. Releasing it
// leaves the region cached (unless it was invalidated/evicted/merged meanwhile,
// in which case the last release unpins it, on the releasing thread).
class RegionRef {
  public:
    RegionRef() noexcept = default;
    RegionRef(const RegionRef &o) noexcept : r_(o.r_) {
        if (r_ != nullptr) {
            r_->state.fetch_add(1, std::memory_order_relaxed);
        }
    }
    RegionRef(RegionRef &&o) noexcept : r_(o.r_) { o.r_ = nullptr; }
    RegionRef &operator=(RegionRef o) noexcept {
        std::swap(r_, o.r_);
        return *this;
    }
    ~RegionRef() { reset(); }

    void reset() noexcept {
        if (r_ != nullptr) {
            detail::RegionHead *r = r_;
            r_ = nullptr;
            if (r->state.fetch_sub(1, std::memory_order_acq_rel) ==
                (detail::kRetiredBit | 1)) {
                detail::finish_region(r);
            }
        }
    }

    explicit operator bool() const noexcept { return r_ != nullptr; }
    const RegionInfo &info() const noexcept { return r_->info; }
    SpaceId space() const noexcept { return r_->info.space; }
    std::uintptr_t addr() const noexcept { return r_->info.addr; }
    std::size_t len() const noexcept { return r_->info.len; }
    std::uintptr_t end() const noexcept { return r_->info.end(); }
    std::uint64_t tag() const noexcept { return r_->info.tag; }
    const Payload &payload() const noexcept { return r_->payload; }
    template <class T> T *payload_as() const noexcept {
        return static_cast<T *>(r_->payload.get());
    }
    // Offset of `addr` inside the region (addr must be covered).
    std::size_t offset_of(std::uintptr_t a) const noexcept { return a - r_->info.addr; }
    bool covers(std::uintptr_t a, std::size_t n) const noexcept {
        return r_ != nullptr && a >= r_->info.addr && a + n <= r_->info.end();
    }
    // false once the region left the index (invalidated, evicted, merged,
    // stale, flushed, or never cached). Informational: may change any time.
    bool cached() const noexcept {
        return r_ != nullptr &&
               (r_->state.load(std::memory_order_relaxed) & detail::kRetiredBit) == 0;
    }

  private:
    friend class RegionCache;
    explicit RegionRef(detail::RegionHead *r) noexcept : r_(r) {}
    detail::RegionHead *r_ = nullptr;
};

namespace detail {
struct Core;
}

class RegionCache {
  public:
    explicit RegionCache(RegionOps ops, CacheConfig config = {});
    // Removes every region from the index; unreferenced ones are unpinned now,
    // referenced ones when their last RegionRef is released (RegionRefs may
    // outlive the cache; the ops are kept alive until then).
    ~RegionCache();
    RegionCache(const RegionCache &) = delete;
    RegionCache &operator=(const RegionCache &) = delete;

    // Returns a reference to a region covering [addr, addr+len) of `space`,
    // pinned with `tag`. `bounds` (e.g. the allocation the range lies in)
    // clamps the alignment widening and the union of merges; bounds that do not
    // contain the request are ignored. len 0 is treated as 1.
    Result<RegionRef> get(SpaceId space, std::uintptr_t addr, std::size_t len,
                          std::uint64_t tag, AddrRange bounds = AddrRange::all());
    Result<RegionRef> get(const void *ptr, std::size_t len, std::uint64_t tag = 0,
                          AddrRange bounds = AddrRange::all()) {
        return get(kLocalSpace, reinterpret_cast<std::uintptr_t>(ptr), len, tag, bounds);
    }

    // Removes every cached region of `space` overlapping [addr, addr+len) from
    // the index at once; unreferenced ones are unpinned before returning,
    // referenced ones at their last release. Pins in flight that overlap are
    // not cached. Returns the number of regions removed.
    std::size_t invalidate(SpaceId space, std::uintptr_t addr, std::size_t len);
    std::size_t invalidate(const void *ptr, std::size_t len) {
        return invalidate(kLocalSpace, reinterpret_cast<std::uintptr_t>(ptr), len);
    }
    // Drops every region of `space` (peer died / disconnected).
    std::size_t invalidate_space(SpaceId space);

    // Unpins every unreferenced cached region; returns how many.
    std::size_t flush();

    // true if one cached region covers [addr, addr+len) with `tag` (no
    // reference taken, no counters changed; for diagnostics and tests).
    bool contains(SpaceId space, std::uintptr_t addr, std::size_t len,
                  std::uint64_t tag) const;

    CacheStats stats() const;
    std::string format_stats() const;
    const CacheConfig &config() const noexcept;

  private:
    std::shared_ptr<detail::Core> core_;
};

// One line: "<name>: hits=... misses=... hit%=... ..." (the plugin prints it).
std::string format_stats(const CacheStats &s, const std::string &name);

} // namespace gdrpipe::cache
