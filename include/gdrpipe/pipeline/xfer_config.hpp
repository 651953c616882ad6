// What a transfer engine is configured with (the plugin fills it from
// UCX_GDRPIPE_*; src/capi translates the C facade's gp_xfer_config_t).
#pragma once

#include "gdrpipe/model/shared_obtain.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

namespace gdrpipe::pipeline {

enum class PathMode : int { automatic = 0, direct = 1, staged = 2 };

// thresh: measure the crossover per device pair; SIZE_MAX (or 0): never
// staged where direct works
inline constexpr size_t kThreshAuto = size_t(-2);

// active-message id of the engines' control messages on the wire FIFO
inline constexpr uint8_t kCtrlAmId = 0xfe;

struct XferConfig {
    PathMode path = PathMode::automatic;
    size_t thresh = 0;            // direct below, staged from here on (kThreshAuto: measured)
    size_t chunk_size = 0;        // staged pipeline chunk; 0: calibrated, else 2 MiB
    unsigned depth = 0;           // staged chunks in flight; 0: calibrated, else 4
    size_t cache_max_regions = 0; // pinned-region caches bounds
    size_t cache_max_bytes = 0;
    model::CalibMode calibrate = model::CalibMode::automatic;
    std::string calib_dir;        // empty: $XDG_CACHE_HOME/gdrpipe or ~/.cache/gdrpipe
    double calib_budget_s = 0;    // 0: the default
    double calib_wait_s = 0;
    size_t calib_max_size = 0;
    unsigned calib_online = 0;    // transfers per path checked through the peer; 0: off
    bool copy_kernel = true;      // a round's direct copies in one batched kernel launch
    double stall_timeout_s = 0;   // a staged transfer that moves nothing this long, on
                                  // either side, fails (-ETIMEDOUT); 0: never
};

// a transfer's completion: status 0 or -errno
using XferDoneCb = void (*)(void *arg, int status);

} // namespace gdrpipe::pipeline
