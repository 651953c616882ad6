/* The device<->host copy interface ("cuda" device): the loopback transport
 * UCP uses to pack and unpack GPU buffers (the role of UCX's cuda_copy). */
#ifndef GDRPIPE_COPY_H
#define GDRPIPE_COPY_H

#include "gdrpipe.h"

typedef struct gdrpipe_copy_op {
    ucs_queue_elem_t queue;
    gp_cuda_op_t     *op;
    uct_completion_t *comp;
} gdrpipe_copy_op_t;

typedef struct gdrpipe_copy_iface {
    uct_base_iface_t super;
    uint64_t         id;
    ucs_queue_head_t outstanding;   /* gdrpipe_copy_op_t, in issue order */
    ucs_mpool_t      op_mp;
    double           h2d_bw;
    double           d2h_bw;
    double           latency;
} gdrpipe_copy_iface_t;

typedef struct gdrpipe_copy_ep {
    uct_base_ep_t super;
} gdrpipe_copy_ep_t;

ucs_status_t gdrpipe_copy_iface_open(uct_md_h md, uct_worker_h worker,
                                     const uct_iface_params_t *params,
                                     const uct_iface_config_t *config,
                                     uct_iface_h *iface_p);

#endif
