// Obtaining a calibration when many processes may want the same one at once
// (the plugin: every rank of a job reaches its first GPU transfer together).
//
// One process calibrates while holding an flock() on a lock file beside the
// cache; the others wait a bounded time for the lock, then read what the
// calibrating process stored. Order of steps:
//   1. a valid cache entry (with force: one written at or after
//      `fresh_after`) is used at once, without locking;
//   2. mode off: no entry means no calibration (status no_data);
//   3. take the lock, polling up to `wait_s`; on time-out read the cache once
//      more and otherwise give up (status no_data, `lock_timed_out`): the
//      caller falls back, it never calibrates alongside another process;
//   4. with the lock, read the cache again (the holder before us may have
//      stored it), else create the prober, calibrate and store.
// No cache (directory unset or unusable: a warning): calibrates unlocked.
#pragma once
#include "gdrpipe/model/calib_cache.hpp"
#include "gdrpipe/model/obtain.hpp"

#include <functional>
#include <memory>
#include <string>

namespace gdrpipe::model {

enum class CalibMode : int {
    automatic = 0, // cache, else measure
    force,         // measure once per run: ignore entries older than fresh_after
    off            // cache only, never measure
};
const char *calib_mode_name(CalibMode m) noexcept;

struct SharedOptions {
    CalibMode mode = CalibMode::automatic;
    double wait_s = 10.0;      // longest wait for another process's calibration
    double poll_s = 0.005;     // lock polling interval
    double fresh_after = 0.0;  // force: entries whose mtime (s since epoch) is >= this count
    std::string lock_name;     // lock file name in the cache dir; "" = the key's
};

// The prober is made only when a measurement is needed (it allocates device
// memory); nullptr with *err set when it cannot be made.
using ProberFactory = std::function<std::unique_ptr<Prober>(std::string *err)>;

struct SharedObtained : Obtained {
    double waited_s = 0.0;       // time spent waiting for the lock
    bool lock_timed_out = false; // another process held it for longer than wait_s
    bool locked = false;         // the lock file was used
};

SharedObtained obtain_shared(const CalibKey &key, const ProberFactory &make_prober,
                             const CalibOptions &options, const CalibCache *cache,
                             const SharedOptions &shared);

// "<dir>/<name>": lock file name for an unordered pair of endpoints, so the
// two directions of one pair (two processes) do not measure at the same time.
std::string pair_lock_name(const std::string &endpoint_a, const std::string &endpoint_b);

// Seconds since the epoch (wall clock; compared with file mtimes).
double wall_clock_now() noexcept;

} // namespace gdrpipe::model
