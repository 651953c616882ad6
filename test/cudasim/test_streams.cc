// Streams, events and the copy engine: ordering, asynchrony, concurrency and
// copies of every kind.
#include <algorithm>
#include <cstring>
#include <thread>
#include <numeric>
#include <vector>

#include "test_common.hpp"

namespace {
std::vector<unsigned char> pattern(size_t n, unsigned seed) {
  std::vector<unsigned char> v(n);
  for (size_t i = 0; i < n; i++) v[i] = (unsigned char)(i * 31 + seed);
  return v;
}
}  // namespace

TEST_CASE("async copies run in order and complete only at synchronization", "[streams]") {
  sim_setup();
  // slow enough that nothing completes before we look
  REQUIRE(gdrpipe_sim_set_topology("h2d=20ms:10GBps,d2h=20ms:10GBps") == 0);
  const size_t n = 1 << 16;
  auto a = pattern(n, 1), b = pattern(n, 2);
  std::vector<unsigned char> out1(n, 0), out2(n, 0);
  CUdeviceptr d;
  CUstream s;
  CU_OK(cuMemAlloc(&d, n));
  CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CU_OK(cuMemcpyHtoDAsync(d, a.data(), n, s));
  CU_OK(cuMemcpyDtoHAsync(out1.data(), d, n, s));
  CU_OK(cuMemcpyHtoDAsync(d, b.data(), n, s));
  CU_OK(cuMemcpyDtoHAsync(out2.data(), d, n, s));
  REQUIRE(cuStreamQuery(s) == CUDA_ERROR_NOT_READY);
  REQUIRE(out1[1] == 0);  // nothing has landed yet
  CU_OK(cuStreamSynchronize(s));
  REQUIRE(cuStreamQuery(s) == CUDA_SUCCESS);
  REQUIRE(out1 == a);
  REQUIRE(out2 == b);
  CU_OK(cuStreamDestroy(s));
  CU_OK(cuMemFree(d));
}

TEST_CASE("cuStreamQuery reports NOT_READY then SUCCESS", "[streams]") {
  sim_setup();
  REQUIRE(gdrpipe_sim_set_topology("h2d=30ms:10GBps") == 0);
  std::vector<char> h(4096, 5);
  CUdeviceptr d;
  CU_OK(cuMemAlloc(&d, 4096));
  auto t0 = std::chrono::steady_clock::now();
  CU_OK(cuMemcpyHtoDAsync(d, h.data(), 4096, nullptr));
  REQUIRE(cuStreamQuery(nullptr) == CUDA_ERROR_NOT_READY);
  CUresult r;
  while ((r = cuStreamQuery(nullptr)) == CUDA_ERROR_NOT_READY) usleep(1000);
  REQUIRE(r == CUDA_SUCCESS);
  REQUIRE(seconds_since(t0) >= 0.029);
  CU_OK(cuMemFree(d));
}

TEST_CASE("copies on different links overlap; copies on one link share it", "[streams][timing]") {
  sim_setup();
  // 4 MiB at 100 MB/s = ~42 ms per copy
  REQUIRE(gdrpipe_sim_set_topology("h2d=1us:100MBps,d2h=1us:100MBps") == 0);
  const size_t n = 4 << 20;
  std::vector<char> h1(n, 1), h2(n, 2);
  CUdeviceptr d1, d2;
  CUstream s1, s2;
  CU_OK(cuMemAlloc(&d1, n));
  CU_OK(cuMemAlloc(&d2, n));
  CU_OK(cuMemsetD8(d1, 0, n));  // first touch of the pages out of the timing
  CU_OK(cuMemsetD8(d2, 0, n));
  CU_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
  CU_OK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
  const double one = double(n) / 100e6;

  auto t0 = std::chrono::steady_clock::now();
  CU_OK(cuMemcpyHtoDAsync(d1, h1.data(), n, s1));
  CU_OK(cuMemcpyDtoHAsync(h2.data(), d2, n, s2));
  CU_OK(cuStreamSynchronize(s1));
  CU_OK(cuStreamSynchronize(s2));
  double overlap = seconds_since(t0);
  REQUIRE(overlap >= one * 0.95);
  // that they overlap (~max, not the sum) is an upper bound on host time,
  // which load can cross: proven exactly on the virtual clock
  // (test_virtual_clock.cc)

  t0 = std::chrono::steady_clock::now();
  CU_OK(cuMemcpyHtoDAsync(d1, h1.data(), n, s1));
  CU_OK(cuMemcpyHtoDAsync(d2, h1.data(), n, s2));
  CU_OK(cuStreamSynchronize(s1));
  CU_OK(cuStreamSynchronize(s2));
  REQUIRE(seconds_since(t0) >= 2 * one * 0.95);  // same link: serialized

  CU_OK(cuStreamDestroy(s1));
  CU_OK(cuStreamDestroy(s2));
  CU_OK(cuMemFree(d1));
  CU_OK(cuMemFree(d2));
}

TEST_CASE("copies of every kind move the right bytes", "[streams]") {
  CUcontext c0 = sim_setup(0), c1;
  CU_OK(cuDevicePrimaryCtxRetain(&c1, 1));
  const size_t n = 300000;
  auto src = pattern(n, 7);
  std::vector<unsigned char> out(n);
  CUdeviceptr a, b, peer, managed;
  void* pinned;
  CU_OK(cuMemAlloc(&a, n));
  CU_OK(cuMemAlloc(&b, n));
  CU_OK(cuMemAllocManaged(&managed, n, CU_MEM_ATTACH_GLOBAL));
  CU_OK(cuMemHostAlloc(&pinned, n, 0));
  CU_OK(cuCtxPushCurrent(c1));
  CU_OK(cuMemAlloc(&peer, n));
  CU_OK(cuCtxPopCurrent(nullptr));

  SECTION("typed synchronous and D2D") {
    CU_OK(cuMemcpyHtoD(a, src.data(), n));
    CU_OK(cuMemcpyDtoDAsync(b, a, n, nullptr));
    CU_OK(cuMemcpyDtoH(out.data(), b, n));  // legacy stream: ordered after the D2D
    REQUIRE(out == src);
  }
  SECTION("generic cuMemcpy infers the kinds, interior offsets") {
    CU_OK(cuMemcpy(a + 1000, CUdeviceptr(src.data()), n - 1000));
    CU_OK(cuMemcpy(CUdeviceptr(pinned), a + 1000, n - 1000));
    REQUIRE(memcmp(pinned, src.data(), n - 1000) == 0);
    CU_OK(cuMemcpyAsync(managed, CUdeviceptr(pinned), n - 1000, nullptr));
    CU_OK(cuCtxSynchronize());
    REQUIRE(memcmp(reinterpret_cast<void*>(managed), src.data(), n - 1000) == 0);
  }
  SECTION("peer copies with and without peer access") {
    CU_OK(cuMemcpyHtoD(a, src.data(), n));
    CU_OK(cuMemcpyPeerAsync(peer, c1, a, c0, n, nullptr));  // staged (no peer access yet)
    CU_OK(cuMemcpyDtoH(out.data(), peer, n));
    REQUIRE(out == src);
    CUresult en = cuCtxEnablePeerAccess(c1, 0);
    REQUIRE((en == CUDA_SUCCESS || en == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED));
    REQUIRE(cuCtxEnablePeerAccess(c1, 0) == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
    std::fill(out.begin(), out.end(), 0);
    CU_OK(cuMemsetD8(b, 0, n));
    CU_OK(cuMemcpyAsync(b, peer, n, nullptr));
    CU_OK(cuMemcpyDtoH(out.data(), b, n));
    REQUIRE(out == src);
  }
  SECTION("memset") {
    CU_OK(cuMemsetD8(a, 0xab, n));
    CU_OK(cuMemcpyDtoH(out.data(), a, n));
    REQUIRE(std::all_of(out.begin(), out.end(), [](unsigned char c) { return c == 0xab; }));
  }
  CU_OK(cuMemFree(a));
  CU_OK(cuMemFree(b));
  CU_OK(cuMemFree(managed));
  CU_OK(cuMemFree(peer));
  CU_OK(cuMemFreeHost(pinned));
  CU_OK(cuDevicePrimaryCtxRelease(1));
}

TEST_CASE("events: record, query, elapsed time, cross-stream wait", "[streams]") {
  sim_setup();
  REQUIRE(gdrpipe_sim_set_topology("h2d=20ms:10GBps,d2h=1us:10GBps") == 0);
  const size_t n = 4096;
  auto src = pattern(n, 3);
  std::vector<unsigned char> out(n, 0);
  CUdeviceptr d;
  CUstream s1, s2;
  CUevent start, stop, never;
  CU_OK(cuMemAlloc(&d, n));
  CU_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
  CU_OK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
  CU_OK(cuEventCreate(&start, CU_EVENT_DEFAULT));
  CU_OK(cuEventCreate(&stop, CU_EVENT_DEFAULT));
  CU_OK(cuEventCreate(&never, CU_EVENT_DEFAULT));
  CU_OK(cuEventQuery(never));  // never recorded: complete

  CU_OK(cuEventRecord(start, s1));
  CU_OK(cuMemcpyHtoDAsync(d, src.data(), n, s1));
  CU_OK(cuEventRecord(stop, s1));
  REQUIRE(cuEventQuery(stop) == CUDA_ERROR_NOT_READY);
  float ms;
  REQUIRE(cuEventElapsedTime(&ms, start, stop) == CUDA_ERROR_NOT_READY);
  CU_OK(cuStreamWaitEvent(s2, stop, 0));  // s2's D2H must see the H2D
  CU_OK(cuMemcpyDtoHAsync(out.data(), d, n, s2));
  CU_OK(cuStreamSynchronize(s2));
  REQUIRE(out == src);
  CU_OK(cuEventSynchronize(stop));
  CU_OK(cuEventElapsedTime(&ms, start, stop));
  REQUIRE(ms >= 19.0f);
  REQUIRE(ms < 200.0f);
  CU_OK(cuEventDestroy(start));
  CU_OK(cuEventDestroy(stop));
  CU_OK(cuEventDestroy(never));
  CU_OK(cuStreamDestroy(s1));
  CU_OK(cuStreamDestroy(s2));
  CU_OK(cuMemFree(d));
}

TEST_CASE("legacy default stream synchronizes with blocking streams", "[streams]") {
  sim_setup();
  REQUIRE(gdrpipe_sim_set_topology("h2d=20ms:10GBps") == 0);
  const size_t n = 4096;
  auto src = pattern(n, 9);
  std::vector<unsigned char> out(n, 0);
  CUdeviceptr d;
  CUstream s;
  CU_OK(cuMemAlloc(&d, n));
  CU_OK(cuStreamCreate(&s, CU_STREAM_DEFAULT));
  CU_OK(cuMemcpyHtoDAsync(d, src.data(), n, s));
  CU_OK(cuMemcpyDtoH(out.data(), d, n));  // legacy stream waits for s
  REQUIRE(out == src);
  CU_OK(cuStreamDestroy(s));
  CU_OK(cuMemFree(d));
}

TEST_CASE("per-thread default stream is distinct per thread", "[streams]") {
  sim_setup();
  REQUIRE(gdrpipe_sim_set_topology("h2d=30ms:10GBps") == 0);
  // the per-thread bodies, as a --default-stream per-thread program gets them
  using CopyFn = CUresult (*)(CUdeviceptr, const void*, size_t, CUstream);
  using StreamFn = CUresult (*)(CUstream);
  void *copy_p, *query_p, *sync_p;
  const auto pt = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  CU_OK(cuGetProcAddress("cuMemcpyHtoDAsync", &copy_p, 12000, pt, nullptr));
  CU_OK(cuGetProcAddress("cuStreamQuery", &query_p, 12000, pt, nullptr));
  CU_OK(cuGetProcAddress("cuStreamSynchronize", &sync_p, 12000, pt, nullptr));
  auto copy_ptsz = reinterpret_cast<CopyFn>(copy_p);
  auto query_ptsz = reinterpret_cast<StreamFn>(query_p);
  auto sync_ptsz = reinterpret_cast<StreamFn>(sync_p);
  std::vector<char> h(4096, 1);
  CUdeviceptr d;
  CU_OK(cuMemAlloc(&d, 4096));
  CU_OK(copy_ptsz(d, h.data(), 4096, nullptr));
  REQUIRE(query_ptsz(nullptr) == CUDA_ERROR_NOT_READY);
  REQUIRE(cuStreamQuery(nullptr) == CUDA_SUCCESS);  // the legacy stream is idle
  REQUIRE(cuStreamQuery(CU_STREAM_PER_THREAD) == CUDA_ERROR_NOT_READY);
  CUresult other = CUDA_ERROR_UNKNOWN;
  CUcontext ctx;
  CU_OK(cuCtxGetCurrent(&ctx));
  std::thread([&] {
    cuCtxSetCurrent(ctx);
    other = query_ptsz(nullptr);  // this thread's stream is idle
  }).join();
  REQUIRE(other == CUDA_SUCCESS);
  CU_OK(sync_ptsz(nullptr));
  CU_OK(cuMemFree(d));
}
