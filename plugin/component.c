/* The gdrpipe UCT component: registration (with the UCX version check),
 * configuration tables, memory-domain resources, remote keys, and its
 * transport's devices and interfaces (the wire's "memory", the copy
 * transport's "cuda"). */
#include "gdrpipe.h"
#include "shm_iface.h"
#include "copy.h"
#include "rdma.h"

#include <stdio.h>
#include <string.h>

static ucs_config_field_t gdrpipe_md_config_table[] = {
    {"", "", NULL, ucs_offsetof(gdrpipe_md_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_md_config_table)},

    {"CUDA_LIB", "libcuda.so.1",
     "CUDA driver library to load at run time. Another path selects another\n"
     "driver, e.g. the CUDA-driver simulator the test suite uses. Read from the\n"
     "environment at load time, before UCX parses its configuration.",
     ucs_offsetof(gdrpipe_md_config_t, cuda_lib), UCS_CONFIG_TYPE_STRING},

    {"POOL_IPC", "y",
     "Share memory of exportable stream-ordered pools (pools created with POSIX-fd\n"
     "handles; cuMemPoolExportPointer) for the direct path. The importer closes each\n"
     "imported pointer when its transfer completes (CUDA requires importers to free\n"
     "before the exporter frees). Default pools cannot be exported and go staged.\n"
     "n: all pool memory goes through the staged pipeline.",
     ucs_offsetof(gdrpipe_md_config_t, pool_ipc), UCS_CONFIG_TYPE_BOOL},

    {"DEVICE_RNDV_THRESH", "2",
     "UCP protocol v1 tag sends of device memory of this size or more go by rendezvous\n"
     "(through gdrpipe's direct or staged path, one copy), whatever UCX_RNDV_THRESH says\n"
     "for host memory. inf: device sends follow UCP's own thresholds (below them UCP\n"
     "packs each message through the copy device, and the receiver unpacks it).\n"
     "Default 2: a 1-byte message (an acknowledgement, a flag) stays eager; with two\n"
     "ranks on one GPU, osu_bw's 1-byte acknowledgement by rendezvous halved its\n"
     "rate from 16 KiB to 4 MiB (auto: the default). Applies to endpoints whose\n"
     "rendezvous goes through gdrpipe, to contiguous buffers; needs the plugin\n"
     "preloaded (gdrpipe-run does).",
     ucs_offsetof(gdrpipe_md_config_t, device_rndv_thresh), UCS_CONFIG_TYPE_MEMUNITS},

    {"DEVICE_RNDV_BURST", "y",
     "A device tag send below DEVICE_RNDV_THRESH goes by rendezvous too when it\n"
     "follows another device tag send or a posted device tag receive of the same\n"
     "thread with no progress of gdrpipe's wire in between (a window of sends, an\n"
     "exchange: their copies go in one batched launch); a lone one (an\n"
     "acknowledgement) stays eager. n: the threshold alone.",
     ucs_offsetof(gdrpipe_md_config_t, device_rndv_burst), UCS_CONFIG_TYPE_BOOL},

    {"UNHANDLED_EP_ERROR", "exit",
     "What a failed TCP connection does to a UCP endpoint that was created with a\n"
     "peer's address and without an error handler (Open MPI 4.1 creates all of its\n"
     "endpoints so):\n"
     " exit - the process logs the error and ends with status 1, so that the launcher\n"
     "        ends the job (MPI_ERRORS_ARE_FATAL). Without it a rank waiting for a\n"
     "        peer whose link went down waits forever: UCP fails only the sends\n"
     "        pending on the endpoint. A peer that closed its connection or ended\n"
     "        (UCX reports it the same way) does not end the process.\n"
     " none - left to UCX (a \"diag\" message; the endpoint's sends fail).\n"
     "Endpoints the program has closed, client/server endpoints and endpoints with\n"
     "their own handler are never concerned. Needs the plugin preloaded (gdrpipe-run).",
     ucs_offsetof(gdrpipe_md_config_t, unhandled_ep_error),
     UCS_CONFIG_TYPE_ENUM(gdrpipe_ep_err_names)},

    {"TCP_TIMEOUT", "30s",
     "A bound on a silent peer for the TCP connections of UCX's tcp transport (and its\n"
     "tcp connection manager): a connection whose peer acknowledges nothing while data\n"
     "waits fails this long after the kernel's first retransmission (TCP_USER_TIMEOUT,\n"
     "set only while retransmitting; otherwise net.ipv4.tcp_retries2, about 15\n"
     "minutes), and accepted sockets, where UCX 1.13 enables no keepalive, probe an\n"
     "idle peer from a third of it on. A peer that is alive but does not read (its\n"
     "window full) answers the kernel's probes and is never failed. A thread watches\n"
     "the sockets a few times per bound. The endpoint's error then reaches UCP (see\n"
     "UNHANDLED_EP_ERROR). inf: UCX's sockets as UCX makes them. Needs the plugin\n"
     "preloaded (gdrpipe-run).",
     ucs_offsetof(gdrpipe_md_config_t, tcp_timeout), UCS_CONFIG_TYPE_TIME},

    {NULL}
};

static const char *gdrpipe_path_names[] = {"auto", "direct", "staged", NULL};

static ucs_config_field_t gdrpipe_iface_config_table[] = {
    {"", "", NULL, ucs_offsetof(gdrpipe_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

    {"SEG_SIZE", "8k",
     "Payload size of one shared-memory FIFO element: the largest active\n"
     "message sent by copy (short and bcopy). Must be the same in every process:\n"
     "a peer with smaller elements is refused at connection time.",
     ucs_offsetof(gdrpipe_iface_config_t, seg_size), UCS_CONFIG_TYPE_MEMUNITS},

    {"FIFO_SIZE", "256",
     "Number of elements in each interface's receive FIFO (rounded up to a\n"
     "power of two).",
     ucs_offsetof(gdrpipe_iface_config_t, fifo_size), UCS_CONFIG_TYPE_UINT},

    {"BW", "12000MBs",
     "Bandwidth of the host-memory wire reported to UCX (protocol selection).",
     ucs_offsetof(gdrpipe_iface_config_t, bw), UCS_CONFIG_TYPE_BW},

    {"LAT", "80ns",
     "Latency of the host-memory wire reported to UCX (protocol selection).",
     ucs_offsetof(gdrpipe_iface_config_t, latency), UCS_CONFIG_TYPE_TIME},

    {"COPY_H2D_BW", "40000MBs",
     "Host-to-device bandwidth of the copy transport reported to UCX.",
     ucs_offsetof(gdrpipe_iface_config_t, copy_h2d_bw), UCS_CONFIG_TYPE_BW},

    {"COPY_D2H_BW", "40000MBs",
     "Device-to-host bandwidth of the copy transport reported to UCX.",
     ucs_offsetof(gdrpipe_iface_config_t, copy_d2h_bw), UCS_CONFIG_TYPE_BW},

    {"COPY_LAT", "8us",
     "Latency of one device/host copy (launch, copy, completion) reported to UCX.",
     ucs_offsetof(gdrpipe_iface_config_t, copy_latency), UCS_CONFIG_TYPE_TIME},

    {"PATH", "auto",
     "How GPU memory moves between processes:\n"
     " auto   - direct (CUDA IPC peer copy) below UCX_GDRPIPE_THRESH, staged from it on;\n"
     "          staged whenever the direct path is impossible (no peer access, memory\n"
     "          that cannot be shared)\n"
     " direct - always direct where possible\n"
     " staged - always the host-staged pipeline",
     ucs_offsetof(gdrpipe_iface_config_t, path), UCS_CONFIG_TYPE_ENUM(gdrpipe_path_names)},

    {"THRESH", "auto",
     "Message size from which the staged pipeline is used in PATH=auto.\n"
     " auto - measured per pair of GPUs at the first transfer between them (or read\n"
     "        from the calibration cache, see UCX_GDRPIPE_CALIBRATE); direct when both\n"
     "        buffers are on one GPU, staged when peer access is impossible\n"
     " inf  - direct wherever it works\n"
     " SIZE - the same fixed threshold for every pair",
     ucs_offsetof(gdrpipe_iface_config_t, thresh), UCS_CONFIG_TYPE_MEMUNITS},

    {"", "", NULL, ucs_offsetof(gdrpipe_iface_config_t, calib),
     UCS_CONFIG_TYPE_TABLE(gdrpipe_calib_config_table)},

    {"CALIB_MAX_SIZE", "64m",
     "Largest message size measured by the calibration (device memory of this\n"
     "size is allocated on both GPUs while it runs).",
     ucs_offsetof(gdrpipe_iface_config_t, calib_max_size), UCS_CONFIG_TYPE_MEMUNITS},

    {"CALIB_ONLINE", "8",
     "Check a measured crossover through the peer, per size class (octave) from\n"
     "4 KiB to 8 x the calibrated threshold, and at least to 1 MiB: the first\n"
     "transfers of a class that\n"
     "start while nothing else is in flight alternate the two paths and are\n"
     "timed; after this many of each, the class's offsets (what the real\n"
     "transfers cost beyond the in-process calibration: control messages, the\n"
     "peer's progress) correct both fitted curves, the rule is recomputed and\n"
     "the class is cached. 0: off.",
     ucs_offsetof(gdrpipe_iface_config_t, calib_online), UCS_CONFIG_TYPE_UINT},

    {"CHUNK_SIZE", "auto",
     "Chunk of the staged pipeline (at least 64k). auto: the calibrated one when\n"
     "THRESH=auto measured it before the peer's staging rings were created, else 2m.",
     ucs_offsetof(gdrpipe_iface_config_t, chunk_size), UCS_CONFIG_TYPE_MEMUNITS},

    {"PIPELINE_DEPTH", "auto",
     "Staged pipeline chunks in flight per transfer (1-64). auto: the calibrated\n"
     "depth (see CHUNK_SIZE), else 4.",
     ucs_offsetof(gdrpipe_iface_config_t, depth), UCS_CONFIG_TYPE_ULUNITS},

    {"STALL_TIMEOUT", "inf",
     "A staged transfer that moves nothing this long fails with an error on the\n"
     "side that waits (the requester's operation, or the owner's serving of it):\n"
     "a peer that is alive but no longer progresses. inf (default): never, as for\n"
     "UCX's own rendezvous, since a peer busy outside MPI for a long time is legal;\n"
     "a peer that died is detected anyway (its process is checked).",
     ucs_offsetof(gdrpipe_iface_config_t, stall_timeout), UCS_CONFIG_TYPE_TIME},

    {"COPY_KERNEL", "y",
     "Direct-path device copies started in one progress call go in one launch\n"
     "of a batched copy kernel per device (up to 128 copies), which runs on the\n"
     "GPU's SMs beside the application's kernels. n: each copy on the copy\n"
     "engine (about 5 us of CPU each to queue on the H200 machines).",
     ucs_offsetof(gdrpipe_iface_config_t, copy_kernel), UCS_CONFIG_TYPE_BOOL},

    {"RCACHE_MAX_REGIONS", "4096",
     "Bound of each pinned-region cache (IPC exports, imports) in regions.",
     ucs_offsetof(gdrpipe_iface_config_t, cache_max_regions), UCS_CONFIG_TYPE_UINT},

    {"RCACHE_MAX_SIZE", "inf",
     "Bound of each pinned-region cache in bytes.",
     ucs_offsetof(gdrpipe_iface_config_t, cache_max_bytes), UCS_CONFIG_TYPE_MEMUNITS},

    {"STATS", "n",
     "Log the data-path counters (transfers and bytes per path, region-cache hits,\n"
     "misses, evictions, invalidations, bytes pinned) at INFO level when an\n"
     "interface closes.",
     ucs_offsetof(gdrpipe_iface_config_t, stats), UCS_CONFIG_TYPE_BOOL},

    {NULL}
};

static ucs_status_t gdrpipe_query_md_resources(uct_component_t *component,
                                               uct_md_resource_desc_t **resources_p,
                                               unsigned *num_resources_p)
{
    unsigned count = 1;
    uct_md_resource_desc_t *res;

    if (gp_cuda_available()) {
        ++count;
    } else {
        ucs_debug("gdrpipe: CUDA support is off: %s", gp_cuda_why_not());
    }
    res = ucs_calloc(count, sizeof(*res), "gdrpipe md");
    if (res == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    ucs_snprintf_zero(res[0].md_name, sizeof(res[0].md_name), "%s", GDRPIPE_MD_NAME);
    if (count > 1) {
        ucs_snprintf_zero(res[1].md_name, sizeof(res[1].md_name), "%s",
                          GDRPIPE_COPY_MD_NAME);
    }
    *resources_p     = res;
    *num_resources_p = count;
    return UCS_OK;
}

static ucs_status_t gdrpipe_rkey_unpack(uct_component_t *component,
                                        const void *rkey_buffer, uct_rkey_t *rkey_p,
                                        void **handle_p)
{
    gp_rkey_t *rkey;
    const char *why;

    rkey = ucs_malloc(sizeof(*rkey), "gdrpipe rkey");
    if (rkey == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    memcpy(rkey, rkey_buffer, sizeof(*rkey));
    why = gp_rkey_check(rkey);
    if ((why == NULL) && (rkey->host_id != gdrpipe_host_id())) {
        /* the key names memory of a process on another host: this wire
         * reaches only processes of this one */
        why = "remote key of another host";
    }
    if (why != NULL) {
        gdrpipe_peer_error("gdrpipe: rejected remote key: %s", why);
        ucs_free(rkey);
        return UCS_ERR_INVALID_PARAM;
    }
    *rkey_p   = (uintptr_t)rkey;
    *handle_p = NULL;
    return UCS_OK;
}

static ucs_status_t gdrpipe_rkey_release(uct_component_t *component, uct_rkey_t rkey,
                                         void *handle)
{
    ucs_free((void*)rkey);
    return UCS_OK;
}

static const gdrpipe_ucx_component_desc_t gdrpipe_component_desc = {
    .name               = GDRPIPE_NAME,
    .query_md_resources = gdrpipe_query_md_resources,
    .md_open            = gdrpipe_md_open,
    .rkey_unpack        = gdrpipe_rkey_unpack,
    .rkey_release       = gdrpipe_rkey_release,
    .rkey_size          = sizeof(gp_rkey_t),
    .md_config_name     = "gdrpipe memory domain",
    .md_config_table    = gdrpipe_md_config_table,
    .md_config_size     = sizeof(gdrpipe_md_config_t)
};

/* the component in UCX's layout (made at load) */
static uct_component_t *gdrpipe_component;

static ucs_status_t gdrpipe_query_devices(uct_md_h md, uct_tl_device_resource_t **devices_p,
                                          unsigned *num_devices_p)
{
    gdrpipe_md_t *gmd             = ucs_derived_of(md, gdrpipe_md_t);
    uct_tl_device_resource_t *dev = ucs_calloc(1, sizeof(*dev), "gdrpipe device");

    if (dev == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    if (gmd->kind == GDRPIPE_MD_COPY) {
        ucs_snprintf_zero(dev->name, sizeof(dev->name), "%s", GDRPIPE_COPY_DEV_NAME);
        dev->type = UCT_DEVICE_TYPE_ACC;
    } else {
        ucs_snprintf_zero(dev->name, sizeof(dev->name), "%s", GDRPIPE_SHM_DEV_NAME);
        dev->type = UCT_DEVICE_TYPE_SHM;
    }
    dev->sys_device = UCS_SYS_DEVICE_ID_UNKNOWN;
    *devices_p      = dev;
    *num_devices_p  = 1;
    return UCS_OK;
}

static ucs_status_t gdrpipe_iface_open(uct_md_h md, uct_worker_h worker,
                                       const uct_iface_params_t *params,
                                       const uct_iface_config_t *config,
                                       uct_iface_h *iface_p)
{
    const char *dev;

    if (!(params->field_mask & UCT_IFACE_PARAM_FIELD_OPEN_MODE) ||
        !(params->open_mode & UCT_IFACE_OPEN_MODE_DEVICE)) {
        ucs_error("gdrpipe: only UCT_IFACE_OPEN_MODE_DEVICE is supported");
        return UCS_ERR_UNSUPPORTED;
    }
    dev = params->mode.device.dev_name;
    if ((ucs_derived_of(md, gdrpipe_md_t)->kind == GDRPIPE_MD_WIRE) &&
        (strcmp(dev, GDRPIPE_SHM_DEV_NAME) == 0)) {
        return gdrpipe_shm_iface_open(md, worker, params, config, iface_p);
    }
    if ((ucs_derived_of(md, gdrpipe_md_t)->kind == GDRPIPE_MD_COPY) &&
        (strcmp(dev, GDRPIPE_COPY_DEV_NAME) == 0)) {
        return gdrpipe_copy_iface_open(md, worker, params, config, iface_p);
    }
    ucs_error("gdrpipe: unknown device '%s'", dev);
    return UCS_ERR_NO_DEVICE;
}

static uct_tl_t gdrpipe_tl = {
    .name          = GDRPIPE_NAME,
    .query_devices = gdrpipe_query_devices,
    .iface_open    = gdrpipe_iface_open,
    .config        = {
        .name      = "gdrpipe transport",
        .prefix    = GDRPIPE_CONFIG_PREFIX,
        .table     = gdrpipe_iface_config_table,
        .size      = sizeof(gdrpipe_iface_config_t),
    }
};

static int gdrpipe_registered;

/* Registers the component when the library is loaded (LD_PRELOAD or linked
 * into the application): UCX before 1.22 only dlopen()s module names
 * compiled into it, so UCS_MODULE_INIT would never run for us. The plugin is
 * built for one UCX ABI (plugin/ucx/): under any other UCX it would corrupt
 * memory, so it refuses to register, with one line, and touches nothing of
 * UCX's internals. */
UCS_STATIC_INIT
{
    char why[256];

    if (!gdrpipe_ucx_abi_usable(why, sizeof(why))) {
        fprintf(stderr, "%s\n", why);
        return;
    }
    gdrpipe_component = gdrpipe_ucx_component_create(&gdrpipe_component_desc,
                                                     GDRPIPE_CONFIG_PREFIX);
    if (gdrpipe_component == NULL) {
        ucs_error("gdrpipe: cannot make its UCT component");
        return;
    }
    gdrpipe_log_init();
    gdrpipe_memhooks_init();
    uct_tl_register(gdrpipe_component, &gdrpipe_tl);
    uct_component_register(gdrpipe_component);
    gdrpipe_rdma_register();
    /* device tag sends by rendezvous concern endpoints whose rendezvous
     * goes through either component's transport */
    gdrpipe_send_add_component(gdrpipe_component);
    if (gdrpipe_rdma_component != NULL) {
        gdrpipe_send_add_component(gdrpipe_rdma_component);
    }
    gdrpipe_registered = 1;
}

UCS_STATIC_CLEANUP
{
    if (gdrpipe_registered) {
        gdrpipe_rdma_unregister();
        uct_component_unregister(gdrpipe_component);
        uct_tl_unregister(&gdrpipe_tl);
    }
}
