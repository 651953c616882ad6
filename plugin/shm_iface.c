/* Interface of the intra-host wire: capabilities, addresses, progress,
 * opening and closing. */
#include "shm_iface.h"
#include "shm_ep.h"
#include "shm_flush.h"

#include <string.h>
#include <math.h>

#define GDRPIPE_SHM_PROGRESS_MAX 16

/* the device address: the host, so that only processes of this one connect */
typedef struct {
    uint64_t host_id;
} gdrpipe_shm_dev_addr_t;

static uct_iface_ops_t gdrpipe_shm_iface_ops;

static ucs_status_t gdrpipe_shm_iface_query(uct_iface_h tl_iface, uct_iface_attr_t *attr)
{
    gdrpipe_shm_iface_t *iface = ucs_derived_of(tl_iface, gdrpipe_shm_iface_t);
    uint64_t rma = 0;

    uct_base_iface_query(&iface->super, attr);

    if (iface->cma_ok) {
        rma = UCT_IFACE_FLAG_PUT_SHORT | UCT_IFACE_FLAG_PUT_BCOPY |
              UCT_IFACE_FLAG_PUT_ZCOPY | UCT_IFACE_FLAG_GET_BCOPY |
              UCT_IFACE_FLAG_GET_ZCOPY;
    }

    attr->iface_addr_len  = gp_shm_address_length();
    attr->device_addr_len = sizeof(gdrpipe_shm_dev_addr_t);
    attr->ep_addr_len     = 0;
    attr->max_conn_priv   = 0;
    attr->cap.flags       = UCT_IFACE_FLAG_CONNECT_TO_IFACE | UCT_IFACE_FLAG_AM_SHORT |
                            UCT_IFACE_FLAG_AM_BCOPY | UCT_IFACE_FLAG_PENDING |
                            UCT_IFACE_FLAG_CB_SYNC | UCT_IFACE_FLAG_EP_CHECK |
                            UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE | rma;
    attr->cap.event_flags = 0;

    attr->cap.am.max_short       = iface->max_payload;
    attr->cap.am.max_bcopy       = iface->max_payload;
    attr->cap.am.min_zcopy       = 0;
    attr->cap.am.max_zcopy       = 0;
    attr->cap.am.opt_zcopy_align = 1;
    attr->cap.am.align_mtu       = 1;
    attr->cap.am.max_hdr         = 0;
    attr->cap.am.max_iov         = GDRPIPE_SHM_AM_MAX_IOV;

    if (iface->cma_ok) {
        gdrpipe_iface_fill_rma_caps(attr, iface->max_payload, iface->max_payload, 0,
                                    iface->max_payload, GDRPIPE_SHM_MAX_IOV);
    }

    attr->latency             = ucs_linear_func_make(iface->latency, 0);
    /* Dedicated, not shared. UCP divides shared bandwidth by the processes
     * per node (estimated_num_ppn, which Open MPI sets), and eager and
     * rendezvous both run on this wire: its automatic rendezvous threshold
     * (ucp_ep_config_calc_rndv_thresh) then divides a fixed cost by
     * 1/min(bw/ppn, BCOPY_BW) - 0.99/(bw/ppn), nearly zero. With 2 ranks on
     * an Intel host (BCOPY_BW 5.8 GB/s) that put it at 47 KB, with 8 ranks
     * at 44 KB on any host, and device messages of 16 and 32 KiB went eager
     * (two copies per 8 KiB fragment: 37 and 64 us one-way on the H200 pair,
     * 11 us by rendezvous). Dedicated: the threshold is the AM bcopy size
     * whatever the CPU and rank count. */
    attr->bandwidth.dedicated = iface->bw;
    attr->bandwidth.shared    = 0;
    attr->overhead            = 10e-9;
    attr->priority            = 0;
    return UCS_OK;
}

static ucs_status_t gdrpipe_shm_iface_get_address(uct_iface_h tl_iface,
                                                  uct_iface_addr_t *addr)
{
    gdrpipe_shm_iface_t *iface = ucs_derived_of(tl_iface, gdrpipe_shm_iface_t);

    gp_shm_iface_address(iface->core, addr);
    return UCS_OK;
}

static ucs_status_t gdrpipe_shm_iface_get_device_address(uct_iface_h tl_iface,
                                                         uct_device_addr_t *addr)
{
    gdrpipe_shm_dev_addr_t a = {.host_id = gdrpipe_host_id()};

    memcpy(addr, &a, sizeof(a)); /* UCP packs addresses unaligned */
    return UCS_OK;
}

/* whether an address is this interface's own */
static int gdrpipe_shm_iface_is_own(const uct_iface_h tl_iface,
                                    const uct_iface_addr_t *iface_addr)
{
    gdrpipe_shm_iface_t *iface = ucs_derived_of(tl_iface, gdrpipe_shm_iface_t);
    size_t len                 = gp_shm_address_length();
    char own[len];

    gp_shm_iface_address(iface->core, own);
    return memcmp(own, iface_addr, len) == 0;
}

static int gdrpipe_shm_iface_is_reachable(const uct_iface_h tl_iface,
                                          const uct_device_addr_t *dev_addr,
                                          const uct_iface_addr_t *iface_addr)
{
    gdrpipe_shm_dev_addr_t a;
    const char *why;

    if ((dev_addr == NULL) || (iface_addr == NULL)) {
        return 0;
    }
    memcpy(&a, dev_addr, sizeof(a)); /* unaligned in UCP's address */
    if (a.host_id != gdrpipe_host_id()) {
        return 0;
    }
    if (gdrpipe_ucx_md_reaches_registered && gdrpipe_shm_iface_is_own(tl_iface, iface_addr)) {
        /* where the wire's md reaches device memory, UCP would take the
         * wire for its copies between memory types in one process (they go
         * by the copy transport); a worker reaches itself by 'self' */
        return 0;
    }
    why = gp_shm_check_address(iface_addr, gp_shm_address_length());
    if (why != NULL) {
        /* a process of this host whose wire address this one cannot use:
         * another gdrpipe version, or garbage; said once */
        static int said;
        if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED)) {
            ucs_error("gdrpipe: a process on this host is unreachable through gdrpipe: %s", why);
        }
        return 0;
    }
    return 1;
}

/* Hands one wire message to its consumer: the data paths' control messages
 * to the engine, the others to UCT's active-message handlers. */
static void gdrpipe_shm_iface_am_cb(void *arg, uint8_t am_id, void *data, uint32_t len)
{
    gdrpipe_shm_iface_t *iface = arg;

    if (am_id == GP_CTRL_AM_ID) {
        if (iface->xfer != NULL) {
            iface->xfer_busy = 1;
            gp_xfer_on_control(iface->xfer, data, len);
        } else {
            ucs_error("gdrpipe: data-path control message but the data paths are unavailable here");
        }
        return;
    }
    if (am_id == GDRPIPE_SINK_HINT_AM_ID) {
        gdrpipe_send_sink_hint(data, len);
        return;
    }
    if (am_id >= UCT_AM_ID_MAX) {
        gdrpipe_peer_error("gdrpipe: dropped message with invalid active message id %u", am_id);
        return;
    }
    uct_iface_invoke_am(&iface->super, am_id, data, len, 0);
}

static unsigned gdrpipe_shm_iface_progress(uct_iface_h tl_iface)
{
    gdrpipe_shm_iface_t *iface = ucs_derived_of(tl_iface, gdrpipe_shm_iface_t);
    unsigned count;

    /* the GPU copies this call starts (UCP answering the messages it
     * delivers) are launched together when it ends (gdrpipe_shm_xfer_start) */
    ++iface->progressing;
    ++gdrpipe_progress_calls;
    count = gp_shm_progress(iface->core, gdrpipe_shm_iface_am_cb, iface,
                            GDRPIPE_SHM_PROGRESS_MAX);
    if (iface->xfer_busy) {
        /* an idle engine (host-only traffic) is not called at all */
        count += gp_xfer_progress(iface->xfer);
        iface->xfer_busy = (gp_xfer_outstanding(iface->xfer) != 0);
    }
    if (!ucs_queue_is_empty(&iface->flush_q)) {
        gdrpipe_shm_flush_progress(iface);
    }
    if (!ucs_list_is_empty(&iface->pending_eps)) {
        count += gdrpipe_shm_ep_dispatch_pending(iface);
    }
    if ((--iface->progressing == 0) && iface->round_open) {
        iface->round_open = 0;
        gp_xfer_round_end(iface->xfer);
    }
    return count;
}

static UCS_CLASS_INIT_FUNC(gdrpipe_shm_iface_t, uct_md_h md, uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    gdrpipe_iface_config_t *config = ucs_derived_of(tl_config, gdrpipe_iface_config_t);
    char err[256];

    GDRPIPE_IFACE_SUPER_INIT(&gdrpipe_shm_iface_ops,
                             gdrpipe_ucx_iface_ops(&gdrpipe_base_iface_ops,
                                                   &gdrpipe_base_iface_funcs),
                             md, worker, params, tl_config);

    /* the settings first: nothing to undo when one is out of range */
    if ((config->seg_size < 64) || (config->seg_size > UCS_MBYTE)) {
        ucs_error("gdrpipe: UCX_GDRPIPE_SEG_SIZE=%zu is out of range [64, 1M]",
                  config->seg_size);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((config->fifo_size < 2) || (config->fifo_size > 65536)) {
        ucs_error("gdrpipe: UCX_GDRPIPE_FIFO_SIZE=%u is out of range [2, 65536]",
                  config->fifo_size);
        return UCS_ERR_INVALID_PARAM;
    }
    if (gp_cuda_available()) {
        if (((config->chunk_size != UCS_MEMUNITS_AUTO) && (config->chunk_size < 65536)) ||
            ((config->depth != UCS_ULUNITS_AUTO) &&
             ((config->depth < 1) || (config->depth > 64)))) {
            ucs_error("gdrpipe: UCX_GDRPIPE_CHUNK_SIZE=%zu / UCX_GDRPIPE_PIPELINE_DEPTH=%lu "
                      "out of range (chunk >= 64k, depth 1..64)", config->chunk_size,
                      config->depth);
            return UCS_ERR_INVALID_PARAM;
        }
        if ((config->calib_max_size < 4096) || (config->calib_max_size > UCS_GBYTE)) {
            ucs_error("gdrpipe: UCX_GDRPIPE_CALIB_MAX_SIZE=%zu is out of range [4k, 1g]",
                      config->calib_max_size);
            return UCS_ERR_INVALID_PARAM;
        }
    }

    if (gp_shm_iface_open(config->fifo_size, config->seg_size, &self->core, err,
                          sizeof(err)) != 0) {
        ucs_error("gdrpipe: cannot create the shared-memory FIFO: %s", err);
        return UCS_ERR_IO_ERROR;
    }
    self->max_payload = gp_shm_iface_max_payload(self->core);
    self->cma_ok      = gp_cma_available();
    self->bw          = config->bw;
    self->latency     = config->latency;
    self->stats       = config->stats;
    ucs_list_head_init(&self->pending_eps);
    ucs_queue_head_init(&self->flush_q);
    self->xfer        = NULL;
    self->xfer_busy   = 0;
    self->progressing = 0;
    self->round_open  = 0;
    self->scratch     = ucs_malloc(self->max_payload, "gdrpipe scratch");
    if (self->scratch == NULL) {
        gp_shm_iface_close(self->core);
        return UCS_ERR_NO_MEMORY;
    }
    /* also without CUDA: this process serves its host memory to peers'
     * staged requests and stages its host buffers against their device
     * memory (the direct path needs CUDA on both sides) */
    {
        gp_xfer_config_t xcfg = {
            .path              = config->path,
            .thresh            = (config->thresh == UCS_MEMUNITS_AUTO) ? GP_THRESH_AUTO :
                                 config->thresh,
            .chunk_size        = (config->chunk_size == UCS_MEMUNITS_AUTO) ? 0 :
                                 config->chunk_size,
            .depth             = (config->depth == UCS_ULUNITS_AUTO) ? 0 :
                                 (unsigned)config->depth,
            .cache_max_regions = config->cache_max_regions,
            .cache_max_bytes   = config->cache_max_bytes,
            .calibrate         = config->calib.calibrate,
            .calib_dir         = config->calib.dir,
            .calib_budget_s    = config->calib.budget,
            .calib_wait_s      = config->calib.wait,
            .calib_max_size    = config->calib_max_size,
            .calib_online      = config->calib_online,
            .no_copy_kernel    = !config->copy_kernel,
            .stall_timeout_s   = isinf(config->stall_timeout) ? 0 : config->stall_timeout
        };
        self->xfer = gp_xfer_engine_create(self->core, &xcfg, err, sizeof(err));
        if (self->xfer == NULL) {
            ucs_warn("gdrpipe: GPU data paths unavailable: %s", err);
        }
    }
    if (!self->cma_ok) {
        ucs_diag("gdrpipe: cross-memory attach is not permitted here (ptrace "
                 "policy?): one-sided get/put of host memory is disabled");
    }
    ucs_debug("gdrpipe: shm iface %p: fifo %u, payload %u, cma %d", self,
              config->fifo_size, self->max_payload, self->cma_ok);
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(gdrpipe_shm_iface_t)
{
    uct_base_iface_progress_disable(&self->super.super,
                                    UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    if (self->stats) {
        ucs_info("gdrpipe: device tag sends by rendezvous (DEVICE_RNDV_THRESH): %lu, "
                 "of them in a window of sends (DEVICE_RNDV_BURST): %lu; device tag "
                 "sends from a host copy (DEVICE_HOST_EAGER): %lu; short copies "
                 "of device buffers known from earlier calls: %lu; endpoints "
                 "given an error handler (UNHANDLED_EP_ERROR): %lu; TCP sockets "
                 "watched (TCP_TIMEOUT): %lu",
                 (unsigned long)gdrpipe_send_device_count(),
                 (unsigned long)gdrpipe_send_burst_count(),
                 (unsigned long)gdrpipe_send_host_count(),
                 (unsigned long)gdrpipe_copy_known_count(),
                 (unsigned long)gdrpipe_ep_err_count(),
                 (unsigned long)gdrpipe_tcp_bound_count());
    }
    if (self->xfer != NULL) {
        if (self->round_open) {
            gp_xfer_round_end(self->xfer);
        }
        gp_xfer_engine_destroy(self->xfer);
    }
    gdrpipe_shm_flush_cancel(self);
    ucs_free(self->scratch);
    gp_shm_iface_close(self->core);
}

GDRPIPE_IFACE_CLASS(gdrpipe_shm_iface_t, gdrpipe_shm_iface_open)

static uct_iface_ops_t gdrpipe_shm_iface_ops = {
    .ep_put_short             = gdrpipe_shm_ep_put_short,
    .ep_put_bcopy             = gdrpipe_shm_ep_put_bcopy,
    .ep_put_zcopy             = gdrpipe_shm_ep_put_zcopy,
    .ep_get_bcopy             = gdrpipe_shm_ep_get_bcopy,
    .ep_get_zcopy             = gdrpipe_shm_ep_get_zcopy,
    .ep_am_short              = gdrpipe_shm_ep_am_short,
    .ep_am_short_iov          = gdrpipe_shm_ep_am_short_iov,
    .ep_am_bcopy              = gdrpipe_shm_ep_am_bcopy,
    .ep_pending_add           = gdrpipe_shm_ep_pending_add,
    .ep_pending_purge         = gdrpipe_shm_ep_pending_purge,
    .ep_flush                 = gdrpipe_shm_ep_flush,
    .ep_fence                 = gdrpipe_shm_ep_fence,
    .ep_check                 = gdrpipe_shm_ep_check,
    GDRPIPE_IFACE_COMMON_OPS(gdrpipe_shm, gdrpipe_shm_iface_t, gdrpipe_shm_ep_t),
    .iface_fence              = uct_base_iface_fence,
    .iface_get_device_address = gdrpipe_shm_iface_get_device_address,
    .iface_get_address        = gdrpipe_shm_iface_get_address,
    .iface_is_reachable       = gdrpipe_shm_iface_is_reachable
};
