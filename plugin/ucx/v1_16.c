/* The adapters of abi.h for UCX 1.16 to 1.18 (see v1_16.h for the layouts).
 * Built for one minor version (GDRPIPE_UCX_MINOR), since two layouts differ
 * between them. */
#include "v1_16.h"

#include <ucs/sys/stubs.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define GDRPIPE_UCX_STR2(_x) #_x
#define GDRPIPE_UCX_STR(_x)  GDRPIPE_UCX_STR2(_x)

const char gdrpipe_ucx_abi_name[]          = "1." GDRPIPE_UCX_STR(GDRPIPE_UCX_MINOR);
const unsigned gdrpipe_ucx_abi_minor_first = GDRPIPE_UCX_MINOR;
const unsigned gdrpipe_ucx_abi_minor_last  = GDRPIPE_UCX_MINOR;
const int gdrpipe_ucx_md_reaches_registered = 1;

/* the layouts UCX's code relies on (x86-64, no statistics), read from
 * UCX 1.16.0, 1.17.0 and 1.18.1 */
_Static_assert(sizeof(uct_base_iface_t) == 1280, "uct_base_iface_t");
_Static_assert(offsetof(uct_base_iface_t, am) == 424, "am");
_Static_assert(sizeof(uct_tl_t) == 104, "uct_tl_t");
_Static_assert(sizeof(uct_component_t) == 232, "uct_component_t");
_Static_assert(offsetof(uct_component_t, rkey_compare) == 64, "rkey_compare");
_Static_assert(offsetof(uct_component_t, md_config) == 72, "md_config");
_Static_assert(sizeof(uct_md_ops_t) == 88, "uct_md_ops_t");
_Static_assert(sizeof(uct_iface_internal_ops_t) == 56, "uct_iface_internal_ops_t");
_Static_assert(offsetof(uct_perf_attr_t, bandwidth) == 48, "perf bandwidth");
_Static_assert(sizeof(uct_perf_attr_t) == ((GDRPIPE_UCX_MINOR >= 17) ? 96 : 88),
               "uct_perf_attr_t");
_Static_assert(offsetof(uct_md_attr_v2_t, reg_cost) ==
               ((GDRPIPE_UCX_MINOR >= 18) ? 96 : 88), "md attr reg_cost");
_Static_assert(sizeof(uct_md_ops_t) <= sizeof(((gdrpipe_ucx_md_ops_t*)0)->table),
               "md ops table");
_Static_assert(sizeof(uct_iface_internal_ops_t) <=
               sizeof(((gdrpipe_ucx_iface_ops_t*)0)->table), "internal ops table");

/* ---- versions ----------------------------------------------------------------- */

int gdrpipe_ucx_abi_complete(void)
{
    return (uct_base_ep_is_connected != NULL) && (uct_iface_scope_is_reachable != NULL) &&
           (ucs_mpool_params_reset != NULL);
}

/* ---- component ------------------------------------------------------------ */

static uct_component_t gdrpipe_ucx_components[2];
static const gdrpipe_ucx_component_desc_t *gdrpipe_ucx_descs[2];
static unsigned gdrpipe_ucx_component_count;

static ucs_status_t gdrpipe_ucx_rkey_compare(uct_component_t *component,
                                             uct_rkey_t rkey1, uct_rkey_t rkey2,
                                             const uct_rkey_compare_params_t *params,
                                             int *result)
{
    const gdrpipe_ucx_component_desc_t *desc =
        gdrpipe_ucx_descs[component - gdrpipe_ucx_components];

    UCT_CHECK_PARAM((params == NULL) || (params->field_mask == 0),
                    "rkey_compare: unsupported parameters");
    UCT_CHECK_PARAM(result != NULL, "rkey_compare: no result");
    *result = (desc->rkey_size == 0) ? 0 :
              memcmp((const void*)rkey1, (const void*)rkey2, desc->rkey_size);
    return UCS_OK;
}

uct_component_t *gdrpipe_ucx_component_create(const gdrpipe_ucx_component_desc_t *desc,
                                              const char *config_prefix)
{
    uct_component_t *c;

    if (gdrpipe_ucx_component_count == ucs_static_array_size(gdrpipe_ucx_components)) {
        return NULL;
    }
    gdrpipe_ucx_descs[gdrpipe_ucx_component_count] = desc;
    c = &gdrpipe_ucx_components[gdrpipe_ucx_component_count++];
    memset(c, 0, sizeof(*c));
    snprintf((char*)c->name, sizeof(c->name), "%s", desc->name);
    c->query_md_resources = desc->query_md_resources;
    c->md_open            = desc->md_open;
    c->cm_open            = (void*)ucs_empty_function_return_unsupported;
    c->rkey_unpack        = desc->rkey_unpack;
    c->rkey_ptr           = (void*)ucs_empty_function_return_unsupported;
    c->rkey_release       = desc->rkey_release;
    c->rkey_compare       = gdrpipe_ucx_rkey_compare;
    c->md_config.name     = desc->md_config_name;
    c->md_config.prefix   = config_prefix;
    c->md_config.table    = desc->md_config_table;
    c->md_config.size     = desc->md_config_size;
    c->cm_config.name     = "";
    c->cm_config.prefix   = "";
    ucs_list_head_init(&c->tl_list);
    ucs_list_head_init(&c->list);
    c->md_vfs_init        = (void*)ucs_empty_function;
    return c;
}

/* ---- memory domains ------------------------------------------------------- */

static const gdrpipe_ucx_md_funcs_t *gdrpipe_ucx_funcs_of(uct_md_h md)
{
    return ucs_container_of((void*)md->ops, gdrpipe_ucx_md_ops_t, table)->funcs;
}

static ucs_status_t gdrpipe_ucx_md_query(uct_md_h md, uct_md_attr_v2_t *attr)
{
    gdrpipe_ucx_md_attr_t a = {0};
    uint64_t mask           = attr->field_mask;

    gdrpipe_ucx_funcs_of(md)->query(md, &a);
    memset(attr, 0, sizeof(*attr));
    attr->field_mask             = mask;
    attr->max_alloc              = 0;
    attr->max_reg                = a.max_reg;
    attr->flags                  = a.flags;
    attr->reg_mem_types          = a.reg_mem_types;
    attr->reg_nonblock_mem_types = 0;
    /* UCP may keep registrations of host and device memory in its cache:
     * the plugin's events (memhooks.c) tell it of every free */
    attr->cache_mem_types        = a.reg_mem_types;
    attr->detect_mem_types       = a.detect_mem_types;
    attr->access_mem_types       = a.access_mem_types;
    /* protocol v2 gives a buffer of a memory type to a zero-copy lane only
     * where the lane's md registers that type and needs the local handle,
     * or reaches that type without one. The wire's transports find the
     * local buffer's memory themselves and use no local handle: they reach
     * every type their md registers. (Saying that they need the handle
     * would send device memory through UCP's registration cache, which
     * fails on a buffer freed while in flight.) */
    if (gdrpipe_ucx_md_reaches_registered && (a.flags & UCT_MD_FLAG_NEED_RKEY)) {
        attr->access_mem_types |= a.reg_mem_types;
    }
    attr->reg_cost               = a.reg_cost;
    attr->rkey_packed_size       = a.rkey_packed_size;
    memset(&attr->local_cpus, 0xff, sizeof(attr->local_cpus));
    attr->reg_alignment          = 1;
    return UCS_OK;
}

static ucs_status_t gdrpipe_ucx_md_mem_reg(uct_md_h md, void *address, size_t length,
                                           const uct_md_mem_reg_params_t *params,
                                           uct_mem_h *memh_p)
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
                                             void *address, size_t length,
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
    t->mem_attach         = (void*)ucs_empty_function_return_unsupported;
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
#if GDRPIPE_UCX_MINOR >= 17
    if (attr->field_mask & UCT_PERF_ATTR_FIELD_FLAGS) {
        attr->flags = 0;   /* sends and receives do not share one resource */
    }
#endif
    return UCS_OK;
}

/* reachability as the interface's public is_reachable says, and then, for
 * the device scope, the same device (UCX's own check) */
static int gdrpipe_ucx_is_reachable_v2(const uct_iface_h iface,
                                       const uct_iface_is_reachable_params_t *params)
{
    const uct_device_addr_t *dev =
        (params->field_mask & UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR) ?
        params->device_addr : NULL;
    const uct_iface_addr_t *addr =
        (params->field_mask & UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR) ?
        params->iface_addr : NULL;

    if (!iface->ops.iface_is_reachable(iface, dev, addr)) {
        return 0;
    }
    return (dev == NULL) || uct_iface_scope_is_reachable(iface, params);
}

uct_iface_internal_ops_t *gdrpipe_ucx_iface_ops(gdrpipe_ucx_iface_ops_t *ops,
                                                const gdrpipe_ucx_iface_funcs_t *funcs)
{
    uct_iface_internal_ops_t *t = (uct_iface_internal_ops_t*)ops->table;

    if (__atomic_load_n(&ops->funcs, __ATOMIC_ACQUIRE) == funcs) {
        return t;
    }
    t->iface_estimate_perf   = (funcs->estimate_perf != NULL) ?
                               gdrpipe_ucx_estimate_perf : uct_base_iface_estimate_perf;
    t->iface_vfs_refresh     = (void*)ucs_empty_function;
    t->ep_query              = (void*)ucs_empty_function_return_unsupported;
    t->ep_invalidate         = (void*)ucs_empty_function_return_unsupported;
    t->ep_connect_to_ep_v2   = (void*)ucs_empty_function_return_unsupported;
    t->iface_is_reachable_v2 = gdrpipe_ucx_is_reachable_v2;
    t->ep_is_connected       = uct_base_ep_is_connected;
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
    ucs_mpool_params_t params;

    ucs_mpool_params_reset(&params);
    params.elem_size       = elem_size;
    params.alignment       = 64;
    params.elems_per_chunk = grow;
    params.ops             = &gdrpipe_ucx_mpool_ops;
    params.name            = name;
    return ucs_mpool_init(&params, mp);
}

/* ---- UCP: the rendezvous threshold of one send ------------------------------ */

/* Protocol v2 is UCP's default from 1.16 and chooses per memory type
 * itself; protocol v1's private layout is not declared for these versions,
 * so every send is left to UCP. */
int gdrpipe_ucx_rndv_begin(ucp_ep_h ep, size_t thresh,
                           const uct_component_t *const *components, unsigned count,
                           gdrpipe_ucx_rndv_saved_t *saved)
{
    return 0;
}

void gdrpipe_ucx_rndv_end(gdrpipe_ucx_rndv_saved_t *saved)
{
}
