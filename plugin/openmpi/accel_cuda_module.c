/* The accelerator framework's calls (opal/mca/accelerator/accelerator.h) on
 * the companion table. Copies are synchronous: a copy "appended to a
 * stream" has completed when the call returns, so events recorded after it
 * are complete at once (and so is a stream to sync). Open MPI 5's users of the asynchronous calls (the
 * ob1 pml's pipelined device transfers) stay correct; pml ucx, which
 * gdrpipe-run selects, does not use them. */
#include "accel_cuda.h"

#include "gpo_dev.h"

#include "opal/constants.h"
#include "opal/util/output.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const gp_companion_t *dev(void)
{
    return gpo_dev();
}

static int failed(const char *what, const char *err)
{
    opal_output(0, "accelerator/cuda (gdrpipe): %s failed: %s", what, err);
    return OPAL_ERROR;
}

/* >0 device memory (managed memory flagged as such), 0 host memory, <0 error */
static int accel_check_addr(const void *addr, int *dev_id, uint64_t *flags)
{
    gp_mem_info_t info;
    *dev_id = MCA_ACCELERATOR_NO_DEVICE_ID;
    *flags = 0;
    if ((uintptr_t)addr < 4096) {
        return 0;
    }
    if (dev()->mem_query(addr, &info) != 0) {
        return OPAL_ERROR;
    }
    if (info.kind == GP_MEM_HOST) {
        return 0;
    }
    if (info.kind == GP_MEM_MANAGED) {
        *flags |= MCA_ACCELERATOR_FLAGS_UNIFIED_MEMORY;
    }
    *dev_id = info.device;
    return 1;
}

static int accel_create_stream(int dev_id, opal_accelerator_stream_t **stream)
{
    (void)dev_id;
    *stream = OBJ_NEW(opal_accelerator_stream_t);
    if (*stream == NULL) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    (*stream)->stream = NULL; /* copies on it complete before they return */
    return OPAL_SUCCESS;
}

#if GPO_ACCEL_TABLE_6
/* no event is shared between processes: is_ipc_enabled says no */
static int accel_create_event(int dev_id, opal_accelerator_event_t **event, bool enable_ipc)
#else
static int accel_create_event(int dev_id, opal_accelerator_event_t **event)
#endif
{
    (void)dev_id;
    *event = OBJ_NEW(opal_accelerator_event_t);
    if (*event == NULL) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    (*event)->event = NULL;
    return OPAL_SUCCESS;
}

static int accel_record_event(int dev_id, opal_accelerator_event_t *event,
                              opal_accelerator_stream_t *stream)
{
    (void)dev_id;
    return event != NULL && stream != NULL ? OPAL_SUCCESS : OPAL_ERR_BAD_PARAM;
}

static int accel_query_event(int dev_id, opal_accelerator_event_t *event)
{
    (void)dev_id;
    return event != NULL ? OPAL_SUCCESS : OPAL_ERR_BAD_PARAM;
}

static int accel_memcpy(int dest_dev_id, int src_dev_id, void *dest, const void *src, size_t size,
                        opal_accelerator_transfer_type_t type)
{
    char err[256] = "";
    (void)dest_dev_id;
    (void)src_dev_id;
    (void)type;
    if (size == 0) {
        return OPAL_SUCCESS;
    }
    if (dest == NULL || src == NULL) {
        return OPAL_ERR_BAD_PARAM;
    }
    return dev()->copy(dest, src, size, err, sizeof(err)) == 0 ? OPAL_SUCCESS
                                                                : failed("copy", err);
}

static int accel_memcpy_async(int dest_dev_id, int src_dev_id, void *dest, const void *src,
                              size_t size, opal_accelerator_stream_t *stream,
                              opal_accelerator_transfer_type_t type)
{
    if (stream == NULL) {
        return OPAL_ERR_BAD_PARAM;
    }
    return accel_memcpy(dest_dev_id, src_dev_id, dest, src, size, type);
}

/* overlapping ranges go through a host copy of the source */
static int accel_memmove(int dest_dev_id, int src_dev_id, void *dest, const void *src, size_t size,
                         opal_accelerator_transfer_type_t type)
{
    const uintptr_t d = (uintptr_t)dest, s = (uintptr_t)src;
    if (size == 0 || d == s) {
        return OPAL_SUCCESS;
    }
    if (d + size <= s || s + size <= d) {
        return accel_memcpy(dest_dev_id, src_dev_id, dest, src, size, type);
    }
    void *tmp = malloc(size);
    if (tmp == NULL) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    int rc = accel_memcpy(MCA_ACCELERATOR_NO_DEVICE_ID, src_dev_id, tmp, src, size,
                          MCA_ACCELERATOR_TRANSFER_UNSPEC);
    if (rc == OPAL_SUCCESS) {
        rc = accel_memcpy(dest_dev_id, MCA_ACCELERATOR_NO_DEVICE_ID, dest, tmp, size,
                          MCA_ACCELERATOR_TRANSFER_UNSPEC);
    }
    free(tmp);
    return rc;
}

static int accel_mem_alloc(int dev_id, void **ptr, size_t size)
{
    char err[256] = "";
    const int device = dev_id >= 0 ? dev_id : dev()->current_device();
    if (ptr == NULL || size == 0) {
        return OPAL_ERR_BAD_PARAM;
    }
    return dev()->app_alloc(device, size, ptr, err, sizeof(err)) == 0
               ? OPAL_SUCCESS
               : failed("device allocation", err);
}

static int accel_mem_release(int dev_id, void *ptr)
{
    char err[256] = "";
    (void)dev_id;
    return dev()->app_free(ptr, err, sizeof(err)) == 0 ? OPAL_SUCCESS
                                                       : failed("device free", err);
}

static int accel_get_address_range(int dev_id, const void *ptr, void **base, size_t *size)
{
    gp_mem_info_t info;
    (void)dev_id;
    if (ptr == NULL || dev()->mem_query(ptr, &info) != 0 || info.kind == GP_MEM_HOST) {
        return OPAL_ERROR;
    }
    *base = (void *)(uintptr_t)info.base;
    *size = (size_t)info.length;
    return OPAL_SUCCESS;
}

static int accel_host_register(int dev_id, void *ptr, size_t size)
{
    char err[256] = "";
    (void)dev_id;
    return dev()->host_register(ptr, size, err, sizeof(err)) == 0
               ? OPAL_SUCCESS
               : failed("host registration", err);
}

static int accel_host_unregister(int dev_id, void *ptr)
{
    char err[256] = "";
    (void)dev_id;
    return dev()->host_unregister(ptr, err, sizeof(err)) == 0
               ? OPAL_SUCCESS
               : failed("host unregistration", err);
}

static int accel_get_device(int *dev_id)
{
    const int d = dev()->current_device();
    if (d < 0) {
        return OPAL_ERR_NOT_FOUND;
    }
    *dev_id = d;
    return OPAL_SUCCESS;
}

static int accel_get_device_pci_attr(int dev_id, opal_accelerator_pci_attr_t *pci_attr)
{
    unsigned domain, bus, device, fn;
    if (dev()->pci_address(dev_id, &domain, &bus, &device, &fn) != 0) {
        return OPAL_ERR_NOT_FOUND;
    }
    pci_attr->domain_id = (uint16_t)domain;
    pci_attr->bus_id = (uint8_t)bus;
    pci_attr->device_id = (uint8_t)device;
    pci_attr->function_id = (uint8_t)fn;
    return OPAL_SUCCESS;
}

static int accel_device_can_access_peer(int *access, int dev1, int dev2)
{
    const int r = dev()->can_access_peer(dev1, dev2);
    if (r < 0) {
        return OPAL_ERR_BAD_PARAM;
    }
    *access = r;
    return OPAL_SUCCESS;
}

static int accel_get_buffer_id(int dev_id, const void *addr, opal_accelerator_buffer_id_t *buf_id)
{
    gp_mem_info_t info;
    (void)dev_id;
    if (addr == NULL || dev()->mem_query(addr, &info) != 0 || info.kind == GP_MEM_HOST) {
        return OPAL_ERROR;
    }
    *buf_id = info.buffer_id;
    return OPAL_SUCCESS;
}

#if GPO_ACCEL_TABLE_6
static int accel_sync_stream(opal_accelerator_stream_t *stream)
{
    return stream != NULL ? OPAL_SUCCESS : OPAL_ERR_BAD_PARAM;
}

static int accel_wait_event(int dev_id, opal_accelerator_event_t *event,
                            opal_accelerator_stream_t *stream)
{
    (void)dev_id;
    return event != NULL && stream != NULL ? OPAL_SUCCESS : OPAL_ERR_BAD_PARAM;
}

static int accel_memmove_async(int dest_dev_id, int src_dev_id, void *dest, const void *src,
                               size_t size, opal_accelerator_stream_t *stream,
                               opal_accelerator_transfer_type_t type)
{
    if (stream == NULL) {
        return OPAL_ERR_BAD_PARAM;
    }
    return accel_memmove(dest_dev_id, src_dev_id, dest, src, size, type);
}

/* the allocation is made at once: it precedes whatever the stream holds */
static int accel_mem_alloc_stream(int dev_id, void **ptr, size_t size,
                                  opal_accelerator_stream_t *stream)
{
    if (stream == NULL) {
        return OPAL_ERR_BAD_PARAM;
    }
    return accel_mem_alloc(dev_id, ptr, size);
}

/* nothing on the stream is pending: released at once (NULL: nothing) */
static int accel_mem_release_stream(int dev_id, void *ptr, opal_accelerator_stream_t *stream)
{
    if (stream == NULL) {
        return OPAL_ERR_BAD_PARAM;
    }
    return ptr == NULL ? OPAL_SUCCESS : accel_mem_release(dev_id, ptr);
}

/* Device memory crosses processes through UCX (the plugin's transports),
 * not through Open MPI's IPC users (smsc/accelerator, btl smcuda's
 * rcaches): they are told no, and the handle calls refuse. */
static bool accel_is_ipc_enabled(void)
{
    return false;
}

static int accel_get_ipc_handle(int dev_id, void *dev_ptr, opal_accelerator_ipc_handle_t *handle)
{
    return OPAL_ERR_NOT_SUPPORTED;
}

static int accel_import_ipc_handle(int dev_id, uint8_t ipc_handle[IPC_MAX_HANDLE_SIZE],
                                   opal_accelerator_ipc_handle_t *handle)
{
    return OPAL_ERR_NOT_SUPPORTED;
}

static int accel_open_ipc_handle(int dev_id, opal_accelerator_ipc_handle_t *handle,
                                 void **dev_ptr)
{
    return OPAL_ERR_NOT_SUPPORTED;
}

static int accel_compare_ipc_handles(uint8_t handle_1[IPC_MAX_HANDLE_SIZE],
                                     uint8_t handle_2[IPC_MAX_HANDLE_SIZE])
{
    return memcmp(handle_1, handle_2, IPC_MAX_HANDLE_SIZE);
}

static int accel_get_ipc_event_handle(opal_accelerator_event_t *event,
                                      opal_accelerator_ipc_event_handle_t *handle)
{
    return OPAL_ERR_NOT_SUPPORTED;
}

static int accel_import_ipc_event_handle(uint8_t ipc_handle[IPC_MAX_HANDLE_SIZE],
                                         opal_accelerator_ipc_event_handle_t *handle)
{
    return OPAL_ERR_NOT_SUPPORTED;
}

static int accel_open_ipc_event_handle(opal_accelerator_ipc_event_handle_t *handle,
                                       opal_accelerator_event_t *event)
{
    return OPAL_ERR_NOT_SUPPORTED;
}

static int accel_num_devices(int *num_devices)
{
    const int n = dev()->device_count();
    if (n < 0) {
        return OPAL_ERROR;
    }
    *num_devices = n;
    return OPAL_SUCCESS;
}

/* the companion table does not know the memory bandwidth: a nonzero
 * placeholder (as accelerator/null gives), and the call says so */
static int accel_get_mem_bw(int device, float *bw)
{
    (void)device;
    *bw = 1.0f;
    return OPAL_ERR_NOT_IMPLEMENTED;
}

/* MPI 4.1's memory kind of this accelerator, as Open MPI's own cuda
 * component names it: the strings are Open MPI's to free */
static void accel_get_memkind(ompi_memkind_t *memkind)
{
    memkind->im_name = strdup("cuda");
    memkind->im_no_restrictors = false;
    memkind->im_num_restrictors = 3;
    memkind->im_restrictors[0] = strdup("host");
    memkind->im_restrictors[1] = strdup("device");
    memkind->im_restrictors[2] = strdup("managed");
}
#endif

/* every member filled: the header's table has the members counted here */
_Static_assert(sizeof(opal_accelerator_base_module_t) ==
                   GPO_ACCEL_TABLE_MEMBERS * sizeof(opal_accelerator_base_module_check_addr_fn_t),
               "opal_accelerator_base_module_t is not the table of this Open MPI version");

opal_accelerator_base_module_t gpo_accel_cuda_module = {
    .check_addr = accel_check_addr,
    .create_stream = accel_create_stream,
    .create_event = accel_create_event,
    .record_event = accel_record_event,
    .query_event = accel_query_event,
    .mem_copy_async = accel_memcpy_async,
    .mem_copy = accel_memcpy,
    .mem_move = accel_memmove,
    .mem_alloc = accel_mem_alloc,
    .mem_release = accel_mem_release,
    .get_address_range = accel_get_address_range,
    .host_register = accel_host_register,
    .host_unregister = accel_host_unregister,
    .get_device = accel_get_device,
    .get_device_pci_attr = accel_get_device_pci_attr,
    .device_can_access_peer = accel_device_can_access_peer,
    .get_buffer_id = accel_get_buffer_id,
#if GPO_ACCEL_TABLE_6
    .sync_stream = accel_sync_stream,
    .wait_event = accel_wait_event,
    .mem_move_async = accel_memmove_async,
    .mem_alloc_stream = accel_mem_alloc_stream,
    .mem_release_stream = accel_mem_release_stream,
    .is_ipc_enabled = accel_is_ipc_enabled,
    .get_ipc_handle = accel_get_ipc_handle,
    .import_ipc_handle = accel_import_ipc_handle,
    .open_ipc_handle = accel_open_ipc_handle,
    .compare_ipc_handles = accel_compare_ipc_handles,
    .get_ipc_event_handle = accel_get_ipc_event_handle,
    .import_ipc_event_handle = accel_import_ipc_event_handle,
    .open_ipc_event_handle = accel_open_ipc_event_handle,
    .num_devices = accel_num_devices,
    .get_mem_bw = accel_get_mem_bw,
    .get_memkind = accel_get_memkind,
#endif
};
