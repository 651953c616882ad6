/* Completion of staged operations on Open MPI 4.1 requests
 * (coll_gdrpipe_request.c): shared by the collective component and the
 * point-to-point interposer. Returns Open MPI error codes (OMPI_SUCCESS is
 * MPI_SUCCESS). */
#ifndef GDRPIPE_OMPI_REQUEST_H
#define GDRPIPE_OMPI_REQUEST_H

#include "gpo_stage.h"

struct ompi_request_t;

/* A blocking operation returned rc: copy out (when rc is success), free. */
int gpo_end_blocking(gpo_stage_t *st, int rc);
/* A nonblocking operation returned rc and *req: copy out when *req
 * completes (now, or from its completion callback), free then. */
int gpo_end_request(gpo_stage_t *st, int rc, struct ompi_request_t **req);
/* A persistent request was made on the staged host buffers (rc, *req): the
 * buffers stay with the request; every MPI_Start copies the inputs in and
 * the completion copies the outputs back; MPI_Request_free releases them. */
int gpo_end_persistent(gpo_stage_t *st, int rc, struct ompi_request_t **req);

#endif
