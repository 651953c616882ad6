// The reduction kernel (src/cuda/kernels/reduce.cu): one launch combines an
// element range of several buffers and writes the result to several
// buffers, which may belong to other processes (imported) or peer GPUs.
#pragma once
#include "gdrpipe/cuda/context.hpp"
#include "gdrpipe/cuda/copy.hpp"
#include "gdrpipe/cuda/reduce_abi.h"

#include <cstddef>

extern "C" {
// the kernel's fatbin, embedded at build time (empty without nvcc)
extern const unsigned char gp_reduce_fatbin[];
extern const std::size_t gp_reduce_fatbin_len;
}

namespace gdrpipe::cuda {

// Whether this build carries the kernel (the device may still refuse it).
inline bool reduce_kernel_built() noexcept { return gp_reduce_fatbin_len != 0; }

// Stream slot of the reductions (DeviceManager::stream); no data path uses it.
inline constexpr unsigned kReduceSlot = 5;

// Runs `a` (checked: counts, type, operation) on `device`, every buffer
// reachable from it, on stream slot kReduceSlot of its primary context (not
// ordered with the application's streams: the caller waits for its work on
// the buffers first) and waits until it completed.
// CUDA_ERROR_NOT_SUPPORTED when the kernel is not available.
Status reduce(int device, const gp_reduce_args_t &a, DeviceManager &dm = devices());

} // namespace gdrpipe::cuda
