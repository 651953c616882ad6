/* The intra-host wire's interface ("memory" device, shm_iface.c): its state,
 * which its endpoints (shm_ep.h) and flushes (shm_flush.h) read, and the two
 * things they ask of it: whether GPU work is in flight, and starting a
 * data-path transfer. */
#ifndef GDRPIPE_SHM_IFACE_H
#define GDRPIPE_SHM_IFACE_H

#include "gdrpipe.h"

typedef struct gdrpipe_shm_iface {
    uct_base_iface_t  super;
    gp_shm_iface_t    *core;
    unsigned          max_payload;
    int               cma_ok;
    double            bw;
    double            latency;
    ucs_list_link_t   pending_eps;   /* endpoints with queued requests */
    void              *scratch;      /* bounce for put/get bcopy */
    gp_xfer_engine_t  *xfer;         /* data paths (NULL if they failed to start) */
    int               xfer_busy;     /* the engine may have work: progress it */
    ucs_queue_head_t  flush_q;       /* flush completions waiting for transfers */
    int               stats;         /* UCX_GDRPIPE_STATS */
    unsigned          progressing;   /* inside iface progress (nesting depth) */
    int               round_open;    /* a round of the engine is open until the end of
                                        the current or next progress call
                                        (gdrpipe_shm_xfer_start) */
} gdrpipe_shm_iface_t;

/* creates an interface of the "memory" device (UCT's iface_open) */
ucs_status_t gdrpipe_shm_iface_open(uct_md_h md, uct_worker_h worker,
                                    const uct_iface_params_t *params,
                                    const uct_iface_config_t *config,
                                    uct_iface_h *iface_p);

/* Nonzero while GPU work issued by the wire (data-path transfers) has not
 * completed: flushes and fences wait for it. */
static UCS_F_ALWAYS_INLINE int gdrpipe_shm_iface_busy(const gdrpipe_shm_iface_t *iface)
{
    return (iface->xfer != NULL) && (gp_xfer_outstanding(iface->xfer) != 0);
}

/* Starts a data-path transfer in a round of the engine: the direct device
 * copies of a round are launched together when it ends. Inside the
 * interface's progress the round is that call's; outside it (UCP starting a
 * rendezvous read from ucp_tag_recv_nbx, on a request that had already
 * arrived) the round stays open until the end of the next progress call, so
 * that the reads of the messages matched between two progress calls go in
 * one launch, not one copy each. A transfer completes only through progress
 * anyway. Host-only traffic pays nothing for it. */
static inline int gdrpipe_shm_xfer_start(gdrpipe_shm_iface_t *iface, gp_shm_peer_t *peer,
                                         int is_get, const struct iovec *local, size_t iovcnt,
                                         uint64_t remote_addr, const gp_rkey_t *rkey,
                                         gp_xfer_done_cb_t cb, void *arg)
{
    if (!iface->round_open) {
        gp_xfer_round_begin(iface->xfer);
        iface->round_open = 1;
    }
    iface->xfer_busy = 1;
    return gp_xfer_start(iface->xfer, peer, is_get, local, iovcnt, remote_addr, rkey, cb, arg);
}

#endif
