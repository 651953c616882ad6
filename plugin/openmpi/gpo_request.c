/* Completion of staged operations (collectives, point-to-point): blocking
 * ones copy their outputs back before they return; nonblocking ones when
 * their request completes, from a completion callback chained in front of
 * whatever callback the request already had (Open MPI calls it from
 * progress, before MPI_Wait or MPI_Test can report the request complete). */
#include "ompi_config.h"

#include "gpo_request.h"

#include <stdio.h>
#include <stdlib.h>

#include "ompi/constants.h"
#include "ompi/request/request.h"

#define GPO_PENDING_MAGIC 0x6764727069706531ull /* "gdrpipe1" */

typedef struct gpo_pending {
    unsigned long long magic; /* first: tells the two ways of being called apart */
    ompi_request_t *req;
    gpo_stage_t st;
    ompi_request_complete_fn_t old_cb;
    void *old_data;
} gpo_pending_t;

int gpo_end_blocking(gpo_stage_t *st, int rc)
{
    int crc = gpo_stage_end(st, rc == OMPI_SUCCESS);
    return rc != OMPI_SUCCESS ? rc : crc != 0 ? OMPI_ERROR : OMPI_SUCCESS;
}

/* Open MPI calls a request's completion callback with the request; but when
 * the MPI layer chains its own callback in front of ours afterwards (to
 * release derived datatypes of a nonblocking collective, coll_base_util.c),
 * that one calls ours with our callback data instead. Both work here. */
static int pending_complete(ompi_request_t *arg)
{
    gpo_pending_t *p = (gpo_pending_t *)arg;
    if (p->magic != GPO_PENDING_MAGIC) {
        p = (gpo_pending_t *)arg->req_complete_cb_data;
    }
    ompi_request_t *req = p->req;
    ompi_request_complete_fn_t old_cb = p->old_cb;
    if (gpo_stage_end(&p->st, req->req_status.MPI_ERROR == MPI_SUCCESS) != 0 &&
        req->req_status.MPI_ERROR == MPI_SUCCESS) {
        req->req_status.MPI_ERROR = MPI_ERR_OTHER;
    }
    void *old_data = p->old_data;
    int direct = (void *)arg == (void *)req;
    p->magic = 0;
    free(p);
    if (direct || old_cb != NULL) {
        /* the request's data is ours only when it called us itself */
        req->req_complete_cb_data = old_data;
    }
    return old_cb != NULL ? old_cb(req) : 0;
}

int gpo_end_request(gpo_stage_t *st, int rc, ompi_request_t **reqp)
{
    if (rc != OMPI_SUCCESS) {
        gpo_stage_end(st, 0);
        return rc;
    }
    ompi_request_t *req = *reqp;
    if (REQUEST_COMPLETE(req)) {
        return gpo_stage_end(st, 1) != 0 ? OMPI_ERROR : OMPI_SUCCESS;
    }
    gpo_pending_t *p = malloc(sizeof(*p));
    if (p == NULL) {
        /* no memory to wait asynchronously: complete it here */
        rc = ompi_request_wait(reqp, MPI_STATUS_IGNORE);
        *reqp = &ompi_request_empty;
        return gpo_end_blocking(st, rc);
    }
    p->magic = GPO_PENDING_MAGIC;
    p->req = req;
    p->st = *st;
    p->old_cb = req->req_complete_cb;
    p->old_data = req->req_complete_cb_data;
    req->req_complete_cb_data = p;
    req->req_complete_cb = pending_complete;
    return OMPI_SUCCESS;
}

int gpo_refuse(const char *what)
{
    fprintf(stderr,
            "gdrpipe (Open MPI): %s on a device buffer: not supported "
            "(this Open MPI has no CUDA support and gdrpipe cannot stage it)\n",
            what);
    return OMPI_ERR_NOT_SUPPORTED;
}
