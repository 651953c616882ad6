/* Small device tag sends whose receivers take them into host memory go
 * eagerly, from a host copy (UCX_GDRPIPE_DEVICE_HOST_EAGER).
 *
 * The sender picks eager or rendezvous; which is faster depends on the
 * receiver's buffer, which the sender does not know. Into device memory,
 * rendezvous moves a message with one copy (the receiver's read of the
 * sender's device buffer) where eager takes two (to host memory at the
 * sender, back to the device at the receiver). Into host memory both take
 * one device-to-host copy, and eager saves the rendezvous' round trip and
 * its bookkeeping (osu_latency D H: bench/RESULTS.md). So device sends go by
 * rendezvous (ucp_send.c under protocol v1, UCP's choice under v2) until
 * the receivers say otherwise.
 *
 * The receivers say it from their rendezvous reads: the wire's get from a
 * peer's device memory (shm_ep.c) tells the owner whether it landed in host
 * memory, in one byte on the wire when the answer changes and every 64
 * reads; the sender's own rendezvous write tells it directly. While the last word is "host", a device
 * send of up to DEVICE_HOST_EAGER bytes is copied to host memory here and
 * handed to UCP as a host send (eager); every GDRPIPE_SINK_PROBE_EVERY-th
 * one goes the usual way, so that a receiver that now takes device memory
 * is heard again. The word is the process's, not an endpoint's: a process
 * that sends to host and device buffers alike follows its last reader. A
 * wrong guess costs time, never data: both ways deliver the same bytes,
 * in order (one endpoint, one lane). */
#include "gdrpipe.h"

#include <pthread.h>
#include <stdlib.h>

#define GDRPIPE_SINK_PROBE_EVERY 16

static size_t gdrpipe_send_host_limit;   /* 0: off */
static int gdrpipe_send_sink_host;       /* the receivers' last word */
static uint64_t gdrpipe_send_host_sends; /* sent from a host copy */
static __thread unsigned gdrpipe_send_host_probe
        __attribute__((tls_model("initial-exec")));

typedef ucs_status_ptr_t (*gdrpipe_send_nbx_fn_t)(ucp_ep_h ep, const void *buffer,
                                                   size_t count, ucp_tag_t tag,
                                                   const ucp_request_param_t *param);
static gdrpipe_send_nbx_fn_t gdrpipe_send_host_nbx; /* libucp's ucp_tag_send_nbx */

/* a send in flight from its host copy: UCP's completion frees it */
typedef struct gdrpipe_send_copy {
    struct gdrpipe_send_copy *next;    /* in the free list */
    ucp_send_nbx_callback_t  cb;       /* the caller's, or NULL */
    void                     *user_data;
    int                      pinned;   /* one of the pool's */
    char                     data[] UCS_V_ALIGNED(64);
} gdrpipe_send_copy_t;

/* The host copies: page-locked memory, which the device writes faster than
 * pageable memory (a copy of 8 B to 8 KiB: 1-2 us less on the H100), kept in
 * a free list once made; up to GDRPIPE_SEND_COPY_POOL of them, then malloc
 * for the rest. The last memory domain to close frees them
 * (gdrpipe_send_host_release). */
#define GDRPIPE_SEND_COPY_POOL 256
static pthread_mutex_t gdrpipe_send_copy_lock = PTHREAD_MUTEX_INITIALIZER;
static gdrpipe_send_copy_t *gdrpipe_send_copy_free;
static unsigned gdrpipe_send_copy_made;
static size_t gdrpipe_send_copy_size; /* the data of a pooled one */

static gdrpipe_send_copy_t *gdrpipe_send_copy_get(size_t len)
{
    gdrpipe_send_copy_t *c = NULL;
    char err[256];
    int make;

    if (len <= gdrpipe_send_copy_size) {
        pthread_mutex_lock(&gdrpipe_send_copy_lock);
        c = gdrpipe_send_copy_free;
        if (c != NULL) {
            gdrpipe_send_copy_free = c->next;
        }
        make = (c == NULL) && (gdrpipe_send_copy_made < GDRPIPE_SEND_COPY_POOL);
        gdrpipe_send_copy_made += make;
        pthread_mutex_unlock(&gdrpipe_send_copy_lock);
        if (c != NULL) {
            return c;
        }
        if (make) {
            c = gp_cuda_host_alloc(sizeof(*c) + gdrpipe_send_copy_size, err, sizeof(err));
            if (c != NULL) {
                c->pinned = 1;
                return c;
            }
            ucs_debug("gdrpipe: page-locked host copy: %s", err);
        }
    }
    c = malloc(sizeof(*c) + len);
    if (c != NULL) {
        c->pinned = 0;
    }
    return c;
}

static void gdrpipe_send_copy_put(gdrpipe_send_copy_t *c)
{
    if (!c->pinned) {
        free(c);
        return;
    }
    pthread_mutex_lock(&gdrpipe_send_copy_lock);
    c->next                = gdrpipe_send_copy_free;
    gdrpipe_send_copy_free = c;
    pthread_mutex_unlock(&gdrpipe_send_copy_lock);
}

void gdrpipe_send_host_release(void)
{
    gdrpipe_send_copy_t *c;

    pthread_mutex_lock(&gdrpipe_send_copy_lock);
    while ((c = gdrpipe_send_copy_free) != NULL) {
        gdrpipe_send_copy_free = c->next;
        gp_cuda_host_free(c);
        --gdrpipe_send_copy_made;
    }
    pthread_mutex_unlock(&gdrpipe_send_copy_lock);
}

void gdrpipe_send_host_configure(size_t max_len)
{
    gdrpipe_send_host_limit = (max_len == UCS_MEMUNITS_AUTO) ? 8192 :
                              (max_len == UCS_MEMUNITS_INF) ? SIZE_MAX : max_len;
    pthread_mutex_lock(&gdrpipe_send_copy_lock);
    if (gdrpipe_send_copy_made == 0) {
        /* the first memory domain's setting sizes the pool's copies */
        gdrpipe_send_copy_size = ucs_min(gdrpipe_send_host_limit, 65536);
    }
    pthread_mutex_unlock(&gdrpipe_send_copy_lock);
}

size_t gdrpipe_send_host_max(void)
{
    return gdrpipe_send_host_limit;
}

void gdrpipe_send_sink_hint(const void *data, uint32_t len)
{
    if (len != 1) {
        gdrpipe_peer_error("gdrpipe: dropped a receiver's word of %u bytes", len);
        return;
    }
    gdrpipe_send_sink_hint_set(*(const uint8_t*)data != 0);
}

void gdrpipe_send_sink_hint_set(int host)
{
    __atomic_store_n(&gdrpipe_send_sink_host, host, __ATOMIC_RELAXED);
}

uint64_t gdrpipe_send_host_count(void)
{
    return __atomic_load_n(&gdrpipe_send_host_sends, __ATOMIC_RELAXED);
}

static void gdrpipe_send_copy_done(void *request, ucs_status_t status, void *arg)
{
    gdrpipe_send_copy_t *c        = arg;
    ucp_send_nbx_callback_t cb    = c->cb;
    void *user_data               = c->user_data;

    gdrpipe_send_copy_put(c);
    if (cb != NULL) {
        cb(request, status, user_data);
    }
}

/* the bytes of a contiguous send (0: not contiguous) */
static size_t gdrpipe_send_contig_len(size_t count, const ucp_request_param_t *param)
{
    ucp_datatype_t dt = ucp_dt_make_contig(1);

    if ((param != NULL) && (param->op_attr_mask & UCP_OP_ATTR_FIELD_DATATYPE)) {
        dt = param->datatype;
    }
    if ((dt & UCP_DATATYPE_CLASS_MASK) != UCP_DATATYPE_CONTIG) {
        return 0;
    }
    return count * (size_t)(dt >> UCP_DATATYPE_SHIFT);
}

int gdrpipe_send_host_try(ucp_ep_h ep, const void *buffer, size_t count, ucp_tag_t tag,
                          const ucp_request_param_t *param, int device, ucs_status_ptr_t *ret)
{
    const size_t len = gdrpipe_send_contig_len(count, param);
    ucp_request_param_t p;
    gdrpipe_send_copy_t *c;
    char err[256];

    if ((len == 0) || (len > gdrpipe_send_host_limit) ||
        !__atomic_load_n(&gdrpipe_send_sink_host, __ATOMIC_RELAXED) ||
        ((++gdrpipe_send_host_probe % GDRPIPE_SINK_PROBE_EVERY) == 0)) {
        return 0;
    }
    c = gdrpipe_send_copy_get(len);
    if (c == NULL) {
        return 0;
    }
    /* a known device: no questions to the driver, and the copy stream
     * that waits for the legacy one (cuMemcpy's order, at less cost) */
    if (((device >= 0) ?
         gp_cuda_copy_from_device(c->data, buffer, len, device, err, sizeof(err)) :
         gp_cuda_copy_dev(c->data, buffer, len, GP_CUDA_SRC_DEVICE, err, sizeof(err))) != 0) {
        ucs_debug("gdrpipe: device send of %zu bytes by UCP: its host copy failed: %s",
                  len, err);
        gdrpipe_send_copy_put(c);
        return 0;
    }
    if (param != NULL) {
        p = *param;
    } else {
        p.op_attr_mask = 0;
    }
    c->cb        = (p.op_attr_mask & UCP_OP_ATTR_FIELD_CALLBACK) ? p.cb.send : NULL;
    c->user_data = (p.op_attr_mask & UCP_OP_ATTR_FIELD_USER_DATA) ? p.user_data : NULL;
    p.op_attr_mask |= UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                      UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    p.cb.send       = gdrpipe_send_copy_done;
    p.user_data     = c;
    p.memory_type   = UCS_MEMORY_TYPE_HOST;
    *ret = gdrpipe_send_host_nbx(ep, c->data, count, tag, &p);
    if (!UCS_PTR_IS_PTR(*ret)) {
        gdrpipe_send_copy_put(c); /* done at once, or failed: no completion follows */
    }
    __atomic_fetch_add(&gdrpipe_send_host_sends, 1, __ATOMIC_RELAXED);
    return 1;
}

static void UCS_F_CTOR gdrpipe_send_host_init(void)
{
    gdrpipe_send_host_nbx = (gdrpipe_send_nbx_fn_t)gdrpipe_preload_next("ucp_tag_send_nbx");
}
