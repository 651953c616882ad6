/* UCX 1.16 to 1.18's internal layouts that the plugin's adapters fill or
 * read (plugin/ucx/v1_16.c): the component (with rkey_compare), the memory-
 * domain operations and their parameter structs (registration parameters,
 * the flat v2 attributes, mem_attach), the seven internal interface
 * operations with their parameter structs, and the performance estimate.
 * Written from reading UCX 1.16.0's, 1.17.0's and 1.18.1's
 * uct/base/uct_component.h, uct_md.h, uct_iface.h and uct/api/v2/uct_v2.h.
 * The three differ in two places, chosen by GDRPIPE_UCX_MINOR (the minor
 * version built for): the perf estimate gained flags in 1.17, the md
 * attributes gva_mem_types in 1.18. */
#ifndef GDRPIPE_UCX_V1_16_H
#define GDRPIPE_UCX_V1_16_H

#include "ucx.h"

#if !defined(GDRPIPE_UCX_MINOR) || (GDRPIPE_UCX_MINOR < 16) || (GDRPIPE_UCX_MINOR > 18)
#error "v1_16 serves UCX 1.16 to 1.18: GDRPIPE_UCX_MINOR must say which"
#endif

/* which of the shared adapters (common.c) apply */
#define GDRPIPE_UCX_HAS_MPOOL_PARAMS 1
#define GDRPIPE_UCX_HAS_RKEY_COMPARE 1
#define GDRPIPE_UCX_HAS_MD_V2        1
#if GDRPIPE_UCX_MINOR >= 17
#define GDRPIPE_UCX_HAS_PERF_FLAGS   1
#endif

/* ---- component ------------------------------------------------------------- */
typedef struct uct_rkey_compare_params {
    uint64_t field_mask;
} uct_rkey_compare_params_t;

struct uct_component {
    const char                     name[UCT_COMPONENT_NAME_MAX];
    ucs_status_t                   (*query_md_resources)(uct_component_t *component,
                                                         uct_md_resource_desc_t **res_p,
                                                         unsigned *num_p);
    ucs_status_t                   (*md_open)(uct_component_t *component,
                                              const char *md_name,
                                              const uct_md_config_t *config,
                                              uct_md_h *md_p);
    ucs_status_t                   (*cm_open)(uct_component_t *component,
                                              uct_worker_h worker,
                                              const uct_cm_config_t *config,
                                              uct_cm_h *cm_p);
    ucs_status_t                   (*rkey_unpack)(uct_component_t *component,
                                                  const void *buffer,
                                                  uct_rkey_t *rkey_p, void **handle_p);
    ucs_status_t                   (*rkey_ptr)(uct_component_t *component,
                                               uct_rkey_t rkey, void *handle,
                                               uint64_t remote_addr, void **local_p);
    ucs_status_t                   (*rkey_release)(uct_component_t *component,
                                                   uct_rkey_t rkey, void *handle);
    /* <0, 0, >0 in *result; called without a NULL check */
    ucs_status_t                   (*rkey_compare)(uct_component_t *component,
                                                   uct_rkey_t rkey1, uct_rkey_t rkey2,
                                                   const uct_rkey_compare_params_t *params,
                                                   int *result);
    ucs_config_global_list_entry_t md_config;
    ucs_config_global_list_entry_t cm_config;
    ucs_list_link_t                tl_list;
    ucs_list_link_t                list;
    uint64_t                       flags;
    void                           (*md_vfs_init)(uct_md_h md);
};

/* ---- memory domains ------------------------------------------------------- */
typedef struct uct_md_mem_reg_params {
    uint64_t field_mask;
    uint64_t flags;
    int      dmabuf_fd;
    size_t   dmabuf_offset;
} uct_md_mem_reg_params_t;

/* the attributes of a memory domain (every field filled: UCT asks for all) */
typedef struct {
    uint64_t          field_mask;
    uint64_t          max_alloc;
    size_t            max_reg;
    uint64_t          flags;
    uint64_t          reg_mem_types;
    uint64_t          reg_nonblock_mem_types;
    uint64_t          cache_mem_types;
#if GDRPIPE_UCX_MINOR >= 18
    uint64_t          gva_mem_types;
#endif
    uint64_t          detect_mem_types;
    uint64_t          alloc_mem_types;
    uint64_t          access_mem_types;
    uint64_t          dmabuf_mem_types;
    ucs_linear_func_t reg_cost;
    char              component_name[UCT_COMPONENT_NAME_MAX];
    size_t            rkey_packed_size;
    ucs_cpu_set_t     local_cpus;
    size_t            exported_mkey_packed_size;
    char              global_id[UCT_MD_GLOBAL_ID_MAX];
    /* registrations are aligned to it; never 0 (UCP divides by it) */
    size_t            reg_alignment;
} uct_md_attr_v2_t;

struct uct_md_ops {
    void         (*close)(uct_md_h md);
    ucs_status_t (*query)(uct_md_h md, uct_md_attr_v2_t *attr);
    ucs_status_t (*mem_alloc)(uct_md_h md, size_t *length_p, void **address_p,
                              ucs_memory_type_t mem_type, unsigned flags,
                              const char *name, uct_mem_h *memh_p);
    ucs_status_t (*mem_free)(uct_md_h md, uct_mem_h memh);
    ucs_status_t (*mem_advise)(uct_md_h md, uct_mem_h memh, void *addr,
                               size_t length, unsigned advice);
    ucs_status_t (*mem_reg)(uct_md_h md, void *address, size_t length,
                            const uct_md_mem_reg_params_t *params, uct_mem_h *memh_p);
    ucs_status_t (*mem_dereg)(uct_md_h md, const uct_md_mem_dereg_params_t *params);
    ucs_status_t (*mem_query)(uct_md_h md, const void *address, size_t length,
                              uct_md_mem_attr_t *attr);
    ucs_status_t (*mkey_pack)(uct_md_h md, uct_mem_h memh, void *address,
                              size_t length, const uct_md_mkey_pack_params_t *params,
                              void *buffer);
    ucs_status_t (*mem_attach)(uct_md_h md, const void *mkey_buffer, void *params,
                               uct_mem_h *memh_p);
    ucs_status_t (*detect_memory_type)(uct_md_h md, const void *address,
                                       size_t length, ucs_memory_type_t *type_p);
};

/* ---- interfaces ------------------------------------------------------------ */
enum {
    UCT_PERF_ATTR_FIELD_OPERATION          = UCS_BIT(0),
    UCT_PERF_ATTR_FIELD_SEND_PRE_OVERHEAD  = UCS_BIT(5),
    UCT_PERF_ATTR_FIELD_SEND_POST_OVERHEAD = UCS_BIT(6),
    UCT_PERF_ATTR_FIELD_RECV_OVERHEAD      = UCS_BIT(7),
    UCT_PERF_ATTR_FIELD_BANDWIDTH          = UCS_BIT(8),
    UCT_PERF_ATTR_FIELD_LATENCY            = UCS_BIT(9),
    UCT_PERF_ATTR_FIELD_MAX_INFLIGHT_EPS   = UCS_BIT(10),
    UCT_PERF_ATTR_FIELD_FLAGS              = UCS_BIT(11)   /* 1.17 */
};

typedef struct {
    uint64_t            field_mask;
    uct_ep_operation_t  operation;
    ucs_memory_type_t   local_memory_type;
    ucs_memory_type_t   remote_memory_type;
    ucs_sys_device_t    local_sys_device;
    ucs_sys_device_t    remote_sys_device;
    double              send_pre_overhead;
    double              send_post_overhead;
    double              recv_overhead;
    uct_ppn_bandwidth_t bandwidth;
    ucs_linear_func_t   latency;
    size_t              max_inflight_eps;
#if GDRPIPE_UCX_MINOR >= 17
    uint64_t            flags;
#endif
} uct_perf_attr_t;

typedef enum {
    UCT_IFACE_REACHABILITY_SCOPE_DEVICE,
    UCT_IFACE_REACHABILITY_SCOPE_NETWORK
} uct_iface_reachability_scope_t;

enum {
    UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR = UCS_BIT(0),
    UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR  = UCS_BIT(1)
};

/* (1.18 added the two address lengths at the end; nothing here reads them) */
typedef struct uct_iface_is_reachable_params {
    uint64_t                       field_mask;
    const uct_device_addr_t        *device_addr;
    const uct_iface_addr_t         *iface_addr;
    char                           *info_string;
    size_t                         info_string_length;
    uct_iface_reachability_scope_t scope;
} uct_iface_is_reachable_params_t;

typedef struct uct_ep_is_connected_params uct_ep_is_connected_params_t;

struct uct_iface_internal_ops {
    ucs_status_t (*iface_estimate_perf)(uct_iface_h iface, uct_perf_attr_t *perf);
    void         (*iface_vfs_refresh)(uct_iface_h iface);
    ucs_status_t (*ep_query)(uct_ep_h ep, uct_ep_attr_t *attr);
    ucs_status_t (*ep_invalidate)(uct_ep_h ep, unsigned flags);
    ucs_status_t (*ep_connect_to_ep_v2)(uct_ep_h ep, const uct_device_addr_t *dev,
                                        const uct_ep_addr_t *ep_addr,
                                        const void *params);
    /* the three below are called without NULL checks */
    int          (*iface_is_reachable_v2)(const uct_iface_h iface,
                                          const uct_iface_is_reachable_params_t *params);
    int          (*ep_is_connected)(const uct_ep_h ep,
                                    const uct_ep_is_connected_params_t *params);
};

/* UCX's own: the estimate from iface_query, an endpoint's connection by
 * its interface's reachability, the reachability scope (same device), a
 * memory pool's default parameters. The last three came with these
 * versions: weak, so that the plugin loads (and refuses, when they are
 * missing) under a UCX without them, and links against an older one's
 * libraries when built from another version's headers. */
ucs_status_t uct_base_iface_estimate_perf(uct_iface_h iface, uct_perf_attr_t *perf);
int uct_base_ep_is_connected(const uct_ep_h ep,
                             const uct_ep_is_connected_params_t *params)
        __attribute__((weak));
int uct_iface_scope_is_reachable(const uct_iface_h iface,
                                 const uct_iface_is_reachable_params_t *params)
        __attribute__((weak));
void ucs_mpool_params_reset(ucs_mpool_params_t *params) __attribute__((weak));

#endif
