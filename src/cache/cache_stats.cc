// One-line rendering of the region cache counters.
#include <gdrpipe/cache/region_cache.hpp>

#include <cinttypes>
#include <cstdio>

namespace gdrpipe::cache {

std::string format_stats(const CacheStats &s, const std::string &name) {
    const std::uint64_t lookups = s.hits + s.misses;
    const double hit_pct = lookups != 0 ? 100.0 * static_cast<double>(s.hits) /
                                              static_cast<double>(lookups)
                                        : 0.0;
    char buf[640];
    std::snprintf(buf, sizeof buf,
                  "%s: hits=%" PRIu64 " misses=%" PRIu64 " hit%%=%.1f"
                  " pin_waits=%" PRIu64 " pin_failures=%" PRIu64
                  " evictions=%" PRIu64 " invalidations=%" PRIu64 " stale=%" PRIu64
                  " merges=%" PRIu64 " flushed=%" PRIu64 " over_bound=%" PRIu64
                  " uncached=%" PRIu64 " pins=%" PRIu64 " unpins=%" PRIu64
                  " regions=%" PRIu64 " bytes_cached=%" PRIu64
                  " pinned_regions=%" PRIu64 " bytes_pinned=%" PRIu64
                  " peak_bytes_pinned=%" PRIu64,
                  name.c_str(), s.hits, s.misses, hit_pct, s.pin_waits,
                  s.pin_failures, s.evictions, s.invalidations, s.stale, s.merges,
                  s.flushed, s.over_bound, s.uncached, s.pins, s.unpins, s.regions,
                  s.bytes_cached, s.pinned_regions, s.bytes_pinned,
                  s.peak_bytes_pinned);
    return buf;
}

} // namespace gdrpipe::cache
