// Legacy CUDA IPC (cuIpc*MemHandle) across processes through
// /proc/<pid>/fd/<n>, dma-buf export, GPUDirect RDMA flush.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include <atomic>
#include <fcntl.h>
#include <unistd.h>

#include "sim_internal.hpp"

using namespace sim;

namespace {

constexpr uint32_t kIpcMagic = 0x47504950;  // "GPIP"

struct IpcWire {  // lives in CUipcMemHandle::reserved (64 bytes)
  uint32_t magic;
  int32_t pid;
  int32_t fd;
  int32_t dev;
  uint64_t offset;
  uint64_t size;
  uint64_t buffer_id;
  uint64_t nonce;
};
static_assert(sizeof(IpcWire) <= sizeof(CUipcMemHandle), "IPC handle too small");

CUresult ipc_open(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned flags) {
  Lock lk(g_mu);
  Ctx* c;
  if (CUresult r = need_ctx(&c)) return r;
  if (!pdptr || flags != CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) return CUDA_ERROR_INVALID_VALUE;
  IpcWire w;
  memcpy(&w, handle.reserved, sizeof w);
  if (w.magic != kIpcMagic || w.dev < 0 || w.dev >= g->ndev) return CUDA_ERROR_INVALID_VALUE;
  if (w.pid == getpid()) return CUDA_ERROR_INVALID_CONTEXT;  // as the real driver
  auto key = std::make_pair(int(w.pid), w.buffer_id);
  auto it = g->ipc_imports.find(key);
  if (it != g->ipc_imports.end()) {
    it->second->ipc_refs++;
    *pdptr = it->second->base;
    return CUDA_SUCCESS;
  }
  // the exporter's memfd must still be there and carry the same nonce
  char path[64], link[256], expect[32];
  snprintf(path, sizeof path, "/proc/%d/fd/%d", int(w.pid), int(w.fd));
  snprintf(expect, sizeof expect, "-%016llx", static_cast<unsigned long long>(w.nonce));
  ssize_t n = readlink(path, link, sizeof link - 1);
  if (n <= 0) return CUDA_ERROR_INVALID_VALUE;
  link[n] = 0;
  if (!strstr(link, "gpsim-d") || !strstr(link, expect)) return CUDA_ERROR_INVALID_VALUE;
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return CUDA_ERROR_INVALID_VALUE;
  struct stat st;
  size_t span = round_span(w.size, nullptr);
  if (fstat(fd, &st) != 0 || size_t(st.st_size) < w.offset + span) {
    close(fd);
    return CUDA_ERROR_INVALID_VALUE;
  }
  uintptr_t va;
  if (map_device_range(span, fd, w.offset, &va) != CUDA_SUCCESS) {
    close(fd);
    return CUDA_ERROR_MAP_FAILED;
  }
  auto a = std::make_unique<Alloc>();
  a->backing = map_alias(fd, w.offset, span);
  if (!a->backing) {
    release_va(va, span);
    close(fd);
    return CUDA_ERROR_MAP_FAILED;
  }
  a->base = va;
  a->size = w.size;
  a->span = span;
  a->kind = Kind::IpcImport;
  a->dev = w.dev;
  a->fd = fd;
  a->ipc_refs = 1;
  a->ipc_key = key;
  if (w.dev != c->dev && g->topo.can_peer(c->dev, w.dev))
    g->devs[size_t(c->dev)]->peer_enabled[size_t(w.dev)] = true;  // lazy peer enable
  Alloc* raw = add_alloc(std::move(a));
  g->ipc_imports[key] = raw;
  *pdptr = raw->base;
  return CUDA_SUCCESS;
}

}  // namespace

SIM_API CUresult cuIpcGetMemHandle(CUipcMemHandle* pHandle, CUdeviceptr dptr) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  Alloc* a = find_alloc(uintptr_t(dptr));
  if (!pHandle || !a) return CUDA_ERROR_INVALID_VALUE;
  if (a->kind != Kind::Device) return CUDA_ERROR_INVALID_VALUE;  // not legacy-IPC capable
  IpcWire w{kIpcMagic, int32_t(getpid()), int32_t(a->fd), int32_t(a->dev), 0, a->size, a->id, a->nonce};
  memset(pHandle, 0, sizeof *pHandle);
  memcpy(pHandle->reserved, &w, sizeof w);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuIpcOpenMemHandle_v2(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned int Flags) {
  return ipc_open(pdptr, handle, Flags);
}
SIM_API CUresult cuIpcOpenMemHandle(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned int Flags) {
  return ipc_open(pdptr, handle, Flags);
}

SIM_API CUresult cuIpcCloseMemHandle(CUdeviceptr dptr) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  auto it = g->allocs.find(uintptr_t(dptr));
  if (it == g->allocs.end() || it->second->kind != Kind::IpcImport) return CUDA_ERROR_INVALID_VALUE;
  Alloc* a = it->second.get();
  if (--a->ipc_refs > 0) return CUDA_SUCCESS;
  g->ipc_imports.erase(a->ipc_key);
  destroy_alloc(a);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuMemGetHandleForAddressRange(void* handle, CUdeviceptr dptr, size_t size,
                                               CUmemRangeHandleType handleType,
                                               unsigned long long flags) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  if (!handle || handleType != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD || size == 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (flags & ~static_cast<unsigned long long>(CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE))
    return CUDA_ERROR_INVALID_VALUE;
  Alloc* a = find_alloc(uintptr_t(dptr));
  if (!a || !a->is_device_memory() || a->kind == Kind::Managed) return CUDA_ERROR_INVALID_VALUE;
  if ((uintptr_t(dptr) & 4095) || (size & 4095) || uintptr_t(dptr) + size > a->base + a->span)
    return CUDA_ERROR_INVALID_VALUE;
  int src = a->fd;
  if (a->kind == Kind::Vmm) src = a->phys->fd;
  if (a->kind == Kind::Pool || a->kind == Kind::PoolImport) src = a->pool->fd;
  // A new open file description of the backing memfd (not a dup: its file
  // position is its own). Simulator convention, used by the fake RDMA device
  // (src/rdma/fake_backend.cc): the position is where the exported range
  // starts in the memfd, as a real dma-buf fd starts at the range.
  size_t off = uintptr_t(dptr) - a->base;
  if (a->kind == Kind::Pool || a->kind == Kind::PoolImport) off += a->pool_off;
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", src);
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  if (lseek(fd, off_t(off), SEEK_SET) != off_t(off)) {
    close(fd);
    return CUDA_ERROR_INVALID_VALUE;
  }
  memcpy(handle, &fd, sizeof fd);
  return CUDA_SUCCESS;
}

static std::atomic<unsigned long> g_rdma_flushes{0};

SIM_API unsigned long gdrpipe_sim_rdma_flushes(void) { return g_rdma_flushes.load(); }

SIM_API CUresult cuFlushGPUDirectRDMAWrites(CUflushGPUDirectRDMAWritesTarget target,
                                            CUflushGPUDirectRDMAWritesScope scope) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  if (target != CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX) return CUDA_ERROR_INVALID_VALUE;
  if (scope != CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER &&
      scope != CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_ALL_DEVICES)
    return CUDA_ERROR_INVALID_VALUE;
  g_rdma_flushes.fetch_add(1);
  return CUDA_SUCCESS;
}
