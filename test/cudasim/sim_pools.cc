// Stream-ordered memory pools: one memfd per pool (sparse, holes punched on
// trim); each block also gets its own VA span in the reserved range.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "sim_internal.hpp"

namespace sim {
namespace {

constexpr uint64_t kPoolMagic = 0x4c4f4f504d495350ull;  // "PSIMPOOL"
constexpr size_t kHeader = size_t(64) << 10;

struct PoolHeader {  // at offset 0 of the pool's memfd
  uint64_t magic;
  uint64_t nonce;
  int32_t dev;
};

struct PtrWire {  // lives in CUmemPoolPtrExportData::reserved (64 bytes)
  uint64_t magic;
  uint64_t nonce;
  uint64_t offset;
  uint64_t size;
  uint64_t span;
  uint64_t buffer_id;
};
static_assert(sizeof(PtrWire) <= sizeof(CUmemPoolPtrExportData), "export data too small");

Pool* to_pool(CUmemoryPool h) {
  auto* p = reinterpret_cast<Pool*>(h);
  return g && g->pools.count(p) ? p : nullptr;
}

CUresult create_pool(int dev, bool exportable, bool is_default, Pool** out) {
  auto p = std::make_unique<Pool>();
  p->cap = kHeader + g->dev_mem;
  if (CUresult r = new_memfd(p->cap, dev, nullptr, &p->nonce, &p->fd)) return r;
  PoolHeader h{kPoolMagic, p->nonce, dev};
  if (pwrite(p->fd, &h, sizeof h, 0) != ssize_t(sizeof h)) {
    close(p->fd);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  p->dev = dev;
  p->exportable = exportable;
  p->is_default = is_default;
  p->offs.init(kHeader, g->dev_mem);
  *out = p.get();
  g->pools.insert(p.release());
  return CUDA_SUCCESS;
}

void destroy_pool(Pool* p) {
  std::vector<Alloc*> mine;
  for (auto& kv : g->allocs)
    if (kv.second->pool == p) mine.push_back(kv.second.get());
  for (Alloc* a : mine) {
    if (a->kind == Kind::PoolImport) g->ipc_imports.erase(a->ipc_key);
    destroy_alloc(a);
  }
  close(p->fd);
  g->pools.erase(p);
  delete p;
}

CUresult pool_alloc(CUdeviceptr* dptr, size_t size, Pool* p, CUstream h, bool pt) {
  Stream* s;
  if (CUresult r = get_stream(h, pt, &s)) return r;
  if (!dptr || size == 0 || p->imported) return CUDA_ERROR_INVALID_VALUE;
  size_t align;
  size_t span = round_span(size, &align);
  // reuse a cached block of the same span: same address, new buffer id
  for (auto it = p->cached.begin(); it != p->cached.end(); ++it) {
    Alloc* a = *it;
    if (a->span != span) continue;
    p->cached.erase(it);
    auto node = g->allocs.extract(a->base);
    node.mapped()->pool_freed = false;
    node.mapped()->size = size;
    Alloc* raw = add_alloc(std::move(node.mapped()));
    *dptr = raw->base;
    return CUDA_SUCCESS;
  }
  Device& d = *g->devs[size_t(p->dev)];
  if (d.used + span > g->dev_mem) return CUDA_ERROR_OUT_OF_MEMORY;
  uintptr_t off = p->offs.alloc(span, align);
  if (!off) return CUDA_ERROR_OUT_OF_MEMORY;
  uintptr_t va;
  if (CUresult r = map_device_range(span, p->fd, off, &va)) {
    p->offs.free(off, span);
    return r;
  }
  auto a = std::make_unique<Alloc>();
  a->backing = map_alias(p->fd, off, span);
  if (!a->backing) {
    release_va(va, span);
    p->offs.free(off, span);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  a->base = va;
  a->size = size;
  a->span = span;
  a->kind = Kind::Pool;
  a->dev = p->dev;
  a->pool = p;
  a->pool_off = off;
  d.used += span;
  *dptr = add_alloc(std::move(a))->base;
  return CUDA_SUCCESS;
}

CUresult free_async(CUdeviceptr ptr, CUstream h, bool pt) {
  Lock lk(g_mu);
  Stream* s;
  if (CUresult r = get_stream(h, pt, &s)) return r;
  auto it = g->allocs.find(uintptr_t(ptr));
  if (it == g->allocs.end()) return CUDA_ERROR_INVALID_VALUE;
  Alloc* a = it->second.get();
  if ((a->kind != Kind::Pool && a->kind != Kind::PoolImport) || a->pool_freed || a->free_pending)
    return CUDA_ERROR_INVALID_VALUE;
  a->free_pending = true;
  uintptr_t base = a->base;
  uint64_t id = a->id;
  Op op;
  op.fn = [base, id] {  // the free takes effect in stream order
    std::lock_guard<std::mutex> l(g_mu);
    auto it2 = g->allocs.find(base);
    if (it2 == g->allocs.end() || it2->second->id != id) return;
    Alloc* b = it2->second.get();
    b->free_pending = false;
    if (b->kind == Kind::PoolImport) {
      destroy_alloc(b);
      return;
    }
    b->pool_freed = true;
    b->pool->cached.push_back(b);
  };
  enqueue(s, std::move(op));
  return CUDA_SUCCESS;
}

}  // namespace

void pool_trim(Pool* p, size_t keep) {
  size_t cached = 0;
  for (Alloc* a : p->cached) cached += a->span;
  while (cached > keep && !p->cached.empty()) {
    Alloc* a = p->cached.front();
    p->cached.erase(p->cached.begin());
    cached -= a->span;
    destroy_alloc(a);
  }
}

void trim_all_pools() {
  for (Pool* p : g->pools) pool_trim(p, 0);  // release threshold 0 (the default)
}

}  // namespace sim

using namespace sim;

SIM_API CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool_out, CUdevice dev) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  if (dev < 0 || dev >= g->ndev) return CUDA_ERROR_INVALID_DEVICE;
  if (!pool_out) return CUDA_ERROR_INVALID_VALUE;
  Device& d = *g->devs[size_t(dev)];
  if (!d.default_pool)
    if (CUresult r = create_pool(dev, false, true, &d.default_pool)) return r;
  *pool_out = reinterpret_cast<CUmemoryPool>(d.default_pool);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  if (!pool || !props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      props->location.type != CU_MEM_LOCATION_TYPE_DEVICE || props->location.id < 0 ||
      props->location.id >= g->ndev)
    return CUDA_ERROR_INVALID_VALUE;
  if (props->handleTypes & ~unsigned(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
    return CUDA_ERROR_NOT_SUPPORTED;
  Pool* p;
  if (CUresult r = create_pool(props->location.id,
                               props->handleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, false, &p))
    return r;
  *pool = reinterpret_cast<CUmemoryPool>(p);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  Pool* p = to_pool(pool);
  if (!p || p->is_default) return CUDA_ERROR_INVALID_VALUE;
  destroy_pool(p);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  Pool* p = to_pool(pool);
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  pool_trim(p, minBytesToKeep);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc* map, size_t count) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  if (!to_pool(pool) || (!map && count)) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; i++)
    if (map[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || map[i].location.id < 0 ||
        map[i].location.id >= g->ndev)
      return CUDA_ERROR_INVALID_DEVICE;
  return CUDA_SUCCESS;  // every device can always reach pool memory here
}

static CUresult alloc_async(CUdeviceptr* dptr, size_t size, CUstream h, bool pt) {
  Lock lk(g_mu);
  Ctx* c;
  if (CUresult r = need_ctx(&c)) return r;
  Device& d = *g->devs[size_t(c->dev)];
  if (!d.default_pool)
    if (CUresult r = create_pool(c->dev, false, true, &d.default_pool)) return r;
  return pool_alloc(dptr, size, d.default_pool, h, pt);
}

static CUresult alloc_from_pool(CUdeviceptr* dptr, size_t size, CUmemoryPool pool, CUstream h, bool pt) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  Pool* p = to_pool(pool);
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  return pool_alloc(dptr, size, p, h, pt);
}

SIM_API CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t size, CUstream h) {
  return alloc_async(dptr, size, h, false);
}
SIM_API CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t size, CUstream h) {
  return alloc_async(dptr, size, h, true);
}
SIM_API CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t size, CUmemoryPool pool, CUstream h) {
  return alloc_from_pool(dptr, size, pool, h, false);
}
SIM_API CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t size, CUmemoryPool pool,
                                              CUstream h) {
  return alloc_from_pool(dptr, size, pool, h, true);
}
SIM_API CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream h) { return free_async(dptr, h, false); }
SIM_API CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream h) { return free_async(dptr, h, true); }

SIM_API CUresult cuMemPoolExportToShareableHandle(void* handle_out, CUmemoryPool pool,
                                                  CUmemAllocationHandleType handleType,
                                                  unsigned long long flags) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  Pool* p = to_pool(pool);
  if (!p || !handle_out || flags != 0 || handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ||
      !p->exportable || p->imported)
    return CUDA_ERROR_INVALID_VALUE;
  int fd = fcntl(p->fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  memcpy(handle_out, &fd, sizeof fd);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuMemPoolImportFromShareableHandle(CUmemoryPool* pool_out, void* handle,
                                                    CUmemAllocationHandleType handleType,
                                                    unsigned long long flags) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  if (!pool_out || flags != 0 || handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
    return CUDA_ERROR_INVALID_VALUE;
  int in = int(reinterpret_cast<intptr_t>(handle));
  PoolHeader h{};
  if (pread(in, &h, sizeof h, 0) != ssize_t(sizeof h) || h.magic != kPoolMagic || h.dev < 0 ||
      h.dev >= g->ndev)
    return CUDA_ERROR_INVALID_VALUE;
  int fd = fcntl(in, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return CUDA_ERROR_INVALID_VALUE;
  auto* p = new Pool;
  p->fd = fd;
  p->dev = h.dev;
  p->nonce = h.nonce;
  p->imported = true;
  g->pools.insert(p);
  *pool_out = reinterpret_cast<CUmemoryPool>(p);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuMemPoolExportPointer(CUmemPoolPtrExportData* shareData_out, CUdeviceptr ptr) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  Alloc* a = find_alloc(uintptr_t(ptr));
  if (!shareData_out || !a || a->kind != Kind::Pool || a->pool_freed || !a->pool->exportable)
    return CUDA_ERROR_INVALID_VALUE;
  PtrWire w{kPoolMagic, a->pool->nonce, a->pool_off, a->size, a->span, a->id};
  memset(shareData_out, 0, sizeof *shareData_out);
  memcpy(shareData_out->reserved, &w, sizeof w);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuMemPoolImportPointer(CUdeviceptr* ptr_out, CUmemoryPool pool,
                                        CUmemPoolPtrExportData* shareData) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  Pool* p = to_pool(pool);
  if (!ptr_out || !p || !shareData || !p->imported) return CUDA_ERROR_INVALID_VALUE;
  PtrWire w;
  memcpy(&w, shareData->reserved, sizeof w);
  if (w.magic != kPoolMagic || w.nonce != p->nonce || w.span == 0) return CUDA_ERROR_INVALID_VALUE;
  uintptr_t va;
  if (map_device_range(w.span, p->fd, w.offset, &va) != CUDA_SUCCESS) return CUDA_ERROR_MAP_FAILED;
  auto a = std::make_unique<Alloc>();
  a->backing = map_alias(p->fd, w.offset, w.span);
  if (!a->backing) {
    release_va(va, w.span);
    return CUDA_ERROR_MAP_FAILED;
  }
  a->base = va;
  a->size = w.size;
  a->span = w.span;
  a->kind = Kind::PoolImport;
  a->dev = p->dev;
  a->pool = p;
  a->pool_off = w.offset;
  *ptr_out = add_alloc(std::move(a))->base;
  return CUDA_SUCCESS;
}
