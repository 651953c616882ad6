// Virtual memory management: cuMemCreate (a memfd), address reservations,
// map/unmap, access, shareable POSIX fd handles.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "sim_internal.hpp"

using namespace sim;

namespace {

constexpr size_t kGran = size_t(2) << 20;

Phys* to_phys(CUmemGenericAllocationHandle h) {
  auto* p = reinterpret_cast<Phys*>(uintptr_t(h));
  return g && g->phys.count(p) ? p : nullptr;
}

void phys_unref(Phys* p) {
  if (--p->refs > 0) return;
  g->devs[size_t(p->dev)]->used -= p->size;
  close(p->fd);
  g->phys.erase(p);
  delete p;
}

bool in_reservation(uintptr_t p, size_t size) {
  auto it = g->reservations.upper_bound(p);
  if (it == g->reservations.begin()) return false;
  --it;
  return p >= it->first && p + size <= it->first + it->second;
}

CUresult check_prop(const CUmemAllocationProp* prop) {
  if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
      prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE || prop->location.id < 0 ||
      prop->location.id >= g->ndev)
    return CUDA_ERROR_INVALID_VALUE;
  if (prop->requestedHandleTypes & ~unsigned(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
    return CUDA_ERROR_NOT_SUPPORTED;
  return CUDA_SUCCESS;
}

Phys* new_phys(int fd, size_t size, int dev, bool exportable) {
  auto* p = new Phys;
  p->fd = fd;
  p->size = size;
  p->dev = dev;
  p->exportable = exportable;
  g->phys.insert(p);
  return p;
}

}  // namespace

SIM_API CUresult cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                               CUmemAllocationGranularity_flags option) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  if (!granularity) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_prop(prop)) return r;
  (void)option;
  *granularity = kGran;
  return CUDA_SUCCESS;
}

SIM_API CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                             const CUmemAllocationProp* prop, unsigned long long flags) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  if (!handle || flags != 0 || size == 0 || size % kGran) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = check_prop(prop)) return r;
  Device& d = *g->devs[size_t(prop->location.id)];
  if (d.used + size > g->dev_mem) return CUDA_ERROR_OUT_OF_MEMORY;
  int fd;
  if (CUresult r = new_memfd(size, prop->location.id, nullptr, nullptr, &fd)) return r;
  d.used += size;
  Phys* p = new_phys(fd, size, prop->location.id,
                     prop->requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  *handle = reinterpret_cast<uintptr_t>(p);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  Phys* p = to_phys(handle);
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  phys_unref(p);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment,
                                     CUdeviceptr addr, unsigned long long flags) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  if (!ptr || size == 0 || size % kGran || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  (void)addr;  // the hint is ignored, as the real driver may do
  size_t align = alignment > kGran ? alignment : kGran;
  if (align & (align - 1)) return CUDA_ERROR_INVALID_VALUE;
  uintptr_t va = g->va.alloc(size, align);
  if (!va) return CUDA_ERROR_OUT_OF_MEMORY;
  g->reservations[va] = size;
  *ptr = va;
  return CUDA_SUCCESS;
}

SIM_API CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  auto it = g->reservations.find(uintptr_t(ptr));
  if (it == g->reservations.end() || it->second != size) return CUDA_ERROR_INVALID_VALUE;
  auto m = g->allocs.lower_bound(uintptr_t(ptr));
  if (m != g->allocs.end() && m->first < ptr + size) return CUDA_ERROR_INVALID_VALUE;  // still mapped
  g->reservations.erase(it);
  g->va.free(uintptr_t(ptr), size);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                          CUmemGenericAllocationHandle handle, unsigned long long flags) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  Phys* p = to_phys(handle);
  if (!p || flags != 0 || size == 0 || size % kGran || offset % kGran || offset + size > p->size)
    return CUDA_ERROR_INVALID_VALUE;
  if (!in_reservation(uintptr_t(ptr), size)) return CUDA_ERROR_INVALID_VALUE;
  auto m = g->allocs.lower_bound(uintptr_t(ptr));
  if ((m != g->allocs.end() && m->first < ptr + size) || find_alloc(uintptr_t(ptr)))
    return CUDA_ERROR_INVALID_VALUE;  // overlaps a mapping
  if (mmap(reinterpret_cast<void*>(ptr), size, PROT_NONE, MAP_SHARED | MAP_FIXED, p->fd,
           off_t(offset)) == MAP_FAILED)
    return CUDA_ERROR_OUT_OF_MEMORY;
  auto a = std::make_unique<Alloc>();
  a->backing = map_alias(p->fd, offset, size);
  if (!a->backing) return CUDA_ERROR_OUT_OF_MEMORY;
  a->base = uintptr_t(ptr);
  a->size = size;
  a->kind = Kind::Vmm;
  a->dev = p->dev;
  a->phys = p;
  a->accessible = false;  // until cuMemSetAccess
  p->refs++;
  add_alloc(std::move(a));
  return CUDA_SUCCESS;
}

SIM_API CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  std::vector<Alloc*> victims;
  for (auto it = g->allocs.lower_bound(uintptr_t(ptr)); it != g->allocs.end() && it->first < ptr + size; ++it)
    victims.push_back(it->second.get());
  if (victims.empty()) return CUDA_ERROR_INVALID_VALUE;
  for (Alloc* a : victims)
    if (a->kind != Kind::Vmm || a->base + a->size > ptr + size) return CUDA_ERROR_INVALID_VALUE;
  for (Alloc* a : victims) {
    Phys* p = a->phys;
    destroy_alloc(a);
    phys_unref(p);
  }
  return CUDA_SUCCESS;
}

SIM_API CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  if (!desc || count == 0) return CUDA_ERROR_INVALID_VALUE;
  bool rw = false;
  for (size_t i = 0; i < count; i++) {
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || desc[i].location.id < 0 ||
        desc[i].location.id >= g->ndev)
      return CUDA_ERROR_INVALID_DEVICE;
    rw |= desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE;
  }
  size_t covered = 0;
  for (auto it = g->allocs.lower_bound(uintptr_t(ptr)); it != g->allocs.end() && it->first < ptr + size; ++it) {
    if (it->second->kind != Kind::Vmm) return CUDA_ERROR_INVALID_VALUE;
    covered += it->second->size;
  }
  if (covered != size) return CUDA_ERROR_INVALID_VALUE;  // must be fully mapped
  for (auto it = g->allocs.lower_bound(uintptr_t(ptr)); it != g->allocs.end() && it->first < ptr + size; ++it)
    it->second->accessible = rw;
  return CUDA_SUCCESS;
}

SIM_API CUresult cuMemExportToShareableHandle(void* shareableHandle, CUmemGenericAllocationHandle handle,
                                              CUmemAllocationHandleType handleType,
                                              unsigned long long flags) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  Phys* p = to_phys(handle);
  if (!p || !shareableHandle || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR || !p->exportable)
    return CUDA_ERROR_INVALID_VALUE;
  int fd = fcntl(p->fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  memcpy(shareableHandle, &fd, sizeof fd);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle* handle, void* osHandle,
                                                CUmemAllocationHandleType shHandleType) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  if (!handle || shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
    return CUDA_ERROR_INVALID_VALUE;
  int in = int(reinterpret_cast<intptr_t>(osHandle));
  struct stat st;
  if (fstat(in, &st) != 0 || st.st_size <= 0 || size_t(st.st_size) % kGran)
    return CUDA_ERROR_INVALID_VALUE;
  int fd = fcntl(in, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return CUDA_ERROR_INVALID_VALUE;
  int dev = memfd_device(fd);  // the exporter's device, from the memfd name
  if (dev < 0 || dev >= g->ndev) dev = 0;
  Phys* p = new_phys(fd, size_t(st.st_size), dev, true);
  g->devs[size_t(dev)]->used += p->size;
  *handle = reinterpret_cast<uintptr_t>(p);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* addr) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  Alloc* a = find_alloc(reinterpret_cast<uintptr_t>(addr));
  if (!handle || !a || a->kind != Kind::Vmm) return CUDA_ERROR_INVALID_VALUE;
  a->phys->refs++;
  *handle = reinterpret_cast<uintptr_t>(a->phys);
  return CUDA_SUCCESS;
}
