/* Buffer roles and spans of each collective (see coll_gdrpipe_prep.h). */
#include "coll_gdrpipe_prep.h"

#include "coll_gdrpipe_params.h"
#include "gpo_dev.h"

#include "ompi/mca/topo/base/base.h"

enum { ROLE_NONE, ROLE_ROOT, ROLE_LEAF };

/* the part a process plays in a rooted collective */
static int role(gpo_comm_t *comm, int root)
{
    if (OMPI_COMM_IS_INTER(comm)) {
        return root == MPI_ROOT ? ROLE_ROOT : root == MPI_PROC_NULL ? ROLE_NONE : ROLE_LEAF;
    }
    return ompi_comm_rank(comm) == root ? ROLE_ROOT : ROLE_LEAF;
}

/* processes one sends to / receives from in the non-rooted collectives */
static int peers(gpo_comm_t *comm)
{
    return OMPI_COMM_IS_INTER(comm) ? ompi_comm_remote_size(comm) : ompi_comm_size(comm);
}

static int dev(const void *p)
{
    return p != MPI_IN_PLACE && gpo_is_device(p);
}

/* stages *p (a device buffer); 0, or an error after releasing everything */
/* collectives that only move data leave device buffers to the modules
 * below when Open MPI's own code moves them (coll_gdrpipe_params.h) */
__thread int gpo_prep_in_request;

/* Open MPI 5's datatype engine copies each contiguous piece of a device
 * buffer with an accelerator copy of its own: a datatype with gaps (a
 * vector of a million doubles: a million driver calls) is staged instead,
 * in one copy of its span. buf NULL: not significant on this rank; dt
 * NULL: several datatypes (the w forms). */
static int whole_pieces(const void *buf, gpo_dt_t *dt)
{
    return buf == NULL || buf == MPI_IN_PLACE || !gpo_is_device(buf) ||
           (dt != NULL && gpo_dense(dt, 2));
}

/* sbuf and rbuf: the buffers significant on this rank, NULL for the others;
 * block: the largest block in bytes this process sends or receives (one
 * peer's part), min: the size from which handing on measured faster than
 * staging (coll_gdrpipe_params.h) */
static int moves_direct_41(const void *sbuf, gpo_dt_t *sdt, const void *rbuf, gpo_dt_t *rdt,
                           int derived41, size_t block, size_t min)
{
    /* Open MPI 4.1's in-place forms pack through convertors */
    const int in_place = sbuf == MPI_IN_PLACE;
    return gpo_coll_params.device_moves != 0 && block >= min &&
           gpo_ompi_moves_device(in_place ? rdt : sdt, rdt, !gpo_prep_in_request,
                                 derived41 || in_place) &&
           whole_pieces(sbuf, sdt) && whole_pieces(rbuf, rdt);
}

static int moves_direct(const void *sbuf, gpo_dt_t *sdt, const void *rbuf, gpo_dt_t *rdt,
                        size_t block)
{
    return moves_direct_41(sbuf, sdt, rbuf, rdt, 0, block, gpo_coll_params.device_moves_min);
}

/* bytes of n elements of dt */
static size_t bytes(gpo_dt_t *dt, gpo_count_t n)
{
    size_t size = 0;
    ompi_datatype_type_size(dt, &size);
    return size * (size_t)n;
}

/* the largest of n peers' counts of dt, in bytes */
static size_t max_bytes(gpo_dt_t *dt, gpo_counts_t counts, int n)
{
    gpo_count_t most = 0;
    for (int i = 0; i < n; i++) {
        if (GPO_COUNT_AT(counts, i) > most) {
            most = GPO_COUNT_AT(counts, i);
        }
    }
    return bytes(dt, most);
}

static size_t larger(size_t a, size_t b)
{
    return a > b ? a : b;
}

unsigned long gpo_moves_handed_on;

/* 0 (nothing staged), counting the calls that had device buffers */
static int handed_on(int any_device)
{
    if (any_device) {
        __atomic_fetch_add(&gpo_moves_handed_on, 1, __ATOMIC_RELAXED);
    }
    return 0;
}

static int put(gpo_stage_t *st, void **p, gpo_span_t span, int flags)
{
    void *h = gpo_stage_add(st, *p, span, flags);
    if (h == NULL) {
        gpo_stage_end(st, 0);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    *p = h;
    return 0;
}

static int put_in(gpo_stage_t *st, const void **p, gpo_span_t span)
{
    void *q = (void *)*p;
    int rc = put(st, &q, span, GPO_IN);
    *p = q;
    return rc;
}

/* an output: also copied in when the operation leaves parts of the span
 * alone (gaps of the datatype or between blocks) or reads it (in place) */
static int put_out(gpo_stage_t *st, void **p, gpo_span_t span, int also_in)
{
    return put(st, p, span, GPO_OUT | (also_in ? GPO_IN : 0));
}

#define TRY(x) do { int rc_ = (x); if (rc_ != 0) return rc_; } while (0)

int gpo_prep_allgather(gpo_stage_t *st, const void **sbuf, gpo_count_t scount, gpo_dt_t *sdt,
                       void **rbuf, gpo_count_t rcount, gpo_dt_t *rdt, gpo_comm_t *comm)
{
    if (moves_direct(*sbuf, sdt, *rbuf, rdt, bytes(rdt, rcount))) {
        return handed_on(dev(*sbuf) || dev(*rbuf));
    }
    int sd = dev(*sbuf), rd = dev(*rbuf);
    if (!sd && !rd) return 0;
    gpo_count_t n = rcount * peers(comm);
    if (sd) TRY(put_in(st, sbuf, gpo_span(sdt, scount)));
    if (rd) TRY(put_out(st, rbuf, gpo_span(rdt, n), *sbuf == MPI_IN_PLACE || !gpo_dense(rdt, n)));
    return 1;
}

int gpo_prep_allgatherv(gpo_stage_t *st, const void **sbuf, gpo_count_t scount, gpo_dt_t *sdt,
                        void **rbuf, gpo_counts_t rcounts, gpo_displs_t displs, gpo_dt_t *rdt,
                        gpo_comm_t *comm)
{
    /* Open MPI 4.1's bruck and neighbour exchange: indexed types over rbuf */
    if (moves_direct_41(*sbuf, sdt, *rbuf, rdt, 1, max_bytes(rdt, rcounts, peers(comm)),
                        gpo_coll_params.device_moves_min)) {
        return handed_on(dev(*sbuf) || dev(*rbuf));
    }
    int sd = dev(*sbuf), rd = dev(*rbuf);
    if (!sd && !rd) return 0;
    if (sd) TRY(put_in(st, sbuf, gpo_span(sdt, scount)));
    if (rd) TRY(put_out(st, rbuf, gpo_span_v(rdt, rcounts, displs, peers(comm)), 1));
    return 1;
}

int gpo_prep_allreduce(gpo_stage_t *st, const void **sbuf, void **rbuf, gpo_count_t count,
                       gpo_dt_t *dt, gpo_comm_t *comm)
{
    (void)comm;
    int sd = dev(*sbuf), rd = dev(*rbuf);
    if (!sd && !rd) return 0;
    if (sd) TRY(put_in(st, sbuf, gpo_span(dt, count)));
    if (rd) TRY(put_out(st, rbuf, gpo_span(dt, count), *sbuf == MPI_IN_PLACE || !gpo_dense(dt, count)));
    return 1;
}

int gpo_prep_alltoall(gpo_stage_t *st, const void **sbuf, gpo_count_t scount, gpo_dt_t *sdt,
                      void **rbuf, gpo_count_t rcount, gpo_dt_t *rdt, gpo_comm_t *comm)
{
    /* Open MPI 4.1's fixed rules pick bruck (indexed types over the
     * receive buffer) for small blocks above 12 processes */
    if (moves_direct_41(*sbuf, sdt, *rbuf, rdt, peers(comm) > 12, bytes(rdt, rcount),
                        gpo_coll_params.device_moves_min)) {
        return handed_on(dev(*sbuf) || dev(*rbuf));
    }
    int sd = dev(*sbuf), rd = dev(*rbuf);
    if (!sd && !rd) return 0;
    int p = peers(comm);
    if (sd) TRY(put_in(st, sbuf, gpo_span(sdt, scount * p)));
    if (rd) TRY(put_out(st, rbuf, gpo_span(rdt, rcount * p),
                        *sbuf == MPI_IN_PLACE || !gpo_dense(rdt, rcount * p)));
    return 1;
}

int gpo_prep_alltoallv(gpo_stage_t *st, const void **sbuf, gpo_counts_t scounts,
                       gpo_displs_t sdispls, gpo_dt_t *sdt, void **rbuf, gpo_counts_t rcounts,
                       gpo_displs_t rdispls, gpo_dt_t *rdt, gpo_comm_t *comm)
{
    int p = peers(comm);
    size_t block = max_bytes(rdt, rcounts, p);
    if (*sbuf != MPI_IN_PLACE) block = larger(block, max_bytes(sdt, scounts, p));
    if (moves_direct(*sbuf, sdt, *rbuf, rdt, block)) return handed_on(dev(*sbuf) || dev(*rbuf));
    int sd = dev(*sbuf), rd = dev(*rbuf);
    if (!sd && !rd) return 0;
    if (sd) TRY(put_in(st, sbuf, gpo_span_v(sdt, scounts, sdispls, p)));
    if (rd) TRY(put_out(st, rbuf, gpo_span_v(rdt, rcounts, rdispls, p), 1));
    return 1;
}

int gpo_prep_alltoallw(gpo_stage_t *st, const void **sbuf, gpo_counts_t scounts,
                       gpo_displs_t sdispls, gpo_dt_t *const *sdts, void **rbuf,
                       gpo_counts_t rcounts, gpo_displs_t rdispls, gpo_dt_t *const *rdts,
                       gpo_comm_t *comm)
{
    /* (several datatypes: staged where Open MPI 4.1 or 5 would have to
     * read them) */
    if (moves_direct(*sbuf, NULL, *rbuf, NULL, SIZE_MAX)) {
        return handed_on(dev(*sbuf) || dev(*rbuf));
    }
    int sd = dev(*sbuf), rd = dev(*rbuf);
    if (!sd && !rd) return 0;
    int p = peers(comm);
    if (sd) TRY(put_in(st, sbuf, gpo_span_w(sdts, scounts, sdispls, p)));
    if (rd) TRY(put_out(st, rbuf, gpo_span_w(rdts, rcounts, rdispls, p), 1));
    return 1;
}

/* Open MPI's broadcasts (base/tuned, basic, libnbc, inter) move the buffer
 * only by point-to-point, never with the CPU: a contiguous one stays on the
 * device and goes through UCX and gdrpipe's GPU paths; only a
 * non-contiguous datatype (packed by the CPU in pml ucx) is staged. */
int gpo_prep_bcast(gpo_stage_t *st, void **buf, gpo_count_t count, gpo_dt_t *dt, int root,
                   gpo_comm_t *comm)
{
    /* (by point-to-point only: handed on at every size) */
    if (moves_direct(NULL, dt, *buf, dt, SIZE_MAX)) return handed_on(dev(*buf));
    int r = role(comm, root);
    if (r == ROLE_NONE || gpo_dense(dt, count) || !dev(*buf)) return 0;
    /* receivers copy in too: the datatype's gaps */
    TRY(put(st, buf, gpo_span(dt, count), r == ROLE_ROOT ? GPO_IN : GPO_IN | GPO_OUT));
    return 1;
}

/* A rooted call that moves data to the root (to_root: gather) or from it
 * (scatter), on this rank of role r with `block` the largest block it sends
 * or receives: 1 when it hands the call on to the module below untouched
 * (Open MPI 4.1's binomial trees unpack through convertors), else 0 with
 * *sd / *rd whether its significant send / receive buffer is device memory
 * (0 where not significant). */
static int rooted(gpo_comm_t *comm, int r, int to_root, const void *sbuf, gpo_dt_t *sdt,
                  const void *rbuf, gpo_dt_t *rdt, size_t block, size_t min, int *sd, int *rd)
{
    const int leaf_side = r == ROLE_LEAF || (r == ROLE_ROOT && !OMPI_COMM_IS_INTER(comm));
    const void *sig_s = (to_root ? leaf_side : r == ROLE_ROOT) ? sbuf : NULL;
    const void *sig_r = (to_root ? r == ROLE_ROOT : leaf_side) ? rbuf : NULL;
    if (moves_direct_41(sig_s, sdt, sig_r, rdt, 1, block, min)) {
        handed_on(dev(sbuf) || dev(rbuf));
        return 1;
    }
    *sd = sig_s != NULL ? dev(sig_s) : 0;
    *rd = sig_r != NULL ? dev(sig_r) : 0;
    return 0;
}

int gpo_prep_gather(gpo_stage_t *st, const void **sbuf, gpo_count_t scount, gpo_dt_t *sdt,
                    void **rbuf, gpo_count_t rcount, gpo_dt_t *rdt, int root, gpo_comm_t *comm)
{
    const int r = role(comm, root);
    int sd, rd;
    if (rooted(comm, r, 1, *sbuf, sdt, *rbuf, rdt,
               r == ROLE_ROOT ? bytes(rdt, rcount) : r == ROLE_LEAF ? bytes(sdt, scount) : 0,
               gpo_coll_params.device_moves_min_gather, &sd, &rd)) {
        return 0;
    }
    if (!sd && !rd) return 0;
    gpo_count_t n = rcount * peers(comm);
    if (sd) TRY(put_in(st, sbuf, gpo_span(sdt, scount)));
    if (rd) TRY(put_out(st, rbuf, gpo_span(rdt, n), *sbuf == MPI_IN_PLACE || !gpo_dense(rdt, n)));
    return 1;
}

int gpo_prep_gatherv(gpo_stage_t *st, const void **sbuf, gpo_count_t scount, gpo_dt_t *sdt,
                     void **rbuf, gpo_counts_t rcounts, gpo_displs_t displs, gpo_dt_t *rdt,
                     int root, gpo_comm_t *comm)
{
    const int r = role(comm, root);
    int sd, rd;
    if (rooted(comm, r, 1, *sbuf, sdt, *rbuf, rdt,
               r == ROLE_ROOT   ? max_bytes(rdt, rcounts, peers(comm))
               : r == ROLE_LEAF ? bytes(sdt, scount)
                                : 0,
               gpo_coll_params.device_moves_min_gather, &sd, &rd)) {
        return 0;
    }
    if (!sd && !rd) return 0;
    if (sd) TRY(put_in(st, sbuf, gpo_span(sdt, scount)));
    if (rd) TRY(put_out(st, rbuf, gpo_span_v(rdt, rcounts, displs, peers(comm)), 1));
    return 1;
}

int gpo_prep_reduce(gpo_stage_t *st, const void **sbuf, void **rbuf, gpo_count_t count, gpo_dt_t *dt,
                    int root, gpo_comm_t *comm)
{
    int r = role(comm, root);
    int inter = OMPI_COMM_IS_INTER(comm);
    int sd = r == ROLE_LEAF || (r == ROLE_ROOT && !inter) ? dev(*sbuf) : 0;
    int rd = r == ROLE_ROOT ? dev(*rbuf) : 0;
    if (!sd && !rd) return 0;
    if (sd) TRY(put_in(st, sbuf, gpo_span(dt, count)));
    if (rd) TRY(put_out(st, rbuf, gpo_span(dt, count), *sbuf == MPI_IN_PLACE || !gpo_dense(dt, count)));
    return 1;
}

int gpo_prep_reduce_scatter(gpo_stage_t *st, const void **sbuf, void **rbuf,
                            gpo_counts_t rcounts, gpo_dt_t *dt, gpo_comm_t *comm)
{
    int sd = dev(*sbuf), rd = dev(*rbuf);
    if (!sd && !rd) return 0;
    int size = ompi_comm_size(comm);
    gpo_count_t total = 0;
    for (int i = 0; i < size; i++) {
        total += GPO_COUNT_AT(rcounts, i);
    }
    if (sd) TRY(put_in(st, sbuf, gpo_span(dt, total)));
    if (rd && *sbuf == MPI_IN_PLACE) {
        TRY(put(st, rbuf, gpo_span(dt, total), GPO_IN | GPO_OUT));
    } else if (rd) {
        gpo_count_t mine = GPO_COUNT_AT(rcounts, ompi_comm_rank(comm));
        TRY(put_out(st, rbuf, gpo_span(dt, mine), !gpo_dense(dt, mine)));
    }
    return 1;
}

int gpo_prep_reduce_scatter_block(gpo_stage_t *st, const void **sbuf, void **rbuf,
                                  gpo_count_t rcount, gpo_dt_t *dt, gpo_comm_t *comm)
{
    int sd = dev(*sbuf), rd = dev(*rbuf);
    if (!sd && !rd) return 0;
    gpo_count_t total = rcount * ompi_comm_size(comm);
    if (sd) TRY(put_in(st, sbuf, gpo_span(dt, total)));
    if (rd && *sbuf == MPI_IN_PLACE) {
        TRY(put(st, rbuf, gpo_span(dt, total), GPO_IN | GPO_OUT));
    } else if (rd) {
        TRY(put_out(st, rbuf, gpo_span(dt, rcount), !gpo_dense(dt, rcount)));
    }
    return 1;
}

int gpo_prep_scatter(gpo_stage_t *st, const void **sbuf, gpo_count_t scount, gpo_dt_t *sdt,
                     void **rbuf, gpo_count_t rcount, gpo_dt_t *rdt, int root, gpo_comm_t *comm)
{
    const int r = role(comm, root);
    int sd, rd;
    if (rooted(comm, r, 0, *sbuf, sdt, *rbuf, rdt,
               r == ROLE_ROOT ? bytes(sdt, scount) : r == ROLE_LEAF ? bytes(rdt, rcount) : 0,
               gpo_coll_params.device_moves_min, &sd, &rd)) {
        return 0;
    }
    if (!sd && !rd) return 0;
    if (sd) TRY(put_in(st, sbuf, gpo_span(sdt, scount * peers(comm))));
    if (rd) TRY(put_out(st, rbuf, gpo_span(rdt, rcount), !gpo_dense(rdt, rcount)));
    return 1;
}

int gpo_prep_scatterv(gpo_stage_t *st, const void **sbuf, gpo_counts_t scounts,
                      gpo_displs_t displs, gpo_dt_t *sdt, void **rbuf, gpo_count_t rcount,
                      gpo_dt_t *rdt, int root, gpo_comm_t *comm)
{
    const int r = role(comm, root);
    int sd, rd;
    if (rooted(comm, r, 0, *sbuf, sdt, *rbuf, rdt,
               r == ROLE_ROOT   ? max_bytes(sdt, scounts, peers(comm))
               : r == ROLE_LEAF ? bytes(rdt, rcount)
                                : 0,
               gpo_coll_params.device_moves_min, &sd, &rd)) {
        return 0;
    }
    if (!sd && !rd) return 0;
    if (sd) TRY(put_in(st, sbuf, gpo_span_v(sdt, scounts, displs, peers(comm))));
    if (rd) TRY(put_out(st, rbuf, gpo_span(rdt, rcount), !gpo_dense(rdt, rcount)));
    return 1;
}

int gpo_prep_reduce_local(gpo_stage_t *st, const void **inbuf, void **inoutbuf, gpo_count_t count,
                          gpo_dt_t *dt)
{
    int sd = dev(*inbuf), rd = dev(*inoutbuf);
    if (!sd && !rd) return 0;
    if (sd) TRY(put_in(st, inbuf, gpo_span(dt, count)));
    if (rd) TRY(put(st, inoutbuf, gpo_span(dt, count), GPO_IN | GPO_OUT));
    return 1;
}

/* ---- neighbourhood collectives ---------------------------------------- */

static int degrees(gpo_comm_t *comm, int *in, int *out)
{
    return mca_topo_base_neighbor_count(comm, in, out) == OMPI_SUCCESS ? 0 : OMPI_ERR_BAD_PARAM;
}

int gpo_prep_neighbor_allgather(gpo_stage_t *st, const void **sbuf, gpo_count_t scount,
                                gpo_dt_t *sdt, void **rbuf, gpo_count_t rcount, gpo_dt_t *rdt,
                                gpo_comm_t *comm)
{
    if (moves_direct(*sbuf, sdt, *rbuf, rdt, bytes(sdt, scount))) {
        return handed_on(dev(*sbuf) || dev(*rbuf));
    }
    int sd = dev(*sbuf), rd = dev(*rbuf), in, out;
    if (!sd && !rd) return 0;
    TRY(degrees(comm, &in, &out));
    if (sd) TRY(put_in(st, sbuf, gpo_span(sdt, scount)));
    if (rd) TRY(put_out(st, rbuf, gpo_span(rdt, rcount * in), !gpo_dense(rdt, rcount * in)));
    return 1;
}

int gpo_prep_neighbor_allgatherv(gpo_stage_t *st, const void **sbuf, gpo_count_t scount,
                                 gpo_dt_t *sdt, void **rbuf, gpo_counts_t rcounts,
                                 gpo_displs_t displs, gpo_dt_t *rdt, gpo_comm_t *comm)
{
    if (moves_direct(*sbuf, sdt, *rbuf, rdt, bytes(sdt, scount))) {
        return handed_on(dev(*sbuf) || dev(*rbuf));
    }
    int sd = dev(*sbuf), rd = dev(*rbuf), in, out;
    if (!sd && !rd) return 0;
    TRY(degrees(comm, &in, &out));
    if (sd) TRY(put_in(st, sbuf, gpo_span(sdt, scount)));
    if (rd) TRY(put_out(st, rbuf, gpo_span_v(rdt, rcounts, displs, in), 1));
    return 1;
}

int gpo_prep_neighbor_alltoall(gpo_stage_t *st, const void **sbuf, gpo_count_t scount,
                               gpo_dt_t *sdt, void **rbuf, gpo_count_t rcount, gpo_dt_t *rdt,
                               gpo_comm_t *comm)
{
    if (moves_direct(*sbuf, sdt, *rbuf, rdt, bytes(sdt, scount))) {
        return handed_on(dev(*sbuf) || dev(*rbuf));
    }
    int sd = dev(*sbuf), rd = dev(*rbuf), in, out;
    if (!sd && !rd) return 0;
    TRY(degrees(comm, &in, &out));
    if (sd) TRY(put_in(st, sbuf, gpo_span(sdt, scount * out)));
    if (rd) TRY(put_out(st, rbuf, gpo_span(rdt, rcount * in), !gpo_dense(rdt, rcount * in)));
    return 1;
}

int gpo_prep_neighbor_alltoallv(gpo_stage_t *st, const void **sbuf, gpo_counts_t scounts,
                                gpo_displs_t sdispls, gpo_dt_t *sdt, void **rbuf,
                                gpo_counts_t rcounts, gpo_displs_t rdispls, gpo_dt_t *rdt,
                                gpo_comm_t *comm)
{
    int in, out;
    TRY(degrees(comm, &in, &out));
    size_t block = larger(max_bytes(sdt, scounts, out), max_bytes(rdt, rcounts, in));
    if (moves_direct(*sbuf, sdt, *rbuf, rdt, block)) return handed_on(dev(*sbuf) || dev(*rbuf));
    int sd = dev(*sbuf), rd = dev(*rbuf);
    if (!sd && !rd) return 0;
    if (sd) TRY(put_in(st, sbuf, gpo_span_v(sdt, scounts, sdispls, out)));
    if (rd) TRY(put_out(st, rbuf, gpo_span_v(rdt, rcounts, rdispls, in), 1));
    return 1;
}

int gpo_prep_neighbor_alltoallw(gpo_stage_t *st, const void **sbuf, gpo_counts_t scounts,
                                gpo_adispls_t sdispls, gpo_dt_t *const *sdts, void **rbuf,
                                gpo_counts_t rcounts, gpo_adispls_t rdispls,
                                gpo_dt_t *const *rdts, gpo_comm_t *comm)
{
    if (moves_direct(*sbuf, NULL, *rbuf, NULL, SIZE_MAX)) {
        return handed_on(dev(*sbuf) || dev(*rbuf));
    }
    int sd = dev(*sbuf), rd = dev(*rbuf), in, out;
    if (!sd && !rd) return 0;
    TRY(degrees(comm, &in, &out));
    if (sd) TRY(put_in(st, sbuf, gpo_span_w_aint(sdts, scounts, sdispls, out)));
    if (rd) TRY(put_out(st, rbuf, gpo_span_w_aint(rdts, rcounts, rdispls, in), 1));
    return 1;
}
