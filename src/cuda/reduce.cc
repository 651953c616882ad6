// Launching the reduction kernel (reduce.hpp).
#include "gdrpipe/cuda/reduce.hpp"

#include <algorithm>
#include <cstdio>

namespace gdrpipe::cuda {

// the reductions have a stream slot of their own
static_assert(kReduceSlot < DeviceManager::kStreamSlots);

Status reduce(int device, const gp_reduce_args_t &a, DeviceManager &dm) {
    if (a.nsrc == 0 || a.nsrc > GP_REDUCE_MAX_BUFS || a.ndst > GP_REDUCE_MAX_BUFS ||
        !gp_red_valid(a.type, a.op) || a.end < a.begin)
        return Status{CUDA_ERROR_INVALID_VALUE, "reduction: invalid arguments"};
    if (a.end == a.begin || a.ndst == 0) return {};
    CUfunction fn = nullptr;
    CUresult r = dm.kernel(device, DeviceManager::Kernel::reduce, &fn);
    if (r != CUDA_SUCCESS) return Status{r, "the reduction kernel is not available"};
    // 256 threads a block, a block per 1024 elements, at most 2048 blocks
    // (grid-stride beyond): enough to saturate the memory of any GPU
    constexpr unsigned kThreads = 256;
    const unsigned long long n = a.end - a.begin;
    const unsigned gx =
        unsigned(std::clamp<unsigned long long>((n + 4 * kThreads - 1) / (4 * kThreads), 1, 2048));
    const Api &api = dm.drv().api();
    ScopedContext scope(dm, device);
    if (!scope.ok()) return Status{scope.status(), "making the context current"};
    // a non-blocking stream of gdrpipe's own: the application's other
    // streams (a long or persistent kernel) do not hold it up; the callers
    // waited for the application's work on the buffers before
    CUstream stream = nullptr;
    r = dm.stream(device, kReduceSlot, &stream);
    if (r != CUDA_SUCCESS) return Status{r, "cuStreamCreate"};
    gp_reduce_args_t args = a;
    void *params[] = {&args};
    r = api.cuLaunchKernel(fn, gx, 1, 1, kThreads, 1, 1, 0, stream, params, nullptr);
    if (r == CUDA_SUCCESS) r = api.cuStreamSynchronize(stream);
    if (r != CUDA_SUCCESS) {
        char what[96];
        std::snprintf(what, sizeof(what), "reduction of %llu elements on device %d: ", n, device);
        return Status{r, what + describe(r)};
    }
    return {};
}

} // namespace gdrpipe::cuda
