/* Device<->host copy transport: put/get short are synchronous copies,
 * put/get zcopy are asynchronous and complete from progress. remote_addr is
 * the device address on the same process (UCP's memory-type endpoint: the
 * side that is not host memory); no remote key.
 *
 * A remote address the driver no longer knows as device memory was freed by
 * the application while UCP was still moving it (an erroneous program: the
 * data of that transfer is undefined). It is never touched: the copy is
 * skipped with a logged error (bounded) and the operation completes, because
 * UCP 1.13 cannot take an error there (protocol v1 leaves the peer's request
 * waiting, v2 aborts). The completion is still delivered from progress, never
 * at once: v2's rendezvous put (`rndv_put.c`) asserts when its staging copy
 * does not return UCS_INPROGRESS. Other transfers go on unharmed. */
#include "copy.h"

#include <string.h>

#define GDRPIPE_COPY_MAX_POLL 16

static uct_iface_ops_t gdrpipe_copy_iface_ops;
static gdrpipe_ucx_iface_ops_t gdrpipe_copy_iface_internal_ops;
static const gdrpipe_ucx_iface_funcs_t gdrpipe_copy_iface_funcs;

static UCS_CLASS_INIT_FUNC(gdrpipe_copy_ep_t, const uct_ep_params_t *params)
{
    gdrpipe_copy_iface_t *iface = ucs_derived_of(params->iface, gdrpipe_copy_iface_t);

    UCS_CLASS_CALL_SUPER_INIT(uct_base_ep_t, &iface->super);
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(gdrpipe_copy_ep_t)
{
}

UCS_CLASS_DEFINE(gdrpipe_copy_ep_t, uct_base_ep_t);
static UCS_CLASS_DEFINE_NEW_FUNC(gdrpipe_copy_ep_t, uct_ep_t, const uct_ep_params_t*);
static UCS_CLASS_DEFINE_DELETE_FUNC(gdrpipe_copy_ep_t, uct_ep_t);

/* a copy skipped because the application freed the device memory */
static void gdrpipe_copy_freed(const char *op, size_t len, const char *why)
{
    gdrpipe_bounded_error("gdrpipe: %s of %zu bytes skipped: %s; the data of that "
                          "transfer is undefined", op, len, why);
}

/* The copy transport moves data between a buffer here and one at the
 * remote address of the same process, at least one of them device memory.
 * The remote one is expected there (device_side): when the driver no longer
 * knows it, the copy goes with the local buffer as the device side instead
 * (UCP also copies between host memory at the remote address and a device
 * buffer here, such as a rank's message to itself), and between two host
 * buffers (UCX 1.18 sends a rank's large host messages to itself through
 * it): with neither side device memory the copy goes on as a host copy
 * where the CPU can read both. A remote device buffer freed while the
 * transfer was in flight leaves an unreadable range behind: that copy is
 * skipped (GP_CUDA_NOT_DEVICE) rather than touching it with the CPU. */
static int gdrpipe_copy_other_side(int device_side)
{
    return device_side == GP_CUDA_DST_DEVICE ? GP_CUDA_SRC_DEVICE : GP_CUDA_DST_DEVICE;
}

/* device_side for the retry: the other side, or 0 (any) when both are host
 * memory */
static int gdrpipe_copy_retry_side(const void *dst, const void *src, size_t len,
                                   int device_side)
{
    gp_mem_info_t d, s;

    if ((gp_cuda_mem_query(dst, &d) == 0) && (gp_cuda_mem_query(src, &s) == 0) &&
        (d.kind == GP_MEM_HOST) && (s.kind == GP_MEM_HOST) &&
        gp_host_accessible(dst, len) && gp_host_accessible(src, len)) {
        return 0;
    }
    return gdrpipe_copy_other_side(device_side);
}

static int gdrpipe_copy_dev(void *dst, const void *src, size_t len, int device_side,
                            char *err, size_t errlen)
{
    int rc = gp_cuda_copy_dev(dst, src, len, device_side, err, errlen);

    if (rc == GP_CUDA_NOT_DEVICE) {
        rc = gp_cuda_copy_dev(dst, src, len, gdrpipe_copy_retry_side(dst, src, len, device_side),
                              err, errlen);
    }
    return rc;
}

static int gdrpipe_copy_async_dev(void *dst, const void *src, size_t len, int device_side,
                                  gp_cuda_op_t **op, char *err, size_t errlen)
{
    int rc = gp_cuda_copy_async_dev(dst, src, len, device_side, op, err, errlen);

    if (rc == GP_CUDA_NOT_DEVICE) {
        rc = gp_cuda_copy_async_dev(dst, src, len,
                                    gdrpipe_copy_retry_side(dst, src, len, device_side), op, err,
                                    errlen);
    }
    return rc;
}

static uint64_t gdrpipe_copy_known_copies; /* gdrpipe_copy_known's */

uint64_t gdrpipe_copy_known_count(void)
{
    return __atomic_load_n(&gdrpipe_copy_known_copies, __ATOMIC_RELAXED);
}

/* A short copy whose device side this thread's send and receive wrappers
 * already know (ucp_send.c: the same buffers again and again, and no
 * allocation or free since): no questions to the driver, which cost about
 * as much as the rest of the call's CPU work. 1: not known. */
static int gdrpipe_copy_known(void *dst, const void *src, size_t len, int device_side,
                              char *err, size_t errlen)
{
    int device = gdrpipe_send_known_device((device_side == GP_CUDA_DST_DEVICE) ? dst : src,
                                           len);

    if (device < 0) {
        return 1;
    }
    __atomic_fetch_add(&gdrpipe_copy_known_copies, 1, __ATOMIC_RELAXED);
    /* from the device: on the stream that waits for the legacy one, as
     * cuMemcpy would */
    return (device_side == GP_CUDA_DST_DEVICE) ?
           gp_cuda_copy_to_device(dst, src, len, device, err, errlen) :
           gp_cuda_copy_from_device(dst, src, len, device, err, errlen);
}

static ucs_status_t gdrpipe_copy_sync(void *dst, const void *src, size_t len,
                                      int device_side, const char *op)
{
    char err[256];
    int rc = gdrpipe_copy_known(dst, src, len, device_side, err, sizeof(err));

    if (rc == 1) {
        rc = gdrpipe_copy_dev(dst, src, len, device_side, err, sizeof(err));
    }

    if (rc == GP_CUDA_NOT_DEVICE) {
        gdrpipe_copy_freed(op, len, err);
    } else if (rc != 0) {
        ucs_error("gdrpipe: %s of %zu bytes %p -> %p failed: %s", op, len, src, dst,
                  err);
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

static ucs_status_t gdrpipe_copy_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                              unsigned length, uint64_t remote_addr,
                                              uct_rkey_t rkey)
{
    return gdrpipe_copy_sync((void*)remote_addr, buffer, length, GP_CUDA_DST_DEVICE,
                             "put_short");
}

static ucs_status_t gdrpipe_copy_ep_get_short(uct_ep_h tl_ep, void *buffer,
                                              unsigned length, uint64_t remote_addr,
                                              uct_rkey_t rkey)
{
    return gdrpipe_copy_sync(buffer, (const void*)remote_addr, length, GP_CUDA_SRC_DEVICE,
                             "get_short");
}

/* Queues one asynchronous copy per iov entry; the last one carries comp. */
static ucs_status_t gdrpipe_copy_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                       size_t iovcnt, uint64_t remote_addr,
                                       uct_completion_t *comp, int is_put)
{
    gdrpipe_copy_iface_t *iface = ucs_derived_of(tl_ep->iface, gdrpipe_copy_iface_t);
    gdrpipe_copy_op_t *desc     = NULL;
    uint64_t raddr              = remote_addr;
    char err[256];
    size_t i, len;
    void *local;
    int rc, skipped = 0;

    for (i = 0; i < iovcnt; ++i) {
        len   = uct_iov_get_length(&iov[i]);
        local = iov[i].buffer;
        if (len == 0) {
            continue;
        }
        desc = ucs_mpool_get(&iface->op_mp);
        if (desc == NULL) {
            return UCS_ERR_NO_MEMORY;
        }
        desc->comp = NULL;
        desc->op   = NULL;
        rc         = is_put ? gdrpipe_copy_async_dev((void*)raddr, local, len,
                                                     GP_CUDA_DST_DEVICE, &desc->op, err,
                                                     sizeof(err)) :
                              gdrpipe_copy_async_dev(local, (void*)raddr, len,
                                                     GP_CUDA_SRC_DEVICE, &desc->op, err,
                                                     sizeof(err));
        if (rc == GP_CUDA_NOT_DEVICE) {
            ucs_mpool_put(desc);
            desc = NULL;
            gdrpipe_copy_freed(is_put ? "put_zcopy" : "get_zcopy", len, err);
            raddr += len;
            skipped = 1;
            continue;
        }
        if (rc != 0) {
            ucs_mpool_put(desc);
            ucs_error("gdrpipe: %s_zcopy of %zu bytes failed: %s",
                      is_put ? "put" : "get", len, err);
            return UCS_ERR_IO_ERROR;
        }
        ucs_queue_push(&iface->outstanding, &desc->queue);
        raddr += len;
    }
    if ((desc == NULL) && (!skipped || (comp == NULL))) {
        return UCS_OK;   /* nothing to copy */
    }
    if (desc == NULL) {
        /* everything skipped: completed, reported from progress */
        desc = ucs_mpool_get(&iface->op_mp);
        if (desc == NULL) {
            return UCS_ERR_NO_MEMORY;
        }
        desc->op = NULL;
        ucs_queue_push(&iface->outstanding, &desc->queue);
    }
    desc->comp = comp;
    return UCS_INPROGRESS;
}

static ucs_status_t gdrpipe_copy_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                              size_t iovcnt, uint64_t remote_addr,
                                              uct_rkey_t rkey, uct_completion_t *comp)
{
    return gdrpipe_copy_zcopy(tl_ep, iov, iovcnt, remote_addr, comp, 1);
}

static ucs_status_t gdrpipe_copy_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov,
                                              size_t iovcnt, uint64_t remote_addr,
                                              uct_rkey_t rkey, uct_completion_t *comp)
{
    return gdrpipe_copy_zcopy(tl_ep, iov, iovcnt, remote_addr, comp, 0);
}

static unsigned gdrpipe_copy_iface_progress(uct_iface_h tl_iface)
{
    gdrpipe_copy_iface_t *iface = ucs_derived_of(tl_iface, gdrpipe_copy_iface_t);
    gdrpipe_copy_op_t *desc;
    unsigned count = 0;
    char err[256];
    int ret;

    while (!ucs_queue_is_empty(&iface->outstanding) &&
           (count < GDRPIPE_COPY_MAX_POLL)) {
        desc = ucs_queue_head_elem_non_empty(&iface->outstanding, gdrpipe_copy_op_t,
                                             queue);
        ret  = (desc->op == NULL) ? 1 : gp_cuda_op_poll(desc->op, err, sizeof(err));
        if (ret == 0) {
            break;
        }
        ucs_queue_pull_non_empty(&iface->outstanding);
        if (ret < 0) {
            ucs_error("gdrpipe: asynchronous copy failed: %s", err);
        }
        if (desc->comp != NULL) {
            uct_invoke_completion(desc->comp, (ret < 0) ? UCS_ERR_IO_ERROR : UCS_OK);
        }
        if (desc->op != NULL) {
            gp_cuda_op_release(desc->op);
        }
        ucs_mpool_put(desc);
        ++count;
    }
    return count;
}

static ucs_status_t gdrpipe_copy_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                             uct_completion_t *comp)
{
    gdrpipe_copy_iface_t *iface = ucs_derived_of(tl_iface, gdrpipe_copy_iface_t);

    if (comp != NULL) {
        return UCS_ERR_UNSUPPORTED;
    }
    return ucs_queue_is_empty(&iface->outstanding) ? UCS_OK : UCS_INPROGRESS;
}

static ucs_status_t gdrpipe_copy_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                          uct_completion_t *comp)
{
    return gdrpipe_copy_iface_flush(tl_ep->iface, 0, NULL);
}

static ucs_status_t gdrpipe_copy_iface_query(uct_iface_h tl_iface, uct_iface_attr_t *attr)
{
    gdrpipe_copy_iface_t *iface = ucs_derived_of(tl_iface, gdrpipe_copy_iface_t);

    uct_base_iface_query(&iface->super, attr);
    attr->iface_addr_len  = sizeof(uint64_t);
    attr->device_addr_len = 0;
    attr->ep_addr_len     = 0;
    attr->cap.flags       = UCT_IFACE_FLAG_CONNECT_TO_IFACE | UCT_IFACE_FLAG_GET_SHORT |
                            UCT_IFACE_FLAG_PUT_SHORT | UCT_IFACE_FLAG_GET_ZCOPY |
                            UCT_IFACE_FLAG_PUT_ZCOPY | UCT_IFACE_FLAG_PENDING;
    attr->cap.event_flags = 0;

    gdrpipe_iface_fill_rma_caps(attr, UINT_MAX, 0, UINT_MAX, 0, 1);

    attr->latency             = ucs_linear_func_make(iface->latency, 0);
    attr->bandwidth.dedicated = 0;
    attr->bandwidth.shared    = ucs_min(iface->h2d_bw, iface->d2h_bw);
    attr->overhead            = 0;
    attr->priority            = 0;
    return UCS_OK;
}

static void gdrpipe_copy_estimate_perf(uct_iface_h tl_iface, gdrpipe_ucx_perf_t *perf)
{
    gdrpipe_copy_iface_t *iface = ucs_derived_of(tl_iface, gdrpipe_copy_iface_t);
    double bw                   = ucs_min(iface->h2d_bw, iface->d2h_bw);

    switch (perf->op) {
    case GDRPIPE_UCX_OP_GET_SHORT:
    case GDRPIPE_UCX_OP_GET_ZCOPY:
        bw = iface->d2h_bw;
        break;
    case GDRPIPE_UCX_OP_PUT_SHORT:
    case GDRPIPE_UCX_OP_PUT_ZCOPY:
        bw = iface->h2d_bw;
        break;
    default:
        break;
    }
    perf->bw_dedicated       = 0;
    perf->bw_shared          = bw;
    perf->send_pre_overhead  = 2e-6;   /* launching a copy */
    perf->send_post_overhead = 0;
    perf->recv_overhead      = 0;
    perf->latency            = ucs_linear_func_make(iface->latency, 0);
    perf->max_inflight_eps   = SIZE_MAX;
}

static ucs_status_t gdrpipe_copy_iface_get_address(uct_iface_h tl_iface,
                                                   uct_iface_addr_t *addr)
{
    /* UCP packs addresses byte by byte: no alignment here */
    memcpy(addr, &ucs_derived_of(tl_iface, gdrpipe_copy_iface_t)->id, sizeof(uint64_t));
    return UCS_OK;
}

static int gdrpipe_copy_iface_is_reachable(const uct_iface_h tl_iface,
                                           const uct_device_addr_t *dev_addr,
                                           const uct_iface_addr_t *iface_addr)
{
    gdrpipe_copy_iface_t *iface = ucs_derived_of(tl_iface, gdrpipe_copy_iface_t);
    uint64_t id;

    if (iface_addr == NULL) {
        return 0;
    }
    memcpy(&id, iface_addr, sizeof(id)); /* unaligned in UCP's address */
    return id == iface->id;
}


static UCS_CLASS_INIT_FUNC(gdrpipe_copy_iface_t, uct_md_h md, uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    gdrpipe_iface_config_t *config = ucs_derived_of(tl_config, gdrpipe_iface_config_t);
    ucs_status_t status;

    GDRPIPE_IFACE_SUPER_INIT(&gdrpipe_copy_iface_ops,
                             gdrpipe_ucx_iface_ops(&gdrpipe_copy_iface_internal_ops,
                                                   &gdrpipe_copy_iface_funcs),
                             md, worker, params, tl_config);
    self->id      = ucs_generate_uuid((uintptr_t)self);
    self->h2d_bw  = config->copy_h2d_bw;
    self->d2h_bw  = config->copy_d2h_bw;
    self->latency = config->copy_latency;
    ucs_queue_head_init(&self->outstanding);
    status = gdrpipe_ucx_mpool_init(&self->op_mp, sizeof(gdrpipe_copy_op_t), 16,
                                    "gdrpipe_copy_ops");
    if (status != UCS_OK) {
        return status;
    }
    /* zero-copy operations complete from progress */
    uct_base_iface_progress_enable(&self->super.super,
                                   UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(gdrpipe_copy_iface_t)
{
    gdrpipe_copy_op_t *desc;

    uct_base_iface_progress_disable(&self->super.super,
                                    UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    /* wait for copies still in flight: their memory may be freed next */
    while (!ucs_queue_is_empty(&self->outstanding)) {
        desc = ucs_queue_pull_elem_non_empty(&self->outstanding, gdrpipe_copy_op_t,
                                             queue);
        if (desc->op != NULL) {
            while (gp_cuda_op_poll(desc->op, NULL, 0) == 0) {
            }
            gp_cuda_op_release(desc->op);
        }
        ucs_mpool_put(desc);
    }
    ucs_mpool_cleanup(&self->op_mp, 1);
}

GDRPIPE_IFACE_CLASS(gdrpipe_copy_iface_t, gdrpipe_copy_iface_open)

static const gdrpipe_ucx_iface_funcs_t gdrpipe_copy_iface_funcs = {
    .estimate_perf = gdrpipe_copy_estimate_perf
};

static uct_iface_ops_t gdrpipe_copy_iface_ops = {
    .ep_put_short             = gdrpipe_copy_ep_put_short,
    .ep_get_short             = gdrpipe_copy_ep_get_short,
    .ep_put_zcopy             = gdrpipe_copy_ep_put_zcopy,
    .ep_get_zcopy             = gdrpipe_copy_ep_get_zcopy,
    .ep_pending_add           = (void*)ucs_empty_function_return_busy,
    .ep_pending_purge         = (uct_ep_pending_purge_func_t)ucs_empty_function,
    .ep_flush                 = gdrpipe_copy_ep_flush,
    .ep_fence                 = uct_base_ep_fence,
    GDRPIPE_IFACE_COMMON_OPS(gdrpipe_copy, gdrpipe_copy_iface_t, gdrpipe_copy_ep_t),
    .iface_fence              = uct_base_iface_fence,
    .iface_get_device_address = (void*)ucs_empty_function_return_success,
    .iface_get_address        = gdrpipe_copy_iface_get_address,
    .iface_is_reachable       = gdrpipe_copy_iface_is_reachable
};
