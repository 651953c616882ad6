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
#include "coll_gdrpipe_devshare.h"
#include "coll_gdrpipe_params.h"

#include "gpo_dev.h"

#include <stdint.h>
#include <string.h>

#define MV_MAX GP_REDUCE_MAX_BUFS

enum { MV_SEND = 1, MV_RECV = 2 };

typedef struct gpo_mv_rec {
    int32_t ok;       /* 1: takes part */
    int32_t bufs;     /* MV_SEND, MV_RECV: which ranges it exported */
    uint8_t uuid[16]; /* its GPU (bufs != 0) */
    uint64_t start;   /* the process's start time (gp_dev_import) */
    uint64_t saddr, sspan, raddr, rspan; /* the exported ranges */
    uint64_t soff[MV_MAX], slen[MV_MAX]; /* to rank q: offset in the send range, bytes */
    uint64_t roff[MV_MAX], rlen[MV_MAX]; /* from rank r: offset in the receive range */
    gp_rkey_t skey, rkey;
} gpo_mv_rec_t;

/* this rank's part of a call, as an entry point describes it */
typedef struct gpo_mv_part {
    const void *sbuf; /* NULL: sends nothing (or in place) */
    void *rbuf;       /* NULL: receives nothing (or in place) */
    ptrdiff_t sdisp[MV_MAX], rdisp[MV_MAX]; /* bytes from sbuf / rbuf */
    uint64_t slen[MV_MAX], rlen[MV_MAX];
    int dense; /* every block lies without gaps */
} gpo_mv_part_t;

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

/* fills this rank's record; *dev: its GPU (-1: it has no buffers) */
static void local_part(const gp_companion_t *c, const gpo_mv_part_t *p, int n, gpo_mv_rec_t *rec,
                       int *dev)
{
    int s, r;
    memset(rec, 0, sizeof(*rec));
    *dev = -1;
    if ((c == NULL) || (c->version < 4) || !p->dense) {
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

/* every rank can take part and every block's sender and receiver agree on
 * its size */
static int all_agree(const gpo_mv_rec_t *all, int n)
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

/* The launcher's part: import the receive ranges of its GPU's ranks and the
 * send ranges of the ranks that send to them into its context, then copy
 * the blocks (block of rank r for rank q: r's send range at soff[q] to q's
 * receive range at roff[r]). 0, or -1 with err filled. */
static int launch(const gp_companion_t *c, const gpo_mv_rec_t *all, int n, int me, int dev,
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

/* what every rank sees alike about the communicator */
static int may_move(struct ompi_communicator_t *comm, mca_coll_gdrpipe_module_t *m)
{
    return (gpo_coll_params.device_moves_gpu > 0) && m->all_local && !m->mv_failed &&
           (ompi_comm_size(comm) <= MV_MAX) && (m->next.coll_allgather != NULL) &&
           (m->next.coll_allreduce != NULL);
}

static int devmove(const gpo_mv_part_t *p, struct ompi_communicator_t *comm,
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
    local_part(c, p, n, &mine, &dev);
    *rc = m->next.coll_allgather(&mine, sizeof(mine), MPI_BYTE, all, sizeof(mine), MPI_BYTE,
                                 comm, m->next.coll_allgather_module);
    if (*rc != OMPI_SUCCESS) {
        return 0;
    }
    if (!all_agree(all, n)) {
        m->mv_other++;
        return 1;
    }
    /* this rank launches when it is the first of its GPU */
    int first = all[me].bufs != 0;
    for (int q = 0; (q < me) && first; ++q) {
        first = !(all[q].bufs != 0 && memcmp(all[q].uuid, all[me].uuid, 16) == 0);
    }
    if (first) {
        status = launch(c, all, n, me, dev, err, sizeof(err));
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

/* one block of count elements of dt for/from every rank, block i at
 * i * stride extents (stride 0: the same block for all) */
static void uniform(ptrdiff_t *disp, uint64_t *len, int n, struct ompi_datatype_t *dt,
                    gpo_count_t count, gpo_count_t stride)
{
    const ptrdiff_t ext = extent_of(dt);
    const uint64_t bytes = (uint64_t)size_of(dt) * (uint64_t)count;
    for (int i = 0; i < n; ++i) {
        disp[i] = (ptrdiff_t)i * (ptrdiff_t)stride * ext;
        len[i] = bytes;
    }
}

/* the blocks of a v form: counts[i] elements at displs[i] extents; the
 * largest count into *max */
static void varied(ptrdiff_t *disp, uint64_t *len, int n, struct ompi_datatype_t *dt,
                   gpo_counts_t counts, gpo_displs_t displs, gpo_count_t *max)
{
    const ptrdiff_t ext = extent_of(dt);
    const uint64_t size = size_of(dt);
    *max = 0;
    for (int i = 0; i < n; ++i) {
        const gpo_count_t k = GPO_COUNT_AT(counts, i);
        disp[i] = GPO_DISP_AT(displs, i) * ext;
        len[i] = k > 0 ? size * (uint64_t)k : 0;
        *max = k > *max ? k : *max;
    }
}

/* In place (allgather(v)): a rank's own block is already in its receive
 * buffer, where the others read it; its send range is that block. No
 * buffer is both read and written in one region: rank q's block r is
 * written from rank r's block r, and q's own block is only read. */
static void own_block_in_place(gpo_mv_part_t *p, void *rbuf, int n, int me)
{
    p->sbuf = rbuf;
    for (int q = 0; q < n; ++q) {
        p->sdisp[q] = p->rdisp[me];
        p->slen[q] = q == me ? 0 : p->rlen[me];
    }
    p->rlen[me] = 0;
}

int gpo_devmove_allgather(const void *sbuf, gpo_count_t scount, struct ompi_datatype_t *sdt,
                          void *rbuf, gpo_count_t rcount, struct ompi_datatype_t *rdt,
                          struct ompi_communicator_t *comm, mca_coll_gdrpipe_module_t *m,
                          int *rc)
{
    const int n = ompi_comm_size(comm), in_place = sbuf == MPI_IN_PLACE;
    gpo_mv_part_t p = {.sbuf = sbuf, .rbuf = rbuf};
    if (!may_move(comm, m) || (rcount <= 0) || (size_of(rdt) == 0)) {
        return 1;
    }
    uniform(p.rdisp, p.rlen, n, rdt, rcount, rcount);
    if (in_place) {
        own_block_in_place(&p, rbuf, n, ompi_comm_rank(comm));
    } else {
        uniform(p.sdisp, p.slen, n, sdt, scount, 0);
    }
    p.dense = (in_place || block_ok(sdt, scount)) && block_ok(rdt, rcount);
    return devmove(&p, comm, m, rc);
}

int gpo_devmove_alltoall(const void *sbuf, gpo_count_t scount, struct ompi_datatype_t *sdt,
                         void *rbuf, gpo_count_t rcount, struct ompi_datatype_t *rdt,
                         struct ompi_communicator_t *comm, mca_coll_gdrpipe_module_t *m,
                         int *rc)
{
    const int n = ompi_comm_size(comm);
    gpo_mv_part_t p = {.sbuf = sbuf, .rbuf = rbuf};
    if (!may_move(comm, m) || (sbuf == MPI_IN_PLACE) || (rcount <= 0) || (size_of(rdt) == 0)) {
        return 1;
    }
    uniform(p.sdisp, p.slen, n, sdt, scount, scount);
    uniform(p.rdisp, p.rlen, n, rdt, rcount, rcount);
    p.dense = block_ok(sdt, scount) && block_ok(rdt, rcount);
    return devmove(&p, comm, m, rc);
}

int gpo_devmove_allgatherv(const void *sbuf, gpo_count_t scount, struct ompi_datatype_t *sdt,
                           void *rbuf, gpo_counts_t rcounts, gpo_displs_t displs,
                           struct ompi_datatype_t *rdt, struct ompi_communicator_t *comm,
                           mca_coll_gdrpipe_module_t *m, int *rc)
{
    const int n = ompi_comm_size(comm), in_place = sbuf == MPI_IN_PLACE;
    gpo_mv_part_t p = {.sbuf = sbuf, .rbuf = rbuf};
    gpo_count_t rmax;
    if (!may_move(comm, m)) {
        return 1;
    }
    varied(p.rdisp, p.rlen, n, rdt, rcounts, displs, &rmax);
    if (in_place) {
        own_block_in_place(&p, rbuf, n, ompi_comm_rank(comm));
    } else {
        uniform(p.sdisp, p.slen, n, sdt, scount, 0);
    }
    p.dense = (in_place || block_ok(sdt, scount)) && block_ok(rdt, rmax);
    return devmove(&p, comm, m, rc);
}

int gpo_devmove_alltoallv(const void *sbuf, gpo_counts_t scounts, gpo_displs_t sdispls,
                          struct ompi_datatype_t *sdt, void *rbuf, gpo_counts_t rcounts,
                          gpo_displs_t rdispls, struct ompi_datatype_t *rdt,
                          struct ompi_communicator_t *comm, mca_coll_gdrpipe_module_t *m,
                          int *rc)
{
    const int n = ompi_comm_size(comm);
    gpo_mv_part_t p = {.sbuf = sbuf, .rbuf = rbuf};
    gpo_count_t smax, rmax;
    if (!may_move(comm, m) || (sbuf == MPI_IN_PLACE)) {
        return 1;
    }
    varied(p.sdisp, p.slen, n, sdt, scounts, sdispls, &smax);
    varied(p.rdisp, p.rlen, n, rdt, rcounts, rdispls, &rmax);
    p.dense = block_ok(sdt, smax) && block_ok(rdt, rmax);
    return devmove(&p, comm, m, rc);
}

/* the one block a rank sends to (gather) or receives from (scatter) the
 * root */
static void to_root(ptrdiff_t *disp, uint64_t *len, int root, struct ompi_datatype_t *dt,
                    gpo_count_t count)
{
    disp[root] = 0;
    len[root] = count > 0 ? (uint64_t)size_of(dt) * (uint64_t)count : 0;
}

/* The root's blocks of a gather (what it receives) or scatter (what it
 * sends): counts[i] elements at displs[i] extents (counts NULL: count each,
 * one after another), none for itself in place; whether they lie without
 * gaps */
static int root_blocks(ptrdiff_t *disp, uint64_t *len, int n, int root, int in_place,
                       struct ompi_datatype_t *dt, gpo_count_t count, const gpo_counts_t *counts,
                       const gpo_displs_t *displs)
{
    gpo_count_t max = count;
    if (counts != NULL) {
        varied(disp, len, n, dt, *counts, *displs, &max);
    } else {
        uniform(disp, len, n, dt, count, count);
    }
    if (in_place) {
        len[root] = 0; /* its own block stays where it is */
    }
    return block_ok(dt, max);
}

int gpo_devmove_gather(const void *sbuf, gpo_count_t scount, struct ompi_datatype_t *sdt,
                       void *rbuf, gpo_count_t rcount, const gpo_counts_t *rcounts,
                       const gpo_displs_t *displs, struct ompi_datatype_t *rdt, int root,
                       struct ompi_communicator_t *comm, mca_coll_gdrpipe_module_t *m, int *rc)
{
    const int n = ompi_comm_size(comm), me = ompi_comm_rank(comm);
    gpo_mv_part_t p = {.sbuf = (sbuf == MPI_IN_PLACE) ? NULL : sbuf, .rbuf = NULL, .dense = 1};
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
        to_root(p.sdisp, p.slen, root, sdt, scount);
        p.dense = block_ok(sdt, scount);
    }
    if (me == root) {
        p.rbuf = rbuf;
        p.dense = root_blocks(p.rdisp, p.rlen, n, root, p.sbuf == NULL, rdt, rcount, rcounts,
                              displs) &&
                  p.dense;
    }
    return devmove(&p, comm, m, rc);
}

int gpo_devmove_scatter(const void *sbuf, gpo_count_t scount, const gpo_counts_t *scounts,
                        const gpo_displs_t *displs, struct ompi_datatype_t *sdt, void *rbuf,
                        gpo_count_t rcount, struct ompi_datatype_t *rdt, int root,
                        struct ompi_communicator_t *comm, mca_coll_gdrpipe_module_t *m, int *rc)
{
    const int n = ompi_comm_size(comm), me = ompi_comm_rank(comm);
    gpo_mv_part_t p = {.sbuf = NULL, .rbuf = (rbuf == MPI_IN_PLACE) ? NULL : rbuf, .dense = 1};
    if (!may_move(comm, m) || (root < 0) || (root >= n)) {
        return 1;
    }
    if (p.rbuf != NULL) {
        to_root(p.rdisp, p.rlen, root, rdt, rcount);
        p.dense = block_ok(rdt, rcount);
    }
    if (me == root) {
        p.sbuf = sbuf;
        p.dense = root_blocks(p.sdisp, p.slen, n, root, p.rbuf == NULL, sdt, scount, scounts,
                              displs) &&
                  p.dense;
    }
    return devmove(&p, comm, m, rc);
}
