/* The calibration settings both wires share (calib_config.h). */
#include "config.h"
#include "calib_config.h"

#include <ucs/sys/compiler_def.h>

/* enum gp_calib_mode (capi.h) */
static const char *gdrpipe_calib_names[] = {"auto", "force", "off", NULL};

ucs_config_field_t gdrpipe_calib_config_table[] = {
    /* Per pair of endpoints (two GPUs; a GPU and an RDMA port). auto measures
     * for about CALIB_BUDGET. force measures every pair again once per process (a
     * process starting later reuses what an earlier one of the same start
     * measured only if it is newer). off: pairs without a cached crossover use
     * the fallback (direct wherever it works). */
    {"CALIBRATE", "auto",
     "Crossover of THRESH=auto: auto (cached, else measured and "
     "cached), force (measured again), off (cache only).",
     ucs_offsetof(gdrpipe_calib_config_t, calibrate),
     UCS_CONFIG_TYPE_ENUM(gdrpipe_calib_names)},

    /* One for both wires, with the lock files. A directory that cannot be
     * written only costs a warning (the measurement is used, not kept). */
    {"CALIB_DIR", "",
     "Calibration cache directory (empty: $XDG_CACHE_HOME/gdrpipe, else ~/.cache/gdrpipe).",
     ucs_offsetof(gdrpipe_calib_config_t, dir), UCS_CONFIG_TYPE_STRING},

    /* Both paths, sizes up to CALIB_MAX_SIZE. */
    {"CALIB_BUDGET", "0.5s",
     "Time budget of one pair's calibration.",
     ucs_offsetof(gdrpipe_calib_config_t, budget), UCS_CONFIG_TYPE_TIME},

    /* The other process holds the pair's lock file in the cache directory. */
    {"CALIB_WAIT", "10s",
     "How long to wait while another process calibrates the "
     "same pair, before using the fallback.",
     ucs_offsetof(gdrpipe_calib_config_t, wait), UCS_CONFIG_TYPE_TIME},

    {NULL}
};
