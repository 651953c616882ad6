/* The adapters of abi.h for UCX 1.13 (see v1_13.h for the layouts). */
#include "v1_13.h"

#include <ucs/sys/stubs.h>
#include <ucs/type/spinlock.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

const char gdrpipe_ucx_abi_name[]              = "1.13";
const unsigned gdrpipe_ucx_abi_minor_first     = 13;
const unsigned gdrpipe_ucx_abi_minor_last      = 13;
const int gdrpipe_ucx_md_reaches_registered   = 0;

/* the layouts UCX 1.13.1's code relies on (x86-64, no statistics) */
_Static_assert(sizeof(uct_base_iface_t) == 1280, "uct_base_iface_t");
_Static_assert(offsetof(uct_base_iface_t, internal_ops) == 400, "internal_ops");
_Static_assert(offsetof(uct_base_iface_t, am) == 424, "am");
_Static_assert(offsetof(uct_base_iface_t, err_handler) == 1208, "err_handler");
_Static_assert(offsetof(uct_base_iface_t, prog) == 1228, "prog");
_Static_assert(offsetof(uct_base_iface_t, config) == 1240, "config");
_Static_assert(sizeof(uct_base_ep_t) == 8, "uct_base_ep_t");
_Static_assert(sizeof(uct_md_t) == 16, "uct_md_t");
_Static_assert(sizeof(uct_iface_config_t) == 32, "uct_iface_config_t");
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
_Static_assert(sizeof(uct_md_mem_dereg_params_t) == 32, "dereg params");
_Static_assert(sizeof(ucm_event_installer_t) == 32, "ucm_event_installer_t");
_Static_assert(sizeof(uct_md_ops_t) <= sizeof(((gdrpipe_ucx_md_ops_t*)0)->table),
               "md ops table");
_Static_assert(sizeof(uct_iface_internal_ops_t) <=
               sizeof(((gdrpipe_ucx_iface_ops_t*)0)->table), "internal ops table");
_Static_assert(sizeof(ucs_recursive_spinlock_t) == 16, "recursive spinlock");

/* ---- versions ----------------------------------------------------------------- */

int gdrpipe_ucx_abi_complete(void)
{
    return 1; /* every function used exists in each 1.13 release */
}

/* ---- component ------------------------------------------------------------ */

static uct_component_t gdrpipe_ucx_components[2];
static unsigned gdrpipe_ucx_component_count;

uct_component_t *gdrpipe_ucx_component_create(const gdrpipe_ucx_component_desc_t *desc,
                                              const char *config_prefix)
{
    uct_component_t *c;

    if (gdrpipe_ucx_component_count == ucs_static_array_size(gdrpipe_ucx_components)) {
        return NULL;
    }
    c = &gdrpipe_ucx_components[gdrpipe_ucx_component_count++];
    memset(c, 0, sizeof(*c));
    snprintf((char*)c->name, sizeof(c->name), "%s", desc->name);
    c->query_md_resources = desc->query_md_resources;
    c->md_open            = desc->md_open;
    c->cm_open            = (void*)ucs_empty_function_return_unsupported;
    c->rkey_unpack        = desc->rkey_unpack;
    c->rkey_ptr           = (void*)ucs_empty_function_return_unsupported;
    c->rkey_release       = desc->rkey_release;
    c->md_config.name     = desc->md_config_name;
    c->md_config.prefix   = config_prefix;
    c->md_config.table    = desc->md_config_table;
    c->md_config.size     = desc->md_config_size;
    c->cm_config.name     = "";
    c->cm_config.prefix   = "";
    c->cm_config.table    = NULL;
    c->cm_config.size     = 0;
    ucs_list_head_init(&c->tl_list);
    ucs_list_head_init(&c->list);
    c->flags              = 0;
    c->md_vfs_init        = (void*)ucs_empty_function;
    return c;
}

/* ---- memory domains ------------------------------------------------------- */

static const gdrpipe_ucx_md_funcs_t *gdrpipe_ucx_funcs_of(uct_md_h md)
{
    return ucs_container_of((void*)md->ops, gdrpipe_ucx_md_ops_t, table)->funcs;
}

static ucs_status_t gdrpipe_ucx_md_query(uct_md_h md, uct_md_attr_t *attr)
{
    gdrpipe_ucx_md_attr_t a = {0};

    gdrpipe_ucx_funcs_of(md)->query(md, &a);
    memset(attr, 0, sizeof(*attr));
    attr->cap.flags            = a.flags;
    attr->cap.reg_mem_types    = a.reg_mem_types;
    attr->cap.access_mem_types = a.access_mem_types;
    attr->cap.detect_mem_types = a.detect_mem_types;
    attr->cap.alloc_mem_types  = 0;
    attr->cap.max_alloc        = 0;
    attr->cap.max_reg          = a.max_reg;
    attr->rkey_packed_size     = a.rkey_packed_size;
    attr->reg_cost             = a.reg_cost;
    memset(&attr->local_cpus, 0xff, sizeof(attr->local_cpus));
    return UCS_OK;
}

static ucs_status_t gdrpipe_ucx_md_mem_reg(uct_md_h md, void *address, size_t length,
                                           unsigned flags, uct_mem_h *memh_p)
{
    return gdrpipe_ucx_funcs_of(md)->mem_reg(md, address, length, memh_p);
}

static ucs_status_t gdrpipe_ucx_md_mem_dereg(uct_md_h md,
                                             const uct_md_mem_dereg_params_t *params)
{
    UCT_CHECK_PARAM(params->field_mask & UCT_MD_MEM_DEREG_FIELD_MEMH,
                    "mem_dereg: no memory handle given");
    UCT_CHECK_PARAM(!(params->field_mask & UCT_MD_MEM_DEREG_FIELD_FLAGS) ||
                    (params->flags == 0), "mem_dereg: unsupported flags 0x%x",
                    params->flags);
    return gdrpipe_ucx_funcs_of(md)->mem_dereg(md, params->memh);
}

static ucs_status_t gdrpipe_ucx_md_mkey_pack(uct_md_h md, uct_mem_h memh,
                                             const uct_md_mkey_pack_params_t *params,
                                             void *buffer)
{
    const gdrpipe_ucx_md_funcs_t *f = gdrpipe_ucx_funcs_of(md);

    return (f->mkey_pack == NULL) ? UCS_OK : f->mkey_pack(md, memh, buffer);
}

uct_md_ops_t *gdrpipe_ucx_md_ops(gdrpipe_ucx_md_ops_t *ops,
                                 const gdrpipe_ucx_md_funcs_t *funcs)
{
    uct_md_ops_t *t = (uct_md_ops_t*)ops->table;

    if (__atomic_load_n(&ops->funcs, __ATOMIC_ACQUIRE) == funcs) {
        return t;
    }
    t->close              = funcs->close;
    t->query              = gdrpipe_ucx_md_query;
    t->mem_alloc          = (void*)ucs_empty_function_return_unsupported;
    t->mem_free           = (void*)ucs_empty_function_return_unsupported;
    t->mem_advise         = (void*)ucs_empty_function_return_unsupported;
    t->mem_reg            = gdrpipe_ucx_md_mem_reg;
    t->mem_dereg          = gdrpipe_ucx_md_mem_dereg;
    t->mem_query          = (funcs->mem_query != NULL) ? funcs->mem_query :
                            (void*)ucs_empty_function_return_unsupported;
    t->mkey_pack          = gdrpipe_ucx_md_mkey_pack;
    t->is_sockaddr_accessible = (void*)ucs_empty_function_return_zero_int;
    t->detect_memory_type = (funcs->detect_memory_type != NULL) ?
                            funcs->detect_memory_type :
                            (void*)ucs_empty_function_return_unsupported;
    __atomic_store_n(&ops->funcs, funcs, __ATOMIC_RELEASE);
    return t;
}

/* ---- interfaces ------------------------------------------------------------ */

static const gdrpipe_ucx_iface_funcs_t *gdrpipe_ucx_iface_funcs_of(uct_iface_h iface)
{
    const uct_base_iface_t *base = ucs_derived_of(iface, uct_base_iface_t);

    return ucs_container_of((void*)base->internal_ops, gdrpipe_ucx_iface_ops_t,
                            table)->funcs;
}

static ucs_status_t gdrpipe_ucx_estimate_perf(uct_iface_h iface, uct_perf_attr_t *attr)
{
    gdrpipe_ucx_perf_t perf = {0};

    perf.op = GDRPIPE_UCX_OP_OTHER;
    if (attr->field_mask & UCT_PERF_ATTR_FIELD_OPERATION) {
        switch (attr->operation) {
        case UCT_EP_OP_PUT_SHORT: perf.op = GDRPIPE_UCX_OP_PUT_SHORT; break;
        case UCT_EP_OP_GET_SHORT: perf.op = GDRPIPE_UCX_OP_GET_SHORT; break;
        case UCT_EP_OP_PUT_ZCOPY: perf.op = GDRPIPE_UCX_OP_PUT_ZCOPY; break;
        case UCT_EP_OP_GET_ZCOPY: perf.op = GDRPIPE_UCX_OP_GET_ZCOPY; break;
        default: break;
        }
    }
    gdrpipe_ucx_iface_funcs_of(iface)->estimate_perf(iface, &perf);
    if (attr->field_mask & UCT_PERF_ATTR_FIELD_BANDWIDTH) {
        attr->bandwidth.dedicated = perf.bw_dedicated;
        attr->bandwidth.shared    = perf.bw_shared;
    }
    if (attr->field_mask & UCT_PERF_ATTR_FIELD_SEND_PRE_OVERHEAD) {
        attr->send_pre_overhead = perf.send_pre_overhead;
    }
    if (attr->field_mask & UCT_PERF_ATTR_FIELD_SEND_POST_OVERHEAD) {
        attr->send_post_overhead = perf.send_post_overhead;
    }
    if (attr->field_mask & UCT_PERF_ATTR_FIELD_RECV_OVERHEAD) {
        attr->recv_overhead = perf.recv_overhead;
    }
    if (attr->field_mask & UCT_PERF_ATTR_FIELD_LATENCY) {
        attr->latency = perf.latency;
    }
    if (attr->field_mask & UCT_PERF_ATTR_FIELD_MAX_INFLIGHT_EPS) {
        attr->max_inflight_eps = perf.max_inflight_eps;
    }
    return UCS_OK;
}

uct_iface_internal_ops_t *gdrpipe_ucx_iface_ops(gdrpipe_ucx_iface_ops_t *ops,
                                                const gdrpipe_ucx_iface_funcs_t *funcs)
{
    uct_iface_internal_ops_t *t = (uct_iface_internal_ops_t*)ops->table;

    if (__atomic_load_n(&ops->funcs, __ATOMIC_ACQUIRE) == funcs) {
        return t;
    }
    t->iface_estimate_perf = (funcs->estimate_perf != NULL) ?
                             gdrpipe_ucx_estimate_perf : uct_base_iface_estimate_perf;
    t->iface_vfs_refresh   = (void*)ucs_empty_function;
    t->ep_query            = (void*)ucs_empty_function_return_unsupported;
    t->ep_invalidate       = (void*)ucs_empty_function_return_unsupported;
    __atomic_store_n(&ops->funcs, funcs, __ATOMIC_RELEASE);
    return t;
}

/* ---- memory pools ---------------------------------------------------------- */

static ucs_mpool_ops_t gdrpipe_ucx_mpool_ops = {
    .chunk_alloc   = ucs_mpool_chunk_malloc,
    .chunk_release = ucs_mpool_chunk_free,
    .obj_init      = NULL,
    .obj_cleanup   = NULL
};

ucs_status_t gdrpipe_ucx_mpool_init(ucs_mpool_t *mp, size_t elem_size, unsigned grow,
                                    const char *name)
{
    return ucs_mpool_init(mp, 0, elem_size, 0, 64, grow,
                          UINT_MAX, &gdrpipe_ucx_mpool_ops, name);
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
