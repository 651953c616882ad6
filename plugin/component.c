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

    /* Another path selects another driver, e.g. the CUDA-driver simulator of
     * the test suite. Read from the environment at load time, before UCX parses
     * its configuration (cuda/driver.hpp). */
    {"CUDA_LIB", "libcuda.so.1",
     "CUDA driver library to load at run time (read from "
     "the environment when the plugin loads).",
     ucs_offsetof(gdrpipe_md_config_t, cuda_lib), UCS_CONFIG_TYPE_STRING},

    /* Pools created with POSIX-fd handles (cuMemPoolExportPointer). The importer
     * closes each imported pointer when its transfer completes (CUDA requires
     * importers to free before the exporter does). Default pools cannot be
     * exported and go staged. */
    {"POOL_IPC", "y",
     "Share memory of exportable stream-ordered pools for the "
     "direct path (n: pool memory goes staged).",
     ucs_offsetof(gdrpipe_md_config_t, pool_ipc), UCS_CONFIG_TYPE_BOOL},

    /* Through gdrpipe's direct or staged path (one copy), whatever UCX_RNDV_THRESH
     * says for host memory; below it (inf: below UCP's own thresholds) UCP packs
     * each message through the copy device and the receiver unpacks it. Default
     * 2 (auto: the same): a 1-byte message (an acknowledgement, a flag) stays
     * eager; with two ranks on one GPU, osu_bw's 1-byte acknowledgement by
     * rendezvous halved its rate from 16 KiB to 4 MiB. Applies to endpoints whose
     * rendezvous goes through gdrpipe, to contiguous buffers; needs the plugin
     * preloaded (gdrpipe-run does; ucp_send.c). */
    {"DEVICE_RNDV_THRESH", "2",
     "Tag sends of device memory from this size go by rendezvous "
     "through gdrpipe (UCP v1; inf: UCP's thresholds).",
     ucs_offsetof(gdrpipe_md_config_t, device_rndv_thresh), UCS_CONFIG_TYPE_MEMUNITS},

    /* A window: a device tag send that follows another device tag send or a
     * posted device tag receive of the same thread with no progress of gdrpipe's
     * wire in between (their copies go in one batched launch); a lone one (an
     * acknowledgement) stays eager. */
    {"DEVICE_RNDV_BURST", "y",
     "Device tag sends in a window of sends go by rendezvous: below "
     "DEVICE_RNDV_THRESH too, and none from a host copy (DEVICE_HOST_EAGER) "
     "(n: the threshold and the receivers alone decide).",
     ucs_offsetof(gdrpipe_md_config_t, device_rndv_burst), UCS_CONFIG_TYPE_BOOL},

    /* The sender chooses between eager and rendezvous, the receiver's buffer
     * decides which is faster: a device message into host memory is one
     * device-to-host copy either way, so eagerly it saves the rendezvous'
     * round; into device memory, rendezvous saves a copy. The receivers'
     * reads tell the sender where its device data lands (ucp_send_host.c). */
    {"DEVICE_HOST_EAGER", "8k",
     "Device tag sends up to this size go eagerly, from a host copy, while "
     "their receivers take device data into host memory (0: never).",
     ucs_offsetof(gdrpipe_md_config_t, device_host_eager), UCS_CONFIG_TYPE_MEMUNITS},

    /* Endpoints created with a peer's address and without an error handler (Open
     * MPI 4.1 creates all of its endpoints so). exit: the process logs the error
     * and ends with status 1, so that the launcher ends the job; without it a rank
     * waiting for a peer whose link went down waits forever (UCP fails only the
     * sends pending on the endpoint). A peer that closed its connection or ended
     * does not end the process. Endpoints the program has closed, client/server
     * endpoints and endpoints with their own handler are never concerned. Needs
     * the plugin preloaded (ucp_ep_err.c). */
    {"UNHANDLED_EP_ERROR", "exit",
     "What a failed TCP connection does to a UCP endpoint without "
     "an error handler: exit, or none (left to UCX).",
     ucs_offsetof(gdrpipe_md_config_t, unhandled_ep_error),
     UCS_CONFIG_TYPE_ENUM(gdrpipe_ep_err_names)},

    /* For UCX's tcp transport and tcp connection manager: a connection whose
     * peer acknowledges nothing while data waits fails this long after the
     * kernel's first retransmission (TCP_USER_TIMEOUT, set only while
     * retransmitting; otherwise net.ipv4.tcp_retries2, about 15 minutes), and
     * accepted sockets, where UCX 1.13 enables no keepalive, probe an idle peer
     * from a third of it on. A peer that is alive but does not read (its window
     * full) answers the kernel's probes and is never failed. The endpoint's error
     * then reaches UCP (UNHANDLED_EP_ERROR). Needs the plugin preloaded
     * (tcp_bound.c). */
    {"TCP_TIMEOUT", "30s",
     "A TCP connection of UCX fails when its peer acknowledges "
     "nothing for this long (inf: UCX's own sockets).",
     ucs_offsetof(gdrpipe_md_config_t, tcp_timeout), UCS_CONFIG_TYPE_TIME},

    {NULL}
};

static const char *gdrpipe_path_names[] = {"auto", "direct", "staged", NULL};

static ucs_config_field_t gdrpipe_iface_config_table[] = {
    {"", "", NULL, ucs_offsetof(gdrpipe_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

    /* A peer with smaller elements is refused at connection time. */
    {"SEG_SIZE", "8k",
     "Payload of one FIFO element: the largest active message "
     "sent by copy (the same in every process).",
     ucs_offsetof(gdrpipe_iface_config_t, seg_size), UCS_CONFIG_TYPE_MEMUNITS},

    {"FIFO_SIZE", "256",
     "Elements in each interface's receive FIFO (rounded up to a power of two).",
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

    /* auto and direct go staged wherever the direct path (CUDA IPC peer copy) is
     * impossible: no peer access, memory that cannot be shared. */
    {"PATH", "auto",
     "How GPU memory moves between processes: auto (direct below "
     "THRESH, staged from it), direct or staged.",
     ucs_offsetof(gdrpipe_iface_config_t, path), UCS_CONFIG_TYPE_ENUM(gdrpipe_path_names)},

    /* auto: measured per pair of GPUs at the first transfer between them, or read
     * from the calibration cache (CALIBRATE); direct when both buffers are on one
     * GPU, staged when peer access is impossible. */
    {"THRESH", "auto",
     "Size from which PATH=auto stages GPU transfers: auto "
     "(measured per GPU pair), inf (never) or a size.",
     ucs_offsetof(gdrpipe_iface_config_t, thresh), UCS_CONFIG_TYPE_MEMUNITS},

    {"", "", NULL, ucs_offsetof(gdrpipe_iface_config_t, calib),
     UCS_CONFIG_TYPE_TABLE(gdrpipe_calib_config_table)},

    {"CALIB_MAX_SIZE", "64m",
     "Largest size the calibration measures (allocated on both GPUs while it runs).",
     ucs_offsetof(gdrpipe_iface_config_t, calib_max_size), UCS_CONFIG_TYPE_MEMUNITS},

    /* Size classes (octaves) from 4 KiB to 8 x the calibrated threshold, at least
     * to 1 MiB: the first transfers of a class that start while nothing else is
     * in flight alternate the two paths and are timed; after this many of each,
     * the class's offsets (what real transfers cost beyond the in-process
     * calibration: control messages, the peer's progress) correct both fitted
     * curves, the rule is recomputed and the class is cached. */
    {"CALIB_ONLINE", "8",
     "Transfers per path that check a measured crossover "
     "through the peer, per size class (0: no check).",
     ucs_offsetof(gdrpipe_iface_config_t, calib_online), UCS_CONFIG_TYPE_UINT},

    /* The calibrated one when THRESH=auto measured it before the peer's staging
     * rings were created. */
    {"CHUNK_SIZE", "auto",
     "Chunk of the staged pipeline, at least 64k (auto: the calibrated one, else 2m).",
     ucs_offsetof(gdrpipe_iface_config_t, chunk_size), UCS_CONFIG_TYPE_MEMUNITS},

    {"PIPELINE_DEPTH", "auto",
     "Staged pipeline chunks in flight per transfer, 1-64 "
     "(auto: the calibrated depth, else 4).",
     ucs_offsetof(gdrpipe_iface_config_t, depth), UCS_CONFIG_TYPE_ULUNITS},

    /* The side that waits fails: the requester's operation, or the owner's serving
     * of it. inf, as for UCX's own rendezvous: a peer busy outside MPI for a long
     * time is legal; a peer that died is detected anyway (its process is
     * checked). */
    {"STALL_TIMEOUT", "inf",
     "A staged transfer that moves nothing this long fails: "
     "a peer alive but stuck (inf: never).",
     ucs_offsetof(gdrpipe_iface_config_t, stall_timeout), UCS_CONFIG_TYPE_TIME},

    /* Up to 128 copies per device and launch; the kernel runs on the GPU's SMs
     * beside the application's kernels. On the copy engine each copy costs about
     * 5 us of CPU to queue on the H200 machines. */
    {"COPY_KERNEL", "y",
     "Launch the direct-path device copies of one progress call "
     "as one batched kernel (n: the copy engine).",
     ucs_offsetof(gdrpipe_iface_config_t, copy_kernel), UCS_CONFIG_TYPE_BOOL},

    {"RCACHE_MAX_REGIONS", "4096",
     "Bound of each pinned-region cache (IPC exports, imports) in regions.",
     ucs_offsetof(gdrpipe_iface_config_t, cache_max_regions), UCS_CONFIG_TYPE_UINT},

    {"RCACHE_MAX_SIZE", "inf",
     "Bound of each pinned-region cache in bytes.",
     ucs_offsetof(gdrpipe_iface_config_t, cache_max_bytes), UCS_CONFIG_TYPE_MEMUNITS},

    /* Transfers and bytes per path, region-cache hits, misses, evictions,
     * invalidations, bytes pinned, and the plugin's other counters. */
    {"STATS", "n",
     "Log the data-path and cache counters at INFO level when an interface closes.",
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

const gp_rkey_t gdrpipe_copy_rkey = {.magic = GDRPIPE_COPY_RKEY_MAGIC};

static ucs_status_t gdrpipe_rkey_unpack(uct_component_t *component,
                                        const void *rkey_buffer, uct_rkey_t *rkey_p,
                                        void **handle_p)
{
    gp_rkey_t *rkey;
    const char *why;
    uint32_t magic;

    /* the copy MD's key is only its magic (gdrpipe.h) */
    memcpy(&magic, rkey_buffer, sizeof(magic));
    if (magic == GDRPIPE_COPY_RKEY_MAGIC) {
        *rkey_p   = (uintptr_t)&gdrpipe_copy_rkey;
        *handle_p = NULL;
        return UCS_OK;
    }
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
    if (rkey != (uintptr_t)&gdrpipe_copy_rkey) {
        ucs_free((void*)rkey);
    }
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
