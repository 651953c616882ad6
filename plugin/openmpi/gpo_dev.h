/* Device memory for the Open MPI glue: detection and copies through the
 * companion table of the preloaded UCX plugin (gdrpipe/companion.h), so that
 * the whole process shares one CUDA driver loader. Independent of the Open
 * MPI version. */
#ifndef GDRPIPE_OMPI_DEV_H
#define GDRPIPE_OMPI_DEV_H

#include <stddef.h>

#include "gdrpipe/companion.h"

/* The table, or NULL when the plugin is not loaded or CUDA is not usable
 * (gpo_dev_why_not() then says why). Looked up once. */
const gp_companion_t *gpo_dev(void);
const char *gpo_dev_why_not(void);

/* 1 when ptr is device memory; 0 for host memory, MPI_IN_PLACE-like
 * sentinels, NULL, or when there is no CUDA */
static inline int gpo_is_device(const void *ptr)
{
    const gp_companion_t *c;
    if ((size_t)ptr < 4096 || (c = gpo_dev()) == NULL) {
        return 0;
    }
    return c->is_device(ptr) > 0;
}

/* synchronous copy; 0, or -1 after printing why */
int gpo_copy(void *dst, const void *src, size_t len);

#endif
