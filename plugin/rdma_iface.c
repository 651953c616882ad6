/* Interface of the RDMA transport: capabilities, addresses, progress of its
 * endpoints, bounce buffers of short/bcopy operations. */
#include "rdma.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uct_iface_ops_t gdrpipe_rdma_iface_ops;

static ucs_status_t gdrpipe_rdma_iface_query(uct_iface_h tl_iface, uct_iface_attr_t *attr)
{
    gdrpipe_rdma_iface_t *iface = ucs_derived_of(tl_iface, gdrpipe_rdma_iface_t);

    uct_base_iface_query(&iface->super, attr);
    attr->iface_addr_len  = sizeof(gdrpipe_rdma_iface_addr_t);
    attr->device_addr_len = sizeof(gdrpipe_rdma_dev_addr_t);
    attr->ep_addr_len     = gp_rdma_ep_address_length();
    attr->max_conn_priv   = 0;
    attr->cap.flags       = UCT_IFACE_FLAG_CONNECT_TO_EP | UCT_IFACE_FLAG_PUT_SHORT |
                            UCT_IFACE_FLAG_PUT_BCOPY | UCT_IFACE_FLAG_PUT_ZCOPY |
                            UCT_IFACE_FLAG_GET_BCOPY | UCT_IFACE_FLAG_GET_ZCOPY |
                            UCT_IFACE_FLAG_PENDING |
                            UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE |
                            GDRPIPE_UCX_IFACE_FLAG_INTER_NODE;
    attr->cap.event_flags = 0;

    gdrpipe_iface_fill_rma_caps(attr, iface->seg_size, iface->seg_size, 0, iface->seg_size, 1);

    attr->latency             = ucs_linear_func_make(iface->latency, 0);
    attr->bandwidth.dedicated = iface->bw;
    attr->bandwidth.shared    = 0;
    attr->overhead            = 50e-9;
    attr->priority            = 0;
    return UCS_OK;
}

/* distinct for every interface of this process, and of other processes and
 * hosts but by a 64-bit hash collision */
static uint64_t gdrpipe_rdma_iface_new_id(void)
{
    static uint64_t count;

    return (gdrpipe_host_id() * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)getpid() << 24) ^
           __atomic_add_fetch(&count, 1, __ATOMIC_RELAXED);
}

static ucs_status_t gdrpipe_rdma_iface_get_address(uct_iface_h tl_iface,
                                                   uct_iface_addr_t *addr)
{
    gdrpipe_rdma_iface_t *iface = ucs_derived_of(tl_iface, gdrpipe_rdma_iface_t);
    gdrpipe_rdma_iface_addr_t a = {.id = iface->id};

    memcpy(addr, &a, sizeof(a)); /* UCP packs addresses unaligned */
    return UCS_OK;
}

static ucs_status_t gdrpipe_rdma_iface_get_device_address(uct_iface_h tl_iface,
                                                          uct_device_addr_t *addr)
{
    gdrpipe_rdma_iface_t *iface = ucs_derived_of(tl_iface, gdrpipe_rdma_iface_t);

    ((gdrpipe_rdma_dev_addr_t*)addr)->fabric_id = gp_rdma_dev_fabric_id(iface->md->dev);
    return UCS_OK;
}

static int gdrpipe_rdma_iface_is_reachable(const uct_iface_h tl_iface,
                                           const uct_device_addr_t *dev_addr,
                                           const uct_iface_addr_t *iface_addr)
{
    gdrpipe_rdma_iface_t *iface = ucs_derived_of(tl_iface, gdrpipe_rdma_iface_t);
    uint64_t mine               = gp_rdma_dev_fabric_id(iface->md->dev);
    gdrpipe_rdma_dev_addr_t d;
    gdrpipe_rdma_iface_addr_t a;
    uint64_t theirs;

    if (dev_addr == NULL) {
        return 0;
    }
    if (gdrpipe_ucx_md_reaches_registered && (iface_addr != NULL)) {
        /* where the md reaches device memory, UCP would connect a worker's
         * endpoint for copies between memory types to this interface
         * itself, and such an endpoint has no transport to carry the
         * connection's wireup: those copies go by the copy transport */
        memcpy(&a, iface_addr, sizeof(a));
        if (a.id == iface->id) {
            return 0;
        }
    }
    memcpy(&d, dev_addr, sizeof(d)); /* unaligned in UCP's address */
    theirs = d.fabric_id;
    /* RoCE reports 0: reachability is left to the IP network */
    return (mine == theirs) || (mine == 0) || (theirs == 0);
}

static unsigned gdrpipe_rdma_iface_progress(uct_iface_h tl_iface)
{
    gdrpipe_rdma_iface_t *iface = ucs_derived_of(tl_iface, gdrpipe_rdma_iface_t);
    gdrpipe_rdma_ep_t *ep, *tmp;
    unsigned count = 0;

    ucs_list_for_each_safe(ep, tmp, &iface->eps, link) {
        count += gdrpipe_rdma_ep_progress(ep);
    }
    if (count == 0) {
        gp_rdma_dev_idle(iface->md->dev); /* a modeled fake fabric moves on */
    }
    /* failures are reported after the loop, one per call: UCX's handler may
     * destroy endpoints */
    ucs_list_for_each(ep, &iface->eps, link) {
        if (ep->err_pending && !ep->err_reported) {
            ep->err_reported = 1;
            ucs_debug("gdrpipe_rdma: ep %p failed (%d): reporting to UCX", ep,
                      ep->err_code);
            uct_iface_handle_ep_err(&iface->super.super, &ep->super.super,
                                    UCS_ERR_ENDPOINT_TIMEOUT);
            ++count;
            break;
        }
    }
    return count;
}

static ucs_status_t gdrpipe_rdma_iface_flush(uct_iface_h tl_iface, unsigned flags,
                                             uct_completion_t *comp)
{
    gdrpipe_rdma_iface_t *iface = ucs_derived_of(tl_iface, gdrpipe_rdma_iface_t);
    gdrpipe_rdma_ep_t *ep;

    if (comp != NULL) {
        return UCS_ERR_UNSUPPORTED;
    }
    ucs_list_for_each(ep, &iface->eps, link) {
        if (ep->outstanding != 0) {
            return UCS_INPROGRESS;
        }
    }
    return UCS_OK;
}

static ucs_status_t gdrpipe_rdma_iface_fence(uct_iface_h tl_iface, unsigned flags)
{
    gdrpipe_rdma_iface_t *iface = ucs_derived_of(tl_iface, gdrpipe_rdma_iface_t);
    gdrpipe_rdma_ep_t *ep;

    ucs_list_for_each(ep, &iface->eps, link) {
        gdrpipe_rdma_ep_fence(&ep->super.super, flags);
    }
    return UCS_OK;
}

static UCS_CLASS_INIT_FUNC(gdrpipe_rdma_iface_t, uct_md_h md, uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    gdrpipe_rdma_iface_config_t *config = ucs_derived_of(tl_config,
                                                         gdrpipe_rdma_iface_config_t);
    uint8_t rkey[GP_RDMA_RKEY_SIZE];
    char err[256];
    unsigned i;

    GDRPIPE_IFACE_SUPER_INIT(&gdrpipe_rdma_iface_ops,
                             gdrpipe_ucx_iface_ops(&gdrpipe_base_iface_ops,
                                                   &gdrpipe_base_iface_funcs),
                             md, worker, params, tl_config);

    if ((config->chunk_size < 4096) || (config->chunk_size % 4096) ||
        (config->chunk_size > (1ul << 30)) || (config->slots < 1) ||
        (config->slots > 32)) {
        ucs_error("gdrpipe_rdma: UCX_GDRPIPE_RDMA_CHUNK_SIZE=%zu / SLOTS=%u out of range "
                  "(multiple of 4k up to 1g, 1..32)", config->chunk_size, config->slots);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((config->seg_size < 64) || (config->seg_size > UCS_MBYTE) ||
        (config->bounce_count < 1) || (config->bounce_count > 65536)) {
        ucs_error("gdrpipe_rdma: UCX_GDRPIPE_RDMA_SEG_SIZE=%zu / BOUNCE_COUNT=%u out of "
                  "range ([64, 1m], [1, 65536])", config->seg_size, config->bounce_count);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((config->thresh == UCS_MEMUNITS_AUTO) &&
        ((config->calib_max_size < 4096) || (config->calib_max_size > UCS_GBYTE))) {
        ucs_error("gdrpipe_rdma: UCX_GDRPIPE_RDMA_CALIB_MAX_SIZE=%zu is out of range "
                  "[4k, 1g]", config->calib_max_size);
        return UCS_ERR_INVALID_PARAM;
    }
    self->md               = ucs_derived_of(md, gdrpipe_rdma_md_t);
    self->id               = gdrpipe_rdma_iface_new_id();
    self->ep_cfg.path      = config->path;
    /* auto: measured per (local GPU, port) at the first device-memory
     * transfer (src/rdma/port_crossover.cc) */
    self->ep_cfg.thresh    = (config->thresh == UCS_MEMUNITS_AUTO) ? GP_THRESH_AUTO :
                             config->thresh;
    self->calib_dir        = ucs_strdup(config->calib.dir, "gdrpipe_rdma calib dir");
    if (self->calib_dir == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    self->ep_cfg.calibrate       = config->calib.calibrate;
    self->ep_cfg.calib_dir       = self->calib_dir;
    self->ep_cfg.calib_budget_s  = config->calib.budget;
    self->ep_cfg.calib_wait_s    = config->calib.wait;
    self->ep_cfg.calib_max_size  = config->calib_max_size;
    self->ep_cfg.fallback_thresh = SIZE_MAX; /* direct wherever possible */
    self->ep_cfg.slot_size = (uint32_t)config->chunk_size;
    self->ep_cfg.slots     = config->slots;
    self->ep_cfg.stall_timeout_s = isinf(config->stall_timeout) ? 0 : config->stall_timeout;
    self->bw               = config->bw;
    self->latency          = config->latency;
    self->seg_size         = config->seg_size;
    self->bounce_count     = config->bounce_count;
    ucs_list_head_init(&self->eps);

    self->bounce_area = ucs_malloc(self->seg_size * self->bounce_count,
                                   "gdrpipe_rdma bounce");
    self->bounce_free = ucs_malloc(sizeof(void*) * self->bounce_count,
                                   "gdrpipe_rdma bounce list");
    if ((self->bounce_area == NULL) || (self->bounce_free == NULL)) {
        ucs_free(self->bounce_area);
        ucs_free(self->bounce_free);
        ucs_free(self->calib_dir);
        return UCS_ERR_NO_MEMORY;
    }
    /* registered once; operations on slices hit the registration cache */
    if (gp_rdma_mem_reg(self->md->dev, self->bounce_area,
                        self->seg_size * self->bounce_count, rkey, &self->bounce_reg,
                        err, sizeof(err)) != 0) {
        ucs_error("gdrpipe_rdma: cannot register bounce buffers: %s", err);
        ucs_free(self->bounce_area);
        ucs_free(self->bounce_free);
        ucs_free(self->calib_dir);
        return UCS_ERR_IO_ERROR;
    }
    for (i = 0; i < self->bounce_count; ++i) {
        self->bounce_free[i] = self->bounce_area + (size_t)i * self->seg_size;
    }
    self->bounce_nfree = self->bounce_count;
    ucs_debug("gdrpipe_rdma: iface %p on %s: chunk %zu x %u, path %d, thresh %s", self,
              self->md->port, config->chunk_size, config->slots, config->path,
              (config->thresh == UCS_MEMUNITS_AUTO) ? "auto" : "fixed");
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(gdrpipe_rdma_iface_t)
{
    uct_base_iface_progress_disable(&self->super.super,
                                    UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    if (!ucs_list_is_empty(&self->eps)) {
        ucs_warn("gdrpipe_rdma: iface %p closed with endpoints left", self);
    }
    gp_rdma_mem_dereg(self->md->dev, self->bounce_reg);
    ucs_free(self->bounce_free);
    ucs_free(self->bounce_area);
    ucs_free(self->calib_dir);
}

UCS_CLASS_DEFINE(gdrpipe_rdma_iface_t, uct_base_iface_t);
static UCS_CLASS_DEFINE_NEW_FUNC(gdrpipe_rdma_iface_t, uct_iface_t, uct_md_h,
                                 uct_worker_h, const uct_iface_params_t*,
                                 const uct_iface_config_t*);
static UCS_CLASS_DEFINE_DELETE_FUNC(gdrpipe_rdma_iface_t, uct_iface_t);

ucs_status_t gdrpipe_rdma_iface_open(uct_md_h md, uct_worker_h worker,
                                     const uct_iface_params_t *params,
                                     const uct_iface_config_t *config,
                                     uct_iface_h *iface_p)
{
    gdrpipe_rdma_md_t *rmd = ucs_derived_of(md, gdrpipe_rdma_md_t);

    if (!(params->field_mask & UCT_IFACE_PARAM_FIELD_OPEN_MODE) ||
        !(params->open_mode & UCT_IFACE_OPEN_MODE_DEVICE)) {
        ucs_error("gdrpipe_rdma: only UCT_IFACE_OPEN_MODE_DEVICE is supported");
        return UCS_ERR_UNSUPPORTED;
    }
    if (strcmp(params->mode.device.dev_name, rmd->port) != 0) {
        ucs_error("gdrpipe_rdma: unknown device '%s' (memory domain %s)",
                  params->mode.device.dev_name, rmd->port);
        return UCS_ERR_NO_DEVICE;
    }
    return UCS_CLASS_NEW_FUNC_NAME(gdrpipe_rdma_iface_t)(md, worker, params, config,
                                                         iface_p);
}

ucs_status_t gdrpipe_rdma_query_devices(uct_md_h md, uct_tl_device_resource_t **devices_p,
                                        unsigned *num_devices_p)
{
    gdrpipe_rdma_md_t *rmd        = ucs_derived_of(md, gdrpipe_rdma_md_t);
    uct_tl_device_resource_t *dev = ucs_calloc(1, sizeof(*dev), "gdrpipe_rdma device");

    if (dev == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    ucs_snprintf_zero(dev->name, sizeof(dev->name), "%s", rmd->port);
    dev->type       = UCT_DEVICE_TYPE_NET;
    dev->sys_device = UCS_SYS_DEVICE_ID_UNKNOWN;
    *devices_p      = dev;
    *num_devices_p  = 1;
    return UCS_OK;
}

static uct_iface_ops_t gdrpipe_rdma_iface_ops = {
    .ep_put_short             = gdrpipe_rdma_ep_put_short,
    .ep_put_bcopy             = gdrpipe_rdma_ep_put_bcopy,
    .ep_put_zcopy             = gdrpipe_rdma_ep_put_zcopy,
    .ep_get_bcopy             = gdrpipe_rdma_ep_get_bcopy,
    .ep_get_zcopy             = gdrpipe_rdma_ep_get_zcopy,
    .ep_pending_add           = gdrpipe_rdma_ep_pending_add,
    .ep_pending_purge         = gdrpipe_rdma_ep_pending_purge,
    .ep_flush                 = gdrpipe_rdma_ep_flush,
    .ep_fence                 = gdrpipe_rdma_ep_fence,
    GDRPIPE_IFACE_COMMON_OPS(gdrpipe_rdma, gdrpipe_rdma_iface_t, gdrpipe_rdma_ep_t),
    .ep_get_address           = gdrpipe_rdma_ep_get_address,
    .ep_connect_to_ep         = gdrpipe_rdma_ep_connect_to_ep,
    .iface_fence              = gdrpipe_rdma_iface_fence,
    .iface_get_device_address = gdrpipe_rdma_iface_get_device_address,
    .iface_get_address        = gdrpipe_rdma_iface_get_address,
    .iface_is_reachable       = gdrpipe_rdma_iface_is_reachable
};
