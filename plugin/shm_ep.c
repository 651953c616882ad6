/* Endpoints of the intra-host wire: active messages through the peer's
 * shared-memory FIFO, one-sided get/put (host memory through CMA, GPU
 * memory through the data paths), queued requests (shm_ep.h). */
#include "shm_ep.h"
#include "shm_flush.h"

#include <ucs/type/class.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

static UCS_F_ALWAYS_INLINE gdrpipe_shm_iface_t *gdrpipe_shm_ep_iface(uct_ep_h tl_ep)
{
    return ucs_derived_of(tl_ep->iface, gdrpipe_shm_iface_t);
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

/* An element of the peer's FIFO for one send, or NULL (UCS_ERR_NO_RESOURCE
 * to UCP) when the endpoint's sends must wait: after a fence (above), or
 * while requests it queued earlier wait (UCT's ordering: a send may not
 * overtake them; only their dispatch sends), or when the FIFO is full. */
static UCS_F_ALWAYS_INLINE void *gdrpipe_shm_ep_reserve(gdrpipe_shm_ep_t *ep,
                                                        uint64_t *index)
{
    if ((ucs_unlikely(!ucs_queue_is_empty(&ep->pending_q)) && !ep->dispatching) ||
        gdrpipe_shm_ep_fence_blocks(ep)) {
        return NULL;
    }
    return gp_shm_reserve(ep->peer, index);
}

static UCS_CLASS_INIT_FUNC(gdrpipe_shm_ep_t, const uct_ep_params_t *params)
{
    gdrpipe_shm_iface_t *iface = ucs_derived_of(params->iface, gdrpipe_shm_iface_t);
    char err[256];
    ucs_status_t status;

    UCS_CLASS_CALL_SUPER_INIT(uct_base_ep_t, &iface->super);

    if (!(params->field_mask & UCT_EP_PARAM_FIELD_IFACE_ADDR) ||
        (params->iface_addr == NULL)) {
        ucs_error("gdrpipe: endpoint needs the peer's interface address");
        return UCS_ERR_INVALID_PARAM;
    }
    self->peer = gp_shm_connect(iface->core, params->iface_addr,
                                gp_shm_address_length(), err, sizeof(err));
    if (self->peer == NULL) {
        ucs_error("gdrpipe: cannot connect: %s", err);
        return UCS_ERR_UNREACHABLE;
    }
    self->pid         = gp_shm_peer_pid(self->peer);
    /* gp_shm_connect refused a peer whose elements are smaller than ours */
    self->max_payload = ucs_min(gp_shm_peer_max_payload(self->peer), iface->max_payload);
    status            = uct_ep_keepalive_init(&self->keepalive, self->pid);
    if (status != UCS_OK) {
        gp_shm_disconnect(iface->core, self->peer);
        return status;
    }
    ucs_queue_head_init(&self->pending_q);
    self->on_pending_list = 0;
    self->fenced          = 0;
    self->dispatching     = 0;
    self->sink_said       = -1;
    self->sink_reads      = 0;
    /* messages from the peer arrive in our FIFO: make sure progress runs */
    uct_base_iface_progress_enable(&iface->super.super,
                                   UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    ucs_debug("gdrpipe: ep %p connected to pid %d", self, (int)self->pid);
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(gdrpipe_shm_ep_t)
{
    gdrpipe_shm_iface_t *iface = ucs_derived_of(self->super.super.iface,
                                                gdrpipe_shm_iface_t);

    if (!ucs_queue_is_empty(&self->pending_q)) {
        ucs_warn("gdrpipe: ep %p destroyed with pending requests", self);
    }
    if (self->on_pending_list) {
        ucs_list_del(&self->pending_link);
        self->on_pending_list = 0;
    }
    gp_shm_disconnect(iface->core, self->peer);
}

UCS_CLASS_DEFINE(gdrpipe_shm_ep_t, uct_base_ep_t);
UCS_CLASS_DEFINE_NEW_FUNC(gdrpipe_shm_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DEFINE_DELETE_FUNC(gdrpipe_shm_ep_t, uct_ep_t);

ucs_status_t gdrpipe_shm_ep_fence(uct_ep_h tl_ep, unsigned flags)
{
    gdrpipe_shm_ep_t *ep       = ucs_derived_of(tl_ep, gdrpipe_shm_ep_t);
    gdrpipe_shm_iface_t *iface = ucs_derived_of(tl_ep->iface, gdrpipe_shm_iface_t);

    if (gdrpipe_shm_iface_busy(iface)) {
        ep->fenced = 1;
    }
    return UCS_OK;
}

ucs_status_t gdrpipe_shm_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t header,
                                     const void *payload, unsigned length)
{
    gdrpipe_shm_ep_t *ep = ucs_derived_of(tl_ep, gdrpipe_shm_ep_t);
    uint64_t index;
    void *p;

    UCT_CHECK_AM_ID(id);
    UCT_CHECK_LENGTH(length + sizeof(header), 0, ep->max_payload, "am_short");
    p = gdrpipe_shm_ep_reserve(ep, &index);
    if (ucs_unlikely(p == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    uct_am_short_fill_data(p, header, payload, length);
    gp_shm_commit(ep->peer, index, id, length + sizeof(header));
    return UCS_OK;
}

ucs_status_t gdrpipe_shm_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id,
                                         const uct_iov_t *iov, size_t iovcnt)
{
    gdrpipe_shm_ep_t *ep = ucs_derived_of(tl_ep, gdrpipe_shm_ep_t);
    ucs_iov_iter_t iov_iter;
    uint64_t index;
    size_t length;
    void *p;

    UCT_CHECK_AM_ID(id);
    UCT_CHECK_LENGTH(uct_iov_total_length(iov, iovcnt), 0, ep->max_payload,
                     "am_short_iov");
    p = gdrpipe_shm_ep_reserve(ep, &index);
    if (ucs_unlikely(p == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    ucs_iov_iter_init(&iov_iter);
    length = uct_iov_to_buffer(iov, iovcnt, &iov_iter, p, ep->max_payload);
    gp_shm_commit(ep->peer, index, id, length);
    return UCS_OK;
}

/* Whether the peer lives: if not, its transfers fail and UCX is told of
 * the endpoint's error (through its keepalive helper) */
static void gdrpipe_shm_ep_peer_check(uct_ep_h tl_ep, unsigned flags, uct_completion_t *comp)
{
    gdrpipe_shm_ep_t *ep       = ucs_derived_of(tl_ep, gdrpipe_shm_ep_t);
    gdrpipe_shm_iface_t *iface = gdrpipe_shm_ep_iface(tl_ep);

    if ((iface->xfer != NULL) && !gp_shm_peer_alive(ep->peer)) {
        gp_xfer_peer_failed(iface->xfer, ep->peer);
    }
    uct_ep_keepalive_check(tl_ep, &ep->keepalive, ep->pid, flags, comp);
}

ssize_t gdrpipe_shm_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id, uct_pack_callback_t pack_cb,
                                void *arg, unsigned flags)
{
    gdrpipe_shm_ep_t *ep       = ucs_derived_of(tl_ep, gdrpipe_shm_ep_t);
    gdrpipe_shm_iface_t *iface = gdrpipe_shm_ep_iface(tl_ep);
    uint64_t index;
    size_t length;
    void *p;

    UCT_CHECK_AM_ID(id);
    if (ucs_unlikely(flags & UCT_SEND_FLAG_PEER_CHECK)) {
        /* UCP's keepalive message (from UCX 1.16 on, for transports that
         * connect to interfaces; before, it checked the endpoint) */
        gdrpipe_shm_ep_peer_check(tl_ep, 0, NULL);
    }
    p = gdrpipe_shm_ep_reserve(ep, &index);
    if (ucs_unlikely(p == NULL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    if (ucs_likely(ep->max_payload == iface->max_payload)) {
        /* the peer's element holds our max_bcopy, all UCP packs at most */
        length = pack_cb(p, arg);
    } else {
        /* never packed into an element that may be too small */
        length = pack_cb(iface->scratch, arg);
        if (length <= ep->max_payload) {
            memcpy(p, iface->scratch, length);
        }
    }
    if (ucs_unlikely(length > ep->max_payload)) {
        gp_shm_commit(ep->peer, index, 0xff, 0);
        ucs_error("gdrpipe: am_bcopy packed %zu bytes, more than the %u pid %d accepts",
                  length, ep->max_payload, (int)ep->pid);
        return UCS_ERR_INVALID_PARAM;
    }
    gp_shm_commit(ep->peer, index, id, (uint32_t)length);
    return length;
}

static ucs_status_t gdrpipe_shm_cma_status(gdrpipe_shm_ep_t *ep, ssize_t ret,
                                           const char *op)
{
    if (ret >= 0) {
        return UCS_OK;
    }
    if (ret == -ESRCH) {
        ucs_debug("gdrpipe: %s: peer pid %d is gone", op, (int)ep->pid);
        return UCS_ERR_CONNECTION_RESET;
    }
    if (ret == -EFAULT) {
        /* a buffer of this side or the peer's is not mapped: an application
         * freed it while its transfer was in flight (a device buffer freed
         * before UCP registered it is taken for host memory). Its data is
         * undefined; an error would leave the other side's request waiting
         * (UCP 1.13, v1) or abort the process (v2) */
        gdrpipe_bounded_error("gdrpipe: %s with pid %d: a buffer is not accessible (freed "
                              "while its transfer was in flight?): completed without its "
                              "data", op, (int)ep->pid);
        return UCS_OK;
    }
    ucs_error("gdrpipe: %s with pid %d failed: %s", op, (int)ep->pid,
              strerror((int)-ret));
    return UCS_ERR_IO_ERROR;
}

ucs_status_t gdrpipe_shm_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                      unsigned length, uint64_t remote_addr,
                                      uct_rkey_t rkey)
{
    gdrpipe_shm_ep_t *ep = ucs_derived_of(tl_ep, gdrpipe_shm_ep_t);
    struct iovec iov     = {(void*)buffer, length};

    return gdrpipe_shm_cma_status(ep, gp_cma_write(ep->pid, &iov, 1, remote_addr),
                                  "put_short");
}

ssize_t gdrpipe_shm_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb,
                                 void *arg, uint64_t remote_addr, uct_rkey_t rkey)
{
    gdrpipe_shm_ep_t *ep       = ucs_derived_of(tl_ep, gdrpipe_shm_ep_t);
    gdrpipe_shm_iface_t *iface = gdrpipe_shm_ep_iface(tl_ep);
    struct iovec iov;
    ucs_status_t status;
    size_t length;

    length = pack_cb(iface->scratch, arg);
    UCT_CHECK_LENGTH(length, 0, iface->max_payload, "put_bcopy");
    iov.iov_base = iface->scratch;
    iov.iov_len  = length;
    status = gdrpipe_shm_cma_status(ep, gp_cma_write(ep->pid, &iov, 1, remote_addr),
                                    "put_bcopy");
    return (status == UCS_OK) ? (ssize_t)length : status;
}

static size_t gdrpipe_shm_to_iovec(const uct_iov_t *iov, size_t iovcnt,
                                   struct iovec *out)
{
    size_t i, n = 0;

    for (i = 0; i < iovcnt; ++i) {
        size_t len = uct_iov_get_length(&iov[i]);
        if (len == 0) {
            continue;
        }
        out[n].iov_base = iov[i].buffer;
        out[n].iov_len  = len;
        ++n;
    }
    return n;
}

static void gdrpipe_shm_xfer_done(void *arg, int status)
{
    uct_completion_t *comp = arg;

    if (comp != NULL) {
        uct_invoke_completion(comp, (status == 0) ? UCS_OK : UCS_ERR_IO_ERROR);
    }
}

/* Whether every local buffer is host memory. The memory handle is not used:
 * UCX 1.13's RMA path passes the request's first registration (memh[0]),
 * which can belong to another memory domain (self's is 0xdeadbeef). One
 * pointer query costs ~0.1 us, small next to a zero-copy transfer. */
static int gdrpipe_shm_iov_is_host(const uct_iov_t *iov, size_t iovcnt)
{
    gp_mem_info_t info;
    size_t i;

    if (!gp_cuda_available()) {
        return 1;
    }
    for (i = 0; i < iovcnt; ++i) {
        if ((gp_cuda_mem_query(iov[i].buffer, &info) != 0) ||
            (info.kind != GP_MEM_HOST)) {
            return 0;
        }
    }
    return 1;
}

/* Where the device data of a rendezvous lands (ucp_send_host.c): a read of
 * the peer's device memory tells the peer, in one byte on its FIFO, when
 * the answer changes and every GDRPIPE_SINK_HINT_EVERY reads (a full FIFO
 * skips it); a write of our device memory into the peer's tells us.
 * local_host: whether the local buffers are host memory (-1: not known) */
#define GDRPIPE_SINK_HINT_EVERY 64

static void gdrpipe_shm_ep_sink(gdrpipe_shm_ep_t *ep, const uct_iov_t *iov, size_t iovcnt,
                                const gp_rkey_t *rk, int is_get, int local_host)
{
    uint64_t index;
    uint8_t *word;

    if (local_host < 0) {
        local_host = gdrpipe_shm_iov_is_host(iov, iovcnt);
    }
    if (!is_get) {
        if (!local_host) {
            gdrpipe_send_sink_hint_set(rk->kind == GP_RKEY_HOST);
        }
        return;
    }
    if (rk->kind == GP_RKEY_HOST) {
        return; /* the peer's host memory: nothing to tell */
    }
    if ((local_host == ep->sink_said) &&
        ((++ep->sink_reads % GDRPIPE_SINK_HINT_EVERY) != 0)) {
        return;
    }
    word = gp_shm_reserve(ep->peer, &index);
    if (word == NULL) {
        return;
    }
    *word = (uint8_t)local_host;
    gp_shm_commit(ep->peer, index, GDRPIPE_SINK_HINT_AM_ID, 1);
    ep->sink_said = local_host;
}

/* One-sided transfer: host memory on both sides goes by CMA; anything
 * involving GPU memory goes to the data paths (direct or staged). */
static ucs_status_t gdrpipe_shm_ep_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                         size_t iovcnt, uint64_t remote_addr,
                                         uct_rkey_t rkey, uct_completion_t *comp,
                                         int is_get)
{
    gdrpipe_shm_ep_t *ep       = ucs_derived_of(tl_ep, gdrpipe_shm_ep_t);
    gdrpipe_shm_iface_t *iface = gdrpipe_shm_ep_iface(tl_ep);
    const gp_rkey_t *rk        = (const gp_rkey_t*)rkey;
    int local_host             = -1; /* not known yet */
    struct iovec local[GDRPIPE_SHM_MAX_IOV];
    size_t n;
    int ret;

    UCT_CHECK_IOV_SIZE(iovcnt, GDRPIPE_SHM_MAX_IOV, is_get ? "get_zcopy" : "put_zcopy");
    if (ucs_unlikely(gdrpipe_shm_ep_fence_blocks(ep))) {
        return UCS_ERR_NO_RESOURCE;
    }
    if (ucs_unlikely(rk == &gdrpipe_copy_rkey)) {
        /* a peer that named its copy MD's key for the wire's memory */
        gdrpipe_peer_error("gdrpipe: %s with the copy domain's remote key",
                           is_get ? "get" : "put");
        return UCS_ERR_INVALID_PARAM;
    }
    n = gdrpipe_shm_to_iovec(iov, iovcnt, local);
    if (ucs_unlikely(ep->pid == gp_self_pid()) &&
        !gp_mem_is_registered((void*)remote_addr, uct_iov_total_length(iov, iovcnt),
                              (rk != NULL) ? rk->token : 0)) {
        /* an endpoint to this process (an address naming our own pid): it
         * may only reach memory registered here, as a peer's would */
        gdrpipe_peer_error("gdrpipe: %s into this process at %p (%zu bytes): not registered memory",
                  is_get ? "get" : "put", (void*)remote_addr,
                  uct_iov_total_length(iov, iovcnt));
        return UCS_ERR_INVALID_PARAM;
    }
    if ((rk != NULL) && (rk->kind == GP_RKEY_HOST)) {
        local_host = gdrpipe_shm_iov_is_host(iov, iovcnt);
    }
    if ((rk == NULL) || local_host == 1) {
        return gdrpipe_shm_cma_status(ep, is_get ?
                                      gp_cma_read(ep->pid, local, n, remote_addr) :
                                      gp_cma_write(ep->pid, local, n, remote_addr),
                                      is_get ? "get_zcopy" : "put_zcopy");
    }
    if (iface->xfer == NULL) {
        ucs_error("gdrpipe: GPU memory transfer but the data paths are unavailable");
        return UCS_ERR_UNSUPPORTED;
    }
    if (gdrpipe_send_host_max() != 0) {
        gdrpipe_shm_ep_sink(ep, iov, iovcnt, rk, is_get, local_host);
    }
    ret = gdrpipe_shm_xfer_start(iface, ep->peer, is_get, local, n, remote_addr, rk,
                        gdrpipe_shm_xfer_done, comp);
    if (ret == 0) {
        return UCS_OK;
    } else if (ret > 0) {
        return UCS_INPROGRESS;
    }
    ucs_error("gdrpipe: %s of %zu bytes with pid %d failed: %s",
              is_get ? "get" : "put", uct_iov_total_length(iov, iovcnt), (int)ep->pid,
              strerror(-ret));
    if (ret == -EINVAL) {
        return UCS_ERR_INVALID_PARAM; /* e.g. a remote key its handle does not back */
    }
    return gp_shm_peer_alive(ep->peer) ? UCS_ERR_IO_ERROR : UCS_ERR_CONNECTION_RESET;
}

ucs_status_t gdrpipe_shm_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                      size_t iovcnt, uint64_t remote_addr,
                                      uct_rkey_t rkey, uct_completion_t *comp)
{
    return gdrpipe_shm_ep_zcopy(tl_ep, iov, iovcnt, remote_addr, rkey, comp, 0);
}

ucs_status_t gdrpipe_shm_ep_get_bcopy(uct_ep_h tl_ep, uct_unpack_callback_t unpack_cb,
                                      void *arg, size_t length, uint64_t remote_addr,
                                      uct_rkey_t rkey, uct_completion_t *comp)
{
    gdrpipe_shm_ep_t *ep       = ucs_derived_of(tl_ep, gdrpipe_shm_ep_t);
    gdrpipe_shm_iface_t *iface = gdrpipe_shm_ep_iface(tl_ep);
    struct iovec iov;
    ucs_status_t status;

    UCT_CHECK_LENGTH(length, 0, iface->max_payload, "get_bcopy");
    iov.iov_base = iface->scratch;
    iov.iov_len  = length;
    status = gdrpipe_shm_cma_status(ep, gp_cma_read(ep->pid, &iov, 1, remote_addr),
                                    "get_bcopy");
    if (status == UCS_OK) {
        unpack_cb(arg, iface->scratch, length);
    }
    return status;
}

ucs_status_t gdrpipe_shm_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                      size_t iovcnt, uint64_t remote_addr,
                                      uct_rkey_t rkey, uct_completion_t *comp)
{
    return gdrpipe_shm_ep_zcopy(tl_ep, iov, iovcnt, remote_addr, rkey, comp, 1);
}

ucs_status_t gdrpipe_shm_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                        unsigned flags)
{
    gdrpipe_shm_ep_t *ep       = ucs_derived_of(tl_ep, gdrpipe_shm_ep_t);
    gdrpipe_shm_iface_t *iface = gdrpipe_shm_ep_iface(tl_ep);

    if (ucs_queue_is_empty(&ep->pending_q) && gp_shm_has_space(ep->peer) &&
        !gdrpipe_shm_ep_fence_blocks(ep)) {
        return UCS_ERR_BUSY;
    }
    uct_pending_req_queue_push(&ep->pending_q, req);
    if (!ep->on_pending_list) {
        ucs_list_add_tail(&iface->pending_eps, &ep->pending_link);
        ep->on_pending_list = 1;
    }
    return UCS_OK;
}

static void gdrpipe_shm_ep_pending_unlink(gdrpipe_shm_ep_t *ep)
{
    if (ep->on_pending_list && ucs_queue_is_empty(&ep->pending_q)) {
        ucs_list_del(&ep->pending_link);
        ep->on_pending_list = 0;
    }
}

static ucs_status_t gdrpipe_shm_purge_noop(uct_pending_req_t *req, void *arg)
{
    return UCS_OK;
}

void gdrpipe_shm_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb,
                                  void *arg)
{
    gdrpipe_shm_ep_t *ep = ucs_derived_of(tl_ep, gdrpipe_shm_ep_t);
    uct_pending_req_priv_queue_t *priv;

    if (cb != NULL) {
        uct_pending_queue_purge(priv, &ep->pending_q, 1, cb, arg);
    } else {
        uct_pending_queue_purge(priv, &ep->pending_q, 1, gdrpipe_shm_purge_noop, NULL);
    }
    gdrpipe_shm_ep_pending_unlink(ep);
}

unsigned gdrpipe_shm_ep_dispatch_pending(gdrpipe_shm_iface_t *iface)
{
    gdrpipe_shm_ep_t *ep, *tmp;
    uct_pending_req_priv_queue_t *priv;
    unsigned count = 0;

    ucs_list_for_each_safe(ep, tmp, &iface->pending_eps, pending_link) {
        if (gp_shm_has_space(ep->peer) && !gdrpipe_shm_ep_fence_blocks(ep)) {
            ep->dispatching = 1;
            uct_pending_queue_dispatch(priv, &ep->pending_q,
                                       gp_shm_has_space(ep->peer) &&
                                       !gdrpipe_shm_ep_fence_blocks(ep));
            ep->dispatching = 0;
            ++count;
        }
        gdrpipe_shm_ep_pending_unlink(ep);
    }
    return count;
}

ucs_status_t gdrpipe_shm_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                  uct_completion_t *comp)
{
    gdrpipe_shm_ep_t *ep = ucs_derived_of(tl_ep, gdrpipe_shm_ep_t);

    if (flags & UCT_FLUSH_FLAG_CANCEL) {
        gdrpipe_shm_ep_pending_purge(tl_ep, NULL, NULL);
        return UCS_OK;
    }
    /* queued requests are not sent yet */
    if (!ucs_queue_is_empty(&ep->pending_q)) {
        return UCS_ERR_NO_RESOURCE;
    }
    /* sends are complete when they return; GPU transfers complete later */
    return gdrpipe_shm_iface_flush(tl_ep->iface, 0, comp);
}

ucs_status_t gdrpipe_shm_ep_check(uct_ep_h tl_ep, unsigned flags,
                                  uct_completion_t *comp)
{
    UCT_EP_KEEPALIVE_CHECK_PARAM(flags, comp);
    gdrpipe_shm_ep_peer_check(tl_ep, flags, comp);
    return UCS_OK;
}
