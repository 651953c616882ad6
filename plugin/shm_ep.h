/* Endpoints of the intra-host wire (shm_ep.c): active messages through the
 * peer's FIFO, one-sided get/put, queued requests. The interface's operation
 * table names these functions, and its progress dispatches the queued
 * requests. */
#ifndef GDRPIPE_SHM_EP_H
#define GDRPIPE_SHM_EP_H

#include "shm_iface.h"

/* The endpoint's limits, reported by the interface: iov entries of
 * am_short_iov and of one-sided zero-copy operations. */
#define GDRPIPE_SHM_AM_MAX_IOV 8
#define GDRPIPE_SHM_MAX_IOV    16

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
    int                  sink_said;   /* the last word sent to the peer on where its
                                         device data lands here (1: host; -1: none) */
    unsigned             sink_reads;  /* reads of the peer's device memory */
} gdrpipe_shm_ep_t;

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

/* Runs the queued requests of every endpoint of the interface whose peer
 * FIFO has room again; returns how many endpoints sent. */
unsigned gdrpipe_shm_ep_dispatch_pending(gdrpipe_shm_iface_t *iface);

#endif
