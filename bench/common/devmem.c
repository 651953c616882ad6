/* See devmem.h. cuda.h only supplies the types and, through its
 * #define cuX cuX_v2 mapping, the versioned symbol names to dlsym(). */
#include "devmem.h"

#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GP_XSTR(_x) GP_STR(_x)
#define GP_STR(_x)  #_x

/* entry points used here; the name expands through cuda.h's macros */
#define GP_DEVMEM_FUNCS(_F)                                                    \
    _F(cuInit)                                                                 \
    _F(cuGetErrorName)                                                         \
    _F(cuDeviceGetCount)                                                       \
    _F(cuDeviceGet)                                                            \
    _F(cuDevicePrimaryCtxRetain)                                               \
    _F(cuDevicePrimaryCtxRelease)                                              \
    _F(cuCtxSetCurrent)                                                        \
    _F(cuCtxSynchronize)                                                       \
    _F(cuMemAlloc)                                                             \
    _F(cuMemFree)                                                              \
    _F(cuMemsetD8)                                                             \
    _F(cuMemcpyHtoD)                                                           \
    _F(cuMemcpyDtoH)                                                           \
    _F(cuMemHostAlloc)                                                         \
    _F(cuMemFreeHost)

/* stream-ordered allocation (GP_DEVMEM_ASYNC / GP_DEVMEM_POOL only) */
#define GP_DEVMEM_POOL_FUNCS(_F)                                               \
    _F(cuMemAllocAsync)                                                        \
    _F(cuMemAllocFromPoolAsync)                                                \
    _F(cuMemFreeAsync)                                                         \
    _F(cuMemPoolCreate)                                                        \
    _F(cuMemPoolDestroy)

static struct {
#define GP_DEVMEM_FIELD(_n) __typeof__(&_n) _n;
    GP_DEVMEM_FUNCS(GP_DEVMEM_FIELD)
    GP_DEVMEM_POOL_FUNCS(GP_DEVMEM_FIELD)
#undef GP_DEVMEM_FIELD
    void *lib;
    gp_devmem_alloc_t mode;
    CUmemoryPool pool; /* GP_DEVMEM_POOL: the exportable pool */
    int ready;
    int device;
    int count;
    CUdevice dev;
    CUcontext ctx;
} g_cu = {.device = -1, .count = -1};

static const char *gp_cu_errname(CUresult r)
{
    const char *s = NULL;
    if (g_cu.cuGetErrorName == NULL || g_cu.cuGetErrorName(r, &s) != CUDA_SUCCESS ||
        s == NULL) {
        return "CUDA_ERROR_?";
    }
    return s;
}

#define GP_CU_CALL(_what, _call)                                               \
    ({                                                                         \
        CUresult _r = (_call);                                                 \
        if (_r != CUDA_SUCCESS) {                                              \
            fprintf(stderr, "devmem: %s failed: %s (%d)\n", _what,             \
                    gp_cu_errname(_r), (int)_r);                               \
        }                                                                      \
        _r;                                                                    \
    })

static int gp_env_local_rank(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK",
                                       "MPI_LOCALRANKID", "SLURM_LOCALID",
                                       "PMI_LOCAL_RANK"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); ++i) {
        const char *v = getenv(vars[i]);
        if (v != NULL && *v != '\0') {
            return atoi(v);
        }
    }
    return 0;
}

int gp_devmem_init(int device, int local_rank)
{
    if (g_cu.ready) {
        return 0;
    }
    const char *path = getenv("UCX_GDRPIPE_CUDA_LIB");
    if (path == NULL || *path == '\0') {
        path = "libcuda.so.1";
    }
    g_cu.lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (g_cu.lib == NULL) {
        fprintf(stderr, "devmem: cannot load %s: %s\n", path, dlerror());
        return -1;
    }
#define GP_DEVMEM_LOAD(_n)                                                     \
    *(void **)&g_cu._n = dlsym(g_cu.lib, GP_XSTR(_n));                         \
    if (g_cu._n == NULL) {                                                     \
        fprintf(stderr, "devmem: %s has no %s\n", path, GP_XSTR(_n));          \
        return -1;                                                             \
    }
    GP_DEVMEM_FUNCS(GP_DEVMEM_LOAD)
    if (g_cu.mode != GP_DEVMEM_MEM) {
        GP_DEVMEM_POOL_FUNCS(GP_DEVMEM_LOAD)
    }
#undef GP_DEVMEM_LOAD

    if (GP_CU_CALL("cuInit", g_cu.cuInit(0)) != CUDA_SUCCESS ||
        GP_CU_CALL("cuDeviceGetCount", g_cu.cuDeviceGetCount(&g_cu.count)) !=
            CUDA_SUCCESS) {
        return -1;
    }
    if (g_cu.count <= 0) {
        fprintf(stderr, "devmem: no CUDA device\n");
        return -1;
    }
    if (device < 0) {
        if (local_rank < 0) {
            local_rank = gp_env_local_rank();
        }
        device = local_rank % g_cu.count;
    } else if (device >= g_cu.count) {
        fprintf(stderr, "devmem: device %d requested but only %d present\n",
                device, g_cu.count);
        return -1;
    }
    if (GP_CU_CALL("cuDeviceGet", g_cu.cuDeviceGet(&g_cu.dev, device)) !=
            CUDA_SUCCESS ||
        GP_CU_CALL("cuDevicePrimaryCtxRetain",
                   g_cu.cuDevicePrimaryCtxRetain(&g_cu.ctx, g_cu.dev)) !=
            CUDA_SUCCESS) {
        return -1;
    }
    if (GP_CU_CALL("cuCtxSetCurrent", g_cu.cuCtxSetCurrent(g_cu.ctx)) !=
        CUDA_SUCCESS) {
        g_cu.cuDevicePrimaryCtxRelease(g_cu.dev);
        return -1;
    }
    g_cu.device = device;
    g_cu.ready = 1;
    return 0;
}

int gp_devmem_thread_init(void)
{
    if (!g_cu.ready) {
        fprintf(stderr, "devmem: thread init before init\n");
        return -1;
    }
    return GP_CU_CALL("cuCtxSetCurrent", g_cu.cuCtxSetCurrent(g_cu.ctx)) == CUDA_SUCCESS ? 0
                                                                                       : -1;
}

int gp_devmem_ready(void) { return g_cu.ready; }
int gp_devmem_device(void) { return g_cu.device; }
int gp_devmem_count(void) { return g_cu.count; }

void gp_devmem_fini(void)
{
    if (!g_cu.ready) {
        return;
    }
    if (g_cu.pool != NULL) {
        g_cu.cuCtxSynchronize();
        GP_CU_CALL("cuMemPoolDestroy", g_cu.cuMemPoolDestroy(g_cu.pool));
        g_cu.pool = NULL;
    }
    g_cu.cuCtxSetCurrent(NULL);
    g_cu.cuDevicePrimaryCtxRelease(g_cu.dev);
    g_cu.ready = 0;
    /* the library stays loaded: a transport may still hold pointers into it */
}

int gp_devmem_alloc_parse(const char *s)
{
    static const char *const names[] = {"mem", "async", "pool"};
    for (int i = 0; i < 3; ++i) {
        if (strcmp(s, names[i]) == 0) {
            return i;
        }
    }
    return -1;
}

int gp_devmem_set_alloc(gp_devmem_alloc_t mode)
{
    if (g_cu.ready) {
        fprintf(stderr, "devmem: allocation mode set after init\n");
        return -1;
    }
    g_cu.mode = mode;
    return 0;
}

static int gp_devmem_pool_init(void)
{
    CUmemPoolProps props;
    if (g_cu.pool != NULL) {
        return 0;
    }
    memset(&props, 0, sizeof(props));
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = g_cu.device;
    return GP_CU_CALL("cuMemPoolCreate", g_cu.cuMemPoolCreate(&g_cu.pool, &props)) ==
                   CUDA_SUCCESS
               ? 0
               : -1;
}

void *gp_devmem_alloc(size_t len)
{
    CUdeviceptr d = 0;
    CUresult r;
    if (!g_cu.ready) {
        fprintf(stderr, "devmem: alloc before init\n");
        return NULL;
    }
    len = len ? len : 1;
    switch (g_cu.mode) {
    case GP_DEVMEM_ASYNC:
        r = GP_CU_CALL("cuMemAllocAsync", g_cu.cuMemAllocAsync(&d, len, NULL));
        break;
    case GP_DEVMEM_POOL:
        if (gp_devmem_pool_init() != 0) {
            return NULL;
        }
        r = GP_CU_CALL("cuMemAllocFromPoolAsync",
                       g_cu.cuMemAllocFromPoolAsync(&d, len, g_cu.pool, NULL));
        break;
    default:
        r = GP_CU_CALL("cuMemAlloc", g_cu.cuMemAlloc(&d, len));
        return r == CUDA_SUCCESS ? (void *)(uintptr_t)d : NULL;
    }
    if (r != CUDA_SUCCESS ||
        GP_CU_CALL("cuCtxSynchronize", g_cu.cuCtxSynchronize()) != CUDA_SUCCESS) {
        return NULL;
    }
    return (void *)(uintptr_t)d;
}

void gp_devmem_free(void *dptr)
{
    if (dptr == NULL || !g_cu.ready) {
        return;
    }
    if (g_cu.mode == GP_DEVMEM_MEM) {
        GP_CU_CALL("cuMemFree", g_cu.cuMemFree((CUdeviceptr)(uintptr_t)dptr));
        return;
    }
    GP_CU_CALL("cuMemFreeAsync", g_cu.cuMemFreeAsync((CUdeviceptr)(uintptr_t)dptr, NULL));
    GP_CU_CALL("cuCtxSynchronize", g_cu.cuCtxSynchronize());
}

int gp_devmem_memset(void *dptr, uint8_t value, size_t len)
{
    if (len == 0) {
        return 0;
    }
    if (GP_CU_CALL("cuMemsetD8",
                   g_cu.cuMemsetD8((CUdeviceptr)(uintptr_t)dptr, value, len)) !=
            CUDA_SUCCESS ||
        GP_CU_CALL("cuCtxSynchronize", g_cu.cuCtxSynchronize()) != CUDA_SUCCESS) {
        return -1;
    }
    return 0;
}

int gp_devmem_htod(void *dptr, const void *src, size_t len)
{
    if (len == 0) {
        return 0;
    }
    return GP_CU_CALL("cuMemcpyHtoD",
                      g_cu.cuMemcpyHtoD((CUdeviceptr)(uintptr_t)dptr, src, len)) ==
                   CUDA_SUCCESS
               ? 0
               : -1;
}

int gp_devmem_dtoh(void *dst, const void *dptr, size_t len)
{
    if (len == 0) {
        return 0;
    }
    return GP_CU_CALL("cuMemcpyDtoH",
                      g_cu.cuMemcpyDtoH(dst, (CUdeviceptr)(uintptr_t)dptr, len)) ==
                   CUDA_SUCCESS
               ? 0
               : -1;
}

void *gp_devmem_host_alloc(size_t len)
{
    void *p = NULL;
    if (!g_cu.ready) {
        fprintf(stderr, "devmem: host alloc before init\n");
        return NULL;
    }
    if (GP_CU_CALL("cuMemHostAlloc", g_cu.cuMemHostAlloc(&p, len ? len : 1, 0)) !=
        CUDA_SUCCESS) {
        return NULL;
    }
    return p;
}

void gp_devmem_host_free(void *p)
{
    if (p != NULL && g_cu.ready) {
        GP_CU_CALL("cuMemFreeHost", g_cu.cuMemFreeHost(p));
    }
}
