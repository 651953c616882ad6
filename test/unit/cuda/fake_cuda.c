/* A minimal stand-in for libcuda, to test the loader's failure paths without a
 * driver or the simulator. Behaviour is read from the environment at each call:
 *   FAKECUDA_MISSING=name   cuGetProcAddress reports `name` as not found
 *   FAKECUDA_INIT=<int>     the CUresult cuInit returns (default 100, NO_DEVICE)
 * Every other entry resolves to a function that returns CUDA_ERROR_NOT_SUPPORTED. */
#include <cuda.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_API __attribute__((visibility("default")))

static CUresult fake_not_supported(void) { return CUDA_ERROR_NOT_SUPPORTED; }

static CUresult fake_init(unsigned int flags) {
    const char *v = getenv("FAKECUDA_INIT");
    (void)flags;
    return v != NULL ? (CUresult)atoi(v) : CUDA_ERROR_NO_DEVICE;
}

static CUresult fake_driver_get_version(int *version) {
    *version = 11000;
    return CUDA_SUCCESS;
}

FAKE_API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
                                      cuuint64_t flags,
                                      CUdriverProcAddressQueryResult *status) {
    const char *missing = getenv("FAKECUDA_MISSING");
    (void)version;
    (void)flags;
    if (missing != NULL && strcmp(missing, symbol) == 0) {
        *pfn = NULL;
        if (status != NULL) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return CUDA_ERROR_NOT_FOUND;
    }
    if (strcmp(symbol, "cuInit") == 0) {
        *pfn = (void *)fake_init;
    } else if (strcmp(symbol, "cuDriverGetVersion") == 0) {
        *pfn = (void *)fake_driver_get_version;
    } else {
        *pfn = (void *)fake_not_supported;
    }
    if (status != NULL) *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}
