/* UCX 1.13 (see v1_13.h for the layouts; the adapters are common.c's, but
 * for protocol v1's rendezvous threshold, which only this layout has). */
#include "v1_13.h"

#include <ucs/sys/stubs.h>
#include <ucs/type/spinlock.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

const char gdrpipe_ucx_abi_name[]              = "1.13";
const unsigned gdrpipe_ucx_abi_minor_first     = 13;
const unsigned gdrpipe_ucx_abi_minor_last      = 13;
const int gdrpipe_ucx_md_reaches_registered   = 0;

/* the layouts UCX 1.13.1's code relies on (x86-64, no statistics) */
_Static_assert(sizeof(uct_tl_t) == 96, "uct_tl_t");
_Static_assert(sizeof(uct_component_t) == 208, "uct_component_t");
_Static_assert(offsetof(uct_component_t, md_config) == 64, "md_config");
_Static_assert(offsetof(uct_component_t, tl_list) == 160, "tl_list");
_Static_assert(offsetof(uct_component_t, md_vfs_init) == 200, "md_vfs_init");
_Static_assert(sizeof(uct_md_ops_t) == 88, "uct_md_ops_t");
_Static_assert(sizeof(uct_iface_internal_ops_t) == 32, "uct_iface_internal_ops_t");
_Static_assert(sizeof(uct_perf_attr_t) == 88, "uct_perf_attr_t");
_Static_assert(offsetof(uct_perf_attr_t, bandwidth) == 48, "perf bandwidth");
_Static_assert(offsetof(uct_perf_attr_t, max_inflight_eps) == 80, "perf max_inflight");
_Static_assert(sizeof(ucs_recursive_spinlock_t) == 16, "recursive spinlock");

/* ---- versions ----------------------------------------------------------------- */

int gdrpipe_ucx_abi_complete(void)
{
    return 1; /* every function used exists in each 1.13 release */
}

/* ---- UCP: the rendezvous threshold of one send ------------------------------ */

#define GDRPIPE_AT(_p, _off, _type) (*(_type*)((char*)(_p) + (_off)))

static void gdrpipe_ucx_worker_lock(void *worker, int lock)
{
    void *async = (char*)worker + GDRPIPE_UCP113_WORKER_ASYNC;
    ucs_recursive_spinlock_t *l = (ucs_recursive_spinlock_t*)
                                  ((char*)async + GDRPIPE_UCP113_ASYNC_SPINLOCK);

    if (lock) {
        ucs_recursive_spin_lock(l);
    } else {
        ucs_recursive_spin_unlock(l);
    }
}

int gdrpipe_ucx_rndv_begin(ucp_ep_h ep, size_t thresh,
                           const uct_component_t *const *components, unsigned count,
                           gdrpipe_ucx_rndv_saved_t *s)
{
    void *worker, *context, *config, *tl_md;
    uint8_t cfg_index, lane, md_index;
    const uct_md_t *md;
    size_t *rma, *am;
    unsigned i;
    int ours = 0;

    if (ep == NULL) {
        return 0;
    }
    worker    = GDRPIPE_AT(ep, GDRPIPE_UCP113_EP_WORKER, void*);
    cfg_index = GDRPIPE_AT(ep, GDRPIPE_UCP113_EP_CFG_INDEX, uint8_t);
    context   = GDRPIPE_AT(worker, GDRPIPE_UCP113_WORKER_CONTEXT, void*);
    if ((cfg_index == GDRPIPE_UCP113_CFG_INDEX_NULL) ||
        GDRPIPE_AT(context, GDRPIPE_UCP113_CONTEXT_PROTO_ENABLE, int)) {
        return 0;
    }
    s->locked = 0;
    if (GDRPIPE_AT(worker, GDRPIPE_UCP113_WORKER_FLAGS, uint64_t) &
        GDRPIPE_UCP113_WORKER_THREAD_MULTI) {
        if (GDRPIPE_AT(worker, GDRPIPE_UCP113_WORKER_ASYNC + GDRPIPE_UCP113_ASYNC_MODE,
                       int) != GDRPIPE_UCP113_ASYNC_MODE_SPINLOCK) {
            return 0; /* a worker lock of another kind: left to UCP */
        }
        gdrpipe_ucx_worker_lock(worker, 1);
        s->locked = 1;
    }
    config = (char*)worker + GDRPIPE_UCP113_WORKER_EP_CONFIG +
             (size_t)cfg_index * GDRPIPE_UCP113_EP_CONFIG_SIZE;
    lane   = GDRPIPE_AT(config, GDRPIPE_UCP113_CONFIG_RMA_BW_LANE0, uint8_t);
    rma    = &GDRPIPE_AT(config, GDRPIPE_UCP113_CONFIG_RMA_THRESH, size_t);
    am     = &GDRPIPE_AT(config, GDRPIPE_UCP113_CONFIG_AM_THRESH, size_t);
    if (lane != GDRPIPE_UCP113_NULL_LANE) {
        md_index = GDRPIPE_AT(config, GDRPIPE_UCP113_CONFIG_MD_INDEX + lane, uint8_t);
        tl_md    = GDRPIPE_AT(context, GDRPIPE_UCP113_CONTEXT_TL_MDS, char*) +
                   (size_t)md_index * GDRPIPE_UCP113_TL_MD_SIZE;
        md       = *(const uct_md_t**)tl_md;
        for (i = 0; i < count; ++i) {
            ours |= (components[i] != NULL) && (md->component == components[i]);
        }
    }
    /* rma[0], am[0]: the "remote" thresholds device sends take */
    if (!ours || (rma[0] <= thresh)) {
        if (s->locked) {
            gdrpipe_ucx_worker_lock(worker, 0);
        }
        return 0;
    }
    s->worker = worker;
    s->config = config;
    memcpy(s->rma, rma, sizeof(s->rma));
    memcpy(s->am, am, sizeof(s->am));
    rma[0] = thresh;
    am[0]  = thresh;
    return 1;
}

void gdrpipe_ucx_rndv_end(gdrpipe_ucx_rndv_saved_t *s)
{
    memcpy(&GDRPIPE_AT(s->config, GDRPIPE_UCP113_CONFIG_RMA_THRESH, size_t), s->rma,
           sizeof(s->rma));
    memcpy(&GDRPIPE_AT(s->config, GDRPIPE_UCP113_CONFIG_AM_THRESH, size_t), s->am,
           sizeof(s->am));
    if (s->locked) {
        gdrpipe_ucx_worker_lock(s->worker, 0);
    }
}
