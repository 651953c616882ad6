// Get the crossover for one endpoint pair: from the cache when a valid entry
// exists (and `force` is not set), otherwise by calibrating now and storing
// the result. A failed or cancelled calibration stores nothing.
#pragma once
#include "gdrpipe/model/calib_cache.hpp"
#include "gdrpipe/model/calibrate.hpp"

namespace gdrpipe::model {

struct Obtained {
    CalibStatus status = CalibStatus::bad_options; // ok when `record` is usable
    Source source = Source::measured;
    CalibRecord record;
    std::string message;
    bool stored = false; // a fresh calibration was written to the cache
};

// cache == nullptr: no caching at all.
Obtained obtain_calibration(const CalibKey &key, Prober &prober, const CalibOptions &options,
                            const CalibCache *cache, bool force);

} // namespace gdrpipe::model
