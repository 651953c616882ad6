/* The companion table (gdrpipe/companion.h): the core's CUDA layer for the
 * other gdrpipe libraries of the process (Open MPI component, interposer). */
#include "gdrpipe/capi.h"
#include "gdrpipe/companion.h"

static int companion_is_device(const void *ptr)
{
    gp_mem_info_t info;
    if (gp_cuda_mem_query(ptr, &info) != 0) {
        return -1;
    }
    return info.kind == GP_MEM_DEVICE;
}

static int companion_device_of(const void *ptr)
{
    gp_mem_info_t info;
    if ((gp_cuda_mem_query(ptr, &info) != 0) || (info.kind != GP_MEM_DEVICE)) {
        return -1;
    }
    return info.device;
}

static const gp_companion_t companion = {
    .version        = GP_COMPANION_VERSION,
    .cuda_available = gp_cuda_available,
    .cuda_why_not   = gp_cuda_why_not,
    .is_device      = companion_is_device,
    .copy           = gp_cuda_copy,
    .host_alloc     = gp_cuda_host_alloc,
    .host_free      = gp_cuda_host_free,
    .dev_export      = gp_dev_export,
    .dev_import      = gp_dev_import,
    .dev_release     = gp_dev_release,
    .self_start_time = gp_self_start_time,
    .reduce          = gp_cuda_reduce,
    .sync_device     = gp_cuda_sync_device,
    .device_of       = companion_device_of,
    .mem_query       = gp_cuda_mem_query,
    .app_alloc       = gp_cuda_app_alloc,
    .app_free        = gp_cuda_app_free,
    .host_register   = gp_cuda_host_register,
    .host_unregister = gp_cuda_host_unregister,
    .device_count    = gp_cuda_device_count,
    .current_device  = gp_cuda_current_device,
    .pci_address     = gp_cuda_pci_address,
    .can_access_peer = gp_cuda_can_access_peer,
    .copy_many       = gp_cuda_copy_many,
};

__attribute__((visibility("default")))
const gp_companion_t *gdrpipe_companion(unsigned version)
{
    return version <= GP_COMPANION_VERSION ? &companion : NULL;
}
