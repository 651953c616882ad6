// cuGetProcAddress (legacy and _v2), error names/strings.
#include <cstring>

#include "sim_internal.hpp"

using namespace sim;

namespace {

// One row per exported body: (cuda.h base name, first CUDA version of this
// ABI, legacy-stream body, per-thread body or null).
struct ProcEntry {
  const char* name;
  int version;
  void* fn;
  void* fn_pt;
};

#define F(f) reinterpret_cast<void*>(&f)
const ProcEntry kProcs[] = {
    {"cuInit", 2000, F(cuInit), nullptr},
    {"cuDriverGetVersion", 2020, F(cuDriverGetVersion), nullptr},
    {"cuGetErrorName", 6000, F(cuGetErrorName), nullptr},
    {"cuGetErrorString", 6000, F(cuGetErrorString), nullptr},
    {"cuGetProcAddress", 11030, F(cuGetProcAddress), nullptr},
    {"cuGetProcAddress", 12000, F(cuGetProcAddress_v2), nullptr},
    {"cuDeviceGet", 2000, F(cuDeviceGet), nullptr},
    {"cuDeviceGetCount", 2000, F(cuDeviceGetCount), nullptr},
    {"cuDeviceGetAttribute", 2000, F(cuDeviceGetAttribute), nullptr},
    {"cuDeviceGetName", 2000, F(cuDeviceGetName), nullptr},
    {"cuDeviceGetUuid", 9020, F(cuDeviceGetUuid), nullptr},
    {"cuDeviceGetUuid", 11040, F(cuDeviceGetUuid_v2), nullptr},
    {"cuDeviceGetPCIBusId", 4010, F(cuDeviceGetPCIBusId), nullptr},
    {"cuDeviceCanAccessPeer", 4000, F(cuDeviceCanAccessPeer), nullptr},
    {"cuDeviceGetDefaultMemPool", 11020, F(cuDeviceGetDefaultMemPool), nullptr},
    {"cuDevicePrimaryCtxRetain", 7000, F(cuDevicePrimaryCtxRetain), nullptr},
    {"cuDevicePrimaryCtxRelease", 7000, F(cuDevicePrimaryCtxRelease), nullptr},
    {"cuDevicePrimaryCtxRelease", 11000, F(cuDevicePrimaryCtxRelease_v2), nullptr},
    {"cuCtxGetCurrent", 4000, F(cuCtxGetCurrent), nullptr},
    {"cuCtxSetCurrent", 4000, F(cuCtxSetCurrent), nullptr},
    {"cuCtxPushCurrent", 2000, F(cuCtxPushCurrent), nullptr},
    {"cuCtxPushCurrent", 4000, F(cuCtxPushCurrent_v2), nullptr},
    {"cuCtxPopCurrent", 2000, F(cuCtxPopCurrent), nullptr},
    {"cuCtxPopCurrent", 4000, F(cuCtxPopCurrent_v2), nullptr},
    {"cuCtxGetDevice", 2000, F(cuCtxGetDevice), nullptr},
    {"cuCtxSynchronize", 2000, F(cuCtxSynchronize), nullptr},
    {"cuCtxEnablePeerAccess", 4000, F(cuCtxEnablePeerAccess), nullptr},
    {"cuStreamCreate", 2000, F(cuStreamCreate), nullptr},
    {"cuStreamDestroy", 2000, F(cuStreamDestroy), nullptr},
    {"cuStreamDestroy", 4000, F(cuStreamDestroy_v2), nullptr},
    {"cuStreamSynchronize", 2000, F(cuStreamSynchronize), F(cuStreamSynchronize_ptsz)},
    {"cuStreamQuery", 2000, F(cuStreamQuery), F(cuStreamQuery_ptsz)},
    {"cuStreamWaitEvent", 3020, F(cuStreamWaitEvent), F(cuStreamWaitEvent_ptsz)},
    {"cuEventCreate", 2000, F(cuEventCreate), nullptr},
    {"cuEventRecord", 2000, F(cuEventRecord), F(cuEventRecord_ptsz)},
    {"cuEventQuery", 2000, F(cuEventQuery), nullptr},
    {"cuEventSynchronize", 2000, F(cuEventSynchronize), nullptr},
    {"cuEventDestroy", 2000, F(cuEventDestroy), nullptr},
    {"cuEventDestroy", 4000, F(cuEventDestroy_v2), nullptr},
    {"cuEventElapsedTime", 2000, F(cuEventElapsedTime), nullptr},
    {"cuEventElapsedTime", 12080, F(cuEventElapsedTime_v2), nullptr},
    {"cuMemcpy", 4000, F(cuMemcpy), F(cuMemcpy_ptds)},
    {"cuMemcpyAsync", 4000, F(cuMemcpyAsync), F(cuMemcpyAsync_ptsz)},
    {"cuMemcpyHtoD", 2000, F(cuMemcpyHtoD), nullptr},
    {"cuMemcpyHtoD", 3020, F(cuMemcpyHtoD_v2), F(cuMemcpyHtoD_v2_ptds)},
    {"cuMemcpyDtoH", 2000, F(cuMemcpyDtoH), nullptr},
    {"cuMemcpyDtoH", 3020, F(cuMemcpyDtoH_v2), F(cuMemcpyDtoH_v2_ptds)},
    {"cuMemcpyHtoDAsync", 2000, F(cuMemcpyHtoDAsync), nullptr},
    {"cuMemcpyHtoDAsync", 3020, F(cuMemcpyHtoDAsync_v2), F(cuMemcpyHtoDAsync_v2_ptsz)},
    {"cuMemcpyDtoHAsync", 2000, F(cuMemcpyDtoHAsync), nullptr},
    {"cuMemcpyDtoHAsync", 3020, F(cuMemcpyDtoHAsync_v2), F(cuMemcpyDtoHAsync_v2_ptsz)},
    {"cuMemcpyDtoDAsync", 2000, F(cuMemcpyDtoDAsync), nullptr},
    {"cuMemcpyDtoDAsync", 3020, F(cuMemcpyDtoDAsync_v2), F(cuMemcpyDtoDAsync_v2_ptsz)},
    {"cuMemcpyPeerAsync", 4000, F(cuMemcpyPeerAsync), F(cuMemcpyPeerAsync_ptsz)},
    {"cuModuleLoadData", 2000, F(cuModuleLoadData), nullptr},
    {"cuModuleUnload", 2000, F(cuModuleUnload), nullptr},
    {"cuModuleGetFunction", 2000, F(cuModuleGetFunction), nullptr},
    {"cuLaunchKernel", 4000, F(cuLaunchKernel), F(cuLaunchKernel_ptsz)},
    {"cuMemsetD8", 2000, F(cuMemsetD8), nullptr},
    {"cuMemsetD8", 3020, F(cuMemsetD8_v2), F(cuMemsetD8_v2_ptds)},
    {"cuMemGetInfo", 2000, F(cuMemGetInfo), nullptr},
    {"cuMemGetInfo", 3020, F(cuMemGetInfo_v2), nullptr},
    {"cuPointerGetAttribute", 4000, F(cuPointerGetAttribute), nullptr},
    {"cuPointerGetAttributes", 7000, F(cuPointerGetAttributes), nullptr},
    {"cuPointerSetAttribute", 6000, F(cuPointerSetAttribute), nullptr},
    {"cuMemGetAddressRange", 2000, F(cuMemGetAddressRange), nullptr},
    {"cuMemGetAddressRange", 3020, F(cuMemGetAddressRange_v2), nullptr},
    {"cuMemAlloc", 2000, F(cuMemAlloc), nullptr},
    {"cuMemAlloc", 3020, F(cuMemAlloc_v2), nullptr},
    {"cuMemAllocPitch", 2000, F(cuMemAllocPitch), nullptr},
    {"cuMemAllocPitch", 3020, F(cuMemAllocPitch_v2), nullptr},
    {"cuMemAllocManaged", 6000, F(cuMemAllocManaged), nullptr},
    {"cuMemFree", 2000, F(cuMemFree), nullptr},
    {"cuMemFree", 3020, F(cuMemFree_v2), nullptr},
    {"cuMemAllocHost", 2000, F(cuMemAllocHost), nullptr},
    {"cuMemAllocHost", 3020, F(cuMemAllocHost_v2), nullptr},
    {"cuMemHostAlloc", 2020, F(cuMemHostAlloc), nullptr},
    {"cuMemFreeHost", 2000, F(cuMemFreeHost), nullptr},
    {"cuMemHostRegister", 4000, F(cuMemHostRegister), nullptr},
    {"cuMemHostRegister", 6050, F(cuMemHostRegister_v2), nullptr},
    {"cuMemHostUnregister", 4000, F(cuMemHostUnregister), nullptr},
    {"cuMemHostGetDevicePointer", 2020, F(cuMemHostGetDevicePointer), nullptr},
    {"cuMemHostGetDevicePointer", 3020, F(cuMemHostGetDevicePointer_v2), nullptr},
    {"cuMemAllocAsync", 11020, F(cuMemAllocAsync), F(cuMemAllocAsync_ptsz)},
    {"cuMemFreeAsync", 11020, F(cuMemFreeAsync), F(cuMemFreeAsync_ptsz)},
    {"cuMemAllocFromPoolAsync", 11020, F(cuMemAllocFromPoolAsync), F(cuMemAllocFromPoolAsync_ptsz)},
    {"cuMemPoolCreate", 11020, F(cuMemPoolCreate), nullptr},
    {"cuMemPoolDestroy", 11020, F(cuMemPoolDestroy), nullptr},
    {"cuMemPoolTrimTo", 11020, F(cuMemPoolTrimTo), nullptr},
    {"cuMemPoolSetAccess", 11020, F(cuMemPoolSetAccess), nullptr},
    {"cuMemPoolExportToShareableHandle", 11020, F(cuMemPoolExportToShareableHandle), nullptr},
    {"cuMemPoolImportFromShareableHandle", 11020, F(cuMemPoolImportFromShareableHandle), nullptr},
    {"cuMemPoolExportPointer", 11020, F(cuMemPoolExportPointer), nullptr},
    {"cuMemPoolImportPointer", 11020, F(cuMemPoolImportPointer), nullptr},
    {"cuMemCreate", 10020, F(cuMemCreate), nullptr},
    {"cuMemRelease", 10020, F(cuMemRelease), nullptr},
    {"cuMemAddressReserve", 10020, F(cuMemAddressReserve), nullptr},
    {"cuMemAddressFree", 10020, F(cuMemAddressFree), nullptr},
    {"cuMemMap", 10020, F(cuMemMap), nullptr},
    {"cuMemUnmap", 10020, F(cuMemUnmap), nullptr},
    {"cuMemSetAccess", 10020, F(cuMemSetAccess), nullptr},
    {"cuMemGetAllocationGranularity", 10020, F(cuMemGetAllocationGranularity), nullptr},
    {"cuMemExportToShareableHandle", 10020, F(cuMemExportToShareableHandle), nullptr},
    {"cuMemImportFromShareableHandle", 10020, F(cuMemImportFromShareableHandle), nullptr},
    {"cuMemRetainAllocationHandle", 11000, F(cuMemRetainAllocationHandle), nullptr},
    {"cuIpcGetMemHandle", 4010, F(cuIpcGetMemHandle), nullptr},
    {"cuIpcOpenMemHandle", 4010, F(cuIpcOpenMemHandle), nullptr},
    {"cuIpcOpenMemHandle", 11000, F(cuIpcOpenMemHandle_v2), nullptr},
    {"cuIpcCloseMemHandle", 4010, F(cuIpcCloseMemHandle), nullptr},
    {"cuMemGetHandleForAddressRange", 11070, F(cuMemGetHandleForAddressRange), nullptr},
    {"cuFlushGPUDirectRDMAWrites", 11030, F(cuFlushGPUDirectRDMAWrites), nullptr},
};
#undef F

CUresult lookup(const char* symbol, void** pfn, int version, cuuint64_t flags,
                CUdriverProcAddressQueryResult* status) {
  CUdriverProcAddressQueryResult dummy;
  if (!status) status = &dummy;
  if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  if (version > 13000 || (flags & ~cuuint64_t(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                                               CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)))
    return CUDA_ERROR_INVALID_VALUE;
  const ProcEntry* best = nullptr;
  bool known = false;
  for (const auto& e : kProcs) {
    if (strcmp(e.name, symbol) != 0) continue;
    known = true;
    if (e.version <= version && (!best || e.version > best->version)) best = &e;
  }
  if (!best) {
    *status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
  }
  // DEFAULT (0) means legacy: the driver cannot know how the caller was compiled
  bool pt = flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  *pfn = pt && best->fn_pt ? best->fn_pt : best->fn;
  *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

struct ErrEntry {
  CUresult code;
  const char* name;
  const char* text;
};
// the core's list of codes and texts (src/cuda/error_codes.def)
#define GP_CU_ERR(c, t) {c, #c, t},
const ErrEntry kErrors[] = {
#include "../../src/cuda/error_codes.def"
};
#undef GP_CU_ERR

const ErrEntry* find_error(CUresult e) {
  for (const auto& x : kErrors)
    if (x.code == e) return &x;
  return nullptr;
}

}  // namespace

SIM_API CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  return lookup(symbol, pfn, cudaVersion, flags, nullptr);
}

SIM_API CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                                     CUdriverProcAddressQueryResult* symbolStatus) {
  return lookup(symbol, pfn, cudaVersion, flags, symbolStatus);
}

SIM_API CUresult cuGetErrorName(CUresult error, const char** pStr) {
  Lock lk(g_mu);  // (also keeps this export a non-leaf with a full prologue)
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  const ErrEntry* e = find_error(error);
  *pStr = e ? e->name : nullptr;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SIM_API CUresult cuGetErrorString(CUresult error, const char** pStr) {
  Lock lk(g_mu);
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  const ErrEntry* e = find_error(error);
  *pStr = e ? e->text : nullptr;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
