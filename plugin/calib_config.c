/* The calibration settings both wires share (calib_config.h). */
#include "config.h"
#include "calib_config.h"

#include <ucs/sys/compiler_def.h>

/* enum gp_calib_mode (capi.h) */
static const char *gdrpipe_calib_names[] = {"auto", "force", "off", NULL};

ucs_config_field_t gdrpipe_calib_config_table[] = {
    {"CALIBRATE", "auto",
     "Calibration of THRESH=auto, per pair of endpoints (two GPUs; a GPU and an\n"
     "RDMA port):\n"
     " auto  - use the pair's cached crossover, else measure it (about CALIB_BUDGET)\n"
     "         and cache it\n"
     " force - measure every pair again once per process (a process starting later\n"
     "         reuses what an earlier one of the same start measured only if it is newer)\n"
     " off   - cached crossovers only; pairs without one use the fallback (direct\n"
     "         wherever it works)",
     ucs_offsetof(gdrpipe_calib_config_t, calibrate),
     UCS_CONFIG_TYPE_ENUM(gdrpipe_calib_names)},

    {"CALIB_DIR", "",
     "Directory of the calibration cache and its lock files (one for both wires).\n"
     "Empty: $XDG_CACHE_HOME/gdrpipe, else $HOME/.cache/gdrpipe. A directory that\n"
     "cannot be written only costs a warning (the measurement is used, not kept).",
     ucs_offsetof(gdrpipe_calib_config_t, dir), UCS_CONFIG_TYPE_STRING},

    {"CALIB_BUDGET", "0.5s",
     "Time budget of one pair's calibration (both paths, sizes up to\n"
     "CALIB_MAX_SIZE).",
     ucs_offsetof(gdrpipe_calib_config_t, budget), UCS_CONFIG_TYPE_TIME},

    {"CALIB_WAIT", "10s",
     "How long a process waits while another one calibrates the same pair (lock\n"
     "file in the cache directory) before it gives up and uses the fallback.",
     ucs_offsetof(gdrpipe_calib_config_t, wait), UCS_CONFIG_TYPE_TIME},

    {NULL}
};
