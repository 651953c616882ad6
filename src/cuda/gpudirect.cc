// The CUDA side of GPUDirect RDMA: dma-buf export and RDMA write flushes.
#include "gdrpipe/cuda/gpudirect.hpp"

#include "gdrpipe/cuda/context.hpp"
#include "gdrpipe/cuda/driver.hpp"
#include "gdrpipe/cuda/memory.hpp"
#include "gdrpipe/log.hpp"

#include <array>
#include <atomic>

namespace gdrpipe::cuda {

namespace {

constexpr int kMaxDevices = 64;
// per device: 0 unknown, 1 no, 2 yes
std::array<std::atomic<int>, kMaxDevices> g_dmabuf{};
std::array<std::atomic<int>, kMaxDevices> g_flush{};

bool cached_attr(std::array<std::atomic<int>, kMaxDevices> &cache, int ordinal,
                 CUdevice_attribute attr, int mask, bool have_entry) {
    if (ordinal < 0 || ordinal >= kMaxDevices) return false;
    int v = cache[static_cast<std::size_t>(ordinal)].load();
    if (v == 0) {
        int value = 0;
        const DeviceProps *p = devices().props(ordinal);
        const bool ok = have_entry && p != nullptr &&
                        driver().api().cuDeviceGetAttribute(&value, attr, p->device) ==
                            CUDA_SUCCESS &&
                        (value & mask) != 0;
        v = ok ? 2 : 1;
        cache[static_cast<std::size_t>(ordinal)].store(v);
    }
    return v == 2;
}

// Runs f with the device's primary context current.
template <class F> CUresult in_context(int ordinal, F f) {
    const Api &api = driver().api();
    CUcontext ctx = nullptr;
    if (CUresult r = devices().primary_context(ordinal, &ctx); r != CUDA_SUCCESS) return r;
    if (CUresult r = api.cuCtxPushCurrent(ctx); r != CUDA_SUCCESS) return r;
    const CUresult r = f();
    CUcontext popped = nullptr;
    (void)api.cuCtxPopCurrent(&popped);
    return r;
}

} // namespace

bool dmabuf_supported(int ordinal) {
    if (!driver().available()) return false;
    return cached_attr(g_dmabuf, ordinal, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, 1,
                       driver().api().cuMemGetHandleForAddressRange != nullptr);
}

CUresult dmabuf_fd(const void *ptr, std::size_t len, int *fd) {
    if (!driver().available()) return CUDA_ERROR_NOT_INITIALIZED;
    MemInfo mi;
    if (CUresult r = query(ptr, &mi); r != CUDA_SUCCESS) return r;
    if (mi.kind != MemKind::device) return CUDA_ERROR_INVALID_VALUE;
    if (!dmabuf_supported(mi.device)) return CUDA_ERROR_NOT_SUPPORTED;
    if ((reinterpret_cast<std::uintptr_t>(ptr) & (64 * 1024 - 1)) != 0 || len == 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    const std::size_t plen = (len + 4095) & ~std::size_t{4095};
    int out = -1;
    const CUresult r = in_context(mi.device, [&] {
        return driver().api().cuMemGetHandleForAddressRange(
            &out, reinterpret_cast<CUdeviceptr>(ptr), plen, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
    });
    if (r != CUDA_SUCCESS) return r;
    *fd = out;
    return CUDA_SUCCESS;
}

bool rdma_flush_needed(int ordinal) {
    if (!driver().available()) return false;
    return cached_attr(g_flush, ordinal, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS,
                       CU_FLUSH_GPU_DIRECT_RDMA_WRITES_OPTION_HOST,
                       driver().api().cuFlushGPUDirectRDMAWrites != nullptr);
}

CUresult flush_rdma_writes(int ordinal) {
    if (!driver().available()) return CUDA_ERROR_NOT_INITIALIZED;
    return in_context(ordinal, [] {
        return driver().api().cuFlushGPUDirectRDMAWrites(
            CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX,
            CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER);
    });
}

} // namespace gdrpipe::cuda
