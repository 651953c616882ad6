/* Nonblocking and persistent data-moving collectives of device buffers
 * (coll_gdrpipe_mvpart.h): the blocking path's moves on the GPU, driven from
 * Open MPI's progress so that no start waits for another rank.
 *
 * A call is taken on every rank alike by what all of them see (the
 * communicator, the MCA parameter, its arguments' kind): no message decides
 * it. Its request is an Open MPI request of the module's own; each start:
 *  1. exports this rank's ranges and fills its record (as the blocking path
 *     does), then sends it to every other rank and posts receives for
 *     theirs, on a tag of the communicator's nonblocking-collective counter
 *     (taken at the call, or once at MPI_*_init for a persistent request,
 *     as libnbc takes its own: the ranks start the communicator's
 *     collectives in one order, so they take the same tags);
 *  2. from progress, once the records are in: if every rank agrees, the
 *     first process of each GPU copies the blocks for its GPU's ranks (one
 *     batched launch, waited for in that progress call) and sends its status
 *     to every other rank; every rank completes when every launcher's status
 *     is in and all are 0;
 *  3. otherwise (no agreement, or a failed launch) every rank moves its
 *     blocks by point-to-point on the same tag (device buffers through
 *     gdrpipe's device paths; a side whose blocks have gaps in device memory
 *     through a host copy of its span) and completes when they are done.
 * Messages of one tag between two ranks match in the order they were sent,
 * and every rank posts its receives in that order (record, status, blocks),
 * so a persistent request's restarts need no further tag. */
#include "coll_gdrpipe_mvpart.h"
#include "coll_gdrpipe_params.h"

#include "gpo_dev.h"
#include "gpo_stage.h"

#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"
#include "opal/runtime/opal_progress.h"
#include "opal/sys/atomic.h"
#include "opal/util/output.h"

#include <pthread.h>
#include <string.h>

enum { OP_IDLE, OP_RECORDS, OP_STATUS, OP_MOVES };

#define OP_MAX_REQS (2 * MV_MAX + 2)

typedef struct gpo_mvop {
    ompi_request_t super; /* first: the request the caller holds */
    void *mpi_layer[GPO_NBC_REQUEST_ROOM]; /* written by Open MPI's MPI layer */
    struct gpo_mvop *next; /* in the list of running operations */
    struct ompi_communicator_t *comm;
    mca_coll_gdrpipe_module_t *m;
    gpo_mv_part_t part;
    int n, me, tag, dev, step, err, freed;
    int32_t status_out, status_in[MV_MAX];
    ompi_request_t *reqs[OP_MAX_REQS];
    int nreqs;
    gpo_stage_t st;
    gpo_mv_rec_t all[MV_MAX];
} gpo_mvop_t;

static OBJ_CLASS_INSTANCE(gpo_mvop_t, ompi_request_t, NULL, NULL);

static gpo_mvop_t *running;
static pthread_mutex_t running_mu = PTHREAD_MUTEX_INITIALIZER;
static int progress_registered;

/* ---- point-to-point on the operation's tag ------------------------------ */
/* the next tag of the communicator's nonblocking-collective counter, which
 * libnbc takes its own from (counting down, back to the start at the end of
 * the range): what coll_base_util.h's ompi_coll_base_nbc_reserve_tags does,
 * a header Debian 12's libopenmpi-dev cannot compile (its op.h needs a
 * Fortran header the package lacks) */
static int take_tag(struct ompi_communicator_t *comm)
{
    int32_t seen = comm->c_nbc_tag;
    for (;;) {
        const int32_t tag = (seen - 1 < MCA_COLL_BASE_TAG_NONBLOCKING_END)
                                ? MCA_COLL_BASE_TAG_NONBLOCKING_BASE
                                : seen;
        if (OPAL_ATOMIC_COMPARE_EXCHANGE_STRONG_32(&comm->c_nbc_tag, &seen, tag - 1)) {
            return tag;
        }
    }
}

static void post_recv(gpo_mvop_t *op, void *buf, size_t count, struct ompi_datatype_t *dt,
                      int src)
{
    int rc;
    if (op->err != OMPI_SUCCESS) {
        return;
    }
    rc = MCA_PML_CALL(irecv(buf, count, dt, src, op->tag, op->comm, &op->reqs[op->nreqs]));
    if (rc != OMPI_SUCCESS) {
        op->err = rc;
        return;
    }
    op->nreqs++;
}

static void post_send(gpo_mvop_t *op, const void *buf, size_t count, struct ompi_datatype_t *dt,
                      int dst)
{
    int rc;
    if (op->err != OMPI_SUCCESS) {
        return;
    }
    rc = MCA_PML_CALL(isend(buf, count, dt, dst, op->tag, MCA_PML_BASE_SEND_STANDARD, op->comm,
                            &op->reqs[op->nreqs]));
    if (rc != OMPI_SUCCESS) {
        op->err = rc;
        return;
    }
    op->nreqs++;
}

/* 1 when every posted request is done (their first error kept, freed) */
static int reqs_done(gpo_mvop_t *op)
{
    for (int i = 0; i < op->nreqs; ++i) {
        if (!REQUEST_COMPLETE(op->reqs[i])) {
            return 0;
        }
    }
    for (int i = 0; i < op->nreqs; ++i) {
        const int e = op->reqs[i]->req_status.MPI_ERROR;
        if ((e != MPI_SUCCESS) && (op->err == OMPI_SUCCESS)) {
            op->err = e;
        }
        ompi_request_free(&op->reqs[i]);
    }
    op->nreqs = 0;
    return 1;
}

/* ---- the point-to-point moves (step 3) ---------------------------------- */
/* bytes of buf that one side's blocks cover (gaps included) */
static gpo_span_t side_span(const ptrdiff_t *disp, const gpo_count_t *cnt, int n,
                            struct ompi_datatype_t *dt)
{
    gpo_span_t all = {0, 0};
    int any = 0;
    for (int q = 0; q < n; ++q) {
        if (cnt[q] <= 0) {
            continue;
        }
        const gpo_span_t s = gpo_span(dt, cnt[q]);
        const ptrdiff_t lo = disp[q] + s.lo, hi = disp[q] + s.hi;
        all.lo = (!any || lo < all.lo) ? lo : all.lo;
        all.hi = (!any || hi > all.hi) ? hi : all.hi;
        any = 1;
    }
    return all;
}

/* this rank's own block, from its send to its receive side */
static void copy_own_block(gpo_mvop_t *op, const char *sb, char *rb)
{
    const gpo_mv_part_t *p = &op->part;
    const char *src = sb + p->sdisp[op->me];
    char *dst = rb + p->rdisp[op->me];
    int rc;
    if (gpo_is_device(src) || gpo_is_device(dst)) {
        /* both sides dense here (move_blocks stages the others) */
        rc = gpo_copy(dst, src, p->rlen[op->me]) == 0 ? OMPI_SUCCESS : OMPI_ERROR;
    } else {
        rc = ompi_datatype_sndrcv(src, (int32_t)p->scnt[op->me], p->sdt, dst,
                                  (int32_t)p->rcnt[op->me], p->rdt);
    }
    if ((rc != OMPI_SUCCESS) && (op->err == OMPI_SUCCESS)) {
        op->err = rc;
    }
}

/* one side's blocks to or from every other rank: bytes where they lie
 * without gaps, else count elements of the datatype */
static void post_blocks(gpo_mvop_t *op, int send, char *buf, const ptrdiff_t *disp,
                        const uint64_t *len, const gpo_count_t *cnt, struct ompi_datatype_t *dt,
                        int dense)
{
    for (int q = 0; q < op->n; ++q) {
        if ((q == op->me) || (len[q] == 0)) {
            continue;
        }
        const size_t count = dense ? len[q] : (size_t)cnt[q];
        struct ompi_datatype_t *type = dense ? MPI_BYTE : dt;
        if (send) {
            post_send(op, buf + disp[q], count, type, q);
        } else {
            post_recv(op, buf + disp[q], count, type, q);
        }
    }
}

static void move_blocks(gpo_mvop_t *op)
{
    const gpo_mv_part_t *p = &op->part;
    const int n = op->n, me = op->me;
    const int own = (p->slen[me] != 0) && (p->rlen[me] != 0);
    char *sb = (char *)p->sbuf, *rb = p->rbuf;
    /* the CPU may touch only host memory and dense device blocks */
    if ((sb != NULL) && gpo_is_device(sb) && (!p->sdense || (own && !p->rdense))) {
        sb = gpo_stage_add(&op->st, sb, side_span(p->sdisp, p->scnt, n, p->sdt), GPO_IN);
    }
    if ((rb != NULL) && gpo_is_device(rb) && (!p->rdense || (own && !p->sdense))) {
        rb = gpo_stage_add(&op->st, rb, side_span(p->rdisp, p->rcnt, n, p->rdt),
                           GPO_IN | GPO_OUT);
    }
    if (((p->sbuf != NULL) && (sb == NULL)) || ((p->rbuf != NULL) && (rb == NULL))) {
        op->err = OMPI_ERR_OUT_OF_RESOURCE;
        return;
    }
    post_blocks(op, 0, rb, p->rdisp, p->rlen, p->rcnt, p->rdt, p->rdense);
    post_blocks(op, 1, sb, p->sdisp, p->slen, p->scnt, p->sdt, p->sdense);
    if (own) {
        copy_own_block(op, sb, rb);
    }
}

/* ---- the steps ---------------------------------------------------------- */
static void begin(gpo_mvop_t *op)
{
    const gp_companion_t *c = gpo_dev();
    op->super.req_state = OMPI_REQUEST_ACTIVE;
    op->super.req_complete = REQUEST_PENDING;
    op->super.req_status.MPI_ERROR = OMPI_SUCCESS;
    op->err = OMPI_SUCCESS;
    op->nreqs = 0;
    memset(&op->st, 0, sizeof(op->st));
    gpo_mv_local_part(c, &op->part, op->n, &op->all[op->me], &op->dev);
    for (int q = 0; q < op->n; ++q) {
        if (q != op->me) {
            post_recv(op, &op->all[q], sizeof(op->all[q]), MPI_BYTE, q);
        }
    }
    for (int q = 0; q < op->n; ++q) {
        if (q != op->me) {
            post_send(op, &op->all[op->me], sizeof(op->all[op->me]), MPI_BYTE, q);
        }
    }
    op->step = OP_RECORDS;
}

static void records_in(gpo_mvop_t *op)
{
    static int said;
    char err[256] = "";
    if (!gpo_mv_all_agree(op->all, op->n)) {
        op->m->mv_other++;
        move_blocks(op);
        op->step = OP_MOVES;
        return;
    }
    if (gpo_mv_first_of_gpu(op->all, op->me)) {
        op->status_out = gpo_mv_launch(gpo_dev(), op->all, op->n, op->me, op->dev, err,
                                       sizeof(err)) != 0;
        if (op->status_out && !said && (err[0] != '\0')) {
            said = 1;
            opal_output(0, "coll gdrpipe: nonblocking device move failed (%s): its blocks "
                        "move by point-to-point", err);
        }
        for (int q = 0; q < op->n; ++q) {
            if (q != op->me) {
                post_send(op, &op->status_out, 1, MPI_INT32_T, q);
            }
        }
    }
    for (int q = 0; q < op->n; ++q) {
        op->status_in[q] = 0;
        if ((q != op->me) && gpo_mv_first_of_gpu(op->all, q)) {
            post_recv(op, &op->status_in[q], 1, MPI_INT32_T, q);
        }
    }
    op->step = OP_STATUS;
}

static void status_in(gpo_mvop_t *op)
{
    int worst = gpo_mv_first_of_gpu(op->all, op->me) ? op->status_out : 0;
    for (int q = 0; q < op->n; ++q) {
        worst = op->status_in[q] > worst ? op->status_in[q] : worst;
    }
    if (worst == 0) {
        op->m->mv_gpu++;
        op->step = OP_IDLE;
        return;
    }
    op->m->mv_other++;
    move_blocks(op); /* moving a block again is harmless */
    op->step = OP_MOVES;
}

/* one look at a running operation; 1 when it is done */
static int advance(gpo_mvop_t *op)
{
    while ((op->step != OP_IDLE) && reqs_done(op)) {
        if (op->err != OMPI_SUCCESS) {
            op->step = OP_IDLE;
        } else if (op->step == OP_RECORDS) {
            records_in(op);
        } else if (op->step == OP_STATUS) {
            status_in(op);
        } else {
            op->step = OP_IDLE;
        }
    }
    return op->step == OP_IDLE;
}

/* ---- requests ----------------------------------------------------------- */
static void release(gpo_mvop_t *op)
{
    if (op->part.sbuf != NULL) {
        OBJ_RELEASE(op->part.sdt);
    }
    if (op->part.rbuf != NULL) {
        OBJ_RELEASE(op->part.rdt);
    }
    OBJ_RELEASE(op->comm);
    OMPI_REQUEST_FINI(&op->super);
    OBJ_RELEASE(op);
}

static void finish(gpo_mvop_t *op)
{
    const int freed = op->freed;
    if (gpo_stage_end(&op->st, op->err == OMPI_SUCCESS) != 0 && op->err == OMPI_SUCCESS) {
        op->err = OMPI_ERROR;
    }
    op->super.req_status.MPI_ERROR = op->err;
    ompi_request_complete(&op->super, true);
    if (freed) {
        release(op);
    }
}

static int progress(void)
{
    gpo_mvop_t *done = NULL;
    int count = 0;
    if ((running == NULL) || (pthread_mutex_trylock(&running_mu) != 0)) {
        return 0;
    }
    for (gpo_mvop_t **pp = &running; *pp != NULL;) {
        gpo_mvop_t *op = *pp;
        if (advance(op)) {
            *pp = op->next;
            op->next = done;
            done = op;
        } else {
            pp = &op->next;
        }
    }
    pthread_mutex_unlock(&running_mu);
    while (done != NULL) {
        gpo_mvop_t *op = done;
        done = op->next;
        finish(op);
        ++count;
    }
    return count;
}

static int op_start(size_t count, ompi_request_t **reqs)
{
    for (size_t i = 0; i < count; ++i) {
        gpo_mvop_t *op = (gpo_mvop_t *)reqs[i];
        begin(op);
        pthread_mutex_lock(&running_mu);
        if (!progress_registered) {
            opal_progress_register(progress);
            progress_registered = 1;
        }
        op->next = running;
        running = op;
        pthread_mutex_unlock(&running_mu);
    }
    return OMPI_SUCCESS;
}

static int op_free(ompi_request_t **reqp)
{
    gpo_mvop_t *op = (gpo_mvop_t *)*reqp;
    if ((op->super.req_state == OMPI_REQUEST_ACTIVE) && !REQUEST_COMPLETE(&op->super)) {
        op->freed = 1; /* released when it completes */
    } else {
        release(op);
    }
    *reqp = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

static int op_cancel(ompi_request_t *req, int complete)
{
    (void)req;
    (void)complete;
    return MPI_ERR_REQUEST;
}

int gpo_idevmove_start(const gpo_mv_part_t *p, struct ompi_communicator_t *comm,
                       mca_coll_gdrpipe_module_t *m, const gpo_mv_how_t *how)
{
    gpo_mvop_t *op = OBJ_NEW(gpo_mvop_t);
    if (op == NULL) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    memset(op->mpi_layer, 0, sizeof(op->mpi_layer)); /* as Open MPI's own requests start */
    OMPI_REQUEST_INIT(&op->super, how->persistent ? true : false);
    op->super.req_type = OMPI_REQUEST_COLL;
    op->super.req_mpi_object.comm = comm;
    op->super.req_start = op_start;
    op->super.req_free = op_free;
    op->super.req_cancel = op_cancel;
    op->next = NULL;
    op->comm = comm;
    op->m = m;
    op->part = *p;
    op->n = ompi_comm_size(comm);
    op->me = ompi_comm_rank(comm);
    op->tag = take_tag(comm);
    op->step = OP_IDLE;
    op->freed = 0;
    OBJ_RETAIN(comm);
    if (p->sbuf != NULL) {
        OBJ_RETAIN(p->sdt);
    }
    if (p->rbuf != NULL) {
        OBJ_RETAIN(p->rdt);
    }
    *how->request = &op->super;
    if (!how->persistent) {
        ompi_request_t *req = &op->super;
        return op_start(1, &req);
    }
    return OMPI_SUCCESS;
}

void gpo_idevmove_fini(void)
{
    pthread_mutex_lock(&running_mu);
    if (progress_registered) {
        opal_progress_unregister(progress);
        progress_registered = 0;
    }
    pthread_mutex_unlock(&running_mu);
}
