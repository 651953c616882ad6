/* Data-moving collectives of device buffers on the GPU
 * (coll_gdrpipe_devmove.h), MPI_Allgather and MPI_Alltoall: every process
 * of the communicator exports its send and receive buffers, and the first
 * process of each GPU imports every rank's send buffer and the receive
 * buffers of its GPU's ranks (CUDA IPC / VMM handles, through the plugin's
 * import cache) and copies all their blocks in batched launches of the copy
 * kernel. Nothing passes through host memory, no point-to-point message
 * carries data, and with several processes on one GPU only one of them
 * works on it (the others' contexts do not take the GPU in turn).
 *
 * A call qualifies by what every rank sees alike (intracommunicator of at
 * most GP_REDUCE_MAX_BUFS ranks, all on this host; not in place; blocks of
 * more than 0 bytes). Then:
 *  1. each rank waits for its device's legacy stream (the application's
 *     queued work on its buffers) and exports its two buffers, if both are
 *     device memory of one GPU that other processes can map and its
 *     datatypes lay the blocks out without gaps;
 *  2. allgather of one record per rank (the next module's, host memory);
 *  3. if any rank cannot take part, every rank returns "not taken" and the
 *     caller stages or hands the call on as before; else each GPU's first
 *     rank moves the blocks whose destination is on its GPU;
 *  4. allreduce (max) of the launchers' status: no rank returns before its
 *     buffers are written, and a failure anywhere makes every rank redo the
 *     call the other way (moving blocks again is harmless) and the
 *     communicator's later calls too. */
#include "coll_gdrpipe_devmove.h"
#include "coll_gdrpipe_devshare.h"
#include "coll_gdrpipe_params.h"

#include "gpo_dev.h"

#include <stdint.h>
#include <string.h>

typedef struct gpo_mv_rec {
    int32_t ok;       /* 1: takes part */
    int32_t reserved;
    uint8_t uuid[16]; /* its GPU */
    uint64_t start;   /* the process's start time (gp_dev_import) */
    uint64_t saddr, raddr;
    gp_rkey_t skey, rkey;
} gpo_mv_rec_t;

/* n elements of dt lie in [0, bytes) of the buffer without gaps */
static int dense_from_zero(struct ompi_datatype_t *dt, gpo_count_t n, size_t bytes)
{
    const gpo_span_t s = gpo_span(dt, n);
    return gpo_dense(dt, n) && (s.lo == 0) && ((size_t)(s.hi - s.lo) == bytes);
}

/* whether this rank's buffers can take part; fills its record */
static int local_part(const gp_companion_t *c, const void *sbuf, size_t sbytes, int sdense,
                      void *rbuf, size_t rbytes, int rdense, gpo_mv_rec_t *rec)
{
    char err[256];
    int dev;
    memset(rec, 0, sizeof(*rec));
    if ((c == NULL) || (c->version < 4) || !sdense || !rdense || ((size_t)sbuf < 4096) ||
        ((size_t)rbuf < 4096)) {
        return 0;
    }
    dev = c->device_of(sbuf);
    if ((dev < 0) || (c->device_of(rbuf) != dev) || (c->sync_device(dev) != 0)) {
        return 0;
    }
    if ((c->dev_export(sbuf, sbytes, &rec->skey, err, sizeof(err)) != 0) ||
        (c->dev_export(rbuf, rbytes, &rec->rkey, err, sizeof(err)) != 0)) {
        if (gpo_coll_params.verbose > 1) {
            opal_output(0, "coll gdrpipe: device move: buffers not exported: %s", err);
        }
        return 0;
    }
    rec->start = c->self_start_time();
    rec->saddr = (uint64_t)(uintptr_t)sbuf;
    rec->raddr = (uint64_t)(uintptr_t)rbuf;
    memcpy(rec->uuid, rec->skey.dev_uuid, sizeof(rec->uuid));
    rec->ok = 1;
    return 1;
}

/* The launcher's part: import every rank's send buffer and the receive
 * buffers of the ranks on its GPU into its context, then copy the blocks
 * (alltoall: block q of rank r's send buffer to block r of rank q's receive
 * buffer; allgather: rank r's send buffer to block r of every receive
 * buffer). 0, or -1 with err filled. */
static int launch(const gp_companion_t *c, const gpo_mv_rec_t *all, int n, int me, int dev,
                  int all2all, size_t block, char *err, size_t errlen)
{
    gp_copy_desc_t desc[GP_REDUCE_MAX_BUFS * GP_REDUCE_MAX_BUFS];
    void *holds[2 * GP_REDUCE_MAX_BUFS], *src[GP_REDUCE_MAX_BUFS];
    const size_t sbytes = all2all ? block * (size_t)n : block, rbytes = block * (size_t)n;
    int nholds = 0, rc = 0;
    size_t nd = 0;
    const uint8_t *mine = all[me].uuid; /* this GPU */
    for (int r = 0; (r < n) && (rc == 0); ++r) {
        rc = c->dev_import(&all[r].skey, all[r].start, all[r].saddr, sbytes, dev, &src[r],
                           &holds[nholds++], err, errlen);
    }
    for (int q = 0; (q < n) && (rc == 0); ++q) {
        void *dst = NULL;
        if (memcmp(all[q].uuid, mine, 16) != 0) {
            continue;
        }
        rc = c->dev_import(&all[q].rkey, all[q].start, all[q].raddr, rbytes, dev, &dst,
                           &holds[nholds++], err, errlen);
        for (int r = 0; (r < n) && (rc == 0); ++r) {
            desc[nd].dst = (unsigned long long)(uintptr_t)dst + (unsigned long long)r * block;
            desc[nd].src = (unsigned long long)(uintptr_t)src[r] +
                           (all2all ? (unsigned long long)q * block : 0);
            desc[nd].len = block;
            ++nd;
        }
    }
    if (rc == 0) {
        rc = c->copy_many(dev, desc, nd, err, errlen);
    }
    for (int i = 0; i < nholds; ++i) {
        if (holds[i] != NULL) {
            c->dev_release(holds[i]);
        }
    }
    return rc != 0 ? -1 : 0;
}

static int devmove(int all2all, const void *sbuf, gpo_count_t scount,
                   struct ompi_datatype_t *sdt, void *rbuf, gpo_count_t rcount,
                   struct ompi_datatype_t *rdt, struct ompi_communicator_t *comm,
                   mca_coll_gdrpipe_module_t *m, int *rc)
{
    const gp_companion_t *c = gpo_dev();
    const int n = ompi_comm_size(comm), me = ompi_comm_rank(comm);
    size_t rsize = 0;
    gpo_mv_rec_t mine, all[GP_REDUCE_MAX_BUFS];
    char err[256] = "";
    int status = 0, worst = 0, ok = 1;

    /* what every rank sees alike: the communicator, in place or not, the
     * block's size (the type signatures match) */
    ompi_datatype_type_size(rdt, &rsize);
    const size_t block = rsize * (size_t)rcount;
    if ((gpo_coll_params.device_moves_gpu <= 0) || !m->all_local || m->mv_failed ||
        (sbuf == MPI_IN_PLACE) || (block == 0) || (n > GP_REDUCE_MAX_BUFS) ||
        (m->next.coll_allgather == NULL) || (m->next.coll_allreduce == NULL)) {
        return 1;
    }
    if ((gpo_coll_params.device_moves_gpu >= 2) &&
        !gpo_auto_on(c, m, &m->mv_auto, sbuf, comm, rc)) {
        return *rc == OMPI_SUCCESS ? 1 : 0;
    }
    const size_t sbytes = all2all ? block * (size_t)n : block, rbytes = block * (size_t)n;
    (void)local_part(c, sbuf, sbytes, dense_from_zero(sdt, all2all ? scount * n : scount, sbytes),
                     rbuf, rbytes, dense_from_zero(rdt, rcount * n, rbytes), &mine);
    *rc = m->next.coll_allgather(&mine, sizeof(mine), MPI_BYTE, all, sizeof(mine), MPI_BYTE,
                                 comm, m->next.coll_allgather_module);
    if (*rc != OMPI_SUCCESS) {
        return 0;
    }
    for (int r = 0; r < n; ++r) {
        ok &= all[r].ok == 1;
    }
    if (!ok) {
        m->mv_other++;
        return 1;
    }
    /* this rank launches when it is the first of its GPU */
    int first = 1;
    for (int q = 0; (q < me) && first; ++q) {
        first = memcmp(all[q].uuid, all[me].uuid, 16) != 0;
    }
    if (first) {
        status = launch(c, all, n, me, c->device_of(sbuf), all2all, block, err, sizeof(err));
    }
    *rc = gpo_agree_max(m, comm, status != 0, &worst);
    if (*rc != OMPI_SUCCESS) {
        return 0;
    }
    if (worst != 0) {
        if (!m->mv_failed && first && (err[0] != '\0')) {
            opal_output(0, "coll gdrpipe: device move failed (%s): this communicator's "
                        "data-moving collectives go the other way from now on", err);
        }
        m->mv_failed = 1;
        m->mv_other++;
        return 1;
    }
    m->mv_gpu++;
    return 0;
}

int gpo_devmove_allgather(const void *sbuf, gpo_count_t scount, struct ompi_datatype_t *sdt,
                          void *rbuf, gpo_count_t rcount, struct ompi_datatype_t *rdt,
                          struct ompi_communicator_t *comm, mca_coll_gdrpipe_module_t *m,
                          int *rc)
{
    return devmove(0, sbuf, scount, sdt, rbuf, rcount, rdt, comm, m, rc);
}

int gpo_devmove_alltoall(const void *sbuf, gpo_count_t scount, struct ompi_datatype_t *sdt,
                         void *rbuf, gpo_count_t rcount, struct ompi_datatype_t *rdt,
                         struct ompi_communicator_t *comm, mca_coll_gdrpipe_module_t *m,
                         int *rc)
{
    return devmove(1, sbuf, scount, sdt, rbuf, rcount, rdt, comm, m, rc);
}
