// extern "C" face of what an MPI library's accelerator layer asks of the
// CUDA driver beyond copies and pointer queries (cuda_capi.cc): device
// allocations made as the application makes them, host registration, and
// the devices' identity and peer reachability.
#include "gdrpipe/capi.h"
#include "set_err.hpp"
#include "gdrpipe/cuda/context.hpp"
#include "gdrpipe/cuda/driver.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <string>

namespace cu = gdrpipe::cuda;
using gdrpipe::capi::set_err;

namespace {

// The driver's exported entry by its versioned name, as the application
// calls it: through gdrpipe's interception when that is in place, so that
// the region cache hears of the free like of any other.
template <typename Fn>
Fn app_entry(const char *name) {
    cu::Driver &drv = cu::driver();
    return drv.available() && drv.handle() != nullptr
               ? reinterpret_cast<Fn>(dlsym(drv.handle(), name))
               : nullptr;
}

std::string failed(const char *what, CUresult r) {
    return std::string(what) + " failed: " + cu::describe(r);
}

} // namespace

extern "C" {

int gp_cuda_app_alloc(int device, size_t len, void **ptr, char *err, size_t errlen) {
    using AllocFn = CUresult (*)(CUdeviceptr *, size_t);
    *ptr = nullptr;
    if (gp_cuda_available() == 0) {
        set_err(err, errlen, "no CUDA driver: " + cu::driver().why_not());
        return -1;
    }
    auto alloc = app_entry<AllocFn>("cuMemAlloc_v2");
    if (alloc == nullptr) {
        set_err(err, errlen, "the CUDA driver exports no cuMemAlloc_v2");
        return -1;
    }
    cu::ScopedContext c(cu::devices(), device);
    if (!c.ok()) {
        set_err(err, errlen, failed("making a context of GPU current", c.status()));
        return -1;
    }
    CUdeviceptr p = 0;
    const CUresult r = alloc(&p, len);
    if (r != CUDA_SUCCESS) {
        set_err(err, errlen, failed(("cuMemAlloc of " + std::to_string(len) + " bytes").c_str(), r));
        return -1;
    }
    *ptr = reinterpret_cast<void *>(p);
    return 0;
}

int gp_cuda_app_free(void *ptr, char *err, size_t errlen) {
    using FreeFn = CUresult (*)(CUdeviceptr);
    if (ptr == nullptr) return 0;
    auto release = app_entry<FreeFn>("cuMemFree_v2");
    if (release == nullptr) {
        set_err(err, errlen, "no CUDA driver with cuMemFree_v2");
        return -1;
    }
    const CUresult r = release(reinterpret_cast<CUdeviceptr>(ptr));
    if (r != CUDA_SUCCESS) {
        set_err(err, errlen, failed("cuMemFree", r));
        return -1;
    }
    return 0;
}

int gp_cuda_host_register(void *ptr, size_t len, char *err, size_t errlen) {
    if (gp_cuda_available() == 0) {
        set_err(err, errlen, "no CUDA driver: " + cu::driver().why_not());
        return -1;
    }
    cu::ScopedContext c(cu::devices(), gp_cuda_current_device());
    const CUresult r = c.ok() ? cu::driver().api().cuMemHostRegister(ptr, len, CU_MEMHOSTREGISTER_PORTABLE)
                              : c.status();
    if (r != CUDA_SUCCESS) {
        set_err(err, errlen, failed(("cuMemHostRegister of " + std::to_string(len) + " bytes").c_str(), r));
        return -1;
    }
    return 0;
}

int gp_cuda_host_unregister(void *ptr, char *err, size_t errlen) {
    if (gp_cuda_available() == 0) {
        set_err(err, errlen, "no CUDA driver: " + cu::driver().why_not());
        return -1;
    }
    cu::ScopedContext c(cu::devices(), gp_cuda_current_device());
    const CUresult r = c.ok() ? cu::driver().api().cuMemHostUnregister(ptr) : c.status();
    if (r != CUDA_SUCCESS) {
        set_err(err, errlen, failed("cuMemHostUnregister", r));
        return -1;
    }
    return 0;
}

int gp_cuda_current_device(void) {
    if (gp_cuda_available() == 0) return -1;
    CUdevice d = 0;
    if (cu::driver().api().cuCtxGetDevice(&d) == CUDA_SUCCESS) return static_cast<int>(d);
    return cu::devices().count() > 0 ? 0 : -1;
}

int gp_cuda_pci_address(int device, unsigned *domain, unsigned *bus, unsigned *dev, unsigned *fn) {
    if (gp_cuda_available() == 0) return -1;
    const cu::DeviceProps *p = cu::devices().props(device);
    unsigned d = 0, b = 0, s = 0, f = 0;
    if (p == nullptr || std::sscanf(p->pci_bus_id.c_str(), "%x:%x:%x.%x", &d, &b, &s, &f) != 4) {
        return -1;
    }
    *domain = d;
    *bus = b;
    *dev = s;
    *fn = f;
    return 0;
}

int gp_cuda_can_access_peer(int device, int peer) {
    if (gp_cuda_available() == 0) return -1;
    const int n = cu::devices().count();
    if (device < 0 || peer < 0 || device >= n || peer >= n) return -1;
    return device == peer || cu::devices().can_access_peer(device, peer) ? 1 : 0;
}

} // extern "C"
