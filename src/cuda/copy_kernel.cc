// Launching the batched copy kernel (copy_kernel.hpp).
#include "gdrpipe/cuda/copy_kernel.hpp"

#include <algorithm>
#include <cstdio>

namespace gdrpipe::cuda {

Status copy_batch(int device, unsigned slot, const gp_copy_desc_t *d, std::size_t n,
                  CopyToken *token, DeviceManager &dm) {
    *token = CopyToken{};
    if (n == 0) return {};
    if (n > GP_COPY_BATCH_MAX) return Status{CUDA_ERROR_INVALID_VALUE, "copy batch too large"};
    CUfunction fn = nullptr;
    CUresult r = dm.copy_kernel(device, &fn);
    if (r != CUDA_SUCCESS) return Status{r, "batched copy kernel not available"};
    gp_copy_batch_t batch{};
    batch.count = unsigned(n);
    unsigned long long longest = 0;
    for (std::size_t i = 0; i < n; ++i) {
        batch.desc[i] = d[i];
        longest = std::max(longest, d[i].len);
    }
    // 512 threads a block, each moving four 16-byte words a round: one block
    // per 32 KiB of the longest copy, at most 64 blocks a copy
    constexpr unsigned kThreads = 512;
    constexpr unsigned long long kPerBlock = kThreads * 16ull * 4;
    const unsigned gx = unsigned(std::clamp<unsigned long long>((longest + kPerBlock - 1) / kPerBlock,
                                                                1, 64));
    const Api &api = dm.drv().api();
    ScopedContext scope(dm, device);
    if (!scope.ok()) return Status{scope.status(), "making the context current"};
    CUstream stream = nullptr;
    r = dm.stream(device, slot, &stream);
    if (r != CUDA_SUCCESS) return Status{r, "cuStreamCreate"};
    void *params[] = {&batch};
    r = api.cuLaunchKernel(fn, gx, unsigned(n), 1, kThreads, 1, 1, 0, stream, params, nullptr);
    if (r != CUDA_SUCCESS) {
        char what[96];
        std::snprintf(what, sizeof(what), "cuLaunchKernel(copy batch of %zu) on device %d: ", n,
                      device);
        return Status{r, what + describe(r)};
    }
    return track(device, slot, stream, token, dm);
}

} // namespace gdrpipe::cuda
