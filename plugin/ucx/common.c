/* The adapters of abi.h, shared by every ABI file. Built with the ABI
 * file's header (GDRPIPE_UCX_ABI_HEADER, set by meson): its layouts are
 * filled by field name here, and its GDRPIPE_UCX_HAS_* macros say which
 * forms apply. Nothing here knows a UCX version. The macros:
 *
 *   GDRPIPE_UCX_HAS_MPOOL_PARAMS      ucs_mpool_init takes a params struct
 *   GDRPIPE_UCX_HAS_RKEY_COMPARE      the component compares remote keys
 *   GDRPIPE_UCX_HAS_RKEY_UNPACK_PARAMS  rkey_unpack takes unpack parameters
 *   GDRPIPE_UCX_HAS_MD_V2             v2 md operations: flat attributes,
 *                                     registration parameters, mkey_pack
 *                                     with the range, mem_attach, and the
 *                                     v2 internal interface operations
 *   GDRPIPE_UCX_HAS_MD_ELEM_PACK      md operation mem_elem_pack
 *   GDRPIPE_UCX_HAS_MD_ELEM_RELEASE   md operation mem_elem_release
 *   GDRPIPE_UCX_HAS_MEM_QUERY_V2      mem_query fills uct_md_mem_attr_v2_t
 *   GDRPIPE_UCX_HAS_MEM_FLAGS         memory flags: md attribute
 *                                     required_mem_flags, the memory-type
 *                                     cache's and UCM event's sys_dev/flags
 *   GDRPIPE_UCX_HAS_PERF_FLAGS        uct_perf_attr_t.flags
 *   GDRPIPE_UCX_HAS_PERF_PATH_BW      uct_perf_attr_t.path_bandwidth
 *   GDRPIPE_UCX_HAS_IOPS_QUERY_V2     internal op iface_query_v2
 *   GDRPIPE_UCX_HAS_IOPS_MEM_ELEMENT_PACK  internal op iface_mem_element_pack
 *   GDRPIPE_UCX_HAS_IOPS_DEVICE_EP    internal op ep_get_device_ep
 *   GDRPIPE_UCX_HAS_IOPS_PUT_SGL      internal op ep_put_sgl_zcopy
 *   GDRPIPE_UCX_HAS_IOPS_GET_SGL      internal op ep_get_sgl_zcopy
 *   GDRPIPE_UCX_HAS_IOPS_OUTSTANDING_PURGE  internal op ep_outstanding_purge
 *   GDRPIPE_UCX_HAS_RNDV_V1           the ABI file implements
 *                                     gdrpipe_ucx_rndv_begin/end itself */
#include GDRPIPE_UCX_ABI_HEADER

#include <ucs/sys/stubs.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* the layouts of base.h, the same in every supported UCX (x86-64, no
 * statistics; read from each release the ABI files name) */
_Static_assert(sizeof(uct_base_iface_t) == 1280, "uct_base_iface_t");
_Static_assert(offsetof(uct_base_iface_t, internal_ops) == 400, "internal_ops");
_Static_assert(offsetof(uct_base_iface_t, am) == 424, "am");
_Static_assert(offsetof(uct_base_iface_t, err_handler) == 1208, "err_handler");
_Static_assert(offsetof(uct_base_iface_t, prog) == 1228, "prog");
_Static_assert(offsetof(uct_base_iface_t, config) == 1240, "config");
_Static_assert(sizeof(uct_base_ep_t) == 8, "uct_base_ep_t");
_Static_assert(sizeof(uct_md_t) == 16, "uct_md_t");
_Static_assert(sizeof(uct_iface_config_t) == 32, "uct_iface_config_t");
_Static_assert(sizeof(uct_keepalive_info_t) == 8, "uct_keepalive_info_t");
_Static_assert(sizeof(ucm_event_installer_t) == 32, "ucm_event_installer_t");
_Static_assert(sizeof(ucm_event_handler_t) == 40, "ucm_event_handler_t");
_Static_assert(sizeof(uct_md_mem_dereg_params_t) == 32, "dereg params");
_Static_assert(offsetof(uct_md_mem_dereg_params_t, memh) == 16, "dereg params memh");
_Static_assert(sizeof(uct_md_ops_t) <= sizeof(((gdrpipe_ucx_md_ops_t*)0)->table),
               "md ops table");
_Static_assert(sizeof(uct_iface_internal_ops_t) <=
               sizeof(((gdrpipe_ucx_iface_ops_t*)0)->table), "internal ops table");

/* ---- component ------------------------------------------------------------ */

static uct_component_t gdrpipe_ucx_components[2];
static const gdrpipe_ucx_component_desc_t *gdrpipe_ucx_descs[2];
static unsigned gdrpipe_ucx_component_count;

static inline const gdrpipe_ucx_component_desc_t *
gdrpipe_ucx_desc_of(const uct_component_t *component)
{
    return gdrpipe_ucx_descs[component - gdrpipe_ucx_components];
}

#ifdef GDRPIPE_UCX_HAS_RKEY_UNPACK_PARAMS
/* the unpack parameters only choose a device, which the plugin's keys do
 * not depend on */
static ucs_status_t gdrpipe_ucx_rkey_unpack(uct_component_t *component,
                                            const void *buffer,
                                            const uct_rkey_unpack_params_t *params,
                                            uct_rkey_t *rkey_p, void **handle_p)
{
    return gdrpipe_ucx_desc_of(component)->rkey_unpack(component, buffer, rkey_p,
                                                       handle_p);
}
#endif

#ifdef GDRPIPE_UCX_HAS_RKEY_COMPARE
static ucs_status_t gdrpipe_ucx_rkey_compare(uct_component_t *component,
                                             uct_rkey_t rkey1, uct_rkey_t rkey2,
                                             const uct_rkey_compare_params_t *params,
                                             int *result)
{
    const gdrpipe_ucx_component_desc_t *desc = gdrpipe_ucx_desc_of(component);

    UCT_CHECK_PARAM((params == NULL) || (params->field_mask == 0),
                    "rkey_compare: unsupported parameters");
    UCT_CHECK_PARAM(result != NULL, "rkey_compare: no result");
    *result = (desc->rkey_size == 0) ? 0 :
              memcmp((const void*)rkey1, (const void*)rkey2, desc->rkey_size);
    return UCS_OK;
}
#endif

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
#ifdef GDRPIPE_UCX_HAS_RKEY_UNPACK_PARAMS
    c->rkey_unpack        = gdrpipe_ucx_rkey_unpack;
#else
    c->rkey_unpack        = desc->rkey_unpack;
#endif
    c->rkey_ptr           = (void*)ucs_empty_function_return_unsupported;
    c->rkey_release       = desc->rkey_release;
#ifdef GDRPIPE_UCX_HAS_RKEY_COMPARE
    c->rkey_compare       = gdrpipe_ucx_rkey_compare;
#endif
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

static ucs_status_t gdrpipe_ucx_md_mkey_pack_to(uct_md_h md, uct_mem_h memh,
                                               void *buffer)
{
    const gdrpipe_ucx_md_funcs_t *f = gdrpipe_ucx_funcs_of(md);

    return (f->mkey_pack == NULL) ? UCS_OK : f->mkey_pack(md, memh, buffer);
}

#ifndef GDRPIPE_UCX_HAS_MD_V2
/* the public (v1) attributes */
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

static ucs_status_t gdrpipe_ucx_md_mkey_pack(uct_md_h md, uct_mem_h memh,
                                             const uct_md_mkey_pack_params_t *params,
                                             void *buffer)
{
    return gdrpipe_ucx_md_mkey_pack_to(md, memh, buffer);
}
#else
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
     * or reaches that type without one. The plugin's transports find the
     * local buffer's memory themselves and use no local handle: they reach
     * every type their md registers. (Saying that they need the handle
     * would send device memory through UCP's registration cache, which
     * fails on a buffer freed while in flight.) The copy transport so
     * reaches host memory too, which UCX 1.19's endpoint for copies
     * between memory types requires of one of its transports. */
    if (gdrpipe_ucx_md_reaches_registered) {
        attr->access_mem_types |= a.reg_mem_types;
    }
    attr->reg_cost               = a.reg_cost;
    attr->rkey_packed_size       = a.rkey_packed_size;
    memset(&attr->local_cpus, 0xff, sizeof(attr->local_cpus));
    attr->reg_alignment          = 1;
#ifdef GDRPIPE_UCX_HAS_MEM_FLAGS
    attr->required_mem_flags     = 0;   /* any memory the types allow */
#endif
    return UCS_OK;
}

static ucs_status_t gdrpipe_ucx_md_mem_reg(uct_md_h md, void *address, size_t length,
                                           const uct_md_mem_reg_params_t *params,
                                           uct_mem_h *memh_p)
{
    return gdrpipe_ucx_funcs_of(md)->mem_reg(md, address, length, memh_p);
}

static ucs_status_t gdrpipe_ucx_md_mkey_pack(uct_md_h md, uct_mem_h memh,
                                             void *address, size_t length,
                                             const uct_md_mkey_pack_params_t *params,
                                             void *buffer)
{
    return gdrpipe_ucx_md_mkey_pack_to(md, memh, buffer);
}

#ifdef GDRPIPE_UCX_HAS_MEM_QUERY_V2
/* the v2 attributes from the plugin's query of the public (v1) ones */
static ucs_status_t gdrpipe_ucx_md_mem_query(uct_md_h md, const void *address,
                                             size_t length, uct_md_mem_attr_v2_t *attr)
{
    uct_md_mem_attr_t a = {0};
    ucs_status_t status;

    if (attr->field_mask & UCT_MD_MEM_ATTR_V2_FIELD_MEM_TYPE) {
        a.field_mask |= UCT_MD_MEM_ATTR_FIELD_MEM_TYPE;
    }
    if (attr->field_mask & UCT_MD_MEM_ATTR_V2_FIELD_SYS_DEV) {
        a.field_mask |= UCT_MD_MEM_ATTR_FIELD_SYS_DEV;
    }
    if (attr->field_mask & UCT_MD_MEM_ATTR_V2_FIELD_BASE_ADDRESS) {
        a.field_mask |= UCT_MD_MEM_ATTR_FIELD_BASE_ADDRESS;
    }
    if (attr->field_mask & UCT_MD_MEM_ATTR_V2_FIELD_ALLOC_LENGTH) {
        a.field_mask |= UCT_MD_MEM_ATTR_FIELD_ALLOC_LENGTH;
    }
    if (attr->field_mask & (UCT_MD_MEM_ATTR_V2_FIELD_DMABUF_FD |
                            UCT_MD_MEM_ATTR_V2_FIELD_DMABUF_OFFSET)) {
        return UCS_ERR_UNSUPPORTED;
    }
    status = gdrpipe_ucx_funcs_of(md)->mem_query(md, address, length, &a);
    if (status != UCS_OK) {
        return status;
    }
    attr->mem_type     = a.mem_type;
    attr->sys_dev      = a.sys_dev;
    attr->base_address = a.base_address;
    attr->alloc_length = a.alloc_length;
    attr->mem_flags    = 0;
    return UCS_OK;
}
#endif
#endif /* GDRPIPE_UCX_HAS_MD_V2 */

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
#ifdef GDRPIPE_UCX_HAS_MEM_QUERY_V2
    t->mem_query          = (funcs->mem_query != NULL) ? gdrpipe_ucx_md_mem_query :
                            (void*)ucs_empty_function_return_unsupported;
#else
    t->mem_query          = (funcs->mem_query != NULL) ? funcs->mem_query :
                            (void*)ucs_empty_function_return_unsupported;
#endif
    t->mkey_pack          = gdrpipe_ucx_md_mkey_pack;
#ifdef GDRPIPE_UCX_HAS_MD_V2
    t->mem_attach         = (void*)ucs_empty_function_return_unsupported;
#else
    t->is_sockaddr_accessible = (void*)ucs_empty_function_return_zero_int;
#endif
    t->detect_memory_type = (funcs->detect_memory_type != NULL) ?
                            funcs->detect_memory_type :
                            (void*)ucs_empty_function_return_unsupported;
#ifdef GDRPIPE_UCX_HAS_MD_ELEM_PACK
    t->mem_elem_pack      = (void*)ucs_empty_function_return_unsupported;
#endif
#ifdef GDRPIPE_UCX_HAS_MD_ELEM_RELEASE
    /* nothing is ever packed to release */
    t->mem_elem_release   = (void*)ucs_empty_function;
#endif
    __atomic_store_n(&ops->funcs, funcs, __ATOMIC_RELEASE);
    return t;
}

/* ---- UCX's memory-type cache and UCM's memory-type events ------------------- */

void gdrpipe_ucx_memtype_cache_update(const void *address, size_t length,
                                      ucs_memory_type_t type)
{
#ifdef GDRPIPE_UCX_HAS_MEM_FLAGS
    ucs_memtype_cache_update(address, length, type, UCS_SYS_DEVICE_ID_UNKNOWN, 0);
#else
    ucs_memtype_cache_update(address, length, type, UCS_SYS_DEVICE_ID_UNKNOWN);
#endif
}

void gdrpipe_ucx_mem_type_event_init(ucm_event_t *event, void *address, size_t length,
                                     ucs_memory_type_t type)
{
    memset(event, 0, sizeof(*event));
    event->mem_type.address  = address;
    event->mem_type.size     = length;
    event->mem_type.mem_type = type;
#ifdef GDRPIPE_UCX_HAS_MEM_FLAGS
    /* device and flags unknown: the cache's users detect them */
    event->mem_type.sys_dev   = UCS_SYS_DEVICE_ID_UNKNOWN;
    event->mem_type.mem_flags = 0;
#endif
}

/* ---- interfaces ------------------------------------------------------------ */

static const gdrpipe_ucx_iface_funcs_t *gdrpipe_ucx_iface_funcs_of(uct_iface_h iface)
{
    const uct_base_iface_t *base = ucs_derived_of(iface, uct_base_iface_t);

    return ucs_container_of((void*)base->internal_ops, gdrpipe_ucx_iface_ops_t,
                            table)->funcs;
}

static ucs_status_t gdrpipe_ucx_estimate_perf(uct_iface_h iface,
                                              uct_perf_attr_t *attr)
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
#ifdef GDRPIPE_UCX_HAS_PERF_PATH_BW
    /* one path: its bandwidth is the interface's */
    if (attr->field_mask & UCT_PERF_ATTR_FIELD_PATH_BANDWIDTH) {
        attr->path_bandwidth.dedicated = perf.bw_dedicated;
        attr->path_bandwidth.shared    = perf.bw_shared;
    }
#endif
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
#ifdef GDRPIPE_UCX_HAS_PERF_FLAGS
    if (attr->field_mask & UCT_PERF_ATTR_FIELD_FLAGS) {
        attr->flags = 0;   /* sends and receives do not share one resource */
    }
#endif
    return UCS_OK;
}

#ifdef GDRPIPE_UCX_HAS_MD_V2
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
#endif

#ifdef GDRPIPE_UCX_HAS_MD_V2
/* UCP connects endpoints to endpoints through this one from 1.16: the
 * transport's own connect (parameters carry nothing it uses) */
static ucs_status_t gdrpipe_ucx_ep_connect_to_ep_v2(uct_ep_h ep, const uct_device_addr_t *dev,
                                                    const uct_ep_addr_t *ep_addr,
                                                    const void *params)
{
    if (ep->iface->ops.ep_connect_to_ep == NULL) {
        return UCS_ERR_UNSUPPORTED;
    }
    return ep->iface->ops.ep_connect_to_ep(ep, dev, ep_addr);
}
#endif

uct_iface_internal_ops_t *gdrpipe_ucx_iface_ops(gdrpipe_ucx_iface_ops_t *ops,
                                                const gdrpipe_ucx_iface_funcs_t *funcs)
{
    uct_iface_internal_ops_t *t = (uct_iface_internal_ops_t*)ops->table;

    if (__atomic_load_n(&ops->funcs, __ATOMIC_ACQUIRE) == funcs) {
        return t;
    }
    /* every operation is set: UCX calls several without a NULL check */
#ifdef GDRPIPE_UCX_HAS_IOPS_QUERY_V2
    t->iface_query_v2         = uct_iface_base_query_v2;
#endif
    t->iface_estimate_perf    = (funcs->estimate_perf != NULL) ?
                                gdrpipe_ucx_estimate_perf : uct_base_iface_estimate_perf;
    t->iface_vfs_refresh      = (void*)ucs_empty_function;
#ifdef GDRPIPE_UCX_HAS_IOPS_MEM_ELEMENT_PACK
    t->iface_mem_element_pack = (void*)ucs_empty_function_return_unsupported;
#endif
    t->ep_query               = (void*)ucs_empty_function_return_unsupported;
    t->ep_invalidate          = (void*)ucs_empty_function_return_unsupported;
#ifdef GDRPIPE_UCX_HAS_MD_V2
    t->ep_connect_to_ep_v2    = gdrpipe_ucx_ep_connect_to_ep_v2;
    t->iface_is_reachable_v2  = gdrpipe_ucx_is_reachable_v2;
    t->ep_is_connected        = uct_base_ep_is_connected;
#endif
#ifdef GDRPIPE_UCX_HAS_IOPS_DEVICE_EP
    t->ep_get_device_ep       = (void*)ucs_empty_function_return_unsupported;
#endif
#ifdef GDRPIPE_UCX_HAS_IOPS_PUT_SGL
    t->ep_put_sgl_zcopy       = (void*)ucs_empty_function_return_unsupported;
#endif
#ifdef GDRPIPE_UCX_HAS_IOPS_GET_SGL
    t->ep_get_sgl_zcopy       = (void*)ucs_empty_function_return_unsupported;
#endif
#ifdef GDRPIPE_UCX_HAS_IOPS_OUTSTANDING_PURGE
    /* the interfaces say nothing of tokens (UCT_IFACE_FLAG_V2_QUERY_TOKEN),
     * so UCT has no outstanding operations of theirs to purge */
    t->ep_outstanding_purge   = (void*)ucs_empty_function_return_unsupported;
#endif
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
#ifdef GDRPIPE_UCX_HAS_MPOOL_PARAMS
    ucs_mpool_params_t params;

    ucs_mpool_params_reset(&params);
    params.elem_size       = elem_size;
    params.alignment       = 64;
    params.elems_per_chunk = grow;
    params.ops             = &gdrpipe_ucx_mpool_ops;
    params.name            = name;
    return ucs_mpool_init(&params, mp);
#else
    return ucs_mpool_init(mp, 0, elem_size, 0, 64, grow,
                          UINT_MAX, &gdrpipe_ucx_mpool_ops, name);
#endif
}

/* ---- UCP: the rendezvous threshold of one send ------------------------------ */

#ifndef GDRPIPE_UCX_HAS_RNDV_V1
/* Protocol v2 chooses per memory type itself; protocol v1's private layout
 * is not declared for this ABI, so every send is left to UCP. */
int gdrpipe_ucx_rndv_begin(ucp_ep_h ep, size_t thresh,
                           const uct_component_t *const *components, unsigned count,
                           gdrpipe_ucx_rndv_saved_t *saved)
{
    return 0;
}

void gdrpipe_ucx_rndv_end(gdrpipe_ucx_rndv_saved_t *saved)
{
}
#endif
