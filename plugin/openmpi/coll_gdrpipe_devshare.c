/* What the GPU paths of the collectives share (coll_gdrpipe_devshare.h). */
#include "coll_gdrpipe_devshare.h"
#include "coll_gdrpipe_params.h"

int gpo_dev_share(const gp_companion_t *c, const void *buf, size_t bytes, int *dev,
                  gp_rkey_t *key, const char *what)
{
    char err[256];
    if ((size_t)buf < 4096) {
        return -1;
    }
    const int d = c->device_of(buf);
    if ((d < 0) || ((*dev >= 0) && (d != *dev))) {
        return -1;
    }
    if ((*dev < 0) && (c->sync_device(d) != 0)) {
        return -1;
    }
    *dev = d;
    if (c->dev_export(buf, bytes, key, err, sizeof(err)) != 0) {
        if (gpo_coll_params.verbose > 1) {
            opal_output(0, "coll gdrpipe: %s: buffer not exported: %s", what, err);
        }
        return -1;
    }
    return 0;
}

int gpo_agree_max(mca_coll_gdrpipe_module_t *m, struct ompi_communicator_t *comm, int v,
                  int *out)
{
    *out = 0;
    return m->next.coll_allreduce(&v, out, 1, MPI_INT, MPI_MAX, comm,
                                  m->next.coll_allreduce_module);
}

/* Every rank counts the same qualifying calls (collectives are ordered per
 * communicator), so all check at the same ones: the 1st, 2nd, 4th, ...
 * 64th, then every 64th, with an allreduce (max) of whether their buffers
 * were on the device in a qualifying call since the last check. Once one
 * was, the communicator agrees on every qualifying call from then on (a
 * communicator that alternates long runs of host and device calls would
 * otherwise stage the first calls of each device run). Communicators whose
 * calls are all on host buffers pay one integer allreduce per 64 calls
 * instead of an allgather per call. */
int gpo_auto_on(const gp_companion_t *c, mca_coll_gdrpipe_module_t *m, gpo_auto_t *a,
                const void *buf, struct ompi_communicator_t *comm, int *rc)
{
    *rc = OMPI_SUCCESS;
    if (a->on) {
        return 1;
    }
    const unsigned long k = ++a->calls;
    if ((c != NULL) && ((size_t)buf >= 4096) && (c->device_of(buf) >= 0)) {
        a->dev_seen = 1;
    }
    if ((k <= 64) ? ((k & (k - 1)) == 0) : (k % 64 == 0)) {
        int any = 0;
        *rc = gpo_agree_max(m, comm, a->dev_seen, &any);
        if (*rc != OMPI_SUCCESS) {
            return 0;
        }
        a->on = any;
        a->dev_seen = 0;
    }
    return a->on;
}
