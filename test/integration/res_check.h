/* Process resources that a transport must give back at ucp_cleanup: open
 * file descriptors, threads, memfd and /dev/shm mappings, /dev/shm entries,
 * and (when the CUDA simulator is the loaded driver) its live allocations,
 * IPC imports, streams, events and primary-context references. Used by
 * ucp_verify --cycles to compare each cleanup against a baseline. */
#ifndef GDRPIPE_TEST_RES_CHECK_H
#define GDRPIPE_TEST_RES_CHECK_H

#include "cudasim.h"

typedef struct {
    long fds;         /* entries of /proc/self/fd */
    long threads;     /* entries of /proc/self/task */
    long memfd_maps;  /* /proc/self/maps lines of a memfd */
    long shm_maps;    /* /proc/self/maps lines under /dev/shm */
    long devshm;      /* entries of /dev/shm (machine-wide) */
    int have_sim;     /* the simulator's counters are valid */
    struct gdrpipe_sim_counts sim;
} gp_res_t;

/* Takes a snapshot. Returns 0, or -1 if /proc could not be read. */
int gp_res_take(gp_res_t *r);
/* Prints every counter of `now` that differs from `base` (prefixed with
 * `who`), plus the open fds and memfd/shm mappings when those differ.
 * Returns the number of differing counters (0: back to the baseline). */
int gp_res_diff(const gp_res_t *base, const gp_res_t *now, const char *who);
/* One line with the counters, for the log. */
void gp_res_print(const gp_res_t *r, const char *who);

#endif
