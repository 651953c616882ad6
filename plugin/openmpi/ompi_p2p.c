/* The point-to-point functions of the interposer (ompi_p2p.h). */
#include "ompi_p2p.h"

#include "gpo_request.h"

#include <stdio.h>

/* a failure of the staging itself, through the communicator's handler */
static int fail(MPI_Comm comm, int rc)
{
    if (rc == MPI_SUCCESS) {
        return rc;
    }
    if (rc < 0) {
        rc = MPI_ERR_OTHER;
    }
    PMPI_Comm_call_errhandler(comm, rc);
    return rc;
}

/* host copy of an input buffer (or NULL after a failure) */
static void *stage(gpo_stage_t *st, const void *buf, int count, MPI_Datatype dt, int flags)
{
    return gpo_stage_add(st, (void *)buf, gpo_p2p_span(count, dt), flags);
}

/* Each function: the quick test inline, then the full test and the staging
 * out of line (its frame is not set up for the calls that go straight on to
 * PMPI). */
#define SEND_LIKE(NAME)                                                                   \
    static __attribute__((noinline)) int staged_##NAME(const void *buf, int count,        \
                                                       MPI_Datatype dt, int dest, int tag, \
                                                       MPI_Comm comm);                    \
    int MPI_##NAME(const void *buf, int count, MPI_Datatype dt, int dest, int tag,        \
                   MPI_Comm comm)                                                         \
    {                                                                                     \
        if (gpo_p2p_surely_direct(count, dt)) {                                           \
            return PMPI_##NAME(buf, count, dt, dest, tag, comm);                          \
        }                                                                                 \
        return staged_##NAME(buf, count, dt, dest, tag, comm);                            \
    }                                                                                     \
    static int staged_##NAME(const void *buf, int count, MPI_Datatype dt, int dest,       \
                             int tag, MPI_Comm comm)                                      \
    {                                                                                     \
        if (!gpo_p2p_needs_staging(buf, count, dt)) {                                     \
            return PMPI_##NAME(buf, count, dt, dest, tag, comm);                          \
        }                                                                                 \
        gpo_stage_t st = GPO_STAGE_INIT;                                                  \
        void *h = stage(&st, buf, count, dt, GPO_IN);                                     \
        if (h == NULL) return fail(comm, MPI_ERR_NO_MEM);                                 \
        int rc = PMPI_##NAME(h, count, dt, dest, tag, comm);                              \
        gpo_stage_end(&st, 0);                                                            \
        return rc;                                                                        \
    }

SEND_LIKE(Send)
SEND_LIKE(Ssend)
SEND_LIKE(Rsend)
SEND_LIKE(Bsend)

#define ISEND_LIKE(NAME)                                                                  \
    static __attribute__((noinline)) int staged_##NAME(const void *buf, int count,        \
                                                       MPI_Datatype dt, int dest, int tag, \
                                                       MPI_Comm comm, MPI_Request *req);  \
    int MPI_##NAME(const void *buf, int count, MPI_Datatype dt, int dest, int tag,        \
                   MPI_Comm comm, MPI_Request *req)                                       \
    {                                                                                     \
        if (gpo_p2p_surely_direct(count, dt)) {                                           \
            return PMPI_##NAME(buf, count, dt, dest, tag, comm, req);                     \
        }                                                                                 \
        return staged_##NAME(buf, count, dt, dest, tag, comm, req);                       \
    }                                                                                     \
    static int staged_##NAME(const void *buf, int count, MPI_Datatype dt, int dest,       \
                             int tag, MPI_Comm comm, MPI_Request *req)                    \
    {                                                                                     \
        if (!gpo_p2p_needs_staging(buf, count, dt)) {                                     \
            return PMPI_##NAME(buf, count, dt, dest, tag, comm, req);                     \
        }                                                                                 \
        gpo_stage_t st = GPO_STAGE_INIT;                                                  \
        void *h = stage(&st, buf, count, dt, GPO_IN);                                     \
        if (h == NULL) return fail(comm, MPI_ERR_NO_MEM);                                 \
        return fail(comm, gpo_end_request(&st, PMPI_##NAME(h, count, dt, dest, tag, comm, \
                                                           req), req));                   \
    }

ISEND_LIKE(Isend)
ISEND_LIKE(Issend)
ISEND_LIKE(Irsend)
ISEND_LIKE(Ibsend)

static __attribute__((noinline)) int staged_Recv(void *buf, int count, MPI_Datatype dt,
                                                  int source, int tag, MPI_Comm comm,
                                                  MPI_Status *status);

int MPI_Recv(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm,
             MPI_Status *status)
{
    if (gpo_p2p_surely_direct(count, dt)) {
        return PMPI_Recv(buf, count, dt, source, tag, comm, status);
    }
    return staged_Recv(buf, count, dt, source, tag, comm, status);
}

static int staged_Recv(void *buf, int count, MPI_Datatype dt, int source, int tag,
                       MPI_Comm comm, MPI_Status *status)
{
    if (!gpo_p2p_needs_staging(buf, count, dt)) {
        return PMPI_Recv(buf, count, dt, source, tag, comm, status);
    }
    /* copied in too: the datatype's gaps must come back unchanged */
    gpo_stage_t st = GPO_STAGE_INIT;
    void *h = stage(&st, buf, count, dt, GPO_IN | GPO_OUT);
    if (h == NULL) return fail(comm, MPI_ERR_NO_MEM);
    return fail(comm, gpo_end_blocking(&st, PMPI_Recv(h, count, dt, source, tag, comm, status)));
}

static __attribute__((noinline)) int staged_Irecv(void *buf, int count, MPI_Datatype dt,
                                                   int source, int tag, MPI_Comm comm,
                                                   MPI_Request *req);

int MPI_Irecv(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm,
              MPI_Request *req)
{
    if (gpo_p2p_surely_direct(count, dt)) {
        return PMPI_Irecv(buf, count, dt, source, tag, comm, req);
    }
    return staged_Irecv(buf, count, dt, source, tag, comm, req);
}

static int staged_Irecv(void *buf, int count, MPI_Datatype dt, int source, int tag,
                        MPI_Comm comm, MPI_Request *req)
{
    if (!gpo_p2p_needs_staging(buf, count, dt)) {
        return PMPI_Irecv(buf, count, dt, source, tag, comm, req);
    }
    gpo_stage_t st = GPO_STAGE_INIT;
    void *h = stage(&st, buf, count, dt, GPO_IN | GPO_OUT);
    if (h == NULL) return fail(comm, MPI_ERR_NO_MEM);
    return fail(comm, gpo_end_request(&st, PMPI_Irecv(h, count, dt, source, tag, comm, req), req));
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype sdt, int dest, int stag,
                 void *rbuf, int rcount, MPI_Datatype rdt, int source, int rtag, MPI_Comm comm,
                 MPI_Status *status)
{
    int ss = gpo_p2p_needs_staging(sbuf, scount, sdt);
    int rs = gpo_p2p_needs_staging(rbuf, rcount, rdt);
    if (!ss && !rs) {
        return PMPI_Sendrecv(sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, source, rtag,
                             comm, status);
    }
    gpo_stage_t st = GPO_STAGE_INIT;
    const void *hs = ss ? stage(&st, sbuf, scount, sdt, GPO_IN) : sbuf;
    void *hr = rs && hs != NULL ? stage(&st, rbuf, rcount, rdt, GPO_IN | GPO_OUT) : rbuf;
    if (hs == NULL || hr == NULL) {
        gpo_stage_end(&st, 0);
        return fail(comm, MPI_ERR_NO_MEM);
    }
    /* the send side is an input only: its copy back is skipped by flags */
    return fail(comm, gpo_end_blocking(&st, PMPI_Sendrecv(hs, scount, sdt, dest, stag, hr,
                                                          rcount, rdt, source, rtag, comm,
                                                          status)));
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype dt, int dest, int stag,
                         int source, int rtag, MPI_Comm comm, MPI_Status *status)
{
    if (!gpo_p2p_needs_staging(buf, count, dt)) {
        return PMPI_Sendrecv_replace(buf, count, dt, dest, stag, source, rtag, comm, status);
    }
    gpo_stage_t st = GPO_STAGE_INIT;
    void *h = stage(&st, buf, count, dt, GPO_IN | GPO_OUT);
    if (h == NULL) return fail(comm, MPI_ERR_NO_MEM);
    return fail(comm, gpo_end_blocking(&st, PMPI_Sendrecv_replace(h, count, dt, dest, stag,
                                                                  source, rtag, comm, status)));
}

/* persistent requests: the host copy stays with the request; every
 * MPI_Start copies the send buffer's span in (and the receive buffer's, for
 * its gaps), the completion copies a receive's span back */
#define PERSISTENT(NAME, CONST, FLAGS)                                                    \
    int MPI_##NAME(CONST void *buf, int count, MPI_Datatype dt, int peer, int tag,        \
                   MPI_Comm comm, MPI_Request *req)                                       \
    {                                                                                     \
        if (!gpo_p2p_needs_staging(buf, count, dt)) {                                     \
            return PMPI_##NAME(buf, count, dt, peer, tag, comm, req);                     \
        }                                                                                 \
        gpo_stage_t st = GPO_STAGE_INIT;                                                  \
        void *h = stage(&st, buf, count, dt, FLAGS);                                      \
        if (h == NULL) return fail(comm, MPI_ERR_NO_MEM);                                 \
        return fail(comm, gpo_end_persistent(&st, PMPI_##NAME(h, count, dt, peer, tag,    \
                                                              comm, req), req));          \
    }

PERSISTENT(Send_init, const, GPO_IN)
PERSISTENT(Ssend_init, const, GPO_IN)
PERSISTENT(Rsend_init, const, GPO_IN)
PERSISTENT(Bsend_init, const, GPO_IN)
PERSISTENT(Recv_init, , GPO_IN | GPO_OUT)
