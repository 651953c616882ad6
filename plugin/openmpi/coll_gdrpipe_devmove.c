/* Data-moving collectives of device buffers on the GPU
 * (coll_gdrpipe_devmove.h): MPI_Allgather(v), MPI_Alltoall(v),
 * MPI_Gather(v) and MPI_Scatter(v), blocking. Every process of the
 * communicator exports the part of its send and receive buffers the call
 * touches, and the first process of each GPU imports the send buffers of the
 * ranks that send to its GPU and the receive buffers of its GPU's ranks
 * (CUDA IPC / VMM handles, through the plugin's import cache) and copies all
 * their blocks in batched launches of the copy kernel. Nothing passes
 * through host memory, no point-to-point message carries data, and with
 * several processes on one GPU only one of them works on it (the others'
 * contexts do not take the GPU in turn).
 *
 * Each entry point describes this rank's part as blocks: for every peer, the
 * bytes it sends it (where in the send buffer) and the bytes it receives
 * from it (where in the receive buffer). A call qualifies by what every rank
 * sees alike (intracommunicator of at most GP_REDUCE_MAX_BUFS ranks, all on
 * this host; alltoall(v) not in place). Then:
 *  1. each rank waits for its device's legacy stream (the application's
 *     queued work on its buffers) and exports its buffers, if they are device
 *     memory of one GPU that other processes can map and its datatypes lay
 *     each block out without gaps (a rank with no blocks takes part without
 *     buffers);
 *  2. allgather of one record per rank (the next module's, host memory);
 *  3. if any rank cannot take part, or a sender's and a receiver's block
 *     sizes differ (an erroneous program: Open MPI reports it), every rank
 *     returns "not taken"; else each GPU's first rank moves the blocks whose
 *     destination is on its GPU;
 *  4. allreduce (max) of the launchers' status: no rank returns before its
 *     buffers are written, and a failure anywhere makes every rank redo the
 *     call the other way (moving blocks again is harmless: no buffer is both
 *     read and written) and the communicator's later calls too. */
#include "coll_gdrpipe_devmove.h"
#include "coll_gdrpipe_mvpart.h"
#include "coll_gdrpipe_devshare.h"
#include "coll_gdrpipe_params.h"

#include "gpo_dev.h"

#include <stdint.h>
#include <string.h>

/* count elements of dt lie in [0, count * size) without gaps, so a block
 * of them displaced by d extents starts d extents into the buffer */
static size_t size_of(struct ompi_datatype_t *dt)
{
    size_t size = 0;
    ompi_datatype_type_size(dt, &size);
    return size;
}

static int block_ok(struct ompi_datatype_t *dt, gpo_count_t count)
{
    if (count <= 0) {
        return 1;
    }
    const gpo_span_t s = gpo_span(dt, count);
    return gpo_dense(dt, count) && (s.lo == 0) && ((size_t)s.hi == size_of(dt) * (size_t)count);
}

static ptrdiff_t extent_of(struct ompi_datatype_t *dt)
{
    ptrdiff_t lb = 0, extent = 0;
    ompi_datatype_get_extent(dt, &lb, &extent);
    return extent;
}

/* the range [lo, hi) of one side's blocks; 0 when there are none */
static int range(const ptrdiff_t *disp, const uint64_t *len, int n, ptrdiff_t *lo,
                 ptrdiff_t *hi)
{
    int any = 0;
    for (int q = 0; q < n; ++q) {
        if (len[q] == 0) {
            continue;
        }
        const ptrdiff_t end = disp[q] + (ptrdiff_t)len[q];
        *lo = (!any || disp[q] < *lo) ? disp[q] : *lo;
        *hi = (!any || end > *hi) ? end : *hi;
        any = 1;
    }
    return any;
}

/* export one side's range into rec; 0, or -1: this rank cannot take part */
static int share_side(const gp_companion_t *c, const char *buf, const ptrdiff_t *disp,
                      const uint64_t *len, int n, int *dev, uint64_t *addr, uint64_t *span,
                      uint64_t *off, gp_rkey_t *key)
{
    ptrdiff_t lo = 0, hi = 0;
    if ((buf == NULL) || !range(disp, len, n, &lo, &hi)) {
        return 1; /* nothing on this side */
    }
    if (gpo_dev_share(c, buf + lo, (size_t)(hi - lo), dev, key, "device move") != 0) {
        return -1;
    }
    *addr = (uint64_t)(uintptr_t)(buf + lo);
    *span = (uint64_t)(hi - lo);
    for (int q = 0; q < n; ++q) {
        off[q] = len[q] != 0 ? (uint64_t)(disp[q] - lo) : 0;
    }
    return 0;
}

void gpo_mv_local_part(const gp_companion_t *c, const gpo_mv_part_t *p, int n,
                       gpo_mv_rec_t *rec, int *dev)
{
    int s, r;
    memset(rec, 0, sizeof(*rec));
    *dev = -1;
    if ((c == NULL) || (c->version < 4) || !p->sdense || !p->rdense) {
        return;
    }
    memcpy(rec->slen, p->slen, sizeof(rec->slen));
    memcpy(rec->rlen, p->rlen, sizeof(rec->rlen));
    s = share_side(c, p->sbuf, p->sdisp, p->slen, n, dev, &rec->saddr, &rec->sspan, rec->soff,
                   &rec->skey);
    r = (s < 0) ? -1
                : share_side(c, p->rbuf, p->rdisp, p->rlen, n, dev, &rec->raddr, &rec->rspan,
                             rec->roff, &rec->rkey);
    if ((s < 0) || (r < 0)) {
        return;
    }
    rec->bufs = (s == 0 ? MV_SEND : 0) | (r == 0 ? MV_RECV : 0);
    if (rec->bufs != 0) {
        memcpy(rec->uuid, (s == 0) ? rec->skey.dev_uuid : rec->rkey.dev_uuid, sizeof(rec->uuid));
        rec->start = c->self_start_time();
    }
    rec->ok = 1;
}

int gpo_mv_all_agree(const gpo_mv_rec_t *all, int n)
{
    for (int r = 0; r < n; ++r) {
        if (all[r].ok != 1) {
            return 0;
        }
        for (int q = 0; q < n; ++q) {
            if ((all[r].slen[q] != all[q].rlen[r]) ||
                ((all[r].slen[q] != 0) && !(all[r].bufs & MV_SEND)) ||
                ((all[q].rlen[r] != 0) && !(all[q].bufs & MV_RECV))) {
                return 0;
            }
        }
    }
    return 1;
}

/* The receive ranges of the launcher's GPU's ranks and the send ranges of
 * the ranks that send to them, imported into its context; block of rank r
 * for rank q: r's send range at soff[q] to q's receive range at roff[r]. */
int gpo_mv_launch(const gp_companion_t *c, const gpo_mv_rec_t *all, int n, int me, int dev,
                  char *err, size_t errlen)
{
    gp_copy_desc_t desc[MV_MAX * MV_MAX];
    void *holds[2 * MV_MAX], *src[MV_MAX] = {NULL};
    int nholds = 0, rc = 0;
    size_t nd = 0;
    for (int q = 0; (q < n) && (rc == 0); ++q) {
        void *dst = NULL;
        if (!(all[q].bufs & MV_RECV) || (memcmp(all[q].uuid, all[me].uuid, 16) != 0)) {
            continue;
        }
        rc = c->dev_import(&all[q].rkey, all[q].start, all[q].raddr, all[q].rspan, dev, &dst,
                           &holds[nholds++], err, errlen);
        for (int r = 0; (r < n) && (rc == 0); ++r) {
            if (all[q].rlen[r] == 0) {
                continue;
            }
            if (src[r] == NULL) {
                rc = c->dev_import(&all[r].skey, all[r].start, all[r].saddr, all[r].sspan, dev,
                                   &src[r], &holds[nholds++], err, errlen);
                if (rc != 0) {
                    break;
                }
            }
            desc[nd].dst = (unsigned long long)(uintptr_t)dst + all[q].roff[r];
            desc[nd].src = (unsigned long long)(uintptr_t)src[r] + all[r].soff[q];
            desc[nd].len = all[q].rlen[r];
            ++nd;
        }
    }
    if ((rc == 0) && (nd > 0)) {
        rc = c->copy_many(dev, desc, nd, err, errlen);
    }
    for (int i = 0; i < nholds; ++i) {
        if (holds[i] != NULL) {
            c->dev_release(holds[i]);
        }
    }
    return rc != 0 ? -1 : 0;
}


int gpo_mv_first_of_gpu(const gpo_mv_rec_t *all, int me)
{
    int first = all[me].bufs != 0;
    for (int q = 0; (q < me) && first; ++q) {
        first = !(all[q].bufs != 0 && memcmp(all[q].uuid, all[me].uuid, 16) == 0);
    }
    return first;
}

/* what every rank sees alike about the communicator */
static int may_move(struct ompi_communicator_t *comm, mca_coll_gdrpipe_module_t *m)
{
    return (gpo_coll_params.device_moves_gpu > 0) && m->all_local && !m->mv_failed &&
           (ompi_comm_size(comm) <= MV_MAX) && (m->next.coll_allgather != NULL) &&
           (m->next.coll_allreduce != NULL);
}

static int devmove_blocking(const gpo_mv_part_t *p, struct ompi_communicator_t *comm,
                            mca_coll_gdrpipe_module_t *m, int *rc)
{
    const gp_companion_t *c = gpo_dev();
    const int n = ompi_comm_size(comm), me = ompi_comm_rank(comm);
    gpo_mv_rec_t mine, all[MV_MAX];
    char err[256] = "";
    int status = 0, worst = 0, dev = -1;

    if ((gpo_coll_params.device_moves_gpu >= 2) &&
        !gpo_auto_on(c, m, &m->mv_auto, (p->sbuf != NULL) ? p->sbuf : p->rbuf, comm, rc)) {
        return *rc == OMPI_SUCCESS ? 1 : 0;
    }
    gpo_mv_local_part(c, p, n, &mine, &dev);
    *rc = m->next.coll_allgather(&mine, sizeof(mine), MPI_BYTE, all, sizeof(mine), MPI_BYTE,
                                 comm, m->next.coll_allgather_module);
    if (*rc != OMPI_SUCCESS) {
        return 0;
    }
    if (!gpo_mv_all_agree(all, n)) {
        m->mv_other++;
        return 1;
    }
    const int first = gpo_mv_first_of_gpu(all, me);
    if (first) {
        status = gpo_mv_launch(c, all, n, me, dev, err, sizeof(err));
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

/* Blocking: agreed in the call (1: not taken). Nonblocking and persistent:
 * every qualifying call is taken; its request agrees and moves the blocks
 * from progress, by point-to-point where the GPU path is not agreed. */
static int devmove(const gpo_mv_part_t *p, struct ompi_communicator_t *comm,
                   mca_coll_gdrpipe_module_t *m, const gpo_mv_how_t *how, int *rc)
{
    if (how == NULL) {
        return devmove_blocking(p, comm, m, rc);
    }
    *rc = gpo_idevmove_start(p, comm, m, how);
    return 0;
}

/* one block of count elements of dt for/from every rank, block i at
 * i * stride extents (stride 0: the same block for all); whether they lie
 * without gaps */
static int uniform(ptrdiff_t *disp, uint64_t *len, gpo_count_t *cnt, int n,
                   struct ompi_datatype_t *dt, gpo_count_t count, gpo_count_t stride)
{
    const ptrdiff_t ext = extent_of(dt);
    const uint64_t bytes = count > 0 ? (uint64_t)size_of(dt) * (uint64_t)count : 0;
    for (int i = 0; i < n; ++i) {
        disp[i] = (ptrdiff_t)i * (ptrdiff_t)stride * ext;
        len[i] = bytes;
        cnt[i] = bytes != 0 ? count : 0;
    }
    return block_ok(dt, count);
}

/* the blocks of a v form: counts[i] elements at displs[i] extents */
static int varied(ptrdiff_t *disp, uint64_t *len, gpo_count_t *cnt, int n,
                  struct ompi_datatype_t *dt, gpo_counts_t counts, gpo_displs_t displs)
{
    const ptrdiff_t ext = extent_of(dt);
    const uint64_t size = size_of(dt);
    gpo_count_t max = 0;
    for (int i = 0; i < n; ++i) {
        const gpo_count_t k = GPO_COUNT_AT(counts, i);
        disp[i] = GPO_DISP_AT(displs, i) * ext;
        len[i] = (k > 0) && (size > 0) ? size * (uint64_t)k : 0;
        cnt[i] = len[i] != 0 ? k : 0;
        max = k > max ? k : max;
    }
    return block_ok(dt, max);
}

/* In place (allgather(v)): a rank's own block is already in its receive
 * buffer, where the others read it; its send range is that block. No
 * buffer is both read and written in one region: rank q's block r is
 * written from rank r's block r, and q's own block is only read. */
static void own_block_in_place(gpo_mv_part_t *p, void *rbuf, int n, int me)
{
    p->sbuf = rbuf;
    p->sdt = p->rdt;
    p->sdense = p->rdense;
    for (int q = 0; q < n; ++q) {
        p->sdisp[q] = p->rdisp[me];
        p->slen[q] = q == me ? 0 : p->rlen[me];
        p->scnt[q] = q == me ? 0 : p->rcnt[me];
    }
    p->rlen[me] = 0;
    p->rcnt[me] = 0;
}

int gpo_devmove_allgather(const void *sbuf, gpo_count_t scount, struct ompi_datatype_t *sdt,
                          void *rbuf, gpo_count_t rcount, struct ompi_datatype_t *rdt,
                          struct ompi_communicator_t *comm, mca_coll_gdrpipe_module_t *m,
                          const gpo_mv_how_t *how, int *rc)
{
    const int n = ompi_comm_size(comm), in_place = sbuf == MPI_IN_PLACE;
    gpo_mv_part_t p = {.sbuf = sbuf, .rbuf = rbuf, .sdt = sdt, .rdt = rdt};
    if (!may_move(comm, m) || (rcount <= 0) || (size_of(rdt) == 0)) {
        return 1;
    }
    p.rdense = uniform(p.rdisp, p.rlen, p.rcnt, n, rdt, rcount, rcount);
    if (in_place) {
        own_block_in_place(&p, rbuf, n, ompi_comm_rank(comm));
    } else {
        p.sdense = uniform(p.sdisp, p.slen, p.scnt, n, sdt, scount, 0);
    }
    return devmove(&p, comm, m, how, rc);
}

int gpo_devmove_alltoall(const void *sbuf, gpo_count_t scount, struct ompi_datatype_t *sdt,
                         void *rbuf, gpo_count_t rcount, struct ompi_datatype_t *rdt,
                         struct ompi_communicator_t *comm, mca_coll_gdrpipe_module_t *m,
                         const gpo_mv_how_t *how, int *rc)
{
    const int n = ompi_comm_size(comm);
    gpo_mv_part_t p = {.sbuf = sbuf, .rbuf = rbuf, .sdt = sdt, .rdt = rdt};
    if (!may_move(comm, m) || (sbuf == MPI_IN_PLACE) || (rcount <= 0) || (size_of(rdt) == 0)) {
        return 1;
    }
    p.sdense = uniform(p.sdisp, p.slen, p.scnt, n, sdt, scount, scount);
    p.rdense = uniform(p.rdisp, p.rlen, p.rcnt, n, rdt, rcount, rcount);
    return devmove(&p, comm, m, how, rc);
}

int gpo_devmove_allgatherv(const void *sbuf, gpo_count_t scount, struct ompi_datatype_t *sdt,
                           void *rbuf, gpo_counts_t rcounts, gpo_displs_t displs,
                           struct ompi_datatype_t *rdt, struct ompi_communicator_t *comm,
                           mca_coll_gdrpipe_module_t *m, const gpo_mv_how_t *how, int *rc)
{
    const int n = ompi_comm_size(comm), in_place = sbuf == MPI_IN_PLACE;
    gpo_mv_part_t p = {.sbuf = sbuf, .rbuf = rbuf, .sdt = sdt, .rdt = rdt};
    if (!may_move(comm, m)) {
        return 1;
    }
    p.rdense = varied(p.rdisp, p.rlen, p.rcnt, n, rdt, rcounts, displs);
    if (in_place) {
        own_block_in_place(&p, rbuf, n, ompi_comm_rank(comm));
    } else {
        p.sdense = uniform(p.sdisp, p.slen, p.scnt, n, sdt, scount, 0);
    }
    return devmove(&p, comm, m, how, rc);
}

int gpo_devmove_alltoallv(const void *sbuf, gpo_counts_t scounts, gpo_displs_t sdispls,
                          struct ompi_datatype_t *sdt, void *rbuf, gpo_counts_t rcounts,
                          gpo_displs_t rdispls, struct ompi_datatype_t *rdt,
                          struct ompi_communicator_t *comm, mca_coll_gdrpipe_module_t *m,
                          const gpo_mv_how_t *how, int *rc)
{
    const int n = ompi_comm_size(comm);
    gpo_mv_part_t p = {.sbuf = sbuf, .rbuf = rbuf, .sdt = sdt, .rdt = rdt};
    if (!may_move(comm, m) || (sbuf == MPI_IN_PLACE)) {
        return 1;
    }
    p.sdense = varied(p.sdisp, p.slen, p.scnt, n, sdt, scounts, sdispls);
    p.rdense = varied(p.rdisp, p.rlen, p.rcnt, n, rdt, rcounts, rdispls);
    return devmove(&p, comm, m, how, rc);
}

/* the one block a rank sends to (gather) or receives from (scatter) the
 * root; whether it lies without gaps */
static int to_root(ptrdiff_t *disp, uint64_t *len, gpo_count_t *cnt, int root,
                   struct ompi_datatype_t *dt, gpo_count_t count)
{
    disp[root] = 0;
    len[root] = count > 0 ? (uint64_t)size_of(dt) * (uint64_t)count : 0;
    cnt[root] = len[root] != 0 ? count : 0;
    return block_ok(dt, count);
}

/* The root's blocks of a gather (what it receives) or scatter (what it
 * sends): counts[i] elements at displs[i] extents (counts NULL: count each,
 * one after another), none for itself in place; whether they lie without
 * gaps */
static int root_blocks(ptrdiff_t *disp, uint64_t *len, gpo_count_t *cnt, int n, int root,
                       int in_place, struct ompi_datatype_t *dt, gpo_count_t count,
                       const gpo_counts_t *counts, const gpo_displs_t *displs)
{
    const int dense = counts != NULL ? varied(disp, len, cnt, n, dt, *counts, *displs)
                                     : uniform(disp, len, cnt, n, dt, count, count);
    if (in_place) {
        len[root] = 0; /* its own block stays where it is */
        cnt[root] = 0;
    }
    return dense;
}

int gpo_devmove_gather(const void *sbuf, gpo_count_t scount, struct ompi_datatype_t *sdt,
                       void *rbuf, gpo_count_t rcount, const gpo_counts_t *rcounts,
                       const gpo_displs_t *displs, struct ompi_datatype_t *rdt, int root,
                       struct ompi_communicator_t *comm, mca_coll_gdrpipe_module_t *m,
                       const gpo_mv_how_t *how, int *rc)
{
    const int n = ompi_comm_size(comm), me = ompi_comm_rank(comm);
    gpo_mv_part_t p = {.sbuf = (sbuf == MPI_IN_PLACE) ? NULL : sbuf, .rbuf = NULL,
                       .sdt = sdt, .rdt = rdt, .sdense = 1, .rdense = 1};
    if (!may_move(comm, m) || (root < 0) || (root >= n)) {
        return 1;
    }
    /* MPI_Gather's block (the same bytes on every rank) */
    if ((rcounts == NULL) && ((me == root ? size_of(rdt) * (size_t)(rcount > 0 ? rcount : 0)
                                          : size_of(sdt) * (size_t)(scount > 0 ? scount : 0)) <
                              gpo_coll_params.device_moves_gpu_min_gather)) {
        return 1;
    }
    if (p.sbuf != NULL) {
        p.sdense = to_root(p.sdisp, p.slen, p.scnt, root, sdt, scount);
    }
    if (me == root) {
        p.rbuf = rbuf;
        p.rdense = root_blocks(p.rdisp, p.rlen, p.rcnt, n, root, p.sbuf == NULL, rdt, rcount,
                               rcounts, displs);
    }
    return devmove(&p, comm, m, how, rc);
}

int gpo_devmove_scatter(const void *sbuf, gpo_count_t scount, const gpo_counts_t *scounts,
                        const gpo_displs_t *displs, struct ompi_datatype_t *sdt, void *rbuf,
                        gpo_count_t rcount, struct ompi_datatype_t *rdt, int root,
                        struct ompi_communicator_t *comm, mca_coll_gdrpipe_module_t *m,
                        const gpo_mv_how_t *how, int *rc)
{
    const int n = ompi_comm_size(comm), me = ompi_comm_rank(comm);
    gpo_mv_part_t p = {.sbuf = NULL, .rbuf = (rbuf == MPI_IN_PLACE) ? NULL : rbuf,
                       .sdt = sdt, .rdt = rdt, .sdense = 1, .rdense = 1};
    if (!may_move(comm, m) || (root < 0) || (root >= n)) {
        return 1;
    }
    if (p.rbuf != NULL) {
        p.rdense = to_root(p.rdisp, p.rlen, p.rcnt, root, rdt, rcount);
    }
    if (me == root) {
        p.sbuf = sbuf;
        p.sdense = root_blocks(p.sdisp, p.slen, p.scnt, n, root, p.rbuf == NULL, sdt, scount,
                               scounts, displs);
    }
    return devmove(&p, comm, m, how, rc);
}
