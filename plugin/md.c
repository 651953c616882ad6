/* Memory domains of gdrpipe. The wire MD registers memory for the
 * inter-process data paths and packs what a peer needs into the remote key. */
#include "gdrpipe.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>

/* Open memory domains of this process, over all UCP contexts. The core's
 * CUDA streams, events and primary-context references are process-wide and
 * created lazily; UCP closes every MD in ucp_cleanup() after its workers
 * (and so every interface) are gone, so the last close gives them back. */
static pthread_mutex_t gdrpipe_md_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned gdrpipe_md_count;

static void gdrpipe_md_close(uct_md_h uct_md)
{
    pthread_mutex_lock(&gdrpipe_md_lock);
    if (--gdrpipe_md_count == 0) {
        gdrpipe_send_host_release();
        gp_cuda_shutdown();
    }
    pthread_mutex_unlock(&gdrpipe_md_lock);
    ucs_free(uct_md);
}

gdrpipe_ucx_iface_ops_t gdrpipe_base_iface_ops;
const gdrpipe_ucx_iface_funcs_t gdrpipe_base_iface_funcs = {
    .estimate_perf = NULL
};

void gdrpipe_iface_fill_rma_caps(uct_iface_attr_t *attr, size_t put_short, size_t put_bcopy,
                                 size_t get_short, size_t get_bcopy, size_t max_iov)
{
    attr->cap.put.max_short       = put_short;
    attr->cap.put.max_bcopy       = put_bcopy;
    attr->cap.put.min_zcopy       = 0;
    attr->cap.put.max_zcopy       = SIZE_MAX;
    attr->cap.put.opt_zcopy_align = 1;
    attr->cap.put.align_mtu       = 1;
    attr->cap.put.max_iov         = max_iov;
    attr->cap.get.max_short       = get_short;
    attr->cap.get.max_bcopy       = get_bcopy;
    attr->cap.get.min_zcopy       = 0;
    attr->cap.get.max_zcopy       = SIZE_MAX;
    attr->cap.get.opt_zcopy_align = 1;
    attr->cap.get.align_mtu       = 1;
    attr->cap.get.max_iov         = max_iov;
}

void gdrpipe_md_fill_attr(gdrpipe_ucx_md_attr_t *attr, size_t rkey_size,
                          ucs_linear_func_t reg_cost)
{
    memset(attr, 0, sizeof(*attr));
    attr->flags            = UCT_MD_FLAG_REG | UCT_MD_FLAG_NEED_RKEY;
    attr->reg_mem_types    = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    if (gp_cuda_available()) {
        attr->reg_mem_types |= UCS_BIT(UCS_MEMORY_TYPE_CUDA);
    }
    attr->access_mem_types = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    attr->detect_mem_types = 0;
    attr->max_reg          = ULONG_MAX;
    attr->rkey_packed_size = rkey_size;
    attr->reg_cost         = reg_cost;
}

static void gdrpipe_md_query(uct_md_h uct_md, gdrpipe_ucx_md_attr_t *attr)
{
    /* device memory is exported (IPC/VMM handles) for the direct path or
     * served by the staged pipeline */
    gdrpipe_md_fill_attr(attr, sizeof(gp_rkey_t), ucs_linear_func_make(50e-9, 0));
}

static ucs_status_t gdrpipe_md_mem_reg(uct_md_h uct_md, void *address, size_t length,
                                       uct_mem_h *memh_p)
{
    gdrpipe_md_t *md = ucs_derived_of(uct_md, gdrpipe_md_t);
    gdrpipe_memh_t *memh;
    char err[256];

    memh = ucs_calloc(1, sizeof(*memh), "gdrpipe memh");
    if (memh == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    if (gp_mem_register(address, length, md->host_id, &memh->rkey, &memh->reg, err,
                        sizeof(err)) != 0) {
        ucs_free(memh);
        ucs_error("gdrpipe: cannot register %p..%p: %s", address,
                  UCS_PTR_BYTE_OFFSET(address, length), err);
        return UCS_ERR_INVALID_ADDR;
    }
    *memh_p = memh;
    return UCS_OK;
}

static ucs_status_t gdrpipe_md_mem_dereg(uct_md_h uct_md, uct_mem_h uct_memh)
{
    gdrpipe_memh_t *memh = uct_memh;

    gp_mem_deregister(memh->reg);
    ucs_free(memh);
    return UCS_OK;
}

static ucs_status_t gdrpipe_md_mkey_pack(uct_md_h uct_md, uct_mem_h memh,
                                         void *rkey_buffer)
{
    memcpy(rkey_buffer, &((gdrpipe_memh_t*)memh)->rkey, sizeof(gp_rkey_t));
    return UCS_OK;
}

static const gdrpipe_ucx_md_funcs_t gdrpipe_wire_md_funcs = {
    .close     = gdrpipe_md_close,
    .query     = gdrpipe_md_query,
    .mem_reg   = gdrpipe_md_mem_reg,
    .mem_dereg = gdrpipe_md_mem_dereg,
    .mkey_pack = gdrpipe_md_mkey_pack
};

static gdrpipe_ucx_md_ops_t gdrpipe_wire_md_ops;

/* ---- copy MD: detects CUDA memory, registers nothing real ---------------- */

static void gdrpipe_copy_md_query(uct_md_h uct_md, gdrpipe_ucx_md_attr_t *attr)
{
    uint64_t cuda = UCS_BIT(UCS_MEMORY_TYPE_CUDA) | UCS_BIT(UCS_MEMORY_TYPE_CUDA_MANAGED);

    memset(attr, 0, sizeof(*attr));
    attr->flags            = UCT_MD_FLAG_REG;
    attr->reg_mem_types    = UCS_BIT(UCS_MEMORY_TYPE_HOST) | cuda;
    attr->access_mem_types = cuda;
    attr->detect_mem_types = cuda;
    attr->max_reg          = ULONG_MAX;
    attr->rkey_packed_size = sizeof(uint32_t);   /* GDRPIPE_COPY_RKEY_MAGIC */
    attr->reg_cost         = ucs_linear_func_make(0, 0);
}

static ucs_status_t gdrpipe_copy_md_mem_reg(uct_md_h uct_md, void *address,
                                            size_t length, uct_mem_h *memh_p)
{
    *memh_p = (void*)0x1;   /* copies need no registration */
    return UCS_OK;
}

static ucs_status_t gdrpipe_copy_md_mem_dereg(uct_md_h uct_md, uct_mem_h memh)
{
    return UCS_OK;
}

static ucs_status_t gdrpipe_copy_md_mkey_pack(uct_md_h uct_md, uct_mem_h memh,
                                              void *rkey_buffer)
{
    const uint32_t magic = GDRPIPE_COPY_RKEY_MAGIC;

    memcpy(rkey_buffer, &magic, sizeof(magic));
    return UCS_OK;
}

/* Classifies a pointer; UCS_ERR_INVALID_ADDR when it is not CUDA memory. */
static ucs_status_t gdrpipe_copy_md_classify(const void *address, gp_mem_info_t *info,
                                             ucs_memory_type_t *type_p)
{
    if (gp_cuda_mem_query(address, info) != 0) {
        return UCS_ERR_INVALID_ADDR;
    }
    switch (info->kind) {
    case GP_MEM_DEVICE:
        *type_p = UCS_MEMORY_TYPE_CUDA;
        return UCS_OK;
    case GP_MEM_MANAGED:
        *type_p = UCS_MEMORY_TYPE_CUDA_MANAGED;
        return UCS_OK;
    default:
        return UCS_ERR_INVALID_ADDR;
    }
}

static ucs_status_t gdrpipe_copy_md_detect_memory_type(uct_md_h uct_md,
                                                       const void *address,
                                                       size_t length,
                                                       ucs_memory_type_t *type_p)
{
    gp_mem_info_t info;

    return gdrpipe_copy_md_classify(address, &info, type_p);
}

static ucs_status_t gdrpipe_copy_md_mem_query(uct_md_h uct_md, const void *address,
                                              size_t length, uct_md_mem_attr_t *attr)
{
    ucs_memory_type_t type;
    gp_mem_info_t info;
    ucs_status_t status;

    status = gdrpipe_copy_md_classify(address, &info, &type);
    if (status != UCS_OK) {
        return status;
    }
    if (attr->field_mask & UCT_MD_MEM_ATTR_FIELD_MEM_TYPE) {
        attr->mem_type = type;
    }
    if (attr->field_mask & UCT_MD_MEM_ATTR_FIELD_SYS_DEV) {
        attr->sys_dev = UCS_SYS_DEVICE_ID_UNKNOWN;
    }
    if (attr->field_mask & UCT_MD_MEM_ATTR_FIELD_BASE_ADDRESS) {
        attr->base_address = (void*)info.base;
    }
    if (attr->field_mask & UCT_MD_MEM_ATTR_FIELD_ALLOC_LENGTH) {
        attr->alloc_length = info.length;
    }
    /* keep UCX's memory-type cache right even for memory it learnt nothing of */
    gdrpipe_ucx_memtype_cache_update((void*)info.base, info.length, type);
    return UCS_OK;
}

static const gdrpipe_ucx_md_funcs_t gdrpipe_copy_md_funcs = {
    .close              = gdrpipe_md_close,
    .query              = gdrpipe_copy_md_query,
    .mem_reg            = gdrpipe_copy_md_mem_reg,
    .mem_dereg          = gdrpipe_copy_md_mem_dereg,
    .mkey_pack          = gdrpipe_copy_md_mkey_pack,
    .mem_query          = gdrpipe_copy_md_mem_query,
    .detect_memory_type = gdrpipe_copy_md_detect_memory_type
};

static gdrpipe_ucx_md_ops_t gdrpipe_copy_md_ops;

ucs_status_t gdrpipe_md_open(uct_component_t *component, const char *md_name,
                             const uct_md_config_t *config, uct_md_h *md_p)
{
    gdrpipe_md_kind_t kind;
    gdrpipe_md_t *md;

    if (strcmp(md_name, GDRPIPE_MD_NAME) == 0) {
        kind = GDRPIPE_MD_WIRE;
    } else if (strcmp(md_name, GDRPIPE_COPY_MD_NAME) == 0) {
        if (!gp_cuda_available()) {
            ucs_error("gdrpipe: CUDA is not available: %s", gp_cuda_why_not());
            return UCS_ERR_NO_DEVICE;
        }
        kind = GDRPIPE_MD_COPY;
    } else {
        ucs_error("gdrpipe: unknown memory domain '%s'", md_name);
        return UCS_ERR_NO_DEVICE;
    }
    md = ucs_calloc(1, sizeof(*md), "gdrpipe md");
    if (md == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    md->super.ops       = (kind == GDRPIPE_MD_WIRE) ?
                          gdrpipe_ucx_md_ops(&gdrpipe_wire_md_ops, &gdrpipe_wire_md_funcs) :
                          gdrpipe_ucx_md_ops(&gdrpipe_copy_md_ops, &gdrpipe_copy_md_funcs);
    md->super.component = component;
    md->kind            = kind;
    md->host_id         = gdrpipe_host_id();
    if (kind == GDRPIPE_MD_WIRE) {
        gp_set_pool_ipc(ucs_derived_of(config, gdrpipe_md_config_t)->pool_ipc);
        gdrpipe_send_configure(
                ucs_derived_of(config, gdrpipe_md_config_t)->device_rndv_thresh,
                ucs_derived_of(config, gdrpipe_md_config_t)->device_rndv_burst);
        gdrpipe_send_host_configure(
                ucs_derived_of(config, gdrpipe_md_config_t)->device_host_eager);
        gdrpipe_ep_err_configure(
                ucs_derived_of(config, gdrpipe_md_config_t)->unhandled_ep_error);
        gdrpipe_tcp_bound_configure(ucs_derived_of(config, gdrpipe_md_config_t)->tcp_timeout);
    }
    pthread_mutex_lock(&gdrpipe_md_lock);
    ++gdrpipe_md_count;
    pthread_mutex_unlock(&gdrpipe_md_lock);
    *md_p = &md->super;
    return UCS_OK;
}
