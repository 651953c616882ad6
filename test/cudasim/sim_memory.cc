// Device, managed and pinned host memory; pointer attributes.
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "sim_internal.hpp"

namespace sim {

// cuMemAlloc / cuMemAllocManaged: one memfd + one VA span per allocation.
CUresult alloc_device(size_t size, Kind kind, int dev, Alloc** out) {
  if (size == 0) return CUDA_ERROR_INVALID_VALUE;
  size_t span = round_span(size, nullptr);
  Device& d = *g->devs[size_t(dev)];
  if (d.used + span > g->dev_mem) return CUDA_ERROR_OUT_OF_MEMORY;
  auto a = std::make_unique<Alloc>();
  if (CUresult r = new_memfd(span, dev, &a->memfd_tag, &a->nonce, &a->fd)) return r;
  uintptr_t va;
  if (CUresult r = map_device_range(span, a->fd, 0, &va)) {
    close(a->fd);
    return r;
  }
  if (kind == Kind::Managed)  // CPU-accessible: the user VA itself is RW
    mmap(reinterpret_cast<void*>(va), span, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, a->fd, 0);
  a->backing = map_alias(a->fd, 0, span);
  if (!a->backing) {
    release_va(va, span);
    close(a->fd);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  a->base = va;
  a->size = size;
  a->span = span;
  a->kind = kind;
  a->dev = dev;
  d.used += span;
  *out = add_alloc(std::move(a));
  return CUDA_SUCCESS;
}

}  // namespace sim

using namespace sim;

static CUresult mem_alloc(CUdeviceptr* dptr, size_t size, Kind kind) {
  Lock lk(g_mu);
  Ctx* c;
  if (CUresult r = need_ctx(&c)) return r;
  if (!dptr) return CUDA_ERROR_INVALID_VALUE;
  Alloc* a;
  if (CUresult r = alloc_device(size, kind, c->dev, &a)) return r;
  *dptr = a->base;
  return CUDA_SUCCESS;
}

static CUresult mem_free(CUdeviceptr p) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  if (!p) return CUDA_SUCCESS;
  auto it = g->allocs.find(uintptr_t(p));
  if (it == g->allocs.end()) return CUDA_ERROR_INVALID_VALUE;
  Alloc* a = it->second.get();
  switch (a->kind) {
    case Kind::Device:
    case Kind::Managed:
    case Kind::PoolImport:
      destroy_alloc(a);
      return CUDA_SUCCESS;
    case Kind::Pool:  // synchronous free of stream-ordered memory
      if (a->pool_freed || a->free_pending) return CUDA_ERROR_INVALID_VALUE;
      a->pool_freed = true;
      a->pool->cached.push_back(a);
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

static CUresult alloc_pitch(CUdeviceptr* dptr, size_t* pitch, size_t w, size_t h, unsigned elem) {
  if (!pitch || (elem != 4 && elem != 8 && elem != 16) || !w || !h) return CUDA_ERROR_INVALID_VALUE;
  size_t p = (w + 511) & ~size_t(511);
  CUresult r = mem_alloc(dptr, p * h, Kind::Device);
  if (r == CUDA_SUCCESS) *pitch = p;
  return r;
}

SIM_API CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  return mem_alloc(dptr, bytesize, Kind::Device);
}
SIM_API CUresult cuMemFree_v2(CUdeviceptr dptr) { return mem_free(dptr); }
SIM_API CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t w, size_t h,
                                    unsigned int elem) {
  return alloc_pitch(dptr, pPitch, w, h, elem);
}
SIM_API CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) return CUDA_ERROR_INVALID_VALUE;
  return mem_alloc(dptr, bytesize, Kind::Managed);
}

// Legacy 32-bit exports: device addresses of the simulator never fit in 32
// bits, so the allocating ones fail with CUDA_ERROR_NOT_SUPPORTED.
SIM_API CUresult cuMemAlloc(CUdeviceptr_v1* dptr, unsigned int bytesize) {
  CUdeviceptr p = 0;
  if (!dptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = mem_alloc(&p, bytesize, Kind::Device)) return r;
  if (p >> 32) {
    mem_free(p);
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  *dptr = CUdeviceptr_v1(p);
  return CUDA_SUCCESS;
}
SIM_API CUresult cuMemFree(CUdeviceptr_v1 dptr) { return mem_free(dptr); }
SIM_API CUresult cuMemAllocPitch(CUdeviceptr_v1* dptr, unsigned int* pPitch, unsigned int w,
                                 unsigned int h, unsigned int elem) {
  CUdeviceptr p = 0;
  size_t pitch = 0;
  if (!dptr || !pPitch) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = alloc_pitch(&p, &pitch, w, h, elem)) return r;
  if (p >> 32) {
    mem_free(p);
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  *dptr = CUdeviceptr_v1(p);
  *pPitch = unsigned(pitch);
  return CUDA_SUCCESS;
}

// ------------------------------------------------------------ host memory --
static CUresult host_alloc(void** pp, size_t size) {
  Lock lk(g_mu);
  Ctx* c;
  if (CUresult r = need_ctx(&c)) return r;
  if (!pp || size == 0) return CUDA_ERROR_INVALID_VALUE;
  size_t span = (size + 4095) & ~size_t(4095);
  void* p = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  auto a = std::make_unique<Alloc>();
  a->base = reinterpret_cast<uintptr_t>(p);
  a->size = size;
  a->span = span;
  a->kind = Kind::PinnedHost;
  a->dev = c->dev;
  add_alloc(std::move(a));
  *pp = p;
  return CUDA_SUCCESS;
}

SIM_API CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
  if (Flags & ~unsigned(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
                        CU_MEMHOSTALLOC_WRITECOMBINED))
    return CUDA_ERROR_INVALID_VALUE;
  return host_alloc(pp, bytesize);
}
SIM_API CUresult cuMemAllocHost_v2(void** pp, size_t bytesize) { return host_alloc(pp, bytesize); }
SIM_API CUresult cuMemAllocHost(void** pp, unsigned int bytesize) { return host_alloc(pp, bytesize); }

SIM_API CUresult cuMemFreeHost(void* p) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  auto it = g->allocs.find(reinterpret_cast<uintptr_t>(p));
  if (it == g->allocs.end() || it->second->kind != Kind::PinnedHost) return CUDA_ERROR_INVALID_VALUE;
  destroy_alloc(it->second.get());
  return CUDA_SUCCESS;
}

static CUresult host_register(void* p, size_t size, unsigned flags) {
  Lock lk(g_mu);
  Ctx* c;
  if (CUresult r = need_ctx(&c)) return r;
  (void)flags;
  if (!p || size == 0) return CUDA_ERROR_INVALID_VALUE;
  uintptr_t b = reinterpret_cast<uintptr_t>(p);
  if (g->va.contains(b)) return CUDA_ERROR_INVALID_VALUE;
  auto it = g->allocs.lower_bound(b);
  if ((it != g->allocs.end() && it->first < b + size) || find_alloc(b))
    return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  auto a = std::make_unique<Alloc>();
  a->base = b;
  a->size = size;
  a->kind = Kind::Registered;
  a->dev = c->dev;
  add_alloc(std::move(a));
  return CUDA_SUCCESS;
}

SIM_API CUresult cuMemHostRegister_v2(void* p, size_t bytesize, unsigned int Flags) {
  return host_register(p, bytesize, Flags);
}
SIM_API CUresult cuMemHostRegister(void* p, size_t bytesize, unsigned int Flags) {
  return host_register(p, bytesize, Flags);
}

SIM_API CUresult cuMemHostUnregister(void* p) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  auto it = g->allocs.find(reinterpret_cast<uintptr_t>(p));
  if (it == g->allocs.end() || it->second->kind != Kind::Registered)
    return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  destroy_alloc(it->second.get());
  return CUDA_SUCCESS;
}

static CUresult host_dev_ptr(CUdeviceptr* out, void* p, unsigned flags) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  if (!out || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  Alloc* a = find_alloc(reinterpret_cast<uintptr_t>(p));
  if (!a || a->is_device_memory()) return CUDA_ERROR_INVALID_VALUE;
  *out = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* pdptr, void* p, unsigned int Flags) {
  return host_dev_ptr(pdptr, p, Flags);
}
SIM_API CUresult cuMemHostGetDevicePointer(CUdeviceptr_v1* pdptr, void* p, unsigned int Flags) {
  CUdeviceptr d = 0;
  if (!pdptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = host_dev_ptr(&d, p, Flags)) return r;
  if (d >> 32) return CUDA_ERROR_NOT_SUPPORTED;
  *pdptr = CUdeviceptr_v1(d);
  return CUDA_SUCCESS;
}

// --------------------------------------------------------- address range --
static CUresult address_range(CUdeviceptr* base, size_t* size, CUdeviceptr p) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  Alloc* a = find_alloc(uintptr_t(p));
  if (!a || !a->is_device_memory()) return CUDA_ERROR_NOT_FOUND;
  if (base) *base = a->base;
  if (size) *size = a->size;
  return CUDA_SUCCESS;
}

SIM_API CUresult cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {
  return address_range(pbase, psize, dptr);
}
SIM_API CUresult cuMemGetAddressRange(CUdeviceptr_v1* pbase, unsigned int* psize,
                                      CUdeviceptr_v1 dptr) {
  CUdeviceptr b = 0;
  size_t s = 0;
  if (CUresult r = address_range(&b, &s, dptr)) return r;
  if (pbase) *pbase = CUdeviceptr_v1(b);
  if (psize) *psize = unsigned(s);
  return CUDA_SUCCESS;
}

static CUresult mem_info(size_t* free_b, size_t* total) {
  Lock lk(g_mu);
  Ctx* c;
  if (CUresult r = need_ctx(&c)) return r;
  size_t used = g->devs[size_t(c->dev)]->used;
  if (free_b) *free_b = g->dev_mem - used;
  if (total) *total = g->dev_mem;
  return CUDA_SUCCESS;
}

SIM_API CUresult cuMemGetInfo_v2(size_t* free_b, size_t* total) { return mem_info(free_b, total); }
SIM_API CUresult cuMemGetInfo(unsigned int* free_b, unsigned int* total) {
  size_t f = 0, t = 0;
  if (CUresult r = mem_info(&f, &t)) return r;
  const size_t cap = 0xffffffffu;
  if (free_b) *free_b = unsigned(f < cap ? f : cap);
  if (total) *total = unsigned(t < cap ? t : cap);
  return CUDA_SUCCESS;
}

// ----------------------------------------------------- pointer attributes --
namespace {

size_t attr_size(CUpointer_attribute a) {
  switch (a) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
      return 8;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
    case CU_POINTER_ATTRIBUTE_MAPPED:
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
      return 4;
    default:
      return 0;
  }
}

template <class T>
void put(void* data, T v) {
  memcpy(data, &v, sizeof v);
}

CUresult get_attr(const Alloc* a, uintptr_t p, CUpointer_attribute attr, void* data) {
  bool devmem = a->is_device_memory();
  switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      put(data, reinterpret_cast<CUcontext>(&g->devs[size_t(a->dev)]->ctx));
      break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      // managed memory reports DEVICE plus IS_MANAGED=1, as the real driver
      put(data, unsigned(devmem ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST));
      break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      put(data, CUdeviceptr(p));
      break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      if (devmem && a->kind != Kind::Managed) return CUDA_ERROR_INVALID_VALUE;
      put(data, reinterpret_cast<void*>(p));
      break;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
      put(data, unsigned(a->sync_memops));
      break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
      put(data, static_cast<unsigned long long>(a->id));
      break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      put(data, unsigned(a->kind == Kind::Managed));
      break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      put(data, a->dev);
      break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: {
      uintptr_t b = a->base;
      size_t s = a->size;
      if (a->kind == Kind::Vmm) {  // the reserved range, as documented
        auto it = g->reservations.upper_bound(a->base);
        --it;
        b = it->first;
        s = it->second;
      }
      if (attr == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR) put(data, CUdeviceptr(b));
      else put(data, size_t(s));
      break;
    }
    case CU_POINTER_ATTRIBUTE_MAPPED:
      put(data, 1u);
      break;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
      put(data, unsigned(a->kind == Kind::Device));
      break;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES: {
      unsigned long long t = 0;
      if (a->kind == Kind::Vmm && a->phys->exportable) t = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
      if (a->kind == Kind::Pool && a->pool->exportable) t = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
      put(data, t);
      break;
    }
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
      if (a->kind != Kind::Pool && a->kind != Kind::PoolImport) return CUDA_ERROR_INVALID_VALUE;
      put(data, reinterpret_cast<CUmemoryPool>(a->pool));
      break;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
      put(data, unsigned(a->accessible ? CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE
                                       : CU_POINTER_ATTRIBUTE_ACCESS_FLAG_NONE));
      break;
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
      put(data, unsigned(devmem && a->kind != Kind::Managed));
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

}  // namespace

SIM_API CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  if (!data) return CUDA_ERROR_INVALID_VALUE;
  Alloc* a = find_alloc(uintptr_t(ptr));
  if (!a) return CUDA_ERROR_INVALID_VALUE;
  return get_attr(a, uintptr_t(ptr), attribute, data);
}

SIM_API CUresult cuPointerGetAttributes(unsigned int n, CUpointer_attribute* attrs, void** data,
                                        CUdeviceptr ptr) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  if (!attrs || !data) return CUDA_ERROR_INVALID_VALUE;
  Alloc* a = find_alloc(uintptr_t(ptr));
  for (unsigned i = 0; i < n; i++) {
    if (!data[i]) return CUDA_ERROR_INVALID_VALUE;
    size_t sz = attr_size(attrs[i]);
    if (!sz) return CUDA_ERROR_INVALID_VALUE;
    memset(data[i], 0, sz);
    if (!a) {  // not a CUDA pointer: default NULL values (ordinal: -2, none)
      if (attrs[i] == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) put(data[i], -2);
      continue;
    }
    get_attr(a, uintptr_t(ptr), attrs[i], data[i]);  // inapplicable ones stay 0
  }
  return CUDA_SUCCESS;
}

SIM_API CUresult cuPointerSetAttribute(const void* value, CUpointer_attribute attribute,
                                       CUdeviceptr ptr) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  Alloc* a = find_alloc(uintptr_t(ptr));
  if (!a || !value) return CUDA_ERROR_INVALID_VALUE;
  if (attribute != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS) return CUDA_ERROR_INVALID_VALUE;
  unsigned v;
  memcpy(&v, value, sizeof v);
  a->sync_memops = v != 0;
  return CUDA_SUCCESS;
}
