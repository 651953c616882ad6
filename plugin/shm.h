/* The intra-host wire interface ("memory" device) and its endpoints. */
#ifndef GDRPIPE_SHM_H
#define GDRPIPE_SHM_H

#include "gdrpipe.h"


/* Active messages of the wire: at most this many iov entries (am_short_iov). */
#define GDRPIPE_SHM_AM_MAX_IOV 8

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
    int               round_open;    /* a round of the engine is open (gdrpipe_shm_xfer_start) */
} gdrpipe_shm_iface_t;

typedef struct gdrpipe_shm_flush {
    ucs_queue_elem_t  queue;
    uct_completion_t  *comp;
} gdrpipe_shm_flush_t;

typedef struct gdrpipe_shm_ep {
    uct_base_ep_t        super;
    gp_shm_peer_t        *peer;
    pid_t                pid;
    unsigned             max_payload; /* largest message to the peer: the smaller of
                                         our element and the peer's */
    uct_keepalive_info_t keepalive;
    ucs_queue_head_t     pending_q;
    ucs_list_link_t      pending_link;
    int                  on_pending_list;
    int                  fenced;     /* later operations wait for GPU transfers */
    int                  dispatching; /* its queued requests are being sent */
} gdrpipe_shm_ep_t;

typedef struct {
    uint64_t host_id;
} gdrpipe_shm_dev_addr_t;

UCS_CLASS_DECLARE_NEW_FUNC(gdrpipe_shm_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DECLARE_DELETE_FUNC(gdrpipe_shm_ep_t, uct_ep_t);

ucs_status_t gdrpipe_shm_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t header,
                                     const void *payload, unsigned length);
ucs_status_t gdrpipe_shm_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id,
                                         const uct_iov_t *iov, size_t iovcnt);
ssize_t gdrpipe_shm_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id, uct_pack_callback_t pack_cb,
                                void *arg, unsigned flags);
ucs_status_t gdrpipe_shm_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                      unsigned length, uint64_t remote_addr,
                                      uct_rkey_t rkey);
ssize_t gdrpipe_shm_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                                 void *arg, uint64_t remote_addr, uct_rkey_t rkey);
ucs_status_t gdrpipe_shm_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                      size_t iovcnt, uint64_t remote_addr,
                                      uct_rkey_t rkey, uct_completion_t *comp);
ucs_status_t gdrpipe_shm_ep_get_bcopy(uct_ep_h tl_ep, uct_unpack_callback_t unpack_cb,
                                      void *arg, size_t length, uint64_t remote_addr,
                                      uct_rkey_t rkey, uct_completion_t *comp);
ucs_status_t gdrpipe_shm_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                      size_t iovcnt, uint64_t remote_addr,
                                      uct_rkey_t rkey, uct_completion_t *comp);
ucs_status_t gdrpipe_shm_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                        unsigned flags);
void gdrpipe_shm_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb,
                                  void *arg);
ucs_status_t gdrpipe_shm_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                  uct_completion_t *comp);
ucs_status_t gdrpipe_shm_ep_fence(uct_ep_h tl_ep, unsigned flags);
ucs_status_t gdrpipe_shm_ep_check(uct_ep_h tl_ep, unsigned flags,
                                  uct_completion_t *comp);
unsigned gdrpipe_shm_iface_dispatch_pending(gdrpipe_shm_iface_t *iface);

/* Nonzero while GPU work issued by the wire (data-path transfers) has not
 * completed: flushes and fences wait for it. */
static UCS_F_ALWAYS_INLINE int gdrpipe_shm_iface_busy(const gdrpipe_shm_iface_t *iface)
{
    return (iface->xfer != NULL) && (gp_xfer_outstanding(iface->xfer) != 0);
}

/* After a fence, nothing may overtake the GPU work issued before it: active
 * messages by copy are delivered at once, while data-path transfers complete
 * later (protocol v2's "fenced write to remote" sends its ATP right after
 * put_zcopy + fence). Returns nonzero while the ep must hold back. */
static UCS_F_ALWAYS_INLINE int gdrpipe_shm_ep_fence_blocks(gdrpipe_shm_ep_t *ep)
{
    if (ucs_likely(!ep->fenced)) {
        return 0;
    }
    if (gdrpipe_shm_iface_busy(ucs_derived_of(ep->super.super.iface,
                                              gdrpipe_shm_iface_t))) {
        return 1;
    }
    ep->fenced = 0;
    return 0;
}

/* Whether an active message must be refused (UCS_ERR_NO_RESOURCE): after a
 * fence (above), or while requests this endpoint queued earlier wait (UCT's
 * ordering: a send may not overtake them; only their dispatch sends). */
static UCS_F_ALWAYS_INLINE int gdrpipe_shm_ep_am_blocked(gdrpipe_shm_ep_t *ep)
{
    return (ucs_unlikely(!ucs_queue_is_empty(&ep->pending_q)) && !ep->dispatching) ||
           gdrpipe_shm_ep_fence_blocks(ep);
}
/* An element of the peer's FIFO for one send, or NULL (UCS_ERR_NO_RESOURCE
 * to UCP) when the endpoint's sends wait behind others or the FIFO is full. */
static UCS_F_ALWAYS_INLINE void *gdrpipe_shm_ep_reserve(gdrpipe_shm_ep_t *ep,
                                                        uint64_t *index)
{
    if (gdrpipe_shm_ep_am_blocked(ep)) {
        return NULL;
    }
    return gp_shm_reserve(ep->peer, index);
}
ucs_status_t gdrpipe_shm_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                     uct_completion_t *comp);
void gdrpipe_shm_iface_complete_flushes(gdrpipe_shm_iface_t *iface);

/* Starts a data-path transfer. Inside the interface's progress it first opens
 * a round of the engine (once per progress call): the direct device copies of
 * the round are then launched together when progress ends. Host-only progress
 * calls pay nothing for it. */
static inline int gdrpipe_shm_xfer_start(gdrpipe_shm_iface_t *iface, gp_shm_peer_t *peer,
                                         int is_get, const struct iovec *local, size_t iovcnt,
                                         uint64_t remote_addr, const gp_rkey_t *rkey,
                                         gp_xfer_done_cb_t cb, void *arg)
{
    if (iface->progressing && !iface->round_open) {
        gp_xfer_round_begin(iface->xfer);
        iface->round_open = 1;
    }
    iface->xfer_busy = 1;
    return gp_xfer_start(iface->xfer, peer, is_get, local, iovcnt, remote_addr, rkey, cb, arg);
}

#endif
