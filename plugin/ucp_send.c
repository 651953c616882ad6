/* Device sends by rendezvous: a rendezvous threshold for device memory in
 * UCP 1.13's protocol v1 tag sends, which has one threshold for every memory
 * type (ucp_request_param_rndv_thresh: non-blocking host sends and all device
 * sends share the "remote" one).
 *
 * Below its threshold v1 sends a device message eagerly: the sender packs it
 * to host memory through the copy device and the receiver unpacks it the same
 * way, two device copies by two processes. By rendezvous the receiver's or
 * the sender's wire moves it once, on gdrpipe's direct path (or staged, by the
 * measured crossover). Lowering UCX_RNDV_THRESH for that would send host
 * messages by rendezvous too.
 *
 * The plugin is preloaded (gdrpipe-run), so these definitions of UCP's tag
 * send calls come before libucp's. For a device buffer on an endpoint whose
 * rendezvous goes through gdrpipe, the call runs with the endpoint
 * configuration's rendezvous thresholds set to UCX_GDRPIPE_DEVICE_RNDV_THRESH,
 * under the worker's lock, and put back; host buffers go straight to UCP.
 * UCP reads the thresholds only when it chooses the protocol, inside that
 * call. Protocol v2 (UCX_PROTO_ENABLE=y) chooses per memory type itself and
 * keeps its thresholds. Under both, a device send first waits for the legacy
 * stream where its memory needs that (pool, VMM), and a lone one into host
 * memory may go from a host copy (ucp_send_host.c). */
#include "gdrpipe.h"


#define GDRPIPE_SEND_OFF SIZE_MAX
#define GDRPIPE_SEND_MAX_COMPONENTS 2

/* UCX_GDRPIPE_DEVICE_RNDV_THRESH once a wire memory domain is open; until
 * then (gdrpipe not in use) every call goes straight to UCP */
static size_t gdrpipe_send_device_thresh = GDRPIPE_SEND_OFF;
static int gdrpipe_send_burst;      /* UCX_GDRPIPE_DEVICE_RNDV_BURST */
static uint64_t gdrpipe_send_count; /* device sends given the threshold */
static uint64_t gdrpipe_send_burst_sends; /* of them, the window's threshold (1) */
/* the components of gdrpipe's transports (gdrpipe_send_add_component) */
static const uct_component_t *gdrpipe_send_components[GDRPIPE_SEND_MAX_COMPONENTS];

__thread uint64_t gdrpipe_progress_calls __attribute__((tls_model("initial-exec")));
/* gdrpipe_progress_calls at this thread's last device send (+1; 0: none) */
static __thread uint64_t gdrpipe_send_last_round __attribute__((tls_model("initial-exec")));

void gdrpipe_send_add_component(const uct_component_t *component)
{
    unsigned i;

    for (i = 0; i < GDRPIPE_SEND_MAX_COMPONENTS; ++i) {
        if ((gdrpipe_send_components[i] == NULL) ||
            (gdrpipe_send_components[i] == component)) {
            gdrpipe_send_components[i] = component;
            return;
        }
    }
    ucs_fatal("gdrpipe: more than %d components of gdrpipe's transports",
              GDRPIPE_SEND_MAX_COMPONENTS);
}

void gdrpipe_send_configure(size_t device_rndv_thresh, int burst)
{
    /* auto: the default */
    gdrpipe_send_device_thresh = (device_rndv_thresh == UCS_MEMUNITS_AUTO) ? 2 :
                                 device_rndv_thresh;
    gdrpipe_send_burst         = burst;
}

/* Whether this device send is part of a window of sends: it follows another
 * device send or a posted device receive (ucp_recv.c) of this thread with no
 * progress of the wire in between. A window goes by rendezvous, whose
 * copies go in one batched launch (DEVICE_RNDV_BURST); a lone send may go
 * packed (a tiny one, e.g. an acknowledgement, costs a GPU hand-over more
 * by rendezvous when two processes share a GPU, bench/RESULTS.md) or from a
 * host copy (ucp_send_host.c). Called once per device send. */
static int gdrpipe_send_in_window(void)
{
    const uint64_t round = gdrpipe_progress_calls + 1;
    const int in_window  = (gdrpipe_send_last_round == round);

    gdrpipe_send_last_round = round;
    return gdrpipe_send_burst && in_window;
}

/* The threshold of this device send: DEVICE_RNDV_THRESH, or 1 in a window */
static size_t gdrpipe_send_thresh_for(int in_window)
{
    if (in_window && (gdrpipe_send_device_thresh > 1)) {
        return 1;
    }
    return gdrpipe_send_device_thresh;
}

uint64_t gdrpipe_send_device_count(void)
{
    return __atomic_load_n(&gdrpipe_send_count, __ATOMIC_RELAXED);
}

uint64_t gdrpipe_send_burst_count(void)
{
    return __atomic_load_n(&gdrpipe_send_burst_sends, __ATOMIC_RELAXED);
}

/* The last answers of this thread, kept until the hooks see an allocation
 * or a free: a program sends from and receives into the same buffers again
 * and again, and UCX's memory-type cache takes a lock per lookup (a device
 * answer also asks the driver for its device). A ping-pong alternates two
 * buffers, so one answer alone was asked anew on every call; four are kept,
 * the oldest replaced. A host send of a program that has device memory pays
 * about 26 instructions here with one answer (callgrind; about 90 with a
 * lookup each time). */
typedef struct {
    uintptr_t lo, hi;   /* the range the answer holds for */
    uint64_t  gen;      /* gdrpipe_memhooks_generation then; 0: none */
    int       device;
    int       ordinal;  /* the device it is on (-1: unknown, or host) */
    int       legacy;   /* whether a send from it waits for that device's
                           legacy stream (pool or VMM memory) */
} gdrpipe_send_last_t;

/* initial-exec: the plugin is preloaded (a library loaded later gets this
 * from glibc's reserve of static TLS); the default model costs a call to
 * __tls_get_addr per send */
#define GDRPIPE_SEND_LAST_N 4
static __thread gdrpipe_send_last_t gdrpipe_send_last[GDRPIPE_SEND_LAST_N]
        __attribute__((tls_model("initial-exec")));
static __thread unsigned gdrpipe_send_last_next /* the one to replace */
        __attribute__((tls_model("initial-exec")));

/* where a device buffer is: its device's ordinal (-1: unknown) and whether
 * a send from it waits for that device's legacy stream: pool and VMM memory
 * cannot carry SYNC_MEMOPS, so the application's last pageable copy into it
 * may still be in flight there, and UCP's registration cache skips
 * gp_mem_register's wait when the buffer is sent again (stale data on the
 * H100 without it) */
static int gdrpipe_send_where(const void *buffer, int *legacy)
{
    gp_mem_info_t mi;

    *legacy = 0;
    if ((gp_cuda_mem_query(buffer, &mi) != 0) || (mi.kind == GP_MEM_HOST)) {
        return -1;
    }
    *legacy = (mi.kind == GP_MEM_DEVICE) && (mi.is_pool || mi.is_vmm);
    return mi.device;
}

static int gdrpipe_send_remember(uintptr_t lo, uintptr_t hi, uint64_t gen, int device,
                                 const void *buffer)
{
    gdrpipe_send_last_t *e = &gdrpipe_send_last[gdrpipe_send_last_next];

    gdrpipe_send_last_next = (gdrpipe_send_last_next + 1) % GDRPIPE_SEND_LAST_N;
    e->gen     = 0; /* not an answer until it is whole */
    e->lo      = lo;
    e->hi      = hi;
    e->device  = device;
    e->legacy  = 0;
    e->ordinal = device ? gdrpipe_send_where(buffer, &e->legacy) : -1;
    e->gen     = gen;
    return device;
}

/* this thread's answer that holds for address a in generation gen (NULL:
 * none) */
static UCS_F_ALWAYS_INLINE const gdrpipe_send_last_t *
gdrpipe_send_last_find(uintptr_t a, uint64_t gen)
{
    const gdrpipe_send_last_t *e;

    for (e = gdrpipe_send_last; e < gdrpipe_send_last + GDRPIPE_SEND_LAST_N; ++e) {
        if ((e->gen == gen) && (a >= e->lo) && (a < e->hi)) {
            return e;
        }
    }
    return NULL;
}

int gdrpipe_send_known_device(const void *addr, size_t len)
{
    const uint64_t gen = __atomic_load_n(&gdrpipe_memhooks_generation, __ATOMIC_ACQUIRE);
    const uintptr_t a  = (uintptr_t)addr;
    const gdrpipe_send_last_t *e = gdrpipe_send_last_find(a, gen);

    if ((e == NULL) || !e->device || (len > e->hi - a)) {
        return -1;
    }
    return e->ordinal;
}

/* a device send: first the legacy stream, where its memory needs that;
 * returns the buffer's device (-1: unknown) */
static int gdrpipe_send_order(const void *buffer)
{
    const uint64_t gen = __atomic_load_n(&gdrpipe_memhooks_generation, __ATOMIC_ACQUIRE);
    const gdrpipe_send_last_t *e = gdrpipe_send_last_find((uintptr_t)buffer, gen);
    int ordinal, legacy;

    if (e != NULL) {
        ordinal = e->ordinal;
        legacy  = e->legacy;
    } else {
        ordinal = gdrpipe_send_where(buffer, &legacy);
    }
    if (legacy && (ordinal >= 0)) {
        gp_cuda_wait_legacy(ordinal);
    }
    return ordinal;
}

/* what UCX's memory-type cache (else the driver) says of a buffer that the
 * last answer does not cover */
static UCS_F_NOINLINE int gdrpipe_send_classify(const void *buffer, uint64_t gen)
{
    const uintptr_t a    = (uintptr_t)buffer;
    const uintptr_t page = a & ~(uintptr_t)4095;
    ucs_memory_info_t info;
    gp_mem_info_t mi;
    ucs_status_t status;

    status = ucs_memtype_cache_lookup(buffer, 1, &info);
    if (status == UCS_ERR_NO_ELEM) {
        return gdrpipe_send_remember(page, page + 4096, gen, 0, buffer);
    }
    if ((status == UCS_OK) && (info.type != UCS_MEMORY_TYPE_UNKNOWN)) {
        return gdrpipe_send_remember((uintptr_t)info.base_address,
                                     (uintptr_t)info.base_address + info.alloc_length, gen,
                                     (info.type != UCS_MEMORY_TYPE_HOST), buffer);
    }
    /* no memory-type cache (incomplete hooks: events may be missing, so
     * nothing is kept) or an unknown range */
    return (gp_cuda_mem_query(buffer, &mi) == 0) && (mi.kind != GP_MEM_HOST);
}

/* whether a buffer is device memory, as UCP would find it: inline, on every
 * send, what host messages pay is a few loads and compares */
static UCS_F_ALWAYS_INLINE int
gdrpipe_send_is_device(const void *buffer, const ucp_request_param_t *param)
{
    const uintptr_t a = (uintptr_t)buffer;
    const gdrpipe_send_last_t *e;
    uint64_t gen;

    if ((param != NULL) && (param->op_attr_mask & UCP_OP_ATTR_FIELD_MEMORY_TYPE) &&
        (param->memory_type != UCS_MEMORY_TYPE_UNKNOWN)) {
        return param->memory_type != UCS_MEMORY_TYPE_HOST;
    }
    if ((buffer == NULL) || ucs_memtype_cache_is_empty()) {
        return 0; /* no device memory known to UCX at all */
    }
    /* read before the lookup: an event in between makes the answer stale */
    gen = __atomic_load_n(&gdrpipe_memhooks_generation, __ATOMIC_ACQUIRE);
    e   = gdrpipe_send_last_find(a, gen);
    if (e != NULL) {
        return e->device;
    }
    return gdrpipe_send_classify(buffer, gen);
}

void gdrpipe_send_note_recv(const void *buffer, const ucp_request_param_t *param)
{
    /* asked even where no window follows: the answer is kept for the copy
     * transport's unpack into this buffer (gdrpipe_send_known_device) */
    if (gdrpipe_send_is_device(buffer, param) && gdrpipe_send_burst &&
        (gdrpipe_send_device_thresh != GDRPIPE_SEND_OFF)) {
        /* a device receive posted: the sends that follow it before any
         * progress exchange with it (a window, as after another send) */
        gdrpipe_send_last_round = gdrpipe_progress_calls + 1;
    }
}

/* For a device buffer: gives the endpoint's configuration the device
 * threshold for one call (1: then gdrpipe_send_end after it), or leaves the
 * call as UCP takes it (0: v2, no configuration yet, rendezvous not through
 * gdrpipe, UCP's threshold already at or below it, or a UCX whose layout
 * plugin/ucx/ does not know for it). */
static UCS_F_NOINLINE int gdrpipe_send_begin_device(ucp_ep_h ep, size_t thresh,
                                                    gdrpipe_ucx_rndv_saved_t *s)
{
    if (!gdrpipe_ucx_rndv_begin(ep, thresh, gdrpipe_send_components,
                                GDRPIPE_SEND_MAX_COMPONENTS, s)) {
        return 0;
    }
    __atomic_fetch_add(&gdrpipe_send_count, 1, __ATOMIC_RELAXED);
    if (thresh < gdrpipe_send_device_thresh) {
        __atomic_fetch_add(&gdrpipe_send_burst_sends, 1, __ATOMIC_RELAXED);
    }
    return 1;
}

/* whether this call is one for the device path (the legacy stream where
 * needed, a host copy, or gdrpipe_send_begin_device; inline: a host send pays
 * a few loads and compares, then goes on to UCP in a tail call) */
static UCS_F_ALWAYS_INLINE int
gdrpipe_send_wants(const void *buffer, const ucp_request_param_t *param)
{
    /* a rendezvous never completes at once: a call that must is left as
     * the caller asked (UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL; it goes packed,
     * through cuMemcpy, which the legacy stream orders) */
    return gdrpipe_send_is_device(buffer, param) &&
           ((param == NULL) || !(param->op_attr_mask & UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL));
}

static void gdrpipe_send_end(gdrpipe_ucx_rndv_saved_t *s)
{
    gdrpipe_ucx_rndv_end(s);
}

/* One wrapper per send call: _name is UCP's function, _dev the out-of-line
 * device path; RET, PARAMS and ARGS spell the signature; _host sends the call
 * from a host copy (1, ret set) or not (0). */
#define GDRPIPE_SEND_WRAP(_ret, _name, _params, _args, _param, _host) \
    typedef _ret (*_name##_fn_t) _params; \
    static _name##_fn_t _name##_real; \
    \
    static UCS_F_NOINLINE _ret _name##_dev _params \
    { \
        const int in_window = gdrpipe_send_in_window(); \
        const int ordinal   = gdrpipe_send_order(buffer); \
        gdrpipe_ucx_rndv_saved_t s; \
        _ret ret; \
        \
        (void)ordinal; \
        if (!in_window && (_host)) { \
            return ret; \
        } \
        if ((gdrpipe_send_device_thresh == GDRPIPE_SEND_OFF) || \
            !gdrpipe_send_begin_device(ep, gdrpipe_send_thresh_for(in_window), &s)) { \
            return _name##_real _args; \
        } \
        ret = _name##_real _args; \
        gdrpipe_send_end(&s); \
        return ret; \
    } \
    \
    _ret _name _params \
    { \
        if (gdrpipe_send_wants(buffer, _param)) { \
            return _name##_dev _args; \
        } \
        return _name##_real _args; \
    }

GDRPIPE_SEND_WRAP(ucs_status_ptr_t, ucp_tag_send_nbx,
                  (ucp_ep_h ep, const void *buffer, size_t count, ucp_tag_t tag,
                   const ucp_request_param_t *param),
                  (ep, buffer, count, tag, param), param,
                  gdrpipe_send_host_try(ep, buffer, count, tag, param, ordinal, &ret))
GDRPIPE_SEND_WRAP(ucs_status_ptr_t, ucp_tag_send_sync_nbx,
                  (ucp_ep_h ep, const void *buffer, size_t count, ucp_tag_t tag,
                   const ucp_request_param_t *param),
                  (ep, buffer, count, tag, param), param, 0)
GDRPIPE_SEND_WRAP(ucs_status_ptr_t, ucp_tag_send_nb,
                  (ucp_ep_h ep, const void *buffer, size_t count, ucp_datatype_t datatype,
                   ucp_tag_t tag, ucp_send_callback_t cb),
                  (ep, buffer, count, datatype, tag, cb), NULL, 0)
GDRPIPE_SEND_WRAP(ucs_status_ptr_t, ucp_tag_send_sync_nb,
                  (ucp_ep_h ep, const void *buffer, size_t count, ucp_datatype_t datatype,
                   ucp_tag_t tag, ucp_send_callback_t cb),
                  (ep, buffer, count, datatype, tag, cb), NULL, 0)
GDRPIPE_SEND_WRAP(ucs_status_t, ucp_tag_send_nbr,
                  (ucp_ep_h ep, const void *buffer, size_t count, ucp_datatype_t datatype,
                   ucp_tag_t tag, void *req),
                  (ep, buffer, count, datatype, tag, req), NULL, 0)

/* UCP's own functions, found once at load (libucp is loaded before the
 * plugin: the plugin depends on it) */
static void UCS_F_CTOR gdrpipe_send_init(void)
{
    ucp_tag_send_nbx_real      = (ucp_tag_send_nbx_fn_t)gdrpipe_preload_next("ucp_tag_send_nbx");
    ucp_tag_send_sync_nbx_real = (ucp_tag_send_sync_nbx_fn_t)
            gdrpipe_preload_next("ucp_tag_send_sync_nbx");
    ucp_tag_send_nb_real       = (ucp_tag_send_nb_fn_t)gdrpipe_preload_next("ucp_tag_send_nb");
    ucp_tag_send_sync_nb_real  = (ucp_tag_send_sync_nb_fn_t)
            gdrpipe_preload_next("ucp_tag_send_sync_nb");
    ucp_tag_send_nbr_real      = (ucp_tag_send_nbr_fn_t)gdrpipe_preload_next("ucp_tag_send_nbr");
}
