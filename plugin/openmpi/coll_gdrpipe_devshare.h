/* What the GPU paths of the collectives share (coll_gdrpipe_devreduce.c,
 * coll_gdrpipe_devmove.c): agreeing across the communicator, and when to
 * start agreeing (coll_gdrpipe_devshare.c). */
#ifndef GDRPIPE_COLL_GDRPIPE_DEVSHARE_H
#define GDRPIPE_COLL_GDRPIPE_DEVSHARE_H

#include "coll_gdrpipe.h"
#include "gdrpipe/companion.h"

/* max of `v` over the communicator, through the next module's allreduce */
int gpo_agree_max(mca_coll_gdrpipe_module_t *m, struct ompi_communicator_t *comm, int v,
                  int *out);

/* Setting 2 of device_reduce and device_moves_gpu: whether the
 * communicator's qualifying calls agree on the GPU path now (state a, buf
 * this rank's buffer of the call). *rc: an error of the agreement. */
int gpo_auto_on(const gp_companion_t *c, mca_coll_gdrpipe_module_t *m, gpo_auto_t *a,
                const void *buf, struct ompi_communicator_t *comm, int *rc);

#endif
