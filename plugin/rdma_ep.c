/* Endpoints of the RDMA transport: one RC connection each (connect-to-ep
 * through UCP's wireup), one-sided operations through the core's transfer
 * engine, completions from iface progress, flush/fence, failures to UCX. */
#include "rdma.h"

#include <ucs/sys/math.h>
#include <ucs/type/class.h>
#include <errno.h>
#include <string.h>

/* one operation in flight */
typedef struct gdrpipe_rdma_op {
    ucs_list_link_t       link;        /* ep->ops */
    gdrpipe_rdma_ep_t     *ep;
    uct_completion_t      *comp;
    void                  *bounce;     /* short/bcopy: iface bounce buffer */
    uct_unpack_callback_t unpack_cb;   /* get_bcopy */
    void                  *unpack_arg;
    size_t                length;
} gdrpipe_rdma_op_t;

static UCS_F_ALWAYS_INLINE gdrpipe_rdma_iface_t *gdrpipe_rdma_ep_iface(gdrpipe_rdma_ep_t *ep)
{
    return ucs_derived_of(ep->super.super.iface, gdrpipe_rdma_iface_t);
}

static void gdrpipe_rdma_bounce_put(gdrpipe_rdma_iface_t *iface, void *b);

static void gdrpipe_rdma_ep_core_error(void *arg, int code, const char *why)
{
    gdrpipe_rdma_ep_t *ep = arg;

    ucs_diag("gdrpipe_rdma: ep %p: connection failed: %s (%d)", ep, why, code);
    ep->err_pending = 1;
    ep->err_code    = code;
}

static UCS_CLASS_INIT_FUNC(gdrpipe_rdma_ep_t, const uct_ep_params_t *params)
{
    gdrpipe_rdma_iface_t *iface = ucs_derived_of(params->iface, gdrpipe_rdma_iface_t);
    char err[256];

    UCS_CLASS_CALL_SUPER_INIT(uct_base_ep_t, &iface->super);

    if ((params->field_mask & UCT_EP_PARAM_FIELD_IFACE_ADDR) &&
        (params->iface_addr != NULL)) {
        ucs_error("gdrpipe_rdma: endpoints connect to endpoints, not to interfaces");
        return UCS_ERR_UNSUPPORTED;
    }
    self->core = gp_rdma_ep_create(iface->md->dev, &iface->ep_cfg,
                                   gdrpipe_rdma_ep_core_error, self, err, sizeof(err));
    if (self->core == NULL) {
        ucs_error("gdrpipe_rdma: cannot create an endpoint on %s: %s", iface->md->port,
                  err);
        return UCS_ERR_IO_ERROR;
    }
    ucs_queue_head_init(&self->pending_q);
    ucs_queue_head_init(&self->flush_q);
    ucs_list_head_init(&self->ops);
    self->outstanding  = 0;
    self->fenced       = 0;
    self->connected    = 0;
    self->err_pending  = 0;
    self->err_reported = 0;
    self->err_code     = 0;
    ucs_list_add_tail(&iface->eps, &self->link);
    /* the peer's staged requests are served from our progress */
    uct_base_iface_progress_enable(&iface->super.super,
                                   UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    ucs_debug("gdrpipe_rdma: ep %p created on %s", self, iface->md->port);
    return UCS_OK;
}

static void gdrpipe_rdma_ep_complete_flushes(gdrpipe_rdma_ep_t *ep, ucs_status_t status)
{
    gdrpipe_rdma_flush_t *f;

    while (!ucs_queue_is_empty(&ep->flush_q)) {
        f = ucs_queue_pull_elem_non_empty(&ep->flush_q, gdrpipe_rdma_flush_t, queue);
        uct_invoke_completion(f->comp, status);
        ucs_free(f);
    }
}

static UCS_CLASS_CLEANUP_FUNC(gdrpipe_rdma_ep_t)
{
    gdrpipe_rdma_iface_t *iface = gdrpipe_rdma_ep_iface(self);
    gdrpipe_rdma_op_t *op;

    if (self->outstanding != 0) {
        ucs_debug("gdrpipe_rdma: ep %p destroyed with %zu operations in flight", self,
                  self->outstanding);
    }
    if (!ucs_queue_is_empty(&self->pending_q)) {
        ucs_warn("gdrpipe_rdma: ep %p destroyed with pending requests", self);
    }
    ucs_list_del(&self->link);
    /* drops the transfers in flight without their callbacks */
    gp_rdma_ep_destroy(self->core);
    while (!ucs_list_is_empty(&self->ops)) {
        op = ucs_list_extract_head(&self->ops, gdrpipe_rdma_op_t, link);
        if (op->bounce != NULL) {
            gdrpipe_rdma_bounce_put(iface, op->bounce);
        }
        ucs_free(op);
    }
    gdrpipe_rdma_ep_complete_flushes(self, UCS_ERR_CANCELED);
}

UCS_CLASS_DEFINE(gdrpipe_rdma_ep_t, uct_base_ep_t);
UCS_CLASS_DEFINE_NEW_FUNC(gdrpipe_rdma_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DEFINE_DELETE_FUNC(gdrpipe_rdma_ep_t, uct_ep_t);

ucs_status_t gdrpipe_rdma_ep_get_address(uct_ep_h tl_ep, uct_ep_addr_t *addr)
{
    gdrpipe_rdma_ep_t *ep = ucs_derived_of(tl_ep, gdrpipe_rdma_ep_t);

    gp_rdma_ep_address(ep->core, addr);
    return UCS_OK;
}

ucs_status_t gdrpipe_rdma_ep_connect_to_ep(uct_ep_h tl_ep, const uct_device_addr_t *dev_addr,
                                           const uct_ep_addr_t *ep_addr)
{
    gdrpipe_rdma_ep_t *ep = ucs_derived_of(tl_ep, gdrpipe_rdma_ep_t);
    int rc;

    rc = gp_rdma_ep_connect(ep->core, ep_addr, gp_rdma_ep_address_length());
    if (rc != 0) {
        ucs_error("gdrpipe_rdma: ep %p: cannot connect: %s", ep, strerror(-rc));
        return (rc == -EINVAL) ? UCS_ERR_INVALID_ADDR : UCS_ERR_UNREACHABLE;
    }
    ep->connected = 1;
    ucs_debug("gdrpipe_rdma: ep %p connected", ep);
    return UCS_OK;
}

static ucs_status_t gdrpipe_rdma_status(int status)
{
    switch (status) {
    case 0:            return UCS_OK;
    case -ECONNRESET:  return UCS_ERR_CONNECTION_RESET;
    case -EACCES:      return UCS_ERR_REJECTED;
    case -EINVAL:      return UCS_ERR_INVALID_PARAM;
    case -ECANCELED:   return UCS_ERR_CANCELED;
    case -ENOMEM:      return UCS_ERR_NO_MEMORY;
    default:           return UCS_ERR_IO_ERROR;
    }
}

static void *gdrpipe_rdma_bounce_get(gdrpipe_rdma_iface_t *iface)
{
    return (iface->bounce_nfree == 0) ? NULL : iface->bounce_free[--iface->bounce_nfree];
}

static void gdrpipe_rdma_bounce_put(gdrpipe_rdma_iface_t *iface, void *b)
{
    iface->bounce_free[iface->bounce_nfree++] = b;
}

static void gdrpipe_rdma_op_done(void *arg, int status)
{
    gdrpipe_rdma_op_t *op       = arg;
    gdrpipe_rdma_ep_t *ep       = op->ep;
    gdrpipe_rdma_iface_t *iface = gdrpipe_rdma_ep_iface(ep);
    ucs_status_t st             = gdrpipe_rdma_status(status);

    if (status != 0) {
        ucs_debug("gdrpipe_rdma: ep %p: operation of %zu bytes failed: %s", ep,
                  op->length, ucs_status_string(st));
    }
    if ((st == UCS_OK) && (op->unpack_cb != NULL)) {
        op->unpack_cb(op->unpack_arg, op->bounce, op->length);
    }
    if (op->bounce != NULL) {
        gdrpipe_rdma_bounce_put(iface, op->bounce);
    }
    ucs_list_del(&op->link);
    --ep->outstanding;
    if (ep->outstanding == 0) {
        ep->fenced = 0;
    }
    if (op->comp != NULL) {
        uct_invoke_completion(op->comp, st);
    }
    ucs_free(op);
}

static UCS_F_ALWAYS_INLINE int gdrpipe_rdma_ep_blocked(gdrpipe_rdma_ep_t *ep)
{
    return ep->fenced && (ep->outstanding != 0);
}

/* Starts one transfer; op is consumed on success and on failure. */
static ucs_status_t gdrpipe_rdma_ep_post(gdrpipe_rdma_ep_t *ep, int is_get, void *local,
                                         size_t length, uint64_t remote_addr,
                                         uct_rkey_t rkey, int path, gdrpipe_rdma_op_t *op)
{
    int rc;

    op->ep     = ep;
    op->length = length;
    rc = gp_rdma_ep_start(ep->core, is_get, local, length, remote_addr,
                          (const void*)rkey, path, gdrpipe_rdma_op_done, op);
    if (rc != 0) {
        if (op->bounce != NULL) {
            gdrpipe_rdma_bounce_put(gdrpipe_rdma_ep_iface(ep), op->bounce);
        }
        ucs_free(op);
        if (rc == -EAGAIN) {
            return UCS_ERR_NO_RESOURCE;
        }
        if (rc != -ECONNRESET) {
            ucs_error("gdrpipe_rdma: ep %p: cannot start a %s of %zu bytes: %s", ep,
                      is_get ? "get" : "put", length, strerror(-rc));
        }
        return gdrpipe_rdma_status(rc);
    }
    ucs_list_add_tail(&ep->ops, &op->link);
    ++ep->outstanding;
    return UCS_INPROGRESS;
}

static gdrpipe_rdma_op_t *gdrpipe_rdma_op_new(gdrpipe_rdma_ep_t *ep, int bounce,
                                              uct_completion_t *comp)
{
    gdrpipe_rdma_iface_t *iface = gdrpipe_rdma_ep_iface(ep);
    gdrpipe_rdma_op_t *op;

    if (gdrpipe_rdma_ep_blocked(ep) || (bounce && (iface->bounce_nfree == 0))) {
        return NULL;
    }
    op = ucs_calloc(1, sizeof(*op), "gdrpipe_rdma op");
    if (op == NULL) {
        return NULL;
    }
    op->comp = comp;
    if (bounce) {
        op->bounce = gdrpipe_rdma_bounce_get(iface);
    }
    return op;
}

ucs_status_t gdrpipe_rdma_ep_put_short(uct_ep_h tl_ep, const void *buffer, unsigned length,
                                       uint64_t remote_addr, uct_rkey_t rkey)
{
    gdrpipe_rdma_ep_t *ep = ucs_derived_of(tl_ep, gdrpipe_rdma_ep_t);
    gdrpipe_rdma_op_t *op;
    ucs_status_t status;

    if (length == 0) {
        return UCS_OK;
    }
    op = gdrpipe_rdma_op_new(ep, 1, NULL);
    if (op == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }
    memcpy(op->bounce, buffer, length);
    status = gdrpipe_rdma_ep_post(ep, 0, op->bounce, length, remote_addr, rkey,
                                  GP_PATH_DIRECT, op);
    return (status == UCS_INPROGRESS) ? UCS_OK : status;
}

ssize_t gdrpipe_rdma_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb, void *arg,
                                  uint64_t remote_addr, uct_rkey_t rkey)
{
    gdrpipe_rdma_ep_t *ep = ucs_derived_of(tl_ep, gdrpipe_rdma_ep_t);
    gdrpipe_rdma_op_t *op;
    ucs_status_t status;
    size_t length;

    op = gdrpipe_rdma_op_new(ep, 1, NULL);
    if (op == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }
    length = pack_cb(op->bounce, arg);
    if (length == 0) {
        gdrpipe_rdma_bounce_put(gdrpipe_rdma_ep_iface(ep), op->bounce);
        ucs_free(op);
        return 0;
    }
    status = gdrpipe_rdma_ep_post(ep, 0, op->bounce, length, remote_addr, rkey,
                                  GP_PATH_DIRECT, op);
    return (status == UCS_INPROGRESS) ? (ssize_t)length : (ssize_t)status;
}

ucs_status_t gdrpipe_rdma_ep_get_bcopy(uct_ep_h tl_ep, uct_unpack_callback_t unpack_cb,
                                       void *arg, size_t length, uint64_t remote_addr,
                                       uct_rkey_t rkey, uct_completion_t *comp)
{
    gdrpipe_rdma_ep_t *ep = ucs_derived_of(tl_ep, gdrpipe_rdma_ep_t);
    gdrpipe_rdma_op_t *op;

    if (length == 0) {
        unpack_cb(arg, NULL, 0);
        return UCS_OK;
    }
    op = gdrpipe_rdma_op_new(ep, 1, comp);
    if (op == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }
    op->unpack_cb  = unpack_cb;
    op->unpack_arg = arg;
    return gdrpipe_rdma_ep_post(ep, 1, op->bounce, length, remote_addr, rkey,
                                GP_PATH_DIRECT, op);
}

static ucs_status_t gdrpipe_rdma_ep_zcopy(uct_ep_h tl_ep, int is_get, const uct_iov_t *iov,
                                          size_t iovcnt, uint64_t remote_addr,
                                          uct_rkey_t rkey, uct_completion_t *comp)
{
    gdrpipe_rdma_ep_t *ep = ucs_derived_of(tl_ep, gdrpipe_rdma_ep_t);
    gdrpipe_rdma_op_t *op;
    size_t length;

    if (iovcnt == 0) {
        return UCS_OK;
    }
    if (iovcnt != 1) {
        ucs_error("gdrpipe_rdma: %zu iov entries (max_iov is 1)", iovcnt);
        return UCS_ERR_INVALID_PARAM;
    }
    length = iov[0].length * ucs_max(iov[0].count, 1);
    if (length == 0) {
        return UCS_OK;
    }
    op = gdrpipe_rdma_op_new(ep, 0, comp);
    if (op == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }
    return gdrpipe_rdma_ep_post(ep, is_get, iov[0].buffer, length, remote_addr, rkey,
                                GP_PATH_AUTO, op);
}

ucs_status_t gdrpipe_rdma_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                                       uint64_t remote_addr, uct_rkey_t rkey,
                                       uct_completion_t *comp)
{
    return gdrpipe_rdma_ep_zcopy(tl_ep, 0, iov, iovcnt, remote_addr, rkey, comp);
}

ucs_status_t gdrpipe_rdma_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                                       uint64_t remote_addr, uct_rkey_t rkey,
                                       uct_completion_t *comp)
{
    return gdrpipe_rdma_ep_zcopy(tl_ep, 1, iov, iovcnt, remote_addr, rkey, comp);
}

ucs_status_t gdrpipe_rdma_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                         unsigned flags)
{
    gdrpipe_rdma_ep_t *ep = ucs_derived_of(tl_ep, gdrpipe_rdma_ep_t);

    if (ucs_queue_is_empty(&ep->pending_q) && !gdrpipe_rdma_ep_blocked(ep) &&
        (gdrpipe_rdma_ep_iface(ep)->bounce_nfree != 0) && !ep->err_pending) {
        return UCS_ERR_BUSY;
    }
    uct_pending_req_queue_push(&ep->pending_q, req);
    return UCS_OK;
}

static void gdrpipe_rdma_purge_noop(uct_pending_req_t *req, void *arg)
{
}

void gdrpipe_rdma_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb,
                                   void *arg)
{
    gdrpipe_rdma_ep_t *ep = ucs_derived_of(tl_ep, gdrpipe_rdma_ep_t);
    uct_pending_req_priv_queue_t *priv;

    if (cb != NULL) {
        uct_pending_queue_purge(priv, &ep->pending_q, 1, cb, arg);
    } else {
        uct_pending_queue_purge(priv, &ep->pending_q, 1, gdrpipe_rdma_purge_noop, NULL);
    }
}

/* Every operation completes through the transfer engine; a flush waits for
 * those started before it (cancel: the same, failed ones complete with an
 * error from progress). */
ucs_status_t gdrpipe_rdma_ep_flush(uct_ep_h tl_ep, unsigned flags, uct_completion_t *comp)
{
    gdrpipe_rdma_ep_t *ep = ucs_derived_of(tl_ep, gdrpipe_rdma_ep_t);
    gdrpipe_rdma_flush_t *f;

    if (flags & UCT_FLUSH_FLAG_CANCEL) {
        gdrpipe_rdma_ep_pending_purge(tl_ep, NULL, NULL);
    } else if (!ucs_queue_is_empty(&ep->pending_q)) {
        return UCS_ERR_NO_RESOURCE;
    }
    if (ep->outstanding == 0) {
        return UCS_OK;
    }
    if (comp != NULL) {
        f = ucs_malloc(sizeof(*f), "gdrpipe_rdma flush");
        if (f == NULL) {
            return UCS_ERR_NO_MEMORY;
        }
        f->comp = comp;
        ucs_queue_push(&ep->flush_q, &f->queue);
    }
    return UCS_INPROGRESS;
}

/* RDMA WRITEs, READs and staged streams may complete at the remote in
 * another order than issued: after a fence, new operations wait until those
 * before it have completed. */
ucs_status_t gdrpipe_rdma_ep_fence(uct_ep_h tl_ep, unsigned flags)
{
    gdrpipe_rdma_ep_t *ep = ucs_derived_of(tl_ep, gdrpipe_rdma_ep_t);

    if (ep->outstanding != 0) {
        ep->fenced = 1;
    }
    return UCS_OK;
}

unsigned gdrpipe_rdma_ep_progress(gdrpipe_rdma_ep_t *ep)
{
    uct_pending_req_priv_queue_t *priv;
    unsigned count;

    count = gp_rdma_ep_progress(ep->core);
    if ((ep->outstanding == 0) && !ucs_queue_is_empty(&ep->flush_q)) {
        gdrpipe_rdma_ep_complete_flushes(ep, UCS_OK);
    }
    if (!ucs_queue_is_empty(&ep->pending_q) && !gdrpipe_rdma_ep_blocked(ep)) {
        uct_pending_queue_dispatch(priv, &ep->pending_q,
                                   !gdrpipe_rdma_ep_blocked(ep) &&
                                   (gdrpipe_rdma_ep_iface(ep)->bounce_nfree != 0));
    }
    return count;
}
