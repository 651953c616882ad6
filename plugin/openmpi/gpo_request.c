/* Completion of staged operations (collectives, point-to-point): blocking
 * ones copy their outputs back before they return; nonblocking ones when
 * their request completes, from a completion callback chained in front of
 * whatever callback the request already had (Open MPI calls it from
 * progress, before MPI_Wait or MPI_Test can report the request complete). */
#include "ompi_config.h"

#include "gpo_request.h"

#include <pthread.h>
#include <stdlib.h>

#include "ompi/constants.h"
#include "ompi/request/request.h"

#define GPO_PENDING_MAGIC 0x6764727069706531ull /* "gdrpipe1" */

/* a persistent request's staging (see below) */
typedef struct gpo_persist {
    struct gpo_persist *next;
    ompi_request_t *req;
    gpo_stage_t st;
    ompi_request_start_fn_t old_start;
    ompi_request_free_fn_t old_free;
    int orphan; /* freed by MPI_Request_free while active: release at completion */
} gpo_persist_t;

typedef struct gpo_pending {
    unsigned long long magic; /* first: tells the two ways of being called apart */
    ompi_request_t *req;
    gpo_stage_t st;           /* owned: copied back and freed */
    gpo_persist_t *persist;   /* or a persistent request's: copied back only */
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
    int ok = req->req_status.MPI_ERROR == MPI_SUCCESS;
    int crc = p->persist != NULL ? (ok ? gpo_stage_copy_out(&p->persist->st) : 0)
                                 : gpo_stage_end(&p->st, ok);
    if (p->persist != NULL && p->persist->orphan) {
        gpo_stage_end(&p->persist->st, 0);
        free(p->persist);
    }
    if (crc != 0 && ok) {
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

/* puts p's completion callback in front of the request's */
static void chain(gpo_pending_t *p, ompi_request_t *req)
{
    p->magic = GPO_PENDING_MAGIC;
    p->req = req;
    p->old_cb = req->req_complete_cb;
    p->old_data = req->req_complete_cb_data;
    req->req_complete_cb_data = p;
    req->req_complete_cb = pending_complete;
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
    gpo_pending_t *p = calloc(1, sizeof(*p));
    if (p == NULL) {
        /* no memory to wait asynchronously: complete it here */
        rc = ompi_request_wait(reqp, MPI_STATUS_IGNORE);
        *reqp = &ompi_request_empty;
        return gpo_end_blocking(st, rc);
    }
    p->st = *st;
    chain(p, req);
    return OMPI_SUCCESS;
}

/* ---- persistent requests ------------------------------------------------
 * The staged host buffers live as long as the request. Its start function
 * is wrapped: every MPI_Start copies the inputs in anew, starts the next
 * module's request and chains the copy back onto its completion; its free
 * function is wrapped to release the buffers. Requests are found by address
 * in a list (MPI_Startall hands several to one start call). */
static gpo_persist_t *persist_list;
static pthread_mutex_t persist_mu = PTHREAD_MUTEX_INITIALIZER;

static gpo_persist_t *persist_find(ompi_request_t *req, int unlink)
{
    pthread_mutex_lock(&persist_mu);
    gpo_persist_t **pp = &persist_list;
    while (*pp != NULL && (*pp)->req != req) {
        pp = &(*pp)->next;
    }
    gpo_persist_t *p = *pp;
    if (p != NULL && unlink) {
        *pp = p->next;
    }
    pthread_mutex_unlock(&persist_mu);
    return p;
}

static int persist_start(size_t count, ompi_request_t **reqs)
{
    for (size_t i = 0; i < count; i++) {
        gpo_persist_t *p = persist_find(reqs[i], 0);
        if (p == NULL) {
            return OMPI_ERR_BAD_PARAM;
        }
        gpo_pending_t *c = calloc(1, sizeof(*c));
        if (c == NULL) {
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
        if (gpo_stage_copy_in(&p->st) != 0) {
            free(c);
            return OMPI_ERROR;
        }
        int rc = p->old_start(1, &reqs[i]);
        if (rc != OMPI_SUCCESS) {
            free(c);
            return rc;
        }
        c->persist = p;
        if (REQUEST_COMPLETE(reqs[i])) {
            free(c);
            if (gpo_stage_copy_out(&p->st) != 0) {
                return OMPI_ERROR;
            }
        } else {
            chain(c, reqs[i]);
        }
    }
    return OMPI_SUCCESS;
}

static int persist_free(ompi_request_t **reqp)
{
    gpo_persist_t *p = persist_find(*reqp, 1);
    if (p == NULL) {
        return OMPI_ERR_BAD_PARAM;
    }
    /* the request object goes back to its module's free list and may be
     * handed out again: it must leave with the functions it came with */
    ompi_request_free_fn_t old_free = p->old_free;
    (*reqp)->req_start = p->old_start;
    (*reqp)->req_free = old_free;
    if (REQUEST_COMPLETE(*reqp)) {
        gpo_stage_end(&p->st, 0);
        free(p);
    } else {
        /* still running (MPI allows freeing it): its completion copies
         * back and then releases the buffers */
        p->orphan = 1;
    }
    return old_free(reqp);
}

int gpo_end_persistent(gpo_stage_t *st, int rc, ompi_request_t **reqp)
{
    gpo_persist_t *p = rc == OMPI_SUCCESS ? calloc(1, sizeof(*p)) : NULL;
    if (p == NULL) {
        gpo_stage_end(st, 0);
        if (rc == OMPI_SUCCESS) {
            ompi_request_free(reqp);
            rc = OMPI_ERR_OUT_OF_RESOURCE;
        }
        return rc;
    }
    ompi_request_t *req = *reqp;
    p->req = req;
    p->st = *st;
    p->old_start = req->req_start;
    p->old_free = req->req_free;
    req->req_start = persist_start;
    req->req_free = persist_free;
    pthread_mutex_lock(&persist_mu);
    p->next = persist_list;
    persist_list = p;
    pthread_mutex_unlock(&persist_mu);
    return OMPI_SUCCESS;
}
