/* What the UCX plugin (libuct_gdrpipe.so) offers other libraries loaded into
 * the same process, such as the Open MPI component and interposer in
 * plugin/openmpi/: one table of functions over the core's CUDA layer, so that
 * the process keeps a single driver loader, context set and copy engine.
 *
 * A library finds it without linking to the plugin:
 *     gp_companion_get_fn get = (gp_companion_get_fn)dlsym(RTLD_DEFAULT, GP_COMPANION_SYMBOL);
 *     const gp_companion_t *c = get ? get(GP_COMPANION_VERSION) : NULL;
 * NULL means the plugin is not loaded (not preloaded by gdrpipe-run) or is
 * of an older table version. */
#ifndef GDRPIPE_COMPANION_H
#define GDRPIPE_COMPANION_H

#include <stddef.h>
#include <stdint.h>

#include "gdrpipe/capi.h"
#include "gdrpipe/cuda/copy_kernel_abi.h"
#include "gdrpipe/cuda/reduce_abi.h"
#include "gdrpipe/rkey.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GP_COMPANION_SYMBOL  "gdrpipe_companion"
#define GP_COMPANION_VERSION 4u

typedef struct gp_companion {
    unsigned version;
    /* 1 when the CUDA driver is loaded and usable, else 0 (why_not says why) */
    int (*cuda_available)(void);
    const char *(*cuda_why_not)(void);
    /* 1: device memory the CPU cannot touch; 0: host, pinned host or managed
     * memory (the CPU can touch it); <0: the driver failed */
    int (*is_device)(const void *ptr);
    /* synchronous copy between any two pointers (host or device);
     * 0, or <0 with err filled */
    int (*copy)(void *dst, const void *src, size_t len, char *err, size_t errlen);
    /* page-locked host memory for staging (faster copies than pageable
     * memory); NULL with err filled on failure */
    void *(*host_alloc)(size_t len, char *err, size_t errlen);
    void (*host_free)(void *ptr);
    /* version 2: device reductions across the processes of one host
     * (gdrpipe/capi.h, "device reductions", for the arguments) */
    int (*dev_export)(const void *ptr, size_t len, gp_rkey_t *rkey, char *err, size_t errlen);
    int (*dev_import)(const gp_rkey_t *rkey, uint64_t start_time, uint64_t addr, size_t len,
                      int device, void **local, void **hold, char *err, size_t errlen);
    void (*dev_release)(void *hold);
    uint64_t (*self_start_time)(void);
    int (*reduce)(int device, const gp_reduce_args_t *a, char *err, size_t errlen);
    int (*sync_device)(int device);
    /* device ordinal of device memory, -1 for anything else */
    int (*device_of)(const void *ptr);
    /* version 3: what an MPI library's accelerator layer needs (the Open MPI
     * 5 accelerator component); gdrpipe/capi.h says what each does */
    int (*mem_query)(const void *ptr, gp_mem_info_t *info);
    int (*app_alloc)(int device, size_t len, void **ptr, char *err, size_t errlen);
    int (*app_free)(void *ptr, char *err, size_t errlen);
    int (*host_register)(void *ptr, size_t len, char *err, size_t errlen);
    int (*host_unregister)(void *ptr, char *err, size_t errlen);
    int (*device_count)(void);
    int (*current_device)(void);
    int (*pci_address)(int device, unsigned *domain, unsigned *bus, unsigned *dev, unsigned *fn);
    int (*can_access_peer)(int device, int peer);
    /* version 4: the copies of data-moving collectives on the GPU
     * (gp_cuda_copy_many) */
    int (*copy_many)(int device, const struct gp_copy_desc *d, size_t n, char *err,
                     size_t errlen);
} gp_companion_t;

/* NULL when the caller wants a newer version than this plugin has */
typedef const gp_companion_t *(*gp_companion_get_fn)(unsigned version);

#ifdef __cplusplus
}
#endif
#endif
