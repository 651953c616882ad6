/* UCX 1.13's internal layouts that the plugin's adapters fill or read
 * (plugin/ucx/v1_13.c): the component, the memory-domain operations and
 * their parameter structs, the internal interface operations, the
 * performance estimate, and the few fields of UCP's endpoint configuration
 * that a device send's rendezvous threshold lives in. Written from reading
 * UCX 1.13.1's uct/base/uct_component.h, uct_md.h, uct_iface.h,
 * uct/api/v2/uct_v2.h and ucp/core/; the sizes and offsets are checked in
 * v1_13.c against those read from that release. */
#ifndef GDRPIPE_UCX_V1_13_H
#define GDRPIPE_UCX_V1_13_H

#include "ucx.h"

/* which of the shared adapters (common.c) apply: only protocol v1's
 * rendezvous threshold, which this file implements itself */
#define GDRPIPE_UCX_HAS_RNDV_V1 1

/* ---- component ------------------------------------------------------------- */
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
    ucs_config_global_list_entry_t md_config;
    ucs_config_global_list_entry_t cm_config;
    ucs_list_link_t                tl_list;
    ucs_list_link_t                list;
    uint64_t                       flags;
    void                           (*md_vfs_init)(uct_md_h md);
};

/* ---- memory domains ------------------------------------------------------- */
struct uct_md_ops {
    void         (*close)(uct_md_h md);
    ucs_status_t (*query)(uct_md_h md, uct_md_attr_t *attr);
    ucs_status_t (*mem_alloc)(uct_md_h md, size_t *length_p, void **address_p,
                              ucs_memory_type_t mem_type, unsigned flags,
                              const char *name, uct_mem_h *memh_p);
    ucs_status_t (*mem_free)(uct_md_h md, uct_mem_h memh);
    ucs_status_t (*mem_advise)(uct_md_h md, uct_mem_h memh, void *addr,
                               size_t length, unsigned advice);
    ucs_status_t (*mem_reg)(uct_md_h md, void *address, size_t length,
                            unsigned flags, uct_mem_h *memh_p);
    ucs_status_t (*mem_dereg)(uct_md_h md, const uct_md_mem_dereg_params_t *params);
    ucs_status_t (*mem_query)(uct_md_h md, const void *address, size_t length,
                              uct_md_mem_attr_t *attr);
    ucs_status_t (*mkey_pack)(uct_md_h md, uct_mem_h memh,
                              const uct_md_mkey_pack_params_t *params, void *buffer);
    int          (*is_sockaddr_accessible)(uct_md_h md, const ucs_sock_addr_t *addr,
                                           uct_sockaddr_accessibility_t mode);
    ucs_status_t (*detect_memory_type)(uct_md_h md, const void *address,
                                       size_t length, ucs_memory_type_t *type_p);
};

/* ---- interfaces ------------------------------------------------------------ */
enum {
    UCT_PERF_ATTR_FIELD_OPERATION          = UCS_BIT(0),
    UCT_PERF_ATTR_FIELD_LOCAL_MEMORY_TYPE  = UCS_BIT(1),
    UCT_PERF_ATTR_FIELD_REMOTE_MEMORY_TYPE = UCS_BIT(2),
    UCT_PERF_ATTR_FIELD_LOCAL_SYS_DEVICE   = UCS_BIT(3),
    UCT_PERF_ATTR_FIELD_REMOTE_SYS_DEVICE  = UCS_BIT(4),
    UCT_PERF_ATTR_FIELD_SEND_PRE_OVERHEAD  = UCS_BIT(5),
    UCT_PERF_ATTR_FIELD_SEND_POST_OVERHEAD = UCS_BIT(6),
    UCT_PERF_ATTR_FIELD_RECV_OVERHEAD      = UCS_BIT(7),
    UCT_PERF_ATTR_FIELD_BANDWIDTH          = UCS_BIT(8),
    UCT_PERF_ATTR_FIELD_LATENCY            = UCS_BIT(9),
    UCT_PERF_ATTR_FIELD_MAX_INFLIGHT_EPS   = UCS_BIT(10)
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
} uct_perf_attr_t;

struct uct_iface_internal_ops {
    ucs_status_t (*iface_estimate_perf)(uct_iface_h iface, uct_perf_attr_t *perf);
    void         (*iface_vfs_refresh)(uct_iface_h iface);
    ucs_status_t (*ep_query)(uct_ep_h ep, uct_ep_attr_t *attr);
    ucs_status_t (*ep_invalidate)(uct_ep_h ep, unsigned flags);
};

/* UCX's own estimate from the interface's iface_query */
ucs_status_t uct_base_iface_estimate_perf(uct_iface_h iface, uct_perf_attr_t *perf);

/* ---- UCP 1.13: where a send's rendezvous thresholds live -------------------- *
 * ucp_ep_t:         worker (pointer) at 0, cfg_index (uint8_t) at 9
 * ucp_worker_t:     flags (uint64_t) at 0, async at 8, context at 104, an
 *                   array of ucp_ep_config_t (1696 bytes each) at 1504
 * ucp_ep_config_t:  key.rma_bw_lanes[0] at 115, md_index[] (uint8_t per
 *                   lane) at 912, tag.rndv.rma_thresh at 1512 and
 *                   tag.rndv.am_thresh at 1528 (each {remote, local})
 * ucp_context_t:    tl_mds[] (264 bytes each, the uct_md_h first) at 16,
 *                   config.ext.proto_enable (int) at 648
 * ucs_async_context_t: the recursive spinlock at 0, mode (int) at 56 */
#define GDRPIPE_UCP113_EP_WORKER            0
#define GDRPIPE_UCP113_EP_CFG_INDEX         9
#define GDRPIPE_UCP113_WORKER_FLAGS         0
#define GDRPIPE_UCP113_WORKER_ASYNC         8
#define GDRPIPE_UCP113_WORKER_CONTEXT       104
#define GDRPIPE_UCP113_WORKER_EP_CONFIG     1504
#define GDRPIPE_UCP113_EP_CONFIG_SIZE       1696
#define GDRPIPE_UCP113_CONFIG_RMA_BW_LANE0  115
#define GDRPIPE_UCP113_CONFIG_MD_INDEX      912
#define GDRPIPE_UCP113_CONFIG_RMA_THRESH    1512
#define GDRPIPE_UCP113_CONFIG_AM_THRESH     1528
#define GDRPIPE_UCP113_CONTEXT_TL_MDS       16
#define GDRPIPE_UCP113_TL_MD_SIZE           264
#define GDRPIPE_UCP113_CONTEXT_PROTO_ENABLE 648
#define GDRPIPE_UCP113_ASYNC_SPINLOCK       0
#define GDRPIPE_UCP113_ASYNC_MODE           56
#define GDRPIPE_UCP113_ASYNC_MODE_SPINLOCK  UCS_ASYNC_MODE_THREAD_SPINLOCK
#define GDRPIPE_UCP113_WORKER_THREAD_MULTI  UCS_BIT(32)
#define GDRPIPE_UCP113_NULL_LANE            255
#define GDRPIPE_UCP113_CFG_INDEX_NULL       255

#endif
