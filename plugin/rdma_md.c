/* The gdrpipe_rdma component: configuration, one memory domain per active
 * RDMA port (registration exposes memory to every endpoint of the port),
 * remote keys, and its registration with UCT. */
#include "rdma.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define GDRPIPE_RDMA_MAX_PORTS 64

static const char *gdrpipe_rdma_path_names[] = {"auto", "direct", "staged", NULL};

static ucs_config_field_t gdrpipe_rdma_md_config_table[] = {
    {"", "", NULL, ucs_offsetof(gdrpipe_rdma_md_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_md_config_table)},

    {"RCACHE_MAX_REGIONS", "inf",
     "Bound of each registration cache (host, device) in regions.",
     ucs_offsetof(gdrpipe_rdma_md_config_t, cache_max_regions), UCS_CONFIG_TYPE_UINT},

    {"RCACHE_MAX_SIZE", "inf",
     "Bound of each registration cache in bytes.",
     ucs_offsetof(gdrpipe_rdma_md_config_t, cache_max_bytes), UCS_CONFIG_TYPE_MEMUNITS},

    {NULL}
};

static ucs_config_field_t gdrpipe_rdma_iface_config_table[] = {
    {"", "", NULL, ucs_offsetof(gdrpipe_rdma_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

    {"BW", "12000MBs",
     "Bandwidth of the RDMA transport reported to UCX (protocol selection).",
     ucs_offsetof(gdrpipe_rdma_iface_config_t, bw), UCS_CONFIG_TYPE_BW},

    {"LAT", "2us",
     "Latency of the RDMA transport reported to UCX (protocol selection).",
     ucs_offsetof(gdrpipe_rdma_iface_config_t, latency), UCS_CONFIG_TYPE_TIME},

    /* direct: RDMA WRITE/READ on registered memory (GPUDirect RDMA for device
     * memory); staged: the host-staged pipeline. auto and direct go staged
     * whenever memory cannot be registered. */
    {"PATH", "auto",
     "How transfers move over RDMA: auto (direct below "
     "THRESH, staged from it), direct or staged.",
     ucs_offsetof(gdrpipe_rdma_iface_config_t, path),
     UCS_CONFIG_TYPE_ENUM(gdrpipe_rdma_path_names)},

    /* auto: measured per local GPU and port at the first device-memory transfer
     * (loopback through the port), or read from the calibration cache
     * (RDMA_CALIBRATE); host memory goes direct. A size: the same threshold for
     * every transfer (inf: direct wherever possible). */
    {"THRESH", "auto",
     "Size from which PATH=auto stages device-memory transfers: "
     "auto (measured per GPU and port) or a size.",
     ucs_offsetof(gdrpipe_rdma_iface_config_t, thresh), UCS_CONFIG_TYPE_MEMUNITS},

    {"", "", NULL, ucs_offsetof(gdrpipe_rdma_iface_config_t, calib),
     UCS_CONFIG_TYPE_TABLE(gdrpipe_calib_config_table)},

    {"CALIB_MAX_SIZE", "4m",
     "Largest size the calibration measures (two device "
     "buffers of this size while it runs).",
     ucs_offsetof(gdrpipe_rdma_iface_config_t, calib_max_size), UCS_CONFIG_TYPE_MEMUNITS},

    {"CHUNK_SIZE", "1m",
     "Chunk (= receive slot) of the staged pipeline, multiple of 4k.",
     ucs_offsetof(gdrpipe_rdma_iface_config_t, chunk_size), UCS_CONFIG_TYPE_MEMUNITS},

    {"SLOTS", "4",
     "Staged chunks in flight per direction and endpoint (1-32).",
     ucs_offsetof(gdrpipe_rdma_iface_config_t, slots), UCS_CONFIG_TYPE_UINT},

    {"SEG_SIZE", "8k",
     "Largest short/bcopy put or get (copied through a registered bounce buffer).",
     ucs_offsetof(gdrpipe_rdma_iface_config_t, seg_size), UCS_CONFIG_TYPE_MEMUNITS},

    {"BOUNCE_COUNT", "128",
     "Bounce buffers of short/bcopy operations per interface.",
     ucs_offsetof(gdrpipe_rdma_iface_config_t, bounce_count), UCS_CONFIG_TYPE_UINT},

    /* Its own transfers or a peer's it serves: a peer that is alive but no longer
     * progresses or returns credits. inf, as for UCX's own rendezvous; a link
     * that fails is reported anyway. */
    {"STALL_TIMEOUT", "inf",
     "An endpoint with transfers outstanding on which "
     "nothing moves this long fails (inf: never).",
     ucs_offsetof(gdrpipe_rdma_iface_config_t, stall_timeout), UCS_CONFIG_TYPE_TIME},

    {NULL}
};

static ucs_status_t gdrpipe_rdma_query_md_resources(uct_component_t *component,
                                                    uct_md_resource_desc_t **resources_p,
                                                    unsigned *num_resources_p)
{
    gp_rdma_port_t ports[GDRPIPE_RDMA_MAX_PORTS];
    uct_md_resource_desc_t *res;
    int i, n;

    gdrpipe_rdma_fake_apply();
    n = gp_rdma_list_ports(ports, GDRPIPE_RDMA_MAX_PORTS);
    if (n > GDRPIPE_RDMA_MAX_PORTS) {
        ucs_diag("gdrpipe_rdma: %d ports, using the first %d", n, GDRPIPE_RDMA_MAX_PORTS);
        n = GDRPIPE_RDMA_MAX_PORTS;
    }
    if (n == 0) {
        ucs_debug("gdrpipe_rdma: no active RDMA port");
        *resources_p     = NULL;
        *num_resources_p = 0;
        return UCS_OK;
    }
    res = ucs_calloc(n, sizeof(*res), "gdrpipe_rdma md resources");
    if (res == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    for (i = 0; i < n; ++i) {
        if (strlen(ports[i].name) >= sizeof(res[i].md_name)) {
            ucs_diag("gdrpipe_rdma: port name '%s' is too long for UCX", ports[i].name);
        }
        ucs_snprintf_zero(res[i].md_name, sizeof(res[i].md_name), "%s", ports[i].name);
    }
    *resources_p     = res;
    *num_resources_p = n;
    return UCS_OK;
}

static void gdrpipe_rdma_md_close(uct_md_h uct_md)
{
    gdrpipe_rdma_md_t *md = ucs_derived_of(uct_md, gdrpipe_rdma_md_t);

    gp_rdma_dev_close(md->dev);
    ucs_free(md);
}

static void gdrpipe_rdma_md_query(uct_md_h uct_md, gdrpipe_ucx_md_attr_t *attr)
{
    /* device memory: dma-buf / peermem registration, else staged */
    gdrpipe_md_fill_attr(attr, GP_RDMA_RKEY_SIZE, ucs_linear_func_make(1e-6, 0.1e-9));
}

typedef struct gdrpipe_rdma_memh {
    uint8_t rkey[GP_RDMA_RKEY_SIZE];
    void    *reg;
} gdrpipe_rdma_memh_t;

static ucs_status_t gdrpipe_rdma_md_mem_reg(uct_md_h uct_md, void *address, size_t length,
                                            uct_mem_h *memh_p)
{
    gdrpipe_rdma_md_t *md = ucs_derived_of(uct_md, gdrpipe_rdma_md_t);
    gdrpipe_rdma_memh_t *memh;
    char err[256];

    memh = ucs_calloc(1, sizeof(*memh), "gdrpipe_rdma memh");
    if (memh == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    if (gp_rdma_mem_reg(md->dev, address, length, memh->rkey, &memh->reg, err,
                        sizeof(err)) != 0) {
        ucs_free(memh);
        ucs_error("gdrpipe_rdma: cannot register %p..%p: %s", address,
                  UCS_PTR_BYTE_OFFSET(address, length), err);
        return UCS_ERR_INVALID_ADDR;
    }
    *memh_p = memh;
    return UCS_OK;
}

static ucs_status_t gdrpipe_rdma_md_mem_dereg(uct_md_h uct_md, uct_mem_h uct_memh)
{
    gdrpipe_rdma_md_t *md       = ucs_derived_of(uct_md, gdrpipe_rdma_md_t);
    gdrpipe_rdma_memh_t *memh   = uct_memh;

    gp_rdma_mem_dereg(md->dev, memh->reg);
    ucs_free(memh);
    return UCS_OK;
}

static ucs_status_t gdrpipe_rdma_md_mkey_pack(uct_md_h uct_md, uct_mem_h memh,
                                              void *rkey_buffer)
{
    memcpy(rkey_buffer, ((gdrpipe_rdma_memh_t*)memh)->rkey, GP_RDMA_RKEY_SIZE);
    return UCS_OK;
}

static const gdrpipe_ucx_md_funcs_t gdrpipe_rdma_md_funcs = {
    .close     = gdrpipe_rdma_md_close,
    .query     = gdrpipe_rdma_md_query,
    .mem_reg   = gdrpipe_rdma_md_mem_reg,
    .mem_dereg = gdrpipe_rdma_md_mem_dereg,
    .mkey_pack = gdrpipe_rdma_md_mkey_pack
};

static gdrpipe_ucx_md_ops_t gdrpipe_rdma_md_ops;

static ucs_status_t gdrpipe_rdma_md_open(uct_component_t *component, const char *md_name,
                                         const uct_md_config_t *uct_config, uct_md_h *md_p)
{
    const gdrpipe_rdma_md_config_t *config =
        ucs_derived_of(uct_config, gdrpipe_rdma_md_config_t);
    gp_rdma_dev_config_t dcfg;
    gdrpipe_rdma_md_t *md;
    char err[256];

    md = ucs_calloc(1, sizeof(*md), "gdrpipe_rdma md");
    if (md == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    memset(&dcfg, 0, sizeof(dcfg));
    dcfg.cache_max_regions = (config->cache_max_regions == UINT_MAX) ? 0 :
                             config->cache_max_regions;
    dcfg.cache_max_bytes   = (config->cache_max_bytes == SIZE_MAX) ? 0 :
                             config->cache_max_bytes;
    dcfg.try_dmabuf        = 1;
    dcfg.try_peermem       = 1;
    md->dev = gp_rdma_dev_open(md_name, &dcfg, err, sizeof(err));
    if (md->dev == NULL) {
        ucs_error("gdrpipe_rdma: cannot open %s: %s", md_name, err);
        ucs_free(md);
        return UCS_ERR_NO_DEVICE;
    }
    ucs_snprintf_zero(md->port, sizeof(md->port), "%s", md_name);
    /* ucx_info -d prints no free text for an MD or resource: the mode goes
     * to the log (UCX_LOG_LEVEL=info shows it in ucx_info -d) */
    ucs_info("gdrpipe_rdma: %s: GPUDirect RDMA mode: %s", md_name,
             gp_rdma_gpudirect_mode());
    md->super.ops       = gdrpipe_ucx_md_ops(&gdrpipe_rdma_md_ops, &gdrpipe_rdma_md_funcs);
    md->super.component = gdrpipe_rdma_component;
    *md_p               = &md->super;
    return UCS_OK;
}

static ucs_status_t gdrpipe_rdma_rkey_unpack(uct_component_t *component,
                                             const void *rkey_buffer, uct_rkey_t *rkey_p,
                                             void **handle_p)
{
    const char *why = gp_rdma_check_rkey(rkey_buffer, GP_RDMA_RKEY_SIZE);
    void *rkey;

    if (why != NULL) {
        gdrpipe_peer_error("gdrpipe_rdma: rejected remote key: %s", why);
        return UCS_ERR_INVALID_PARAM;
    }
    rkey = ucs_malloc(GP_RDMA_RKEY_SIZE, "gdrpipe_rdma rkey");
    if (rkey == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    memcpy(rkey, rkey_buffer, GP_RDMA_RKEY_SIZE);
    *rkey_p   = (uintptr_t)rkey;
    *handle_p = NULL;
    return UCS_OK;
}

static ucs_status_t gdrpipe_rdma_rkey_release(uct_component_t *component, uct_rkey_t rkey,
                                              void *handle)
{
    ucs_free((void*)rkey);
    return UCS_OK;
}

static const gdrpipe_ucx_component_desc_t gdrpipe_rdma_component_desc = {
    .name               = GDRPIPE_RDMA_NAME,
    .query_md_resources = gdrpipe_rdma_query_md_resources,
    .md_open            = gdrpipe_rdma_md_open,
    .rkey_unpack        = gdrpipe_rdma_rkey_unpack,
    .rkey_release       = gdrpipe_rdma_rkey_release,
    .rkey_size          = GP_RDMA_RKEY_SIZE,
    .md_config_name     = "gdrpipe RDMA memory domain",
    .md_config_table    = gdrpipe_rdma_md_config_table,
    .md_config_size     = sizeof(gdrpipe_rdma_md_config_t)
};

uct_component_t *gdrpipe_rdma_component;

static uct_tl_t gdrpipe_rdma_tl = {
    .name          = GDRPIPE_RDMA_TL_NAME,
    .query_devices = gdrpipe_rdma_query_devices,
    .iface_open    = gdrpipe_rdma_iface_open,
    .config        = {
        .name      = "gdrpipe RDMA transport",
        .prefix    = GDRPIPE_RDMA_CONFIG_PREFIX,
        .table     = gdrpipe_rdma_iface_config_table,
        .size      = sizeof(gdrpipe_rdma_iface_config_t),
    }
};

void gdrpipe_rdma_register(void)
{
    gdrpipe_rdma_component = gdrpipe_ucx_component_create(&gdrpipe_rdma_component_desc,
                                                          GDRPIPE_RDMA_CONFIG_PREFIX);
    if (gdrpipe_rdma_component == NULL) {
        ucs_error("gdrpipe: cannot make its RDMA UCT component");
        return;
    }
    uct_tl_register(gdrpipe_rdma_component, &gdrpipe_rdma_tl);
    uct_component_register(gdrpipe_rdma_component);
}

void gdrpipe_rdma_unregister(void)
{
    if (gdrpipe_rdma_component == NULL) {
        return;
    }
    uct_component_unregister(gdrpipe_rdma_component);
    uct_tl_unregister(&gdrpipe_rdma_tl);
}
