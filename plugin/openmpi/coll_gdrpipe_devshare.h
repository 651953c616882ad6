/* What the GPU paths of the collectives share (coll_gdrpipe_devreduce.c,
 * coll_gdrpipe_devmove.c): exporting a rank's buffers, agreeing across the
 * communicator, and when to start agreeing (coll_gdrpipe_devshare.c). */
#ifndef GDRPIPE_COLL_GDRPIPE_DEVSHARE_H
#define GDRPIPE_COLL_GDRPIPE_DEVSHARE_H

#include "coll_gdrpipe.h"
#include "gdrpipe/companion.h"

/* Exports [buf, buf + bytes) for the first process of its GPU to map:
 * buf must be device memory of one GPU (the first buffer of a call sets
 * *dev (-1 before) and waits for that device's legacy stream, so the
 * application's queued work on it is done; later ones must be on *dev) that
 * other processes can map. 0, or -1 (said at verbosity 2, `what` naming the
 * path): the rank cannot take part. */
int gpo_dev_share(const gp_companion_t *c, const void *buf, size_t bytes, int *dev,
                  gp_rkey_t *key, const char *what);

/* max of `v` over the communicator, through the next module's allreduce */
int gpo_agree_max(mca_coll_gdrpipe_module_t *m, struct ompi_communicator_t *comm, int v,
                  int *out);

/* Setting 2 of device_reduce and device_moves_gpu: whether the
 * communicator's qualifying calls agree on the GPU path now (state a, buf
 * this rank's buffer of the call). *rc: an error of the agreement. */
int gpo_auto_on(const gp_companion_t *c, mca_coll_gdrpipe_module_t *m, gpo_auto_t *a,
                const void *buf, struct ompi_communicator_t *comm, int *rc);

#endif
