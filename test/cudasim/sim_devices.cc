// cuInit, device queries, primary contexts and the per-thread context stack.
#include <cstdio>
#include <cstring>

#include "sim_internal.hpp"

using namespace sim;

namespace {

CUresult check_dev(CUdevice d) {
  if (!g) return CUDA_ERROR_NOT_INITIALIZED;
  return (d >= 0 && d < g->ndev) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

int attribute_value(CUdevice_attribute a, int dev) {
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: return 9;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: return 0;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: return 0x18 + 0x10 * dev;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: return 0;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: return 132;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: return 1980000;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: return 3201000;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: return 6144;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: return 2;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
    case CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS:
      return 1;
    case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES:
      return CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    default: return 0;
  }
}

}  // namespace

SIM_API CUresult cuInit(unsigned int Flags) {
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  Lock lk(g_mu);
  return init_state();
}

SIM_API CUresult cuDriverGetVersion(int* driverVersion) {
  Lock lk(g_mu);  // (also keeps this export a non-leaf with a full prologue)
  if (!driverVersion) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = 13000;
  return CUDA_SUCCESS;
}

SIM_API CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  Lock lk(g_mu);
  if (CUresult r = check_dev(ordinal)) return r;
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

SIM_API CUresult cuDeviceGetCount(int* count) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  *count = g->ndev;
  return CUDA_SUCCESS;
}

SIM_API CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  Lock lk(g_mu);
  if (CUresult r = check_dev(dev)) return r;
  if (!pi || attrib < 1 || attrib >= CU_DEVICE_ATTRIBUTE_MAX) return CUDA_ERROR_INVALID_VALUE;
  *pi = attribute_value(attrib, dev);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  Lock lk(g_mu);
  if (CUresult r = check_dev(dev)) return r;
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  snprintf(name, size_t(len), "gdrpipe-sim %d", dev);
  return CUDA_SUCCESS;
}

static CUresult device_uuid(CUuuid* uuid, CUdevice dev) {
  Lock lk(g_mu);
  if (CUresult r = check_dev(dev)) return r;
  if (!uuid) return CUDA_ERROR_INVALID_VALUE;
  // deterministic per index: "GPSIM" + index + fixed pattern
  static const char kTag[] = "GPSIM";
  memcpy(uuid->bytes, kTag, 5);
  for (int i = 5; i < 16; i++) uuid->bytes[i] = char((dev * 31 + i * 7) & 0xff);
  uuid->bytes[5] = char(dev);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) { return device_uuid(uuid, dev); }
SIM_API CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) { return device_uuid(uuid, dev); }

SIM_API CUresult cuDeviceGetPCIBusId(char* pciBusId, int len, CUdevice dev) {
  Lock lk(g_mu);
  if (CUresult r = check_dev(dev)) return r;
  if (!pciBusId || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  snprintf(pciBusId, size_t(len), "0000:%02x:00.0", 0x18 + 0x10 * dev);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuDeviceCanAccessPeer(int* canAccessPeer, CUdevice dev, CUdevice peerDev) {
  Lock lk(g_mu);
  if (CUresult r = check_dev(dev)) return r;
  if (CUresult r = check_dev(peerDev)) return r;
  if (!canAccessPeer) return CUDA_ERROR_INVALID_VALUE;
  *canAccessPeer = dev != peerDev && g->topo.can_peer(dev, peerDev);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  Lock lk(g_mu);
  if (CUresult r = check_dev(dev)) return r;
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  auto& d = *g->devs[size_t(dev)];
  d.primary_refs++;
  *pctx = reinterpret_cast<CUcontext>(&d.ctx);
  return CUDA_SUCCESS;
}

static CUresult primary_release(CUdevice dev) {
  Lock lk(g_mu);
  if (CUresult r = check_dev(dev)) return r;
  auto& d = *g->devs[size_t(dev)];
  if (d.primary_refs <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  d.primary_refs--;
  return CUDA_SUCCESS;
}

SIM_API CUresult cuDevicePrimaryCtxRelease(CUdevice dev) { return primary_release(dev); }
SIM_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) { return primary_release(dev); }

// ------------------------------------------------------------- contexts --
static Ctx* to_ctx(CUcontext c) {
  for (auto& d : g->devs)
    if (reinterpret_cast<CUcontext>(&d->ctx) == c) return &d->ctx;
  return nullptr;
}

SIM_API CUresult cuCtxGetCurrent(CUcontext* pctx) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  *pctx = reinterpret_cast<CUcontext>(current_ctx());
  return CUDA_SUCCESS;
}

SIM_API CUresult cuCtxSetCurrent(CUcontext ctx) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  auto& st = ctx_stack();
  if (!ctx) {
    if (!st.empty()) st.pop_back();
    return CUDA_SUCCESS;
  }
  Ctx* c = to_ctx(ctx);
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  if (st.empty()) st.push_back(c);
  else st.back() = c;
  return CUDA_SUCCESS;
}

static CUresult ctx_push(CUcontext ctx) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  Ctx* c = to_ctx(ctx);
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  ctx_stack().push_back(c);
  return CUDA_SUCCESS;
}

static CUresult ctx_pop(CUcontext* pctx) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  auto& st = ctx_stack();
  if (st.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (pctx) *pctx = reinterpret_cast<CUcontext>(st.back());
  st.pop_back();
  return CUDA_SUCCESS;
}

SIM_API CUresult cuCtxPushCurrent(CUcontext ctx) { return ctx_push(ctx); }
SIM_API CUresult cuCtxPushCurrent_v2(CUcontext ctx) { return ctx_push(ctx); }
SIM_API CUresult cuCtxPopCurrent(CUcontext* pctx) { return ctx_pop(pctx); }
SIM_API CUresult cuCtxPopCurrent_v2(CUcontext* pctx) { return ctx_pop(pctx); }

SIM_API CUresult cuCtxGetDevice(CUdevice* device) {
  Lock lk(g_mu);
  Ctx* c;
  if (CUresult r = need_ctx(&c)) return r;
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  *device = c->dev;
  return CUDA_SUCCESS;
}

SIM_API CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags) {
  Lock lk(g_mu);
  Ctx* c;
  if (CUresult r = need_ctx(&c)) return r;
  Ctx* peer = to_ctx(peerContext);
  if (!peer) return CUDA_ERROR_INVALID_CONTEXT;
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (peer->dev == c->dev || !g->topo.can_peer(c->dev, peer->dev))
    return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
  auto& en = g->devs[size_t(c->dev)]->peer_enabled;
  if (en[size_t(peer->dev)]) return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
  en[size_t(peer->dev)] = true;
  return CUDA_SUCCESS;
}
