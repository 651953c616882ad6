/* Tag matching in the intra-host wire (see shm_tag.h).
 *
 * Wire messages (am_id GDRPIPE_TAG_AM_ID), the kind in the first byte:
 *   EAGER      a 16-byte gdrpipe_tag_eager_t, the imm (8 bytes, only when
 *              nonzero), then the payload inline (host bytes; device bytes
 *              copied in only where a reference cannot serve). Short, so
 *              that a small message and the FIFO element's header share one
 *              cache line, as an active message does.
 * The others start with a gdrpipe_tag_msg_t:
 *   EAGER_REF  eager message of device memory by reference: the sender's
 *              wire address and the remote key of its buffer follow
 *   RNDV_REF   UCT's rendezvous (uct_ep_tag_rndv_zcopy): the same reference,
 *              then UCP's header
 *   RNDV_REQ   UCP's software rendezvous request: its header inline, always
 *              handed to UCP (which matches it against its own queue)
 *   ACK        the receiver copied a *_REF message (or gave it up): the
 *              sender completes the operation
 * Matched: the posted buffer takes the payload (inline: UCP copies it out;
 * by reference: one copy by the data paths, then ACK). Unexpected: UCP's
 * callbacks; an EAGER_REF is first copied to host memory, and while that
 * copy runs every later message is held, so that UCP sees them in order;
 * a RNDV_REF is handed over with its remote key and UCP fetches it (its ATS
 * cancels the sender's operation).
 * Every message is network input: lengths, kinds, operation ids and remote
 * keys are checked before use. */
#include "shm.h"

#include <uct/base/uct_iov.inl>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <string.h>
#include <errno.h>

enum {
    GDRPIPE_TAG_EAGER     = 1,
    GDRPIPE_TAG_EAGER_REF = 2,
    GDRPIPE_TAG_RNDV_REF  = 3,
    GDRPIPE_TAG_RNDV_REQ  = 4,
    GDRPIPE_TAG_ACK       = 5
};

typedef struct gdrpipe_tag_msg {
    uint8_t  kind;
    uint8_t  reserved;
    uint16_t hdr_length;  /* RNDV_*: UCP's header bytes at the end */
    int32_t  status;      /* ACK: UCS_OK or an error */
    uint64_t tag;
    uint64_t imm;
    uint64_t op_id;       /* *_REF, ACK */
    uint64_t length;      /* payload bytes: inline (EAGER) or at remote_addr */
    uint64_t remote_addr;
} gdrpipe_tag_msg_t;

typedef struct gdrpipe_tag_eager {
    uint8_t  kind;        /* GDRPIPE_TAG_EAGER */
    uint8_t  has_imm;     /* 1: an 8-byte imm follows */
    uint16_t reserved;
    uint32_t reserved2;
    uint64_t tag;
} gdrpipe_tag_eager_t;

/* the largest eager header: gdrpipe_tag_eager_t and the imm */
#define GDRPIPE_TAG_EAGER_MAX_HDR (sizeof(gdrpipe_tag_eager_t) + sizeof(uint64_t))

#define GDRPIPE_TAG_ADDR_MAX 32

typedef struct gdrpipe_tag_ref {
    uint8_t   addr[GDRPIPE_TAG_ADDR_MAX]; /* the sender's wire address */
    gp_rkey_t rkey;
} gdrpipe_tag_ref_t;

#define GDRPIPE_TAG_REF_SIZE (sizeof(gdrpipe_tag_msg_t) + sizeof(gdrpipe_tag_ref_t))

typedef struct gdrpipe_shm_tag_op {
    uint32_t         gen;
    uint32_t         slot;
    int              in_use;
    gp_shm_peer_t    *peer;   /* held while the operation lives */
    void             *reg;    /* the registration the remote key names */
    uct_completion_t *comp;
} gdrpipe_shm_tag_op_t;

typedef struct gdrpipe_shm_tag_peer {
    uint8_t       addr[GDRPIPE_TAG_ADDR_MAX];
    gp_shm_peer_t *peer;
} gdrpipe_shm_tag_peer_t;

typedef struct gdrpipe_shm_tag_ack {
    ucs_queue_elem_t queue;
    gp_shm_peer_t    *peer;
    uint64_t         op_id;
    int32_t          status;
} gdrpipe_shm_tag_ack_t;

typedef struct gdrpipe_shm_tag_cancel {
    ucs_queue_elem_t  queue;
    uct_tag_context_t *ctx;
} gdrpipe_shm_tag_cancel_t;

typedef struct gdrpipe_shm_tag_held {
    ucs_queue_elem_t queue;
    uint8_t          am_id;
    uint32_t         len;
    char             data[];
} gdrpipe_shm_tag_held_t;

/* a copy of a *_REF payload in flight */
struct gdrpipe_shm_tag_recv {
    gdrpipe_shm_iface_t *iface;
    uct_tag_context_t   *ctx;     /* NULL: unexpected, copied to `bounce` */
    uct_tag_t           tag;
    uint64_t            imm;
    size_t              length;
    gp_shm_peer_t       *peer;
    uint64_t            op_id;
    void                *bounce;
    int                 done;
    int                 status;
};
typedef struct gdrpipe_shm_tag_recv gdrpipe_shm_tag_recv_t;

static UCS_F_ALWAYS_INLINE gdrpipe_shm_tag_t *gdrpipe_tag_of(gdrpipe_shm_iface_t *iface)
{
    return &iface->tag;
}

/* ---------------------------------------------------------------- setup -- */

ucs_status_t gdrpipe_shm_tag_init(gdrpipe_shm_iface_t *iface,
                                  const uct_iface_params_t *params, int enable,
                                  size_t rndv_max)
{
    gdrpipe_shm_tag_t *t = gdrpipe_tag_of(iface);
    const uint64_t need  = UCT_IFACE_PARAM_FIELD_HW_TM_EAGER_CB |
                           UCT_IFACE_PARAM_FIELD_HW_TM_EAGER_ARG |
                           UCT_IFACE_PARAM_FIELD_HW_TM_RNDV_CB |
                           UCT_IFACE_PARAM_FIELD_HW_TM_RNDV_ARG;

    memset(t, 0, sizeof(*t));
    ucs_queue_head_init(&t->acks);
    ucs_queue_head_init(&t->canceled);
    ucs_queue_head_init(&t->deferred);
    if (!enable || ((params->field_mask & need) != need) ||
        (params->eager_cb == NULL) || (params->rndv_cb == NULL)) {
        return UCS_OK;
    }
    if ((gp_shm_address_length() > GDRPIPE_TAG_ADDR_MAX) ||
        (iface->max_payload < sizeof(gdrpipe_tag_msg_t) + GDRPIPE_TAG_MAX_REQ)) {
        ucs_diag("gdrpipe: FIFO elements of %u bytes are too small for tag matching "
                 "(UCX_GDRPIPE_SEG_SIZE >= %zu): left to UCP", iface->max_payload,
                 sizeof(gdrpipe_tag_msg_t) + GDRPIPE_TAG_MAX_REQ);
        return UCS_OK;
    }
    t->posted = ucs_calloc(GDRPIPE_TAG_MAX_POSTED, sizeof(*t->posted), "gdrpipe tag posted");
    t->peers  = ucs_calloc(GDRPIPE_TAG_MAX_PEERS, sizeof(*t->peers), "gdrpipe tag peers");
    if ((t->posted == NULL) || (t->peers == NULL)) {
        ucs_free(t->posted);
        ucs_free(t->peers);
        t->posted = NULL;
        t->peers  = NULL;
        return UCS_ERR_NO_MEMORY;
    }
    t->eager_cb  = params->eager_cb;
    t->eager_arg = params->eager_arg;
    t->rndv_cb   = params->rndv_cb;
    t->rndv_arg  = params->rndv_arg;
    t->rx_headroom = (params->field_mask & UCT_IFACE_PARAM_FIELD_RX_HEADROOM) ?
                     params->rx_headroom : 0;
    t->rndv_max  = (rndv_max == UCS_MEMUNITS_INF) ? SIZE_MAX : rndv_max;
    t->enabled   = 1;
    return UCS_OK;
}

static void gdrpipe_shm_tag_op_free(gdrpipe_shm_iface_t *iface, gdrpipe_shm_tag_op_t *op)
{
    gdrpipe_shm_tag_t *t = gdrpipe_tag_of(iface);

    if (op->reg != NULL) {
        gp_mem_deregister(op->reg);
        op->reg = NULL;
    }
    if (op->peer != NULL) {
        gp_shm_disconnect(iface->core, op->peer);
    }
    op->peer   = NULL;
    op->comp   = NULL;
    op->in_use = 0;
    ++op->gen;
    t->free_ops[t->nfree++] = op->slot;
    --t->ops_outstanding;
}

void gdrpipe_shm_tag_cleanup(gdrpipe_shm_iface_t *iface)
{
    gdrpipe_shm_tag_t *t = gdrpipe_tag_of(iface);
    gdrpipe_shm_tag_ack_t *ack;
    gdrpipe_shm_tag_cancel_t *c;
    gdrpipe_shm_tag_held_t *h;
    uint32_t i;

    if (t->ops_outstanding != 0) {
        ucs_debug("gdrpipe: %u tagged sends by reference unacknowledged at close",
                  t->ops_outstanding);
    }
    for (i = 0; i < t->nops; ++i) {
        if (t->ops[i]->in_use) {
            gdrpipe_shm_tag_op_free(iface, t->ops[i]);
        }
        ucs_free(t->ops[i]);
    }
    ucs_free(t->ops);
    ucs_free(t->free_ops);
    while (!ucs_queue_is_empty(&t->acks)) {
        ack = ucs_queue_pull_elem_non_empty(&t->acks, gdrpipe_shm_tag_ack_t, queue);
        ucs_free(ack);
    }
    while (!ucs_queue_is_empty(&t->canceled)) {
        c = ucs_queue_pull_elem_non_empty(&t->canceled, gdrpipe_shm_tag_cancel_t, queue);
        ucs_free(c);
    }
    while (!ucs_queue_is_empty(&t->deferred)) {
        h = ucs_queue_pull_elem_non_empty(&t->deferred, gdrpipe_shm_tag_held_t, queue);
        ucs_free(h);
    }
    for (i = 0; i < t->npeers; ++i) {
        gp_shm_disconnect(iface->core, t->peers[i].peer);
    }
    ucs_free(t->peers);
    ucs_free(t->posted);
    memset(t, 0, sizeof(*t));
}

void gdrpipe_shm_tag_query(gdrpipe_shm_iface_t *iface, uct_iface_attr_t *attr)
{
    gdrpipe_shm_tag_t *t = gdrpipe_tag_of(iface);
    /* an eager message's header is 16 bytes, 24 with an imm: the same
     * payload as an active message's eager (8 KiB with the default
     * elements, which UCP otherwise sends by rendezvous) */
    size_t inline_max    = iface->max_payload - GDRPIPE_TAG_EAGER_MAX_HDR;

    /* UCP's tag lane also needs get_zcopy (its software rendezvous) */
    if (!t->enabled || !(attr->cap.flags & UCT_IFACE_FLAG_GET_ZCOPY)) {
        return;
    }
    attr->cap.flags |= UCT_IFACE_FLAG_TAG_EAGER_SHORT | UCT_IFACE_FLAG_TAG_EAGER_BCOPY |
                       UCT_IFACE_FLAG_TAG_EAGER_ZCOPY | UCT_IFACE_FLAG_TAG_RNDV_ZCOPY;
    attr->cap.tag.recv.min_recv        = 0;
    attr->cap.tag.recv.max_zcopy       = SIZE_MAX;
    attr->cap.tag.recv.max_iov         = 1;
    attr->cap.tag.recv.max_outstanding = GDRPIPE_TAG_MAX_POSTED;
    attr->cap.tag.eager.max_short      = inline_max;
    attr->cap.tag.eager.max_bcopy      = inline_max;
    attr->cap.tag.eager.max_zcopy      = inline_max;
    attr->cap.tag.eager.max_iov        = GDRPIPE_SHM_AM_MAX_IOV;
    /* above it, UCP sends its software rendezvous request (RNDV_REQ) */
    attr->cap.tag.rndv.max_zcopy       = t->rndv_max;
    attr->cap.tag.rndv.max_hdr         = GDRPIPE_TAG_MAX_HDR;
    attr->cap.tag.rndv.max_iov         = 1;
}

/* ------------------------------------------------------------- receives -- */

ucs_status_t gdrpipe_shm_iface_tag_recv_zcopy(uct_iface_h tl_iface, uct_tag_t tag,
                                              uct_tag_t tag_mask, const uct_iov_t *iov,
                                              size_t iovcnt, uct_tag_context_t *ctx)
{
    gdrpipe_shm_iface_t *iface = ucs_derived_of(tl_iface, gdrpipe_shm_iface_t);
    gdrpipe_shm_tag_t *t       = gdrpipe_tag_of(iface);
    const gdrpipe_memh_t *memh;
    gdrpipe_shm_tag_posted_t *p;

    if ((iovcnt != 1) || !t->enabled) {
        return UCS_ERR_EXCEEDS_LIMIT;
    }
    /* Host receives stay with UCP: posted, a host message would be copied
     * twice (into UCP's bounce buffer, then out of it) and completed through
     * the offload callbacks; unposted, it arrives as UCP's unexpected eager
     * and is copied once, as on the active-message path. UCP keeps the
     * receive in software and, for MPI's order, every later receive of the
     * same tag queue with it. */
    memh = iov[0].memh;
    if ((memh == UCT_MEM_HANDLE_NULL) || (memh->rkey.kind == GP_RKEY_HOST)) {
        ++t->host_declined;
        return UCS_ERR_EXCEEDS_LIMIT;
    }
    if (t->nposted == GDRPIPE_TAG_MAX_POSTED) {
        return UCS_ERR_NO_RESOURCE;
    }
    p         = &t->posted[t->nposted++];
    p->tag    = tag;
    p->mask   = tag_mask;
    p->buffer = iov[0].buffer;
    p->length = uct_iov_get_length(&iov[0]);
    p->ctx    = ctx;
    ucs_trace("gdrpipe: posted receive %p tag 0x%lx/0x%lx %zu bytes at %p", ctx,
              (unsigned long)tag, (unsigned long)tag_mask, p->length, p->buffer);
    return UCS_OK;
}

static void gdrpipe_shm_tag_unpost(gdrpipe_shm_tag_t *t, unsigned i)
{
    memmove(&t->posted[i], &t->posted[i + 1], (t->nposted - i - 1) * sizeof(t->posted[0]));
    --t->nposted;
}

ucs_status_t gdrpipe_shm_iface_tag_recv_cancel(uct_iface_h tl_iface,
                                               uct_tag_context_t *ctx, int force)
{
    gdrpipe_shm_iface_t *iface = ucs_derived_of(tl_iface, gdrpipe_shm_iface_t);
    gdrpipe_shm_tag_t *t       = gdrpipe_tag_of(iface);
    gdrpipe_shm_tag_cancel_t *c;
    unsigned i;

    for (i = 0; i < t->nposted; ++i) {
        if (t->posted[i].ctx != ctx) {
            continue;
        }
        if (!force) {
            /* UCP waits for the completion, given from progress */
            c = ucs_malloc(sizeof(*c), "gdrpipe tag cancel");
            if (c == NULL) {
                return UCS_ERR_NO_MEMORY;
            }
            c->ctx = ctx;
            ucs_queue_push(&t->canceled, &c->queue);
        }
        gdrpipe_shm_tag_unpost(t, i);
        return UCS_OK;
    }
    return UCS_ERR_NO_ELEM;
}

/* The oldest posted receive the tag matches, removed from the list; NULL
 * when none (the message is unexpected). */
static int gdrpipe_shm_tag_match(gdrpipe_shm_tag_t *t, uct_tag_t tag,
                                 gdrpipe_shm_tag_posted_t *out)
{
    unsigned i;

    for (i = 0; i < t->nposted; ++i) {
        if (((tag ^ t->posted[i].tag) & t->posted[i].mask) == 0) {
            *out = t->posted[i];
            ucs_trace("gdrpipe: tag 0x%lx matched receive %p (%zu bytes)", (unsigned long)tag,
                      out->ctx, out->length);
            gdrpipe_shm_tag_unpost(t, i);
            return 1;
        }
    }
    return 0;
}

/* the peer that sent a *_REF message, connected once */
static gp_shm_peer_t *gdrpipe_shm_tag_peer(gdrpipe_shm_iface_t *iface, const uint8_t *addr)
{
    gdrpipe_shm_tag_t *t = gdrpipe_tag_of(iface);
    size_t len           = gp_shm_address_length();
    gp_shm_peer_t *peer;
    const char *why;
    char err[256];
    unsigned i;

    for (i = 0; i < t->npeers; ++i) {
        if (memcmp(t->peers[i].addr, addr, len) == 0) {
            return t->peers[i].peer;
        }
    }
    why = gp_shm_check_address(addr, len);
    if (why != NULL) {
        gdrpipe_peer_error("gdrpipe: tagged message with a bad sender address: %s", why);
        return NULL;
    }
    peer = gp_shm_connect(iface->core, addr, len, err, sizeof(err));
    if (peer == NULL) {
        ucs_error("gdrpipe: cannot reach the sender of a tagged message: %s", err);
        return NULL;
    }
    if (t->npeers == GDRPIPE_TAG_MAX_PEERS) {
        /* forget the oldest: its acknowledgements are all sent */
        gp_shm_disconnect(iface->core, t->peers[0].peer);
        memmove(&t->peers[0], &t->peers[1], (t->npeers - 1) * sizeof(t->peers[0]));
        --t->npeers;
    }
    memcpy(t->peers[t->npeers].addr, addr, len);
    t->peers[t->npeers].peer = peer;
    ++t->npeers;
    return peer;
}

static void gdrpipe_shm_tag_send_ack(gdrpipe_shm_iface_t *iface, gp_shm_peer_t *peer,
                                     uint64_t op_id, ucs_status_t status)
{
    gdrpipe_shm_tag_t *t = gdrpipe_tag_of(iface);
    gdrpipe_shm_tag_ack_t *ack;
    gdrpipe_tag_msg_t *m;
    uint64_t index;

    if (ucs_queue_is_empty(&t->acks) && ((m = gp_shm_reserve(peer, &index)) != NULL)) {
        memset(m, 0, sizeof(*m));
        m->kind   = GDRPIPE_TAG_ACK;
        m->op_id  = op_id;
        m->status = status;
        gp_shm_commit(peer, index, GDRPIPE_TAG_AM_ID, sizeof(*m));
        return;
    }
    ack = ucs_malloc(sizeof(*ack), "gdrpipe tag ack");
    if (ack == NULL) {
        ucs_error("gdrpipe: out of memory: an acknowledgement is lost");
        return;
    }
    gp_shm_peer_hold(iface->core, peer);
    ack->peer   = peer;
    ack->op_id  = op_id;
    ack->status = status;
    ucs_queue_push(&t->acks, &ack->queue);
}

static unsigned gdrpipe_shm_tag_flush_acks(gdrpipe_shm_iface_t *iface)
{
    gdrpipe_shm_tag_t *t = gdrpipe_tag_of(iface);
    gdrpipe_shm_tag_ack_t *ack;
    gdrpipe_tag_msg_t *m;
    unsigned count = 0;
    uint64_t index;

    while (!ucs_queue_is_empty(&t->acks)) {
        ack = ucs_queue_head_elem_non_empty(&t->acks, gdrpipe_shm_tag_ack_t, queue);
        if (gp_shm_peer_alive(ack->peer)) {
            m = gp_shm_reserve(ack->peer, &index);
            if (m == NULL) {
                break;
            }
            memset(m, 0, sizeof(*m));
            m->kind   = GDRPIPE_TAG_ACK;
            m->op_id  = ack->op_id;
            m->status = ack->status;
            gp_shm_commit(ack->peer, index, GDRPIPE_TAG_AM_ID, sizeof(*m));
        }
        ucs_queue_pull_non_empty(&t->acks);
        gp_shm_disconnect(iface->core, ack->peer);
        ucs_free(ack);
        ++count;
    }
    return count;
}

static void gdrpipe_shm_tag_get_done(void *arg, int status)
{
    gdrpipe_shm_tag_recv_t *r  = arg;
    gdrpipe_shm_iface_t *iface = r->iface;
    gdrpipe_shm_tag_t *t       = gdrpipe_tag_of(iface);

    if (status != 0) {
        ucs_error("gdrpipe: copy of a %zu-byte tagged message from pid %d failed: %s",
                  r->length, (int)gp_shm_peer_pid(r->peer), strerror(-status));
    }
    if (r->ctx == NULL) { /* an unexpected message: delivered from progress */
        r->status = status;
        r->done   = 1;
        return;
    }
    --t->receiving;
    r->ctx->completed_cb(r->ctx, r->tag, r->imm, r->length, NULL,
                         (status == 0) ? UCS_OK : UCS_ERR_IO_ERROR);
    gdrpipe_shm_tag_send_ack(iface, r->peer, r->op_id,
                             (status == 0) ? UCS_OK : UCS_ERR_IO_ERROR);
    ucs_free(r);
}

/* Starts copying length bytes of the peer's memory at remote_addr into dst:
 * 0 done, 1 in progress (cb later), <0 error. */
static int gdrpipe_shm_tag_get(gdrpipe_shm_iface_t *iface, gp_shm_peer_t *peer,
                               void *dst, size_t length, uint64_t remote_addr,
                               const gp_rkey_t *rkey, gdrpipe_shm_tag_recv_t *r)
{
    struct iovec local = {dst, length};
    int device;
    ssize_t ret;

    if (length == 0) {
        return 0;
    }
    if ((rkey->kind == GP_RKEY_HOST) &&
        (gdrpipe_shm_piece_kind(dst, length, &device) == GDRPIPE_PIECE_HOST)) {
        ret = gp_cma_read(gp_shm_peer_pid(peer), &local, 1, remote_addr);
        return (ret < 0) ? (int)ret : 0;
    }
    if (iface->xfer == NULL) {
        return -ENOTSUP;
    }
    return gdrpipe_shm_xfer_start(iface, peer, 1, &local, 1, remote_addr, rkey,
                         gdrpipe_shm_tag_get_done, r);
}

/* What a *_REF message carries is network input: checked before use. */
static const char *gdrpipe_shm_tag_check_ref(const gdrpipe_tag_ref_t *ref,
                                             gp_shm_peer_t *peer)
{
    const char *why = gp_rkey_check(&ref->rkey);

    if (why != NULL) {
        return why;
    }
    if (ref->rkey.pid != (int32_t)gp_shm_peer_pid(peer)) {
        return "remote key of another process than the sender";
    }
    return NULL;
}

static void gdrpipe_shm_tag_desc_release(uct_recv_desc_t *self, void *desc)
{
    ucs_free(UCS_PTR_BYTE_OFFSET(desc, -(ptrdiff_t)sizeof(uct_recv_desc_t*)));
}

static uct_recv_desc_t gdrpipe_shm_tag_desc = {.cb = gdrpipe_shm_tag_desc_release};

static void gdrpipe_shm_tag_unexp_eager(gdrpipe_shm_tag_t *t, void *data, size_t length,
                                        uct_tag_t tag, uint64_t imm)
{
    unsigned flags = UCT_CB_PARAM_FLAG_FIRST;
    void *context  = NULL;
    void *block    = NULL;
    ucs_status_t status;

    ++t->unexpected;
    if (imm != 0) {
        /* UCP keeps a synchronous send's message in a descriptor of ours
         * (with its headroom in front): it copies one only up to ~1 KiB */
        block = ucs_malloc(sizeof(uct_recv_desc_t*) + t->rx_headroom + length,
                           "gdrpipe tag desc");
        if (block == NULL) {
            ucs_error("gdrpipe: out of memory for an unexpected synchronous message");
            return;
        }
        *(uct_recv_desc_t**)block = &gdrpipe_shm_tag_desc;
        data = memcpy(UCS_PTR_BYTE_OFFSET(block, sizeof(uct_recv_desc_t*) + t->rx_headroom),
                      data, length);
        flags |= UCT_CB_PARAM_FLAG_DESC;
    }
    status = t->eager_cb(t->eager_arg, data, length, flags, tag, imm, &context);
    if ((block != NULL) && (status != UCS_INPROGRESS)) {
        ucs_free(block);
    }
    if (UCS_STATUS_IS_ERR(status)) {
        ucs_error("gdrpipe: UCP refused an unexpected tagged message: %s",
                  ucs_status_string(status));
    }
}

static void gdrpipe_shm_tag_on_ref(gdrpipe_shm_iface_t *iface, const gdrpipe_tag_msg_t *m,
                                   const gdrpipe_tag_ref_t *ref, const void *hdr)
{
    gdrpipe_shm_tag_t *t = gdrpipe_tag_of(iface);
    gdrpipe_shm_tag_posted_t p;
    gdrpipe_shm_tag_recv_t *r;
    gp_shm_peer_t *peer;
    const char *why;
    int ret;

    peer = gdrpipe_shm_tag_peer(iface, ref->addr);
    if (peer == NULL) {
        return; /* nobody to acknowledge: the sender's operation stays open */
    }
    why = gdrpipe_shm_tag_check_ref(ref, peer);
    if (why != NULL) {
        gdrpipe_peer_error("gdrpipe: dropped a tagged message of pid %d: %s",
                  (int)gp_shm_peer_pid(peer), why);
        gdrpipe_shm_tag_send_ack(iface, peer, m->op_id, UCS_ERR_INVALID_PARAM);
        return;
    }

    if (!gdrpipe_shm_tag_match(t, m->tag, &p)) {
        if (m->kind == GDRPIPE_TAG_RNDV_REF) {
            /* UCP fetches it with the remote key; its ATS cancels the send */
            ++t->unexpected;
            t->rndv_cb(t->rndv_arg, 0, m->tag, hdr, m->hdr_length, m->remote_addr,
                       m->length, &ref->rkey);
            return;
        }
        /* eager: UCP wants the bytes now, in host memory */
        r = ucs_calloc(1, sizeof(*r) + m->length, "gdrpipe tag unexpected");
        if (r == NULL) {
            ucs_error("gdrpipe: out of memory for an unexpected tagged message");
            gdrpipe_shm_tag_send_ack(iface, peer, m->op_id, UCS_ERR_NO_MEMORY);
            return;
        }
        r->iface  = iface;
        r->tag    = m->tag;
        r->imm    = m->imm;
        r->length = m->length;
        r->peer   = peer;
        r->op_id  = m->op_id;
        r->bounce = r + 1;
        ret = gdrpipe_shm_tag_get(iface, peer, r->bounce, r->length, m->remote_addr,
                                  &ref->rkey, r);
        if (ret == 1) {
            /* held messages wait for it (gdrpipe_shm_tag_defer) */
            gp_shm_peer_hold(iface->core, peer);
            t->materializing = 1;
            t->pending       = r;
            return;
        }
        if (ret < 0) {
            ucs_error("gdrpipe: cannot copy an unexpected %zu-byte tagged message of "
                      "pid %d: %s", r->length, (int)gp_shm_peer_pid(peer), strerror(-ret));
        } else {
            gdrpipe_shm_tag_unexp_eager(t, r->bounce, r->length, r->tag, r->imm);
        }
        gdrpipe_shm_tag_send_ack(iface, peer, m->op_id, (ret < 0) ? UCS_ERR_IO_ERROR :
                                                                    UCS_OK);
        ucs_free(r);
        return;
    }

    ++t->matched;
    p.ctx->tag_consumed_cb(p.ctx);
    if (m->length > p.length) {
        ++t->truncated;
        ucs_debug("gdrpipe: tagged message 0x%lx of %lu bytes (by reference) truncated "
                  "to %zu", (unsigned long)m->tag, (unsigned long)m->length, p.length);
        p.ctx->completed_cb(p.ctx, m->tag, m->imm, m->length, NULL,
                            UCS_ERR_MESSAGE_TRUNCATED);
        gdrpipe_shm_tag_send_ack(iface, peer, m->op_id, UCS_OK);
        return;
    }
    r = ucs_calloc(1, sizeof(*r), "gdrpipe tag recv");
    if (r == NULL) {
        p.ctx->completed_cb(p.ctx, m->tag, m->imm, m->length, NULL, UCS_ERR_NO_MEMORY);
        gdrpipe_shm_tag_send_ack(iface, peer, m->op_id, UCS_ERR_NO_MEMORY);
        return;
    }
    r->iface  = iface;
    r->ctx    = p.ctx;
    r->tag    = m->tag;
    r->imm    = (m->kind == GDRPIPE_TAG_RNDV_REF) ? 0 : m->imm;
    r->length = m->length;
    r->peer   = peer;
    r->op_id  = m->op_id;
    ++t->receiving;
    ret = gdrpipe_shm_tag_get(iface, peer, p.buffer, m->length, m->remote_addr,
                              &ref->rkey, r);
    if (ret != 1) {
        if (ret < 0) {
            gdrpipe_shm_tag_get_done(r, ret);
        } else {
            gdrpipe_shm_tag_get_done(r, 0);
        }
    }
}

static void gdrpipe_shm_tag_on_ack(gdrpipe_shm_iface_t *iface, const gdrpipe_tag_msg_t *m)
{
    gdrpipe_shm_tag_t *t = gdrpipe_tag_of(iface);
    uint32_t slot        = (uint32_t)m->op_id;
    uint32_t gen         = (uint32_t)(m->op_id >> 32);
    gdrpipe_shm_tag_op_t *op;
    uct_completion_t *comp;

    if ((slot >= t->nops) || !t->ops[slot]->in_use || (t->ops[slot]->gen != gen)) {
        ucs_debug("gdrpipe: acknowledgement of unknown operation 0x%lx ignored",
                  (unsigned long)m->op_id);
        return;
    }
    op   = t->ops[slot];
    comp = op->comp;
    gdrpipe_shm_tag_op_free(iface, op);
    if (comp != NULL) {
        uct_invoke_completion(comp, (m->status == UCS_OK) ? UCS_OK : UCS_ERR_IO_ERROR);
    }
}

/* An EAGER message (gdrpipe_tag_eager_t): matched, the posted receive takes
 * it (UCP copies the inline bytes out, to device memory too); else UCP's
 * unexpected callback. */
static void gdrpipe_shm_tag_on_eager(gdrpipe_shm_tag_t *t, const void *data, uint32_t len)
{
    gdrpipe_shm_tag_posted_t p;
    gdrpipe_tag_eager_t e;
    uint64_t imm = 0;
    size_t hdr, length;
    void *body;

    if (len < sizeof(e)) {
        gdrpipe_peer_error("gdrpipe: dropped a %u-byte tagged message (too short)", len);
        return;
    }
    memcpy(&e, data, sizeof(e));
    hdr = sizeof(e) + (e.has_imm ? sizeof(imm) : 0);
    if ((e.has_imm > 1) || (len < hdr) || !t->enabled) {
        gdrpipe_peer_error("gdrpipe: dropped a malformed tagged message (kind %u, %u bytes)",
                  e.kind, len);
        return;
    }
    if (e.has_imm) {
        memcpy(&imm, UCS_PTR_BYTE_OFFSET(data, sizeof(e)), sizeof(imm));
    }
    body   = (void*)UCS_PTR_BYTE_OFFSET(data, hdr);
    length = len - hdr;
    ucs_trace("gdrpipe: tagged message tag 0x%lx %zu bytes imm %lu", (unsigned long)e.tag,
              length, (unsigned long)imm);
    if (!gdrpipe_shm_tag_match(t, e.tag, &p)) {
        gdrpipe_shm_tag_unexp_eager(t, body, length, e.tag, imm);
        return;
    }
    ++t->matched;
    p.ctx->tag_consumed_cb(p.ctx);
    if (length > p.length) {
        ++t->truncated;
        ucs_debug("gdrpipe: tagged message 0x%lx of %zu bytes truncated to %zu",
                  (unsigned long)e.tag, length, p.length);
        p.ctx->completed_cb(p.ctx, e.tag, imm, length, NULL, UCS_ERR_MESSAGE_TRUNCATED);
    } else {
        p.ctx->completed_cb(p.ctx, e.tag, imm, length, body, UCS_OK);
    }
}

void gdrpipe_shm_tag_receive(gdrpipe_shm_iface_t *iface, void *data, uint32_t len)
{
    gdrpipe_shm_tag_t *t = gdrpipe_tag_of(iface);
    gdrpipe_tag_msg_t m;
    const gdrpipe_tag_ref_t *ref;
    const char *body;
    size_t expect;

    if ((len >= 1) && (*(const uint8_t*)data == GDRPIPE_TAG_EAGER)) {
        gdrpipe_shm_tag_on_eager(t, data, len);
        return;
    }
    if (len < sizeof(m)) {
        gdrpipe_peer_error("gdrpipe: dropped a %u-byte tagged message (too short)", len);
        return;
    }
    memcpy(&m, data, sizeof(m));
    body = (const char*)data + sizeof(m);
    switch (m.kind) {
    case GDRPIPE_TAG_EAGER_REF:
    case GDRPIPE_TAG_RNDV_REF:
        expect = sizeof(gdrpipe_tag_ref_t) + m.hdr_length;
        break;
    case GDRPIPE_TAG_RNDV_REQ:
        expect = m.hdr_length;
        break;
    case GDRPIPE_TAG_ACK:
        expect = 0;
        break;
    default:
        gdrpipe_peer_error("gdrpipe: dropped a tagged message of unknown kind %u", m.kind);
        return;
    }
    if ((len - sizeof(m) != expect) ||
        (m.hdr_length > ((m.kind == GDRPIPE_TAG_RNDV_REQ) ? GDRPIPE_TAG_MAX_REQ :
                                                            GDRPIPE_TAG_MAX_HDR)) ||
        ((m.kind == GDRPIPE_TAG_EAGER_REF) && (m.hdr_length != 0)) ||
        (!t->enabled && (m.kind != GDRPIPE_TAG_ACK))) {
        gdrpipe_peer_error("gdrpipe: dropped a malformed tagged message (kind %u, %u bytes)",
                  m.kind, len);
        return;
    }

    ucs_trace("gdrpipe: tagged message kind %u tag 0x%lx %lu bytes imm %lu",
              m.kind, (unsigned long)m.tag, (unsigned long)m.length, (unsigned long)m.imm);
    switch (m.kind) {
    case GDRPIPE_TAG_EAGER_REF:
    case GDRPIPE_TAG_RNDV_REF:
        ref = (const gdrpipe_tag_ref_t*)body;
        gdrpipe_shm_tag_on_ref(iface, &m, ref, ref + 1);
        break;
    case GDRPIPE_TAG_RNDV_REQ:
        /* Never matched here: UCP matches its own request against its
         * expected queue, which holds the receives posted to the wire too
         * (cancelling the one it takes). Matched here, UCP 1.13 would run a
         * rendezvous that completes at once (CMA) before it deregisters the
         * posted buffer, and assert (ucp_tag_offload_rndv_cb, rndv.c). */
        ++t->unexpected;
        t->rndv_cb(t->rndv_arg, 0, m.tag, body, m.hdr_length, 0, 0, NULL);
        break;
    case GDRPIPE_TAG_ACK:
        gdrpipe_shm_tag_on_ack(iface, &m);
        break;
    }
}

int gdrpipe_shm_tag_defer(gdrpipe_shm_iface_t *iface, uint8_t am_id, void *data,
                          uint32_t len)
{
    gdrpipe_shm_tag_t *t = gdrpipe_tag_of(iface);
    gdrpipe_shm_tag_held_t *h;

    /* the data paths' control messages are never held: the copy being
     * waited for may need them */
    if (!gdrpipe_shm_tag_holding(t) || (am_id == GP_CTRL_AM_ID)) {
        return 0;
    }
    h = ucs_malloc(sizeof(*h) + len, "gdrpipe held message");
    if (h == NULL) {
        ucs_error("gdrpipe: out of memory holding a message: it is lost");
        return 1;
    }
    h->am_id = am_id;
    h->len   = len;
    memcpy(h->data, data, len);
    ucs_queue_push(&t->deferred, &h->queue);
    return 1;
}

/* The unexpected message being copied is complete: deliver it, then the
 * messages held behind it (one may start another copy: stop there). */
static unsigned gdrpipe_shm_tag_release(gdrpipe_shm_iface_t *iface)
{
    gdrpipe_shm_tag_t *t      = gdrpipe_tag_of(iface);
    gdrpipe_shm_tag_recv_t *r = t->pending;
    gdrpipe_shm_tag_held_t *h;
    unsigned count = 0;

    if (t->materializing) {
        if ((r == NULL) || !r->done) {
            return 0;
        }
        if (r->status == 0) {
            gdrpipe_shm_tag_unexp_eager(t, r->bounce, r->length, r->tag, r->imm);
        }
        gdrpipe_shm_tag_send_ack(iface, r->peer, r->op_id,
                                 (r->status == 0) ? UCS_OK : UCS_ERR_IO_ERROR);
        gp_shm_disconnect(iface->core, r->peer);
        ucs_free(r);
        t->pending       = NULL;
        t->materializing = 0;
        ++count;
    }
    while (!t->materializing && !ucs_queue_is_empty(&t->deferred)) {
        h = ucs_queue_pull_elem_non_empty(&t->deferred, gdrpipe_shm_tag_held_t, queue);
        gdrpipe_shm_iface_deliver(iface, h->am_id, h->data, h->len);
        ucs_free(h);
        ++count;
    }
    return count;
}

unsigned gdrpipe_shm_tag_progress(gdrpipe_shm_iface_t *iface)
{
    gdrpipe_shm_tag_t *t = gdrpipe_tag_of(iface);
    gdrpipe_shm_tag_cancel_t *c;
    gdrpipe_shm_tag_op_t *op;
    unsigned count = 0;
    uint32_t i;

    if (gdrpipe_shm_tag_holding(t)) {
        count += gdrpipe_shm_tag_release(iface);
    }
    if (!ucs_queue_is_empty(&t->acks)) {
        count += gdrpipe_shm_tag_flush_acks(iface);
    }
    while (!ucs_queue_is_empty(&t->canceled)) {
        c = ucs_queue_pull_elem_non_empty(&t->canceled, gdrpipe_shm_tag_cancel_t, queue);
        c->ctx->completed_cb(c->ctx, 0, 0, 0, NULL, UCS_ERR_CANCELED);
        ucs_free(c);
        ++count;
    }
    /* sends by reference to a process that died are never acknowledged */
    if ((t->ops_outstanding != 0) && ((++t->progress_calls % 4096) == 0)) {
        for (i = 0; i < t->nops; ++i) {
            op = t->ops[i];
            if (op->in_use && !gp_shm_peer_alive(op->peer)) {
                uct_completion_t *comp = op->comp;
                ucs_debug("gdrpipe: tagged send to pid %d failed: the process is gone",
                          (int)gp_shm_peer_pid(op->peer));
                gdrpipe_shm_tag_op_free(iface, op);
                if (comp != NULL) {
                    uct_invoke_completion(comp, UCS_ERR_CONNECTION_RESET);
                }
                ++count;
            }
        }
    }
    return count;
}

void gdrpipe_shm_tag_log_stats(const gdrpipe_shm_iface_t *iface)
{
    const gdrpipe_shm_tag_t *t = &iface->tag;

    ucs_info("gdrpipe: tag matching: matched=%lu unexpected=%lu by-reference=%lu "
             "inline=%lu truncated=%lu host-receives-declined=%lu", t->matched, t->unexpected,
             t->by_ref, t->inline_sent, t->truncated, t->host_declined);
}

/* ---------------------------------------------------------------- sends -- */

static gdrpipe_shm_tag_op_t *gdrpipe_shm_tag_op_get(gdrpipe_shm_iface_t *iface)
{
    gdrpipe_shm_tag_t *t = gdrpipe_tag_of(iface);
    gdrpipe_shm_tag_op_t **ops, *op;
    uint32_t *free_ops, n, i;

    if (t->nfree == 0) {
        n        = (t->nops == 0) ? 64 : 2 * t->nops;
        ops      = ucs_realloc(t->ops, n * sizeof(*ops), "gdrpipe tag ops");
        if (ops == NULL) {
            return NULL;
        }
        t->ops   = ops;
        free_ops = ucs_realloc(t->free_ops, n * sizeof(*free_ops), "gdrpipe tag free");
        if (free_ops == NULL) {
            return NULL;
        }
        t->free_ops = free_ops;
        for (i = t->nops; i < n; ++i) {
            op = ucs_calloc(1, sizeof(*op), "gdrpipe tag op");
            if (op == NULL) {
                break;
            }
            op->slot             = i;
            op->gen              = 1;
            t->ops[i]            = op;
            t->free_ops[t->nfree++] = i;
        }
        t->nops = i;
        if (t->nfree == 0) {
            return NULL;
        }
    }
    op         = t->ops[t->free_ops[--t->nfree]];
    op->in_use = 1;
    ++t->ops_outstanding;
    return op;
}

/* Writes an EAGER message's header (gdrpipe_tag_eager_t, the imm only when
 * nonzero) at `elem`; returns where its payload goes. */
static UCS_F_ALWAYS_INLINE void *gdrpipe_shm_tag_eager_hdr(void *elem, uct_tag_t tag,
                                                           uint64_t imm)
{
    gdrpipe_tag_eager_t *e = elem;

    e->kind      = GDRPIPE_TAG_EAGER;
    e->has_imm   = (imm != 0);
    e->reserved  = 0;
    e->reserved2 = 0;
    e->tag       = tag;
    if (imm == 0) {
        return e + 1;
    }
    memcpy(e + 1, &imm, sizeof(imm));
    return UCS_PTR_BYTE_OFFSET(e + 1, sizeof(imm));
}

static UCS_F_ALWAYS_INLINE size_t gdrpipe_shm_tag_eager_hdr_len(uint64_t imm)
{
    return sizeof(gdrpipe_tag_eager_t) + ((imm != 0) ? sizeof(imm) : 0);
}

static UCS_F_ALWAYS_INLINE uint64_t gdrpipe_shm_tag_op_id(const gdrpipe_shm_tag_op_t *op)
{
    return ((uint64_t)op->gen << 32) | op->slot;
}

ucs_status_t gdrpipe_shm_ep_tag_eager_short(uct_ep_h tl_ep, uct_tag_t tag,
                                            const void *data, size_t length)
{
    gdrpipe_shm_ep_t *ep = ucs_derived_of(tl_ep, gdrpipe_shm_ep_t);
    uint64_t index;
    void *m;

    UCT_CHECK_LENGTH(length + sizeof(gdrpipe_tag_eager_t), 0, ep->max_payload,
                     "tag_eager_short");
    m = gdrpipe_shm_ep_reserve(ep, &index);
    if (ucs_unlikely(m == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    memcpy(gdrpipe_shm_tag_eager_hdr(m, tag, 0), data, length);
    gp_shm_commit(ep->peer, index, GDRPIPE_TAG_AM_ID, sizeof(gdrpipe_tag_eager_t) + length);
    return UCS_OK;
}

ssize_t gdrpipe_shm_ep_tag_eager_bcopy(uct_ep_h tl_ep, uct_tag_t tag, uint64_t imm,
                                       uct_pack_callback_t pack_cb, void *arg,
                                       unsigned flags)
{
    gdrpipe_shm_ep_t *ep = ucs_derived_of(tl_ep, gdrpipe_shm_ep_t);
    const size_t hdr     = gdrpipe_shm_tag_eager_hdr_len(imm);
    uint64_t index;
    size_t length;
    void *m;

    m = gdrpipe_shm_ep_reserve(ep, &index);
    if (ucs_unlikely(m == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    length = pack_cb(gdrpipe_shm_tag_eager_hdr(m, tag, imm), arg);
    if (length + hdr > ep->max_payload) {
        gp_shm_commit(ep->peer, index, 0xff, 0);
        ucs_error("gdrpipe: tag_eager_bcopy packed %zu bytes, more than %zu", length,
                  ep->max_payload - hdr);
        return UCS_ERR_EXCEEDS_LIMIT;
    }
    gp_shm_commit(ep->peer, index, GDRPIPE_TAG_AM_ID, hdr + length);
    return length;
}

/* Fills a *_REF message for [buffer, buffer+length) in the reserved element:
 * registers the buffer and takes an operation slot. */
static ucs_status_t gdrpipe_shm_tag_ref(gdrpipe_shm_ep_t *ep, gdrpipe_tag_msg_t *m,
                                        uint8_t kind, uct_tag_t tag, uint64_t imm,
                                        void *buffer, size_t length,
                                        uct_completion_t *comp,
                                        gdrpipe_shm_tag_op_t **op_p)
{
    gdrpipe_shm_iface_t *iface = ucs_derived_of(ep->super.super.iface,
                                                gdrpipe_shm_iface_t);
    gdrpipe_tag_ref_t *ref     = (gdrpipe_tag_ref_t*)(m + 1);
    gdrpipe_shm_tag_op_t *op;
    char err[256];

    op = gdrpipe_shm_tag_op_get(iface);
    if (op == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    memset(m, 0, sizeof(*m));
    memset(ref->addr, 0, sizeof(ref->addr));
    if (gp_mem_register(buffer, length, gdrpipe_host_id(), &ref->rkey, &op->reg, err,
                        sizeof(err)) != 0) {
        ucs_debug("gdrpipe: cannot register %p (%zu bytes) for a tagged send: %s",
                  buffer, length, err);
        op->reg = NULL;
        gdrpipe_shm_tag_op_free(iface, op);
        return UCS_ERR_UNSUPPORTED;
    }
    gp_shm_iface_address(iface->core, ref->addr);
    gp_shm_peer_hold(iface->core, ep->peer);
    op->peer       = ep->peer;
    op->comp       = comp;
    m->kind        = kind;
    m->tag         = tag;
    m->imm         = imm;
    m->op_id       = gdrpipe_shm_tag_op_id(op);
    m->length      = length;
    m->remote_addr = (uintptr_t)buffer;
    *op_p          = op;
    return UCS_OK;
}

ucs_status_t gdrpipe_shm_ep_tag_eager_zcopy(uct_ep_h tl_ep, uct_tag_t tag, uint64_t imm,
                                            const uct_iov_t *iov, size_t iovcnt,
                                            unsigned flags, uct_completion_t *comp)
{
    gdrpipe_shm_ep_t *ep       = ucs_derived_of(tl_ep, gdrpipe_shm_ep_t);
    gdrpipe_shm_iface_t *iface = ucs_derived_of(tl_ep->iface, gdrpipe_shm_iface_t);
    gdrpipe_shm_tag_t *t       = gdrpipe_tag_of(iface);
    gdrpipe_piece_kind_t kind  = GDRPIPE_PIECE_HOST;
    gdrpipe_shm_tag_op_t *op;
    gdrpipe_tag_msg_t *m;
    size_t i, len, length;
    uint64_t index;
    ucs_status_t status;
    char err[256];
    int device;
    char *dst;

    UCT_CHECK_IOV_SIZE(iovcnt, GDRPIPE_SHM_AM_MAX_IOV, "tag_eager_zcopy");
    length = uct_iov_total_length(iov, iovcnt);
    UCT_CHECK_LENGTH(length + GDRPIPE_TAG_EAGER_MAX_HDR, 0, ep->max_payload,
                     "tag_eager_zcopy");
    m = gdrpipe_shm_ep_reserve(ep, &index);
    if (ucs_unlikely(m == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    if ((iovcnt == 1) && (length != 0)) {
        kind = gdrpipe_shm_piece_kind(iov[0].buffer, length, &device);
    }
    if (kind == GDRPIPE_PIECE_DEVICE_ASYNC) {
        /* by reference: the receiver copies it, then acknowledges */
        status = gdrpipe_shm_tag_ref(ep, m, GDRPIPE_TAG_EAGER_REF, tag, imm,
                                     iov[0].buffer, length, comp, &op);
        if (status == UCS_OK) {
            ++t->by_ref;
            gp_shm_commit(ep->peer, index, GDRPIPE_TAG_AM_ID, GDRPIPE_TAG_REF_SIZE);
            return UCS_INPROGRESS;
        }
        /* not shareable: copied in below */
    }
    dst = gdrpipe_shm_tag_eager_hdr(m, tag, imm);
    for (i = 0; i < iovcnt; ++i) {
        len = uct_iov_get_length(&iov[i]);
        if (len == 0) {
            continue;
        }
        if (gdrpipe_shm_piece_kind(iov[i].buffer, len, &device) == GDRPIPE_PIECE_HOST) {
            memcpy(dst, iov[i].buffer, len);
        } else if (gp_cuda_copy(dst, iov[i].buffer, len, err, sizeof(err)) != 0) {
            ucs_error("gdrpipe: tag_eager_zcopy: copy of %zu bytes from %p failed: %s",
                      len, iov[i].buffer, err);
            gp_shm_commit(ep->peer, index, 0xff, 0);
            return UCS_ERR_IO_ERROR;
        }
        dst += len;
    }
    ++t->inline_sent;
    gp_shm_commit(ep->peer, index, GDRPIPE_TAG_AM_ID,
                  gdrpipe_shm_tag_eager_hdr_len(imm) + length);
    return UCS_OK;
}

ucs_status_ptr_t gdrpipe_shm_ep_tag_rndv_zcopy(uct_ep_h tl_ep, uct_tag_t tag,
                                               const void *header,
                                               unsigned header_length,
                                               const uct_iov_t *iov, size_t iovcnt,
                                               unsigned flags, uct_completion_t *comp)
{
    gdrpipe_shm_ep_t *ep       = ucs_derived_of(tl_ep, gdrpipe_shm_ep_t);
    gdrpipe_shm_iface_t *iface = ucs_derived_of(tl_ep->iface, gdrpipe_shm_iface_t);
    gdrpipe_shm_tag_op_t *op;
    gdrpipe_tag_msg_t *m;
    ucs_status_t status;
    uint64_t index;

    if ((iovcnt != 1) || (header_length > GDRPIPE_TAG_MAX_HDR)) {
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    m = gdrpipe_shm_ep_reserve(ep, &index);
    if (ucs_unlikely(m == NULL)) {
        return UCS_STATUS_PTR(UCS_ERR_NO_RESOURCE);
    }
    status = gdrpipe_shm_tag_ref(ep, m, GDRPIPE_TAG_RNDV_REF, tag, 0, iov[0].buffer,
                                 uct_iov_get_length(&iov[0]), comp, &op);
    if (status != UCS_OK) {
        gp_shm_commit(ep->peer, index, 0xff, 0);
        return UCS_STATUS_PTR(status);
    }
    m->hdr_length = header_length;
    memcpy(UCS_PTR_BYTE_OFFSET(m, GDRPIPE_TAG_REF_SIZE), header, header_length);
    ++iface->tag.by_ref;
    gp_shm_commit(ep->peer, index, GDRPIPE_TAG_AM_ID, GDRPIPE_TAG_REF_SIZE + header_length);
    return op;
}

ucs_status_t gdrpipe_shm_ep_tag_rndv_cancel(uct_ep_h tl_ep, void *op_p)
{
    gdrpipe_shm_iface_t *iface = ucs_derived_of(tl_ep->iface, gdrpipe_shm_iface_t);
    gdrpipe_shm_tag_op_t *op   = op_p;

    /* UCP fetched the data itself (unexpected rendezvous): no acknowledgement
     * comes, and the completion is UCP's */
    if ((op == NULL) || !op->in_use) {
        return UCS_ERR_NO_ELEM;
    }
    gdrpipe_shm_tag_op_free(iface, op);
    return UCS_OK;
}

ucs_status_t gdrpipe_shm_ep_tag_rndv_request(uct_ep_h tl_ep, uct_tag_t tag,
                                             const void *header,
                                             unsigned header_length, unsigned flags)
{
    gdrpipe_shm_ep_t *ep = ucs_derived_of(tl_ep, gdrpipe_shm_ep_t);
    gdrpipe_tag_msg_t *m;
    uint64_t index;

    UCT_CHECK_LENGTH(header_length, 0, GDRPIPE_TAG_MAX_REQ, "tag_rndv_request");
    m = gdrpipe_shm_ep_reserve(ep, &index);
    if (ucs_unlikely(m == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    memset(m, 0, sizeof(*m));
    m->kind       = GDRPIPE_TAG_RNDV_REQ;
    m->tag        = tag;
    m->hdr_length = header_length;
    memcpy(m + 1, header, header_length);
    gp_shm_commit(ep->peer, index, GDRPIPE_TAG_AM_ID, sizeof(*m) + header_length);
    return UCS_OK;
}
