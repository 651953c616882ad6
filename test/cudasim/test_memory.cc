// Device memory model: CPU-inaccessible device pointers, address reuse,
// buffer ids, pointer attributes, host and managed memory.
#include <signal.h>

#include <cstring>
#include <thread>
#include <vector>

#include "test_common.hpp"

TEST_CASE("cuda calls before cuInit fail with NOT_INITIALIZED", "[memory]") {
  int status = run_in_child([] {
    int n = 0;
    CUdeviceptr p;
    if (cuDeviceGetCount(&n) != CUDA_ERROR_NOT_INITIALIZED) return 1;
    if (cuMemAlloc(&p, 64) != CUDA_ERROR_NOT_INITIALIZED) return 2;
    return cuInit(0) == CUDA_SUCCESS && cuDeviceGetCount(&n) == CUDA_SUCCESS && n == 2 ? 0 : 3;
  });
  REQUIRE(child_passed(status));
}

TEST_CASE("device attributes and identity", "[memory]") {
  sim_setup();
  int n = 0, v = 0;
  CU_OK(cuDeviceGetCount(&n));
  REQUIRE(n == 2);
  CU_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 1));
  REQUIRE(v == 9);
  CU_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, 0));
  REQUIRE(v == 1);
  CU_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0));
  REQUIRE(v == 1);
  char name[64];
  CU_OK(cuDeviceGetName(name, sizeof name, 1));
  REQUIRE(std::string(name) == "gdrpipe-sim 1");
  CUuuid u0, u1, u0b;
  CU_OK(cuDeviceGetUuid(&u0, 0));
  CU_OK(cuDeviceGetUuid(&u1, 1));
  CU_OK(cuDeviceGetUuid(&u0b, 0));
  REQUIRE(memcmp(&u0, &u1, sizeof u0) != 0);
  REQUIRE(memcmp(&u0, &u0b, sizeof u0) == 0);
  char bus0[32], bus1[32];
  CU_OK(cuDeviceGetPCIBusId(bus0, sizeof bus0, 0));
  CU_OK(cuDeviceGetPCIBusId(bus1, sizeof bus1, 1));
  REQUIRE(std::string(bus0) != std::string(bus1));
  CUdevice d;
  CU_OK(cuCtxGetDevice(&d));
  REQUIRE(d == 0);
  REQUIRE(cuDeviceGet(&d, 2) == CUDA_ERROR_INVALID_DEVICE);
}

TEST_CASE("context stack per thread", "[memory]") {
  CUcontext c0 = sim_setup(0), c1, cur;
  CU_OK(cuDevicePrimaryCtxRetain(&c1, 1));
  CU_OK(cuCtxPushCurrent(c1));
  CUdevice d;
  CU_OK(cuCtxGetDevice(&d));
  REQUIRE(d == 1);
  CU_OK(cuCtxPopCurrent(&cur));
  REQUIRE(cur == c1);
  CU_OK(cuCtxGetCurrent(&cur));
  REQUIRE(cur == c0);
  CUcontext other = c0;
  CUresult get = CUDA_ERROR_UNKNOWN, alloc = CUDA_SUCCESS;
  std::thread([&] {  // a new thread has no current context
    get = cuCtxGetCurrent(&other);
    CUdeviceptr p;
    alloc = cuMemAlloc(&p, 64);
  }).join();
  REQUIRE(get == CUDA_SUCCESS);
  REQUIRE(other == nullptr);
  REQUIRE(alloc == CUDA_ERROR_INVALID_CONTEXT);
  CU_OK(cuDevicePrimaryCtxRelease(1));
}

TEST_CASE("CPU access to a device pointer faults", "[memory]") {
  sim_setup();
  CUdeviceptr p;
  CU_OK(cuMemAlloc(&p, 4096));
  int status = run_in_child([p] {
    signal(SIGSEGV, SIG_DFL);  // not Catch's handler: die quietly
    volatile char* c = reinterpret_cast<volatile char*>(p);
    c[0] = 1;  // must SIGSEGV
    return 0;
  });
  REQUIRE(WIFSIGNALED(status));
  REQUIRE(WTERMSIG(status) == SIGSEGV);
  CU_OK(cuMemFree(p));
  // after free the range is still not CPU-accessible
  status = run_in_child([p] {
    signal(SIGSEGV, SIG_DFL);
    return int(*reinterpret_cast<volatile char*>(p));
  });
  REQUIRE(WIFSIGNALED(status));
  REQUIRE(WTERMSIG(status) == SIGSEGV);
}

TEST_CASE("freed addresses are reused; buffer ids are not", "[memory]") {
  sim_setup();
  CUdeviceptr a, b;
  unsigned long long id_a = 0, id_b = 0;
  CU_OK(cuMemAlloc(&a, 1 << 20));
  CU_OK(cuPointerGetAttribute(&id_a, CU_POINTER_ATTRIBUTE_BUFFER_ID, a));
  CU_OK(cuMemFree(a));
  CU_OK(cuMemAlloc(&b, 1 << 20));
  REQUIRE(b == a);
  CU_OK(cuPointerGetAttribute(&id_b, CU_POINTER_ATTRIBUTE_BUFFER_ID, b));
  REQUIRE(id_b > id_a);
  CU_OK(cuMemFree(b));
}

TEST_CASE("stale device pointers are rejected by the copy engine", "[memory]") {
  sim_setup();
  CUdeviceptr p;
  std::vector<char> h(4096, 1);
  CU_OK(cuMemAlloc(&p, 4096));
  CU_OK(cuMemcpyHtoD(p, h.data(), 4096));
  REQUIRE(cuMemcpyHtoD(p, h.data(), 4097) == CUDA_ERROR_INVALID_VALUE);      // past the end
  REQUIRE(cuMemcpyDtoH(h.data(), p + 4000, 200) == CUDA_ERROR_INVALID_VALUE);
  CU_OK(cuMemFree(p));
  REQUIRE(cuMemcpyHtoD(p, h.data(), 16) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE(cuMemcpyDtoH(h.data(), p, 16) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE(cuMemFree(p) == CUDA_ERROR_INVALID_VALUE);
  unsigned long long id;
  REQUIRE(cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, p) == CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("pointer attributes of device memory", "[memory]") {
  CUcontext ctx = sim_setup();
  CUdeviceptr p, base;
  size_t size;
  CU_OK(cuMemAlloc(&p, 100000));
  CUcontext c;
  unsigned mt = 0, managed = 7, ipc = 0;
  int ord = -1;
  CUdeviceptr start;
  size_t rsize;
  CU_OK(cuPointerGetAttribute(&c, CU_POINTER_ATTRIBUTE_CONTEXT, p + 10));
  REQUIRE(c == ctx);
  CU_OK(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p + 10));
  REQUIRE(mt == CU_MEMORYTYPE_DEVICE);
  CU_OK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p));
  REQUIRE(managed == 0);
  CU_OK(cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p));
  REQUIRE(ord == 0);
  CU_OK(cuPointerGetAttribute(&ipc, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, p));
  REQUIRE(ipc == 1);
  CU_OK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p + 99999));
  CU_OK(cuPointerGetAttribute(&rsize, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p + 99999));
  REQUIRE(start == p);
  REQUIRE(rsize == 100000);
  void* hp;
  REQUIRE(cuPointerGetAttribute(&hp, CU_POINTER_ATTRIBUTE_HOST_POINTER, p) == CUDA_ERROR_INVALID_VALUE);
  CU_OK(cuMemGetAddressRange(&base, &size, p + 5000));
  REQUIRE(base == p);
  REQUIRE(size == 100000);
  unsigned one = 1, sync = 0;
  CU_OK(cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, p));
  CU_OK(cuPointerGetAttribute(&sync, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, p));
  REQUIRE(sync == 1);

  // the batched query: known and unknown pointers
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                 CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
  unsigned long long id = 0;
  mt = 0;
  void* data[] = {&mt, &id, &ord};
  CU_OK(cuPointerGetAttributes(3, attrs, data, p));
  REQUIRE(mt == CU_MEMORYTYPE_DEVICE);
  REQUIRE(id != 0);
  int local = 0;
  CU_OK(cuPointerGetAttributes(3, attrs, data, CUdeviceptr(&local)));
  REQUIRE(mt == 0);
  REQUIRE(id == 0);
  REQUIRE(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CUdeviceptr(&local)) ==
          CUDA_ERROR_INVALID_VALUE);
  CU_OK(cuMemFree(p));
}

TEST_CASE("pinned host, registered and managed memory", "[memory]") {
  sim_setup();
  void* h;
  CU_OK(cuMemHostAlloc(&h, 8192, CU_MEMHOSTALLOC_PORTABLE));
  memset(h, 3, 8192);  // CPU-accessible
  unsigned mt = 0;
  CUdeviceptr dp;
  CU_OK(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CUdeviceptr(h)));
  REQUIRE(mt == CU_MEMORYTYPE_HOST);
  CU_OK(cuMemHostGetDevicePointer(&dp, h, 0));
  REQUIRE(dp == CUdeviceptr(h));
  CU_OK(cuMemFreeHost(h));

  std::vector<char> buf(1 << 16);
  CU_OK(cuMemHostRegister(buf.data(), buf.size(), 0));
  REQUIRE(cuMemHostRegister(buf.data() + 10, 10, 0) == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  CU_OK(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CUdeviceptr(buf.data() + 5)));
  REQUIRE(mt == CU_MEMORYTYPE_HOST);
  CU_OK(cuMemHostUnregister(buf.data()));
  REQUIRE(cuMemHostUnregister(buf.data()) == CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);

  CUdeviceptr m;
  CU_OK(cuMemAllocManaged(&m, 4096, CU_MEM_ATTACH_GLOBAL));
  reinterpret_cast<char*>(m)[100] = 42;  // CPU-accessible
  unsigned managed = 0;
  CU_OK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, m));
  CU_OK(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, m));
  REQUIRE(managed == 1);
  REQUIRE(mt == CU_MEMORYTYPE_DEVICE);
  char out = 0;
  CU_OK(cuMemcpyDtoH(&out, m + 100, 1));  // the device view sees CPU writes
  REQUIRE(out == 42);
  CU_OK(cuMemFree(m));
}

TEST_CASE("cuMemGetInfo accounts allocations", "[memory]") {
  sim_setup(1);
  size_t f0, t0, f1, t1;
  CU_OK(cuMemGetInfo(&f0, &t0));
  CUdeviceptr p;
  CU_OK(cuMemAlloc(&p, 64 << 20));
  CU_OK(cuMemGetInfo(&f1, &t1));
  REQUIRE(t0 == t1);
  REQUIRE(f0 - f1 == (64u << 20));
  CU_OK(cuMemFree(p));
  CU_OK(cuMemGetInfo(&f1, &t1));
  REQUIRE(f1 == f0);
}
