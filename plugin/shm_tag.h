/* Tag matching in the intra-host wire: UCT's tag-offload interface served in
 * software (shm_tag.c). UCP posts receive buffers (device memory included)
 * to the wire and hands it tagged sends; a message that meets a posted
 * receive is moved once, straight into the receive buffer: device payloads
 * travel by reference (remote key of the sender's buffer) and the receiver
 * copies them with the data paths (direct or staged), while the sender
 * waits for its acknowledgement. Anything else goes to UCP as unexpected. */
#ifndef GDRPIPE_SHM_TAG_H
#define GDRPIPE_SHM_TAG_H

#include <uct/api/uct.h>
#include <ucs/datastruct/queue.h>
#include <gdrpipe/capi.h>

/* the wire's active-message id of tag-matching messages (below the data
 * paths' control id GP_CTRL_AM_ID, above UCT's ids) */
#define GDRPIPE_TAG_AM_ID      0xfd
#define GDRPIPE_TAG_MAX_POSTED 1024 /* receives posted at once */
#define GDRPIPE_TAG_MAX_HDR    128  /* UCP's header of a rendezvous by reference */
#define GDRPIPE_TAG_MAX_REQ    1024 /* UCP's software rendezvous request (with rkeys) */
#define GDRPIPE_TAG_MAX_PEERS  64   /* senders cached for the acknowledgements */

typedef struct gdrpipe_shm_tag_posted {
    uct_tag_t         tag;
    uct_tag_t         mask;
    void              *buffer;
    size_t            length;
    uct_tag_context_t *ctx;
} gdrpipe_shm_tag_posted_t;

struct gdrpipe_shm_tag_op;
struct gdrpipe_shm_tag_peer;

typedef struct gdrpipe_shm_tag {
    int                       enabled;   /* UCX_GDRPIPE_TAG_MATCHING and UCP's callbacks */
    uct_tag_unexp_eager_cb_t  eager_cb;
    void                      *eager_arg;
    uct_tag_unexp_rndv_cb_t   rndv_cb;
    void                      *rndv_arg;
    size_t                    rx_headroom; /* UCP's, before descriptors we hand over */
    size_t                    rndv_max;    /* UCX_GDRPIPE_TAG_RNDV_MAX */
    /* receives posted by UCP, oldest first */
    gdrpipe_shm_tag_posted_t  *posted;
    unsigned                  nposted;
    /* sends by reference waiting for the receiver's acknowledgement */
    struct gdrpipe_shm_tag_op **ops;
    uint32_t                  *free_ops; /* stack of free slots */
    uint32_t                  nops, nfree, ops_outstanding;
    /* senders of messages by reference (acknowledged through their FIFO) */
    struct gdrpipe_shm_tag_peer *peers;
    unsigned                  npeers;
    ucs_queue_head_t          acks;      /* acknowledgements waiting for FIFO space */
    ucs_queue_head_t          canceled;  /* receives canceled, completion due */
    ucs_queue_head_t          deferred;  /* messages held behind an unexpected
                                          * message still being copied */
    int                       materializing;
    struct gdrpipe_shm_tag_recv *pending; /* the unexpected message being copied */
    size_t                    receiving; /* matched copies in flight */
    uint64_t                  progress_calls;
    /* counters (UCX_GDRPIPE_STATS) */
    uint64_t                  matched, unexpected, by_ref, inline_sent, truncated;
    uint64_t                  host_declined; /* host receives left to UCP */
} gdrpipe_shm_tag_t;

struct gdrpipe_shm_iface;
struct gdrpipe_shm_ep;

ucs_status_t gdrpipe_shm_tag_init(struct gdrpipe_shm_iface *iface,
                                  const uct_iface_params_t *params, int enable,
                                  size_t rndv_max);
void gdrpipe_shm_tag_cleanup(struct gdrpipe_shm_iface *iface);
void gdrpipe_shm_tag_query(struct gdrpipe_shm_iface *iface, uct_iface_attr_t *attr);
/* a wire message with GDRPIPE_TAG_AM_ID */
void gdrpipe_shm_tag_receive(struct gdrpipe_shm_iface *iface, void *data, uint32_t len);
unsigned gdrpipe_shm_tag_progress(struct gdrpipe_shm_iface *iface);
/* whether messages must be held (an unexpected one is still being copied):
 * then they are, and 1 is returned. Callers on the fast path test
 * gdrpipe_shm_tag_holding() first. */
int gdrpipe_shm_tag_defer(struct gdrpipe_shm_iface *iface, uint8_t am_id, void *data,
                          uint32_t len);
/* whether gdrpipe_shm_tag_progress has anything to do */
static UCS_F_ALWAYS_INLINE int gdrpipe_shm_tag_busy(const gdrpipe_shm_tag_t *t)
{
    return t->materializing || (t->ops_outstanding != 0) ||
           !ucs_queue_is_empty(&t->deferred) || !ucs_queue_is_empty(&t->acks) ||
           !ucs_queue_is_empty(&t->canceled);
}
static UCS_F_ALWAYS_INLINE int gdrpipe_shm_tag_holding(const gdrpipe_shm_tag_t *t)
{
    return t->materializing || !ucs_queue_is_empty(&t->deferred);
}
void gdrpipe_shm_tag_log_stats(const struct gdrpipe_shm_iface *iface);

ucs_status_t gdrpipe_shm_ep_tag_eager_short(uct_ep_h tl_ep, uct_tag_t tag,
                                            const void *data, size_t length);
ssize_t gdrpipe_shm_ep_tag_eager_bcopy(uct_ep_h tl_ep, uct_tag_t tag, uint64_t imm,
                                       uct_pack_callback_t pack_cb, void *arg,
                                       unsigned flags);
ucs_status_t gdrpipe_shm_ep_tag_eager_zcopy(uct_ep_h tl_ep, uct_tag_t tag, uint64_t imm,
                                            const uct_iov_t *iov, size_t iovcnt,
                                            unsigned flags, uct_completion_t *comp);
ucs_status_ptr_t gdrpipe_shm_ep_tag_rndv_zcopy(uct_ep_h tl_ep, uct_tag_t tag,
                                               const void *header,
                                               unsigned header_length,
                                               const uct_iov_t *iov, size_t iovcnt,
                                               unsigned flags, uct_completion_t *comp);
ucs_status_t gdrpipe_shm_ep_tag_rndv_cancel(uct_ep_h tl_ep, void *op);
ucs_status_t gdrpipe_shm_ep_tag_rndv_request(uct_ep_h tl_ep, uct_tag_t tag,
                                             const void *header,
                                             unsigned header_length, unsigned flags);
ucs_status_t gdrpipe_shm_iface_tag_recv_zcopy(uct_iface_h tl_iface, uct_tag_t tag,
                                              uct_tag_t tag_mask, const uct_iov_t *iov,
                                              size_t iovcnt, uct_tag_context_t *ctx);
ucs_status_t gdrpipe_shm_iface_tag_recv_cancel(uct_iface_h tl_iface,
                                               uct_tag_context_t *ctx, int force);

#endif
