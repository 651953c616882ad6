// extern "C" face of the CUDA layer, for the UCX glue.
#include "gdrpipe/capi.h"
#include "set_err.hpp"
#include "gdrpipe/cuda/context.hpp"
#include "gdrpipe/cuda/copy.hpp"
#include "gdrpipe/cuda/memory.hpp"
#include "gdrpipe/hooks/cuda_hooks.hpp"
#include "gdrpipe/log.hpp"
#include "gdrpipe/pipeline/local_mem.hpp"

#include <cstdio>
#include <mutex>
#include <new>
#include <string>

namespace cu = gdrpipe::cuda;

struct gp_cuda_op {
    cu::CopyToken token;
};

namespace {
using gdrpipe::capi::set_err;

// gdrpipe's own driver calls go to the originals behind the hooks: its
// internal allocations and frees are not application events, and a hook
// that re-entered the core from inside the core could deadlock.
cu::Driver &routed_driver() {
    static std::once_flag once;
    cu::Driver &drv = cu::driver();
    std::call_once(once, [&drv] {
        if (!drv.available()) return;
        int routed = 0;
        for (const cu::EntryInfo &e : cu::Driver::entries()) {
            void *tramp = gdrpipe::hooks::original_of(drv.entry(e.name));
            if (tramp != nullptr && drv.override_entry(e.name, tramp)) ++routed;
        }
        GP_DEBUG("CUDA driver %s loaded (version %d), %d entries routed around hooks",
                 drv.library_path().c_str(), drv.version(), routed);
    });
    return drv;
}

// Host allocations go through a context: the caller's device when a context
// is current (no context is created on another GPU), else device 0.
int current_device(cu::Driver &drv) {
    CUdevice d = 0;
    return drv.api().cuCtxGetDevice(&d) == CUDA_SUCCESS ? static_cast<int>(d) : 0;
}

} // namespace

extern "C" {

int gp_cuda_available(void) { return routed_driver().available() ? 1 : 0; }

const char *gp_cuda_why_not(void) { return cu::driver().why_not().c_str(); }

int gp_cuda_device_count(void) {
    return cu::driver().available() ? cu::devices().count() : 0;
}

int gp_cuda_mem_query(const void *ptr, gp_mem_info_t *info) {
    *info = gp_mem_info_t{};
    info->device = -1;
    if (!routed_driver().available()) return 0;   // everything is host memory
    cu::MemInfo mi;
    CUresult r = cu::query(ptr, &mi);
    if (r != CUDA_SUCCESS) return -1;
    if (mi.kind != cu::MemKind::host) {
        // allocations not seen by the hooks (made before them) get it here
        (void)cu::set_sync_memops(ptr);
    }
    switch (mi.kind) {
    case cu::MemKind::device: info->kind = GP_MEM_DEVICE; break;
    case cu::MemKind::managed: info->kind = GP_MEM_MANAGED; break;
    default: info->kind = GP_MEM_HOST; break;
    }
    info->device = mi.device;
    info->base = mi.base;
    info->length = mi.length;
    info->buffer_id = mi.buffer_id;
    info->is_vmm = mi.vmm;
    info->is_pool = mi.pool;
    info->legacy_ipc = mi.legacy_ipc;
    info->pinned_host = mi.pinned;
    return 0;
}

void gp_cuda_wait_legacy(int device) {
    if (routed_driver().available() && device >= 0) cu::wait_legacy(cu::devices(), device);
}

namespace {
cu::CopyOptions expecting(int device_side) {
    cu::CopyOptions opt;
    opt.expect = device_side == GP_CUDA_DST_DEVICE   ? cu::CopyOptions::Expect::dst_device
                 : device_side == GP_CUDA_SRC_DEVICE ? cu::CopyOptions::Expect::src_device
                                                     : cu::CopyOptions::Expect::any;
    return opt;
}
} // namespace

int gp_cuda_copy(void *dst, const void *src, size_t len, char *err, size_t errlen) {
    return gp_cuda_copy_dev(dst, src, len, 0, err, errlen);
}

int gp_cuda_copy_dev(void *dst, const void *src, size_t len, int device_side, char *err,
                     size_t errlen) {
    cu::Status st = cu::copy(dst, src, len, expecting(device_side));
    if (!st) {
        set_err(err, errlen, st.message);
        return st.code == CUDA_ERROR_NOT_MAPPED ? GP_CUDA_NOT_DEVICE : -1;
    }
    return 0;
}

namespace {
// a copy on a known device's stream `slot`, no pointer asked about
int copy_on_device(void *dst, const void *src, size_t len, int device, unsigned slot, char *err,
                   size_t errlen) {
    if (device < 0) {
        set_err(err, errlen, "no device given");
        return -1;
    }
    cu::CopyOptions opt;
    opt.device = device;
    opt.slot = slot;
    const cu::Status st = cu::copy(dst, src, len, opt);
    if (!st) {
        set_err(err, errlen, st.message);
        return -1;
    }
    return 0;
}
} // namespace

int gp_cuda_copy_from_device(void *host, const void *src, size_t len, int device, char *err,
                             size_t errlen) {
    return copy_on_device(host, src, len, device, cu::DeviceManager::kOrderedSlot, err, errlen);
}

int gp_cuda_copy_to_device(void *dst, const void *host, size_t len, int device, char *err,
                           size_t errlen) {
    // slot 0, as gp_cuda_copy_dev's copies into device memory
    return copy_on_device(dst, host, len, device, 0, err, errlen);
}

void *gp_cuda_host_alloc(size_t len, char *err, size_t errlen) {
    cu::Driver &drv = routed_driver();
    if (!drv.available()) {
        set_err(err, errlen, "no CUDA driver: " + drv.why_not());
        return nullptr;
    }
    cu::ScopedContext c(cu::devices(), current_device(drv));
    void *p = nullptr;
    const CUresult r = c.ok() ? drv.api().cuMemHostAlloc(&p, len, CU_MEMHOSTALLOC_PORTABLE)
                              : c.status();
    if (r != CUDA_SUCCESS) {
        set_err(err, errlen, "cuMemHostAlloc of " + std::to_string(len) + " bytes failed (" +
                                 std::to_string(static_cast<int>(r)) + ")");
        return nullptr;
    }
    return p;
}

void gp_cuda_host_free(void *ptr) {
    cu::Driver &drv = routed_driver();
    if (ptr == nullptr || !drv.available()) return;
    cu::ScopedContext c(cu::devices(), current_device(drv));
    (void)drv.api().cuMemFreeHost(ptr);
}

gp_cuda_op_t *gp_cuda_copy_async(void *dst, const void *src, size_t len, char *err,
                                 size_t errlen) {
    gp_cuda_op_t *op = nullptr;
    return gp_cuda_copy_async_dev(dst, src, len, 0, &op, err, errlen) == 0 ? op : nullptr;
}

int gp_cuda_copy_async_dev(void *dst, const void *src, size_t len, int device_side,
                           gp_cuda_op_t **op_out, char *err, size_t errlen) {
    auto *op = new (std::nothrow) gp_cuda_op();
    if (op == nullptr) {
        set_err(err, errlen, "out of memory");
        return -1;
    }
    cu::Status st = cu::copy_async(dst, src, len, &op->token, expecting(device_side));
    if (!st) {
        set_err(err, errlen, st.message);
        delete op;
        return st.code == CUDA_ERROR_NOT_MAPPED ? GP_CUDA_NOT_DEVICE : -1;
    }
    *op_out = op;
    return 0;
}

int gp_cuda_op_poll(gp_cuda_op_t *op, char *err, size_t errlen) {
    cu::Status st;
    switch (cu::poll(op->token, &st)) {
    case cu::PollResult::done: return 1;
    case cu::PollResult::pending: return 0;
    default:
        set_err(err, errlen, st.message);
        return -1;
    }
}

void gp_cuda_op_release(gp_cuda_op_t *op) {
    if (!op->token.empty()) (void)cu::wait(op->token);
    delete op;
}

int gp_host_accessible(const void *ptr, size_t len) {
    gdrpipe::pipeline::LocalSeg seg;
    seg.p = static_cast<char *>(const_cast<void *>(ptr));
    seg.len = len;
    return gdrpipe::pipeline::cpu_accessible(seg) ? 1 : 0;
}

void gp_cuda_shutdown(void) {
    if (cu::driver().available()) cu::devices().shutdown();
}

} // extern "C"
