// The batched copy kernel: many (dst, src, len) copies of one device in one
// launch (src/cuda/kernels/copy_batch.cu). Queueing a copy costs the CPU about
// as much as launching a kernel (gdrpipe_physref "submit": ~5 us each on the
// H200 machines), so a round of copies pays it once.
#pragma once
#include "gdrpipe/cuda/context.hpp"
#include "gdrpipe/cuda/copy.hpp"
#include "gdrpipe/cuda/copy_kernel_abi.h"

#include <cstddef>

extern "C" {
// the kernel's fatbin, embedded at build time (empty without nvcc)
extern const unsigned char gp_copy_batch_fatbin[];
extern const std::size_t gp_copy_batch_fatbin_len;
}

namespace gdrpipe::cuda {

// Whether this build carries the kernel (the device may still refuse it).
inline bool copy_kernel_built() noexcept { return gp_copy_batch_fatbin_len != 0; }

// Launch copies d[0..n) (n <= GP_COPY_BATCH_MAX, all reachable from `device`:
// its own memory or a peer's it can access) on the device's stream `slot`,
// then record one event into *token. Errors: CUDA_ERROR_NOT_SUPPORTED when the
// kernel is not available (the caller copies one by one).
Status copy_batch(int device, unsigned slot, const gp_copy_desc_t *d, std::size_t n,
                  CopyToken *token, DeviceManager &dm = devices());

} // namespace gdrpipe::cuda
