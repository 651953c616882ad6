/* The calibration settings both wires share (UCX_GDRPIPE_CALIBRATE,
 * _CALIB_DIR, _CALIB_BUDGET, _CALIB_WAIT, and the same under
 * UCX_GDRPIPE_RDMA_): one configuration sub-table, embedded in each
 * interface's table (calib_config.c). */
#ifndef GDRPIPE_CALIB_CONFIG_H
#define GDRPIPE_CALIB_CONFIG_H

#include <ucs/config/parser.h>

typedef struct gdrpipe_calib_config {
    int    calibrate;  /* enum gp_calib_mode */
    char   *dir;       /* "" = the default cache directory */
    double budget;     /* seconds */
    double wait;       /* seconds */
} gdrpipe_calib_config_t;

extern ucs_config_field_t gdrpipe_calib_config_table[];

#endif
