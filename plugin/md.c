/* Memory domains of gdrpipe. The wire MD registers memory for the
 * inter-process data paths and packs what a peer needs into the remote key. */
#include "gdrpipe.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <string.h>
#include <unistd.h>

static void gdrpipe_md_close(uct_md_h uct_md)
{
    ucs_free(uct_md);
}

static ucs_status_t gdrpipe_md_query(uct_md_h uct_md, uct_md_attr_t *attr)
{
    memset(attr, 0, sizeof(*attr));
    attr->cap.flags            = UCT_MD_FLAG_REG | UCT_MD_FLAG_NEED_RKEY;
    attr->cap.reg_mem_types    = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    attr->cap.alloc_mem_types  = 0;
    attr->cap.access_mem_types = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    attr->cap.detect_mem_types = 0;
    attr->cap.max_alloc        = 0;
    attr->cap.max_reg          = ULONG_MAX;
    attr->rkey_packed_size     = sizeof(gp_rkey_t);
    attr->reg_cost             = ucs_linear_func_make(50e-9, 0);
    memset(&attr->local_cpus, 0xff, sizeof(attr->local_cpus));
    return UCS_OK;
}

static ucs_status_t gdrpipe_md_mem_reg(uct_md_h uct_md, void *address, size_t length,
                                       unsigned flags, uct_mem_h *memh_p)
{
    gdrpipe_md_t *md = ucs_derived_of(uct_md, gdrpipe_md_t);
    gdrpipe_memh_t *memh;

    memh = ucs_calloc(1, sizeof(*memh), "gdrpipe memh");
    if (memh == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    memh->rkey.kind      = GP_RKEY_HOST;
    memh->rkey.pid       = getpid();
    memh->rkey.device    = -1;
    memh->rkey.base      = (uintptr_t)address;
    memh->rkey.length    = length;
    memh->rkey.host_id   = md->host_id;
    memh->rkey.handle_fd = -1;
    gp_rkey_seal(&memh->rkey);
    *memh_p = memh;
    return UCS_OK;
}

static ucs_status_t gdrpipe_md_mem_dereg(uct_md_h uct_md,
                                         const uct_md_mem_dereg_params_t *params)
{
    UCT_MD_MEM_DEREG_CHECK_PARAMS(params, 0);
    ucs_free(params->memh);
    return UCS_OK;
}

static ucs_status_t gdrpipe_md_mkey_pack(uct_md_h uct_md, uct_mem_h memh,
                                         const uct_md_mkey_pack_params_t *params,
                                         void *rkey_buffer)
{
    memcpy(rkey_buffer, &((gdrpipe_memh_t*)memh)->rkey, sizeof(gp_rkey_t));
    return UCS_OK;
}

static uct_md_ops_t gdrpipe_wire_md_ops = {
    .close              = gdrpipe_md_close,
    .query              = gdrpipe_md_query,
    .mem_alloc          = (uct_md_mem_alloc_func_t)ucs_empty_function_return_unsupported,
    .mem_free           = (uct_md_mem_free_func_t)ucs_empty_function_return_unsupported,
    .mem_advise         = (uct_md_mem_advise_func_t)ucs_empty_function_return_unsupported,
    .mem_reg            = gdrpipe_md_mem_reg,
    .mem_dereg          = gdrpipe_md_mem_dereg,
    .mem_query          = (uct_md_mem_query_func_t)ucs_empty_function_return_unsupported,
    .mkey_pack          = gdrpipe_md_mkey_pack,
    .is_sockaddr_accessible = (uct_md_is_sockaddr_accessible_func_t)ucs_empty_function_return_zero_int,
    .detect_memory_type = (uct_md_detect_memory_type_func_t)ucs_empty_function_return_unsupported
};

ucs_status_t gdrpipe_md_open(uct_component_t *component, const char *md_name,
                             const uct_md_config_t *config, uct_md_h *md_p)
{
    gdrpipe_md_t *md;

    if (strcmp(md_name, GDRPIPE_MD_NAME) != 0) {
        ucs_error("gdrpipe: unknown memory domain '%s'", md_name);
        return UCS_ERR_NO_DEVICE;
    }
    md = ucs_calloc(1, sizeof(*md), "gdrpipe md");
    if (md == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    md->super.ops       = &gdrpipe_wire_md_ops;
    md->super.component = &gdrpipe_component;
    md->kind            = GDRPIPE_MD_WIRE;
    md->host_id         = gdrpipe_host_id();
    *md_p = &md->super;
    return UCS_OK;
}
