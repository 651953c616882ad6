#include <dlfcn.h>
#include <sys/mman.h>
// Cross-process sharing: legacy IPC handles, VMM POSIX-fd export, pools.
#include <fcntl.h>

#include <cstring>
#include <vector>

#include "test_common.hpp"

namespace {
const size_t kN = 3 << 20;

// child side: read n bytes at d and compare against (i * 7 + seed)
bool child_check(CUdeviceptr d, size_t n, unsigned char seed) {
  std::vector<unsigned char> out(n);
  if (cuMemcpyDtoH(out.data(), d, n) != CUDA_SUCCESS) return false;
  for (size_t i = 0; i < n; i++)
    if (out[i] != (unsigned char)(i * 7 + seed)) return false;
  return true;
}

void fill(CUdeviceptr d, size_t n, unsigned char seed) {
  std::vector<unsigned char> v(n);
  for (size_t i = 0; i < n; i++) v[i] = (unsigned char)(i * 7 + seed);
  CU_OK(cuMemcpyHtoD(d, v.data(), n));
}
}  // namespace

TEST_CASE("legacy IPC handle opened in another process", "[ipc]") {
  sim_setup();
  CUdeviceptr d;
  CU_OK(cuMemAlloc(&d, kN));
  fill(d, kN, 1);
  CUipcMemHandle h;
  CU_OK(cuIpcGetMemHandle(&h, d + 4096));  // interior pointer: whole allocation

  CUdeviceptr same;
  REQUIRE(cuIpcOpenMemHandle(&same, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) ==
          CUDA_ERROR_INVALID_CONTEXT);  // same process

  int status = run_in_child([h] {
    if (!child_setup(1)) return 10;
    CUdeviceptr p, p2;
    if (cuIpcOpenMemHandle(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) != CUDA_SUCCESS) return 11;
    if (cuIpcOpenMemHandle(&p2, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) != CUDA_SUCCESS || p2 != p)
      return 12;  // refcounted: same address
    int ord = -1;
    size_t size = 0;
    if (cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p) || ord != 0) return 13;
    if (cuMemGetAddressRange(nullptr, &size, p) || size != kN) return 14;
    if (!child_check(p, kN, 1)) return 15;
    // writes by the importer are seen by the exporter
    unsigned char v = 0x5a;
    if (cuMemcpyHtoD(p + 17, &v, 1) != CUDA_SUCCESS) return 16;
    if (cuIpcCloseMemHandle(p) || cuIpcCloseMemHandle(p2)) return 17;
    if (cuIpcCloseMemHandle(p) != CUDA_ERROR_INVALID_VALUE) return 18;
    return 0;
  });
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  unsigned char v = 0;
  CU_OK(cuMemcpyDtoH(&v, d + 17, 1));
  REQUIRE(v == 0x5a);

  CU_OK(cuMemFree(d));
  CUdeviceptr d2;
  CU_OK(cuMemAlloc(&d2, kN));  // may even reuse the fd number
  status = run_in_child([h] {
    if (!child_setup()) return 10;
    CUdeviceptr p;
    return cuIpcOpenMemHandle(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) == CUDA_ERROR_INVALID_VALUE ? 0 : 1;
  });
  REQUIRE(child_passed(status));
  CU_OK(cuMemFree(d2));
}

TEST_CASE("VMM allocation exported as a POSIX fd to another process", "[ipc]") {
  sim_setup();
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 1;
  size_t gran = 0;
  CU_OK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  REQUIRE(gran == (2u << 20));
  const size_t size = 2 * gran;
  CUmemGenericAllocationHandle mh;
  CUdeviceptr va;
  CU_OK(cuMemCreate(&mh, size, &prop, 0));
  CU_OK(cuMemAddressReserve(&va, 2 * size, 0, 0, 0));
  CU_OK(cuMemMap(va + size, size, 0, mh, 0));
  std::vector<char> h(16, 1);
  REQUIRE(cuMemcpyHtoD(va + size, h.data(), 16) == CUDA_ERROR_INVALID_VALUE);  // no access yet
  CUmemAccessDesc acc{};
  acc.location = prop.location;
  acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CU_OK(cuMemSetAccess(va + size, size, &acc, 1));
  fill(va + size, size, 4);

  unsigned ipc = 1;
  CUdeviceptr start;
  CU_OK(cuPointerGetAttribute(&ipc, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, va + size));
  CU_OK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, va + size + 5));
  REQUIRE(ipc == 0);
  REQUIRE(start == va);  // the reservation
  CUmemGenericAllocationHandle again;
  CU_OK(cuMemRetainAllocationHandle(&again, reinterpret_cast<void*>(va + size + 100)));
  REQUIRE(again == mh);
  CU_OK(cuMemRelease(again));

  int fd = -1;
  CU_OK(cuMemExportToShareableHandle(&fd, mh, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  REQUIRE(fd >= 0);
  pid_t parent = getpid();
  int status = run_in_child([parent, fd, size] {
    if (!child_setup()) return 10;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", int(parent), fd);
    int myfd = open(path, O_RDWR);
    if (myfd < 0) return 11;
    CUmemGenericAllocationHandle ih;
    if (cuMemImportFromShareableHandle(&ih, reinterpret_cast<void*>(intptr_t(myfd)),
                                       CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
      return 12;
    close(myfd);
    CUdeviceptr p;
    CUmemAccessDesc a{};
    a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    a.location.id = 0;
    a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if (cuMemAddressReserve(&p, size, 0, 0, 0) || cuMemMap(p, size, 0, ih, 0) ||
        cuMemSetAccess(p, size, &a, 1))
      return 13;
    int ord = -1;
    if (cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p) || ord != 1) return 14;
    if (!child_check(p, size, 4)) return 15;
    if (cuMemUnmap(p, size) || cuMemRelease(ih) || cuMemAddressFree(p, size)) return 16;
    return 0;
  });
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  close(fd);
  // memory lives until unmapped *and* released
  CU_OK(cuMemRelease(mh));
  std::vector<unsigned char> out(16);
  CU_OK(cuMemcpyDtoH(out.data(), va + size, 16));
  REQUIRE(out[3] == (unsigned char)(3 * 7 + 4));
  REQUIRE(cuMemAddressFree(va, 2 * size) == CUDA_ERROR_INVALID_VALUE);  // still mapped
  CU_OK(cuMemUnmap(va + size, size));
  REQUIRE(cuMemcpyDtoH(out.data(), va + size, 16) == CUDA_ERROR_INVALID_VALUE);
  CU_OK(cuMemAddressFree(va, 2 * size));
}

TEST_CASE("stream-ordered pool allocations", "[ipc][pool]") {
  sim_setup();
  CUstream s;
  CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr a, b;
  CU_OK(cuMemAllocAsync(&a, 1 << 20, s));
  fill(a, 1 << 20, 2);
  CUmemoryPool pool, def;
  CU_OK(cuPointerGetAttribute(&pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, a));
  CU_OK(cuDeviceGetDefaultMemPool(&def, 0));
  REQUIRE(pool == def);
  unsigned ipc = 1;
  CU_OK(cuPointerGetAttribute(&ipc, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, a));
  REQUIRE(ipc == 0);
  unsigned long long id_a, id_b;
  CU_OK(cuPointerGetAttribute(&id_a, CU_POINTER_ATTRIBUTE_BUFFER_ID, a));
  CU_OK(cuMemFreeAsync(a, s));
  REQUIRE(cuMemFreeAsync(a, s) == CUDA_ERROR_INVALID_VALUE);  // double free
  // before the free is synchronized the block is still mapped and cached:
  // the next allocation of that size reuses it with a new buffer id
  CU_OK(cuStreamSynchronize(s));  // (release threshold 0: trims the cache)
  CU_OK(cuMemAllocAsync(&b, 1 << 20, s));
  REQUIRE(b == a);  // first fit: same address again
  CU_OK(cuPointerGetAttribute(&id_b, CU_POINTER_ATTRIBUTE_BUFFER_ID, b));
  REQUIRE(id_b != id_a);
  std::vector<char> h(16);
  CU_OK(cuMemFreeAsync(b, s));
  CU_OK(cuStreamSynchronize(s));
  REQUIRE(cuMemcpyDtoH(h.data(), b, 16) == CUDA_ERROR_INVALID_VALUE);  // trimmed

  // cached reuse without trimming
  CU_OK(cuMemAllocAsync(&a, 1 << 20, s));
  CU_OK(cuMemFreeAsync(a, s));
  while (cuStreamQuery(s) == CUDA_ERROR_NOT_READY) usleep(100);
  CU_OK(cuMemcpyDtoH(h.data(), a, 16));  // freed but still mapped (stale, not caught)
  CU_OK(cuMemAllocAsync(&b, 1 << 20, s));
  REQUIRE(b == a);
  CU_OK(cuMemFreeAsync(b, s));
  CU_OK(cuMemPoolTrimTo(def, 0));
  CU_OK(cuStreamDestroy(s));
}

TEST_CASE("pool export/import of a pointer across processes", "[ipc][pool]") {
  sim_setup();
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  CUmemoryPool pool;
  CU_OK(cuMemPoolCreate(&pool, &props));
  CUdeviceptr p;
  CU_OK(cuMemAllocFromPoolAsync(&p, 5 << 20, pool, nullptr));
  fill(p, 5 << 20, 9);
  int fd = -1;
  CU_OK(cuMemPoolExportToShareableHandle(&fd, pool, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  CUmemPoolPtrExportData data;
  CU_OK(cuMemPoolExportPointer(&data, p));
  pid_t parent = getpid();
  int status = run_in_child([parent, fd, data] {
    if (!child_setup()) return 10;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", int(parent), fd);
    int myfd = open(path, O_RDWR);
    CUmemoryPool ipool;
    if (myfd < 0 || cuMemPoolImportFromShareableHandle(&ipool, reinterpret_cast<void*>(intptr_t(myfd)),
                                                       CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0))
      return 11;
    close(myfd);
    CUdeviceptr ip;
    CUmemPoolPtrExportData d = data;
    if (cuMemPoolImportPointer(&ip, ipool, &d)) return 12;
    if (!child_check(ip, 5 << 20, 9)) return 13;
    if (cuMemFree(ip) || cuMemPoolDestroy(ipool)) return 14;
    return 0;
  });
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  close(fd);
  CU_OK(cuMemFreeAsync(p, nullptr));
  CU_OK(cuMemPoolDestroy(pool));
}

TEST_CASE("dma-buf handle and RDMA flush", "[ipc]") {
  sim_setup();
  CUdeviceptr d;
  CU_OK(cuMemAlloc(&d, 2 << 20));
  int fd = -1;
  CU_OK(cuMemGetHandleForAddressRange(&fd, d, 2 << 20, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0));
  REQUIRE(fd >= 0);
  REQUIRE(lseek(fd, 0, SEEK_END) >= (2 << 20));
  close(fd);
  // a sub-range: the descriptor's position is where the range starts, and a
  // mapping from there sees the device bytes (what the fake RDMA NIC does)
  std::vector<unsigned char> pat(4096);
  for (size_t i = 0; i < pat.size(); i++) pat[i] = (unsigned char)(i * 7 + 3);
  CU_OK(cuMemcpyHtoD(d + (64 << 10), pat.data(), pat.size()));
  CU_OK(cuMemGetHandleForAddressRange(&fd, d + (64 << 10), 64 << 10,
                                      CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0));
  REQUIRE(lseek(fd, 0, SEEK_CUR) == (64 << 10));
  void *m = mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fd, 64 << 10);
  REQUIRE(m != MAP_FAILED);
  REQUIRE(memcmp(m, pat.data(), pat.size()) == 0);
  munmap(m, 4096);
  close(fd);
  auto flushes = reinterpret_cast<unsigned long (*)(void)>(
      dlsym(RTLD_DEFAULT, "gdrpipe_sim_rdma_flushes"));
  const unsigned long before = flushes != nullptr ? flushes() : 0;
  CU_OK(cuFlushGPUDirectRDMAWrites(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX,
                                   CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER));
  if (flushes != nullptr) REQUIRE(flushes() == before + 1);
  CU_OK(cuMemFree(d));
}

TEST_CASE("live-object counts follow allocations imports and frees", "[ipc]") {
  sim_setup();
  gdrpipe_sim_counts c0, c;
  REQUIRE(gdrpipe_sim_get_counts(nullptr) == -1);
  REQUIRE(gdrpipe_sim_get_counts(&c0) == 0);
  REQUIRE(c0.primary_refs >= 1);
  CUdeviceptr d;
  void* h = nullptr;
  CUstream s;
  CU_OK(cuMemAlloc(&d, kN));
  CU_OK(cuMemHostAlloc(&h, 4096, 0));
  CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  REQUIRE(gdrpipe_sim_get_counts(&c) == 0);
  REQUIRE(c.device_allocs == c0.device_allocs + 1);
  REQUIRE(c.host_allocs == c0.host_allocs + 1);
  REQUIRE(c.streams == c0.streams + 1);
  CUipcMemHandle ih;
  CU_OK(cuIpcGetMemHandle(&ih, d));
  int status = run_in_child([ih] {
    if (!child_setup(1)) return 10;
    gdrpipe_sim_counts a, b;
    CUdeviceptr p, p2;
    if (gdrpipe_sim_get_counts(&a) != 0 || a.ipc_imports != 0) return 11;
    if (cuIpcOpenMemHandle(&p, ih, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) ||
        cuIpcOpenMemHandle(&p2, ih, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS))
      return 12;
    if (gdrpipe_sim_get_counts(&b) != 0 || b.ipc_imports != 1) return 13;  // refcounted: one
    if (cuIpcCloseMemHandle(p) || gdrpipe_sim_get_counts(&b) || b.ipc_imports != 1) return 14;
    if (cuIpcCloseMemHandle(p2) || gdrpipe_sim_get_counts(&b) || b.ipc_imports != 0) return 15;
    return 0;
  });
  REQUIRE(child_passed(status));
  CU_OK(cuStreamDestroy(s));
  CU_OK(cuMemFreeHost(h));
  CU_OK(cuMemFree(d));
  REQUIRE(gdrpipe_sim_get_counts(&c) == 0);
  REQUIRE(c.device_allocs == c0.device_allocs);
  REQUIRE(c.host_allocs == c0.host_allocs);
  REQUIRE(c.streams == c0.streams);
}
