/* GPU memory for the benchmarks and integration programs, without libcudart:
 * the CUDA driver is dlopen()ed ($UCX_GDRPIPE_CUDA_LIB if set, else
 * libcuda.so.1). Device pointers are never touched by the CPU here; every
 * access goes through the driver. All functions print a message to stderr
 * and return -1 (or NULL) on failure. */
#ifndef GDRPIPE_BENCH_DEVMEM_H
#define GDRPIPE_BENCH_DEVMEM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Load the driver, cuInit, pick a device and make its primary context
 * current. device >= 0: that device. Otherwise local_rank modulo the device
 * count, where local_rank < 0 means the launcher's environment
 * (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID, else 0).
 * Idempotent. */
int gp_devmem_init(int device, int local_rank);
/* Makes the chosen device's context current in the calling thread (other
 * threads than gp_devmem_init's need it before using device memory). */
int gp_devmem_thread_init(void);
/* 1 after a successful gp_devmem_init. */
int gp_devmem_ready(void);
/* The device chosen by gp_devmem_init, -1 before. */
int gp_devmem_device(void);
/* Number of devices the driver reports, -1 before init. */
int gp_devmem_count(void);
/* Release the primary context (allocations must be freed first). */
void gp_devmem_fini(void);

/* How gp_devmem_alloc allocates (process-wide; set before gp_devmem_init):
 *   GP_DEVMEM_MEM    cuMemAlloc_v2 (the default)
 *   GP_DEVMEM_ASYNC  cuMemAllocAsync: the device's default pool (not
 *                    exportable to other processes)
 *   GP_DEVMEM_POOL   cuMemAllocFromPoolAsync from a pool of this process
 *                    created with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
 * Stream-ordered allocations are synchronised before they are returned. */
typedef enum { GP_DEVMEM_MEM = 0, GP_DEVMEM_ASYNC = 1, GP_DEVMEM_POOL = 2 } gp_devmem_alloc_t;
/* "mem"/"async"/"pool" -> mode; -1 if unknown */
int gp_devmem_alloc_parse(const char *s);
int gp_devmem_set_alloc(gp_devmem_alloc_t mode); /* -1 after init */

void *gp_devmem_alloc(size_t len);            /* per the mode above; len 0 -> 1 */
void gp_devmem_free(void *dptr);               /* cuMemFree_v2 / cuMemFreeAsync */
/* cuMemsetD8_v2 followed by cuCtxSynchronize (so a send right after it
 * reads the new contents whatever stream the transport uses). */
int gp_devmem_memset(void *dptr, uint8_t value, size_t len);
int gp_devmem_htod(void *dptr, const void *src, size_t len);
int gp_devmem_dtoh(void *dst, const void *dptr, size_t len);
/* Page-locked host memory (cuMemHostAlloc, no flags) and its release. */
void *gp_devmem_host_alloc(size_t len);
void gp_devmem_host_free(void *p);

#ifdef __cplusplus
}
#endif
#endif
