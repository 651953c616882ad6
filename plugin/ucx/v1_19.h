/* UCX 1.19 to 1.23's internal layouts that the shared adapters (common.c)
 * fill or read: the component (rkey_unpack with unpack parameters), the
 * memory-domain operations and their parameter structs, the flat v2 md
 * attributes, the internal interface operations with their parameter
 * structs, and the performance estimate. Written from reading UCX 1.19.1's,
 * 1.20.1's, 1.21.0's and 1.22.0's uct/base/uct_component.h, uct_md.h,
 * uct_iface.h and uct/api/v2/uct_v2.h, and for 1.23 its development line's
 * (checked against the tables in Debian's 1.23.0~rc1 libraries). They
 * differ in these places, chosen by GDRPIPE_UCX_MINOR (the minor version
 * built for):
 *   - the internal interface operations: seven in 1.19; 1.20 puts
 *     iface_query_v2 first and adds iface_mem_element_pack and
 *     ep_get_device_ep (ten); 1.21 has the seven and ep_get_device_ep;
 *     1.22 has iface_query_v2 first, then those eight and ep_put_sgl_zcopy
 *   - the md operations gain mem_elem_pack at the end in 1.21
 *   - 1.22: mem_query fills uct_md_mem_attr_v2_t, the md attributes end in
 *     required_mem_flags, the memory-type cache and UCM's memory-type event
 *     carry a device and memory flags
 *   - 1.23: mem_elem_pack hands back a release handle, and mem_elem_release
 *     follows it in the md operations; the internal interface operations
 *     end in ep_get_sgl_zcopy and ep_outstanding_purge (a UCX built with
 *     assertions, as Debian's is, checks the latter at interface init) */
#ifndef GDRPIPE_UCX_V1_19_H
#define GDRPIPE_UCX_V1_19_H

#include "ucx.h"

#if !defined(GDRPIPE_UCX_MINOR) || (GDRPIPE_UCX_MINOR < 19) || (GDRPIPE_UCX_MINOR > 23)
#error "v1_19 serves UCX 1.19 to 1.23: GDRPIPE_UCX_MINOR must say which"
#endif

/* which of the shared adapters (common.c) apply */
#define GDRPIPE_UCX_HAS_MPOOL_PARAMS       1
#define GDRPIPE_UCX_HAS_RKEY_COMPARE       1
#define GDRPIPE_UCX_HAS_RKEY_UNPACK_PARAMS 1
#define GDRPIPE_UCX_HAS_MD_V2              1
#define GDRPIPE_UCX_HAS_PERF_FLAGS         1
#define GDRPIPE_UCX_HAS_PERF_PATH_BW       1
#if GDRPIPE_UCX_MINOR >= 20
#define GDRPIPE_UCX_HAS_IOPS_DEVICE_EP     1
#endif
#if (GDRPIPE_UCX_MINOR == 20) || (GDRPIPE_UCX_MINOR >= 22)
#define GDRPIPE_UCX_HAS_IOPS_QUERY_V2      1
#endif
#if GDRPIPE_UCX_MINOR == 20
#define GDRPIPE_UCX_HAS_IOPS_MEM_ELEMENT_PACK 1
#endif
#if GDRPIPE_UCX_MINOR >= 21
#define GDRPIPE_UCX_HAS_MD_ELEM_PACK       1
#endif
#if GDRPIPE_UCX_MINOR >= 22
#define GDRPIPE_UCX_HAS_IOPS_PUT_SGL       1
#define GDRPIPE_UCX_HAS_MEM_QUERY_V2       1
#define GDRPIPE_UCX_HAS_MEM_FLAGS          1
#endif
#if GDRPIPE_UCX_MINOR >= 23
#define GDRPIPE_UCX_HAS_MD_ELEM_RELEASE    1
#define GDRPIPE_UCX_HAS_IOPS_GET_SGL       1
#define GDRPIPE_UCX_HAS_IOPS_OUTSTANDING_PURGE 1
#endif

/* ---- component ------------------------------------------------------------- */
/* what an unpacked key is for: the device it will be used from */
typedef struct uct_rkey_unpack_params {
    uint64_t         field_mask;
    ucs_sys_device_t sys_device;
} uct_rkey_unpack_params_t;

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
                                                  const uct_rkey_unpack_params_t *params,
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
    uint64_t          gva_mem_types;
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
#if GDRPIPE_UCX_MINOR >= 22
    /* memory flags a buffer must have for the md to take it */
    uint8_t           required_mem_flags;
#endif
} uct_md_attr_v2_t;

#if GDRPIPE_UCX_MINOR >= 22
/* what mem_query tells of a range: the public uct_md_mem_attr_t's fields
 * (the same bits) and the range's memory flags */
enum {
    UCT_MD_MEM_ATTR_V2_FIELD_MEM_TYPE      = UCS_BIT(0),
    UCT_MD_MEM_ATTR_V2_FIELD_SYS_DEV       = UCS_BIT(1),
    UCT_MD_MEM_ATTR_V2_FIELD_BASE_ADDRESS  = UCS_BIT(2),
    UCT_MD_MEM_ATTR_V2_FIELD_ALLOC_LENGTH  = UCS_BIT(3),
    UCT_MD_MEM_ATTR_V2_FIELD_DMABUF_FD     = UCS_BIT(4),
    UCT_MD_MEM_ATTR_V2_FIELD_DMABUF_OFFSET = UCS_BIT(5),
    UCT_MD_MEM_ATTR_V2_FIELD_MEM_FLAGS     = UCS_BIT(6)
};

typedef struct uct_md_mem_attr_v2 {
    uint64_t          field_mask;
    ucs_memory_type_t mem_type;
    ucs_sys_device_t  sys_dev;
    void              *base_address;
    size_t            alloc_length;
    int               dmabuf_fd;
    size_t            dmabuf_offset;
    uint8_t           mem_flags;
} uct_md_mem_attr_v2_t;
#endif

struct uct_md_ops {
    void         (*close)(uct_md_h md);
    ucs_status_t (*query)(uct_md_h md, uct_md_attr_v2_t *attr);
    ucs_status_t (*mem_alloc)(uct_md_h md, size_t *length_p, void **address_p,
                              ucs_memory_type_t mem_type, ucs_sys_device_t sys_dev,
                              unsigned flags, const char *name, uct_mem_h *memh_p);
    ucs_status_t (*mem_free)(uct_md_h md, uct_mem_h memh);
    ucs_status_t (*mem_advise)(uct_md_h md, uct_mem_h memh, void *addr,
                               size_t length, unsigned advice);
    ucs_status_t (*mem_reg)(uct_md_h md, void *address, size_t length,
                            const uct_md_mem_reg_params_t *params, uct_mem_h *memh_p);
    ucs_status_t (*mem_dereg)(uct_md_h md, const uct_md_mem_dereg_params_t *params);
#if GDRPIPE_UCX_MINOR >= 22
    ucs_status_t (*mem_query)(uct_md_h md, const void *address, size_t length,
                              uct_md_mem_attr_v2_t *attr);
#else
    ucs_status_t (*mem_query)(uct_md_h md, const void *address, size_t length,
                              uct_md_mem_attr_t *attr);
#endif
    ucs_status_t (*mkey_pack)(uct_md_h md, uct_mem_h memh, void *address,
                              size_t length, const uct_md_mkey_pack_params_t *params,
                              void *buffer);
    ucs_status_t (*mem_attach)(uct_md_h md, const void *mkey_buffer, void *params,
                               uct_mem_h *memh_p);
    ucs_status_t (*detect_memory_type)(uct_md_h md, const void *address,
                                       size_t length, ucs_memory_type_t *type_p);
#if GDRPIPE_UCX_MINOR >= 23
    /* a registration's element for device-side code, and the release of
     * what packing it holds (neither offered) */
    ucs_status_t (*mem_elem_pack)(uct_md_h md, uct_mem_h memh, uct_rkey_t rkey,
                                  void *elem, void **release_handle_p);
    void         (*mem_elem_release)(uct_md_h md, void *release_handle);
#elif GDRPIPE_UCX_MINOR >= 21
    /* a registration's element for device-side code (not offered) */
    ucs_status_t (*mem_elem_pack)(uct_md_h md, uct_mem_h memh, uct_rkey_t rkey,
                                  void *elem);
#endif
};

/* ---- interfaces ------------------------------------------------------------ */
/* (path_bandwidth took bit 9: the later bits moved up by one) */
enum {
    UCT_PERF_ATTR_FIELD_OPERATION          = UCS_BIT(0),
    UCT_PERF_ATTR_FIELD_SEND_PRE_OVERHEAD  = UCS_BIT(5),
    UCT_PERF_ATTR_FIELD_SEND_POST_OVERHEAD = UCS_BIT(6),
    UCT_PERF_ATTR_FIELD_RECV_OVERHEAD      = UCS_BIT(7),
    UCT_PERF_ATTR_FIELD_BANDWIDTH          = UCS_BIT(8),
    UCT_PERF_ATTR_FIELD_PATH_BANDWIDTH     = UCS_BIT(9),
    UCT_PERF_ATTR_FIELD_LATENCY            = UCS_BIT(10),
    UCT_PERF_ATTR_FIELD_MAX_INFLIGHT_EPS   = UCS_BIT(11),
    UCT_PERF_ATTR_FIELD_FLAGS              = UCS_BIT(12)
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
    /* the bandwidth of one path of the interface */
    uct_ppn_bandwidth_t path_bandwidth;
    ucs_linear_func_t   latency;
    size_t              max_inflight_eps;
    uint64_t            flags;
} uct_perf_attr_t;

typedef enum {
    UCT_IFACE_REACHABILITY_SCOPE_DEVICE,
    UCT_IFACE_REACHABILITY_SCOPE_NETWORK
} uct_iface_reachability_scope_t;

enum {
    UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR = UCS_BIT(0),
    UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR  = UCS_BIT(1)
};

/* (the two address lengths at the end are not read here) */
typedef struct uct_iface_is_reachable_params {
    uint64_t                       field_mask;
    const uct_device_addr_t        *device_addr;
    const uct_iface_addr_t         *iface_addr;
    char                           *info_string;
    size_t                         info_string_length;
    uct_iface_reachability_scope_t scope;
    size_t                         device_addr_length;
    size_t                         iface_addr_length;
} uct_iface_is_reachable_params_t;

typedef struct uct_ep_is_connected_params uct_ep_is_connected_params_t;

/* what to purge of an endpoint's outstanding operations (not offered) */
typedef struct uct_ep_outstanding_purge_params uct_ep_outstanding_purge_params_t;

/* a scatter-gather zero-copy put (1.22) or get (1.23) (not offered) */
typedef ucs_status_t (*gdrpipe_ucx_ep_sgl_zcopy_func_t)(uct_ep_h ep, void *const *buffers,
                                                        const size_t *lengths,
                                                        uct_mem_h const *memhs,
                                                        const uint64_t *remote_addrs,
                                                        uct_rkey_t const *rkeys,
                                                        const size_t *counts,
                                                        const size_t *strides, size_t count,
                                                        uct_completion_t *comp);

/* the v2 interface attributes: only passed on to UCX's own query */
typedef struct uct_iface_attr_v2 uct_iface_attr_v2_t;

/* (the slots the plugin does not offer take generic arguments: it puts
 * UCX's "unsupported" stub into them) */
struct uct_iface_internal_ops {
#if (GDRPIPE_UCX_MINOR == 20) || (GDRPIPE_UCX_MINOR >= 22)
    /* called without a NULL check */
    ucs_status_t (*iface_query_v2)(uct_iface_h iface, uct_iface_attr_v2_t *attr);
#endif
    ucs_status_t (*iface_estimate_perf)(uct_iface_h iface, uct_perf_attr_t *perf);
    void         (*iface_vfs_refresh)(uct_iface_h iface);
#if GDRPIPE_UCX_MINOR == 20
    ucs_status_t (*iface_mem_element_pack)(const uct_iface_h iface, uct_mem_h memh,
                                           uct_rkey_t rkey, void *element);
#endif
    ucs_status_t (*ep_query)(uct_ep_h ep, uct_ep_attr_t *attr);
    /* (from 1.21 its second argument is a parameter struct) */
    ucs_status_t (*ep_invalidate)(uct_ep_h ep, const void *flags_or_params);
    ucs_status_t (*ep_connect_to_ep_v2)(uct_ep_h ep, const uct_device_addr_t *dev,
                                        const uct_ep_addr_t *ep_addr,
                                        const void *params);
    /* the two below are called without NULL checks */
    int          (*iface_is_reachable_v2)(const uct_iface_h iface,
                                          const uct_iface_is_reachable_params_t *params);
    int          (*ep_is_connected)(const uct_ep_h ep,
                                    const uct_ep_is_connected_params_t *params);
#if GDRPIPE_UCX_MINOR >= 20
    ucs_status_t (*ep_get_device_ep)(uct_ep_h ep, void *device_ep_p);
#endif
#if GDRPIPE_UCX_MINOR >= 22
    gdrpipe_ucx_ep_sgl_zcopy_func_t ep_put_sgl_zcopy;
#endif
#if GDRPIPE_UCX_MINOR >= 23
    gdrpipe_ucx_ep_sgl_zcopy_func_t ep_get_sgl_zcopy;
    /* checked for NULL at interface init (assertions) */
    ucs_status_t (*ep_outstanding_purge)(uct_ep_h ep,
                                         const uct_ep_outstanding_purge_params_t *params);
#endif
};

/* UCX's own: the estimate from iface_query, an endpoint's connection by
 * its interface's reachability, the reachability scope (same device), a
 * memory pool's default parameters, the default v2 interface query. Weak,
 * so that the plugin loads (and refuses, when they are missing) under a
 * UCX without them. */
ucs_status_t uct_base_iface_estimate_perf(uct_iface_h iface, uct_perf_attr_t *perf);
int uct_base_ep_is_connected(const uct_ep_h ep,
                             const uct_ep_is_connected_params_t *params)
        __attribute__((weak));
int uct_iface_scope_is_reachable(const uct_iface_h iface,
                                 const uct_iface_is_reachable_params_t *params)
        __attribute__((weak));
void ucs_mpool_params_reset(ucs_mpool_params_t *params) __attribute__((weak));
#if (GDRPIPE_UCX_MINOR == 20) || (GDRPIPE_UCX_MINOR >= 22)
ucs_status_t uct_iface_base_query_v2(uct_iface_h iface, uct_iface_attr_v2_t *attr)
        __attribute__((weak));
#endif

#endif
