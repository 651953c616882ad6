/* UCX glue of gdrpipe: shared declarations of the component, memory domains
 * and interfaces. Everything here is C because UCX's class/registration
 * macros are; the data paths live in the C++ core behind gdrpipe/capi.h. */
#ifndef GDRPIPE_PLUGIN_H
#define GDRPIPE_PLUGIN_H

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gdrpipe/capi.h>
#include <gdrpipe/rkey.h>

#include "ucx/ucx.h"
#include "calib_config.h"

#define GDRPIPE_NAME          "gdrpipe"
#define GDRPIPE_MD_NAME       "gdrpipe"       /* inter-process wire MD */
#define GDRPIPE_COPY_MD_NAME  "gdrpipe_copy"  /* device<->host copy MD */
#define GDRPIPE_SHM_DEV_NAME  "memory"
#define GDRPIPE_COPY_DEV_NAME "cuda"
#define GDRPIPE_CONFIG_PREFIX "GDRPIPE_"

typedef enum {
    GDRPIPE_MD_WIRE = 0,
    GDRPIPE_MD_COPY = 1
} gdrpipe_md_kind_t;

typedef struct gdrpipe_md_config {
    uct_md_config_t super;
    char            *cuda_lib;
    int             pool_ipc;  /* export stream-ordered pool memory for the direct path */
    size_t          device_rndv_thresh; /* device tag sends by rendezvous from here */
    int             device_rndv_burst;  /* and below it within a window of sends */
    size_t          device_host_eager;  /* device sends to host memory eagerly to here */
    int             unhandled_ep_error; /* GDRPIPE_EP_ERR_* (ucp_ep_err.c) */
    double          tcp_timeout;        /* UCX's TCP sockets' bound, s (tcp_bound.c) */
} gdrpipe_md_config_t;

typedef struct gdrpipe_md {
    uct_md_t          super;
    gdrpipe_md_kind_t kind;
    uint64_t          host_id;
} gdrpipe_md_t;

typedef struct gdrpipe_iface_config {
    uct_iface_config_t super;
    size_t             seg_size;
    unsigned           fifo_size;
    double             bw;           /* reported bandwidth, bytes/s */
    double             latency;      /* reported latency, seconds */
    double             copy_h2d_bw;  /* copy transport, host->device */
    double             copy_d2h_bw;  /* copy transport, device->host */
    double             copy_latency; /* copy transport: launch + completion */
    int                path;         /* enum gp_path */
    size_t             thresh;       /* direct below, staged from here on; auto */
    size_t             chunk_size;   /* staged pipeline chunk; auto */
    unsigned long      depth;        /* staged chunks in flight; auto */
    gdrpipe_calib_config_t calib;    /* CALIBRATE, CALIB_DIR, _BUDGET, _WAIT */
    size_t             calib_max_size;
    unsigned           calib_online; /* transfers per path checking the crossover */
    int                copy_kernel;  /* batched copy kernel for a round's copies */
    double             stall_timeout; /* staged transfers fail after this long idle */
    unsigned           cache_max_regions;
    size_t             cache_max_bytes;
    int                stats;        /* print data-path counters at close */
} gdrpipe_iface_config_t;

/* The copy MD's remote key: only its magic. UCX from 1.16 packs a key for
 * every MD of a registration, the copy MD's too, and hands each to the
 * component's rkey_unpack with no length; the magic tells the copy MD's key
 * from a wire key (GP_RKEY_MAGIC) before more of the buffer is read. It
 * unpacks to gdrpipe_copy_rkey, which the copy transport ignores (it copies
 * within its own process) and the wire refuses. */
#define GDRPIPE_COPY_RKEY_MAGIC 0x6b637067u /* "gpck" */
extern const gp_rkey_t gdrpipe_copy_rkey;

/* memory handle of the wire MD */
typedef struct gdrpipe_memh {
    gp_rkey_t rkey;     /* what mkey_pack sends (sealed) */
    void      *reg;     /* the core's registration (exports stay cached) */
} gdrpipe_memh_t;


/* ucs_error about what a peer sent, logged by gp_log_peer_due per call site
 * (the first 10, then the 100th, 1000th, ... with their number) */
#define gdrpipe_peer_error(_fmt, ...) gdrpipe_bounded_error(_fmt, ## __VA_ARGS__)

/* ucs_error for a condition another party can repeat at will: the first 10
 * occurrences of the call site, then the 100th, 1000th, ... */
#define gdrpipe_bounded_error(_fmt, ...) \
    do { \
        static uint64_t _gdrpipe_peer_n; \
        uint64_t _gdrpipe_peer_k = __atomic_add_fetch(&_gdrpipe_peer_n, 1, \
                                                      __ATOMIC_RELAXED); \
        if (gp_log_peer_due(_gdrpipe_peer_k)) { \
            ucs_error(_fmt " [occurrence %lu]", ## __VA_ARGS__, \
                      (unsigned long)_gdrpipe_peer_k); \
        } \
    } while (0)

/* preload.c: the definition a preloaded wrapper stands in front of (fatal
 * when there is none) */
void *gdrpipe_preload_next(const char *name);

/* ucp_ep_err.c: what a failure of an endpoint created without an error
 * handler does (UCX_GDRPIPE_UNHANDLED_EP_ERROR) */
typedef enum {
    GDRPIPE_EP_ERR_EXIT, /* the process ends */
    GDRPIPE_EP_ERR_NONE, /* left to UCX */
    GDRPIPE_EP_ERR_LAST
} gdrpipe_ep_err_action_t;
extern const char *gdrpipe_ep_err_names[];
void gdrpipe_ep_err_configure(int action);
uint64_t gdrpipe_ep_err_count(void); /* endpoints given the handler */

/* tcp_bound.c: the bound on UCX's TCP sockets (UCX_GDRPIPE_TCP_TIMEOUT) */
void gdrpipe_tcp_bound_configure(double timeout_s);
uint64_t gdrpipe_tcp_bound_count(void); /* sockets watched */
int gdrpipe_tcp_bound_failed(void);     /* whether a watched connection failed */

/* memhooks.c: bumped at every allocation and free the hooks see */
extern uint64_t gdrpipe_memhooks_generation;

/* ucp_send.c: device tag sends by rendezvous (SIZE_MAX: off) */
void gdrpipe_send_configure(size_t device_rndv_thresh, int burst);
/* a component whose transports carry gdrpipe's rendezvous (at registration):
 * the threshold concerns endpoints whose rendezvous lane is one of them */
void gdrpipe_send_add_component(const uct_component_t *component);
uint64_t gdrpipe_send_device_count(void);
uint64_t gdrpipe_send_burst_count(void); /* of them, given the window's threshold (1) */
/* ucp_send_host.c: small device tag sends to receivers that take them into
 * host memory go eagerly, from a host copy (UCX_GDRPIPE_DEVICE_HOST_EAGER) */
#define GDRPIPE_SINK_HINT_AM_ID 0xfd /* the receivers' word, on the wire's FIFO */
void gdrpipe_send_host_configure(size_t max_len);
void gdrpipe_send_host_release(void); /* the pool's copies, at the last md's close */
size_t gdrpipe_send_host_max(void);                /* 0: off */
void gdrpipe_send_sink_hint(const void *data, uint32_t len); /* from the wire */
void gdrpipe_send_sink_hint_set(int host); /* our own write told us */
/* whether this send went eagerly from a host copy (*ret: UCP's answer);
 * device: the buffer's (-1: unknown) */
int gdrpipe_send_host_try(ucp_ep_h ep, const void *buffer, size_t count, ucp_tag_t tag,
                          const ucp_request_param_t *param, int device,
                          ucs_status_ptr_t *ret);
uint64_t gdrpipe_send_host_count(void);
/* the device of [addr, addr+len) where this thread's last answers about
 * send and receive buffers know it as device memory, without asking UCX or
 * the driver (-1: not known) */
int gdrpipe_send_known_device(const void *addr, size_t len);
/* copy_iface.c: short copies whose device side was known that way */
uint64_t gdrpipe_copy_known_count(void);
/* a receive was posted (ucp_recv.c): a device one opens a window of sends */
void gdrpipe_send_note_recv(const void *buffer, const ucp_request_param_t *param);
/* progress calls of gdrpipe's wire in this thread (a device send that follows
 * another with none in between is part of a window: ucp_send.c) */
extern __thread uint64_t gdrpipe_progress_calls __attribute__((tls_model("initial-exec")));

/* md.c: both memory domains of the gdrpipe component (wire and copy) */
ucs_status_t gdrpipe_md_open(uct_component_t *component, const char *md_name,
                             const uct_md_config_t *config, uct_md_h *md_p);

/* The one-sided capabilities of an interface: put and get, zero copy of
 * any length (no alignment), short and bcopy up to the given sizes. */
void gdrpipe_iface_fill_rma_caps(uct_iface_attr_t *attr, size_t put_short, size_t put_bcopy,
                                 size_t get_short, size_t get_bcopy, size_t max_iov);
void gdrpipe_md_fill_attr(gdrpipe_ucx_md_attr_t *attr, size_t rkey_size,
                          ucs_linear_func_t reg_cost);
/* This host (UCS's system id): remote keys and wire addresses name it, and
 * those of another host are refused. */
static inline uint64_t gdrpipe_host_id(void)
{
    return ucs_get_system_id();
}
void gdrpipe_log_init(void);
void gdrpipe_memhooks_init(void);

/* the internal operations of an interface that leaves its performance
 * estimate to UCX (md.c) */
extern gdrpipe_ucx_iface_ops_t gdrpipe_base_iface_ops;
extern const gdrpipe_ucx_iface_funcs_t gdrpipe_base_iface_funcs;

/* An interface constructor's first step: UCX's base interface with the
 * given operations, then the check that UCX laid it out as plugin/ucx/
 * declares (an interface of a UCX that differs is not opened). */
#define GDRPIPE_IFACE_SUPER_INIT(_ops, _internal_ops, _md, _worker, _params, _config) \
    do { \
        uct_iface_internal_ops_t *_gp_internal = (_internal_ops); \
        char _gp_why[160]; \
        \
        UCS_CLASS_CALL_SUPER_INIT(uct_base_iface_t, _ops, _gp_internal, _md, \
                                  _worker, _params, _config); \
        if (!gdrpipe_ucx_base_iface_check(&self->super, _gp_internal, _md, \
                                          _gp_why, sizeof(_gp_why))) { \
            ucs_error("gdrpipe: the loaded UCX does not match the one gdrpipe was " \
                      "built for: %s", _gp_why); \
            return UCS_ERR_UNSUPPORTED; \
        } \
    } while (0)

/* The UCS class skeleton of an interface type _type (a uct_base_iface_t
 * with the standard constructor arguments): its definition, its new and
 * delete functions, and _open_fn, which creates one (declared in a header). */
#define GDRPIPE_IFACE_CLASS(_type, _open_fn) \
    UCS_CLASS_DEFINE(_type, uct_base_iface_t); \
    static UCS_CLASS_DEFINE_NEW_FUNC(_type, uct_iface_t, uct_md_h, uct_worker_h, \
                                     const uct_iface_params_t*, \
                                     const uct_iface_config_t*); \
    static UCS_CLASS_DEFINE_DELETE_FUNC(_type, uct_iface_t); \
    ucs_status_t _open_fn(uct_md_h md, uct_worker_h worker, \
                          const uct_iface_params_t *params, \
                          const uct_iface_config_t *config, uct_iface_h *iface_p) \
    { \
        return UCS_CLASS_NEW_FUNC_NAME(_type)(md, worker, params, config, iface_p); \
    }

/* The entries every interface's uct_iface_ops_t has in the same form:
 * endpoints of class _ep_type, the interface of class _iface_type, and the
 * interface functions named _prefix##_iface_{flush,progress,query}. */
#define GDRPIPE_IFACE_COMMON_OPS(_prefix, _iface_type, _ep_type) \
    .ep_create              = UCS_CLASS_NEW_FUNC_NAME(_ep_type), \
    .ep_destroy             = UCS_CLASS_DELETE_FUNC_NAME(_ep_type), \
    .iface_flush            = _prefix##_iface_flush, \
    .iface_progress_enable  = uct_base_iface_progress_enable, \
    .iface_progress_disable = uct_base_iface_progress_disable, \
    .iface_progress         = _prefix##_iface_progress, \
    .iface_close            = UCS_CLASS_DELETE_FUNC_NAME(_iface_type), \
    .iface_query            = _prefix##_iface_query

#endif
