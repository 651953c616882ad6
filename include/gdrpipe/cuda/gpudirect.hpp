// The CUDA side of GPUDirect RDMA (docs/rdma.md): dma-buf descriptors of
// device memory for ibv_reg_dmabuf_mr, and the flush of RDMA writes into
// device memory before CUDA work consumes them.
#pragma once

#include <cuda.h>

#include <cstddef>

namespace gdrpipe::cuda {

// Whether CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is set for the device and the
// driver has cuMemGetHandleForAddressRange (cached per device).
bool dmabuf_supported(int ordinal);
// A dma-buf fd (CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD) for [ptr, ptr+len) of
// device memory; ptr must be 64 KiB aligned (the registrar aligns its
// ranges), len is rounded up to the host page (allocations are page
// granular). The fd starts at ptr. CUDA_ERROR_NOT_SUPPORTED when the device
// or driver cannot export dma-bufs.
CUresult dmabuf_fd(const void *ptr, std::size_t len, int *fd);
// Whether RDMA writes into the device's memory must be flushed before CUDA
// work reads them: CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS
// has CU_FLUSH_GPU_DIRECT_RDMA_WRITES_OPTION_HOST and the driver has
// cuFlushGPUDirectRDMAWrites (cached per device).
bool rdma_flush_needed(int ordinal);
// cuFlushGPUDirectRDMAWrites(TARGET_CURRENT_CTX, TO_OWNER) in the device's
// primary context.
CUresult flush_rdma_writes(int ordinal);

} // namespace gdrpipe::cuda
