// The virtual clock (GDRPIPE_SIM_CLOCK=virtual, set by the meson test):
// copies complete at once, and the time the process sees is the modeled time
// of the work it waited for. Every check is exact: no load on the machine
// can move a virtual time.
#include <cmath>
#include <vector>

#include "test_common.hpp"

namespace {

double vnow() {
  double t = -1;
  REQUIRE(gdrpipe_sim_virtual_clock(&t) == 1);
  return t;
}

// elapsed virtual time of fn
template <class F>
double vtimed(F fn) {
  const double t0 = vnow();
  fn();
  return vnow() - t0;
}

constexpr double kEps = 1e-12;

struct TwoDevices {
  CUcontext c1 = nullptr;
  CUdeviceptr a = 0, b = 0, remote = 0;
  std::vector<char> h;
  explicit TwoDevices(size_t n) : h(n, 7) {
    sim_setup(0);
    CU_OK(cuDevicePrimaryCtxRetain(&c1, 1));
    CUresult en = cuCtxEnablePeerAccess(c1, 0);
    REQUIRE((en == CUDA_SUCCESS || en == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED));
    CU_OK(cuMemAlloc(&a, n));
    CU_OK(cuMemAlloc(&b, n));
    CU_OK(cuCtxPushCurrent(c1));
    CU_OK(cuMemAlloc(&remote, n));
    CU_OK(cuCtxPopCurrent(nullptr));
  }
  ~TwoDevices() {
    cuMemFree(a);
    cuMemFree(b);
    cuMemFree(remote);
    cuDevicePrimaryCtxRelease(1);
  }
};

}  // namespace

TEST_CASE("each path takes exactly latency + bytes/bandwidth", "[virtual]") {
  const size_t n = 8 << 20;
  TwoDevices d(n);
  const double mb = double(n);
  REQUIRE(gdrpipe_sim_set_topology(
              "h2d=1ms:1GBps,d2h=2ms:500MBps,d2d=1ms:2GBps,peer=3ms:1GBps,nopeer=1ms:250MBps,p2p=all") == 0);
  CHECK(vtimed([&] { CU_OK(cuMemcpyHtoD(d.a, d.h.data(), n)); }) == Approx(1e-3 + mb / 1e9).epsilon(kEps));
  CHECK(vtimed([&] { CU_OK(cuMemcpyDtoH(d.h.data(), d.a, n)); }) == Approx(2e-3 + mb / 500e6).epsilon(kEps));
  CHECK(vtimed([&] {
          CU_OK(cuMemcpyDtoDAsync(d.b, d.a, n, nullptr));
          CU_OK(cuStreamSynchronize(nullptr));
        }) == Approx(1e-3 + mb / 2e9).epsilon(kEps));
  CHECK(vtimed([&] { CU_OK(cuMemcpy(d.remote, d.a, n)); }) == Approx(3e-3 + mb / 1e9).epsilon(kEps));
  // the bytes moved although no real time was spent waiting
  std::vector<char> back(n, 0);
  CU_OK(cuMemcpyDtoH(back.data(), d.remote, n));
  CHECK(back == d.h);
}

TEST_CASE("the virtual clock only moves when the host waits", "[virtual]") {
  const size_t n = 1 << 20;
  TwoDevices d(n);
  REQUIRE(gdrpipe_sim_set_topology("h2d=1ms:1GBps") == 0);
  CUstream s;
  CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  const double t0 = vnow();
  CU_OK(cuMemcpyHtoDAsync(d.a, d.h.data(), n, s));
  CHECK(vnow() == t0);  // issued, not waited for
  CU_OK(cuStreamSynchronize(s));
  CHECK(vnow() - t0 == Approx(1e-3 + double(n) / 1e9).epsilon(kEps));
  // a query that finds the work done moves the clock as a synchronize does
  const double t1 = vnow();
  CU_OK(cuMemcpyHtoDAsync(d.a, d.h.data(), n, s));
  CUresult q;
  while ((q = cuStreamQuery(s)) == CUDA_ERROR_NOT_READY) {
  }
  CU_OK(q);
  CHECK(vnow() - t1 == Approx(1e-3 + double(n) / 1e9).epsilon(kEps));
  CU_OK(cuStreamDestroy(s));
}

TEST_CASE("copies on one link serialize, on different links overlap", "[virtual]") {
  const size_t n = 1 << 20;
  TwoDevices d(n);
  REQUIRE(gdrpipe_sim_set_topology("h2d=10us:1GBps,d2h=20us:2GBps") == 0);
  CUstream s1, s2;
  CU_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
  CU_OK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
  const double busy_h2d = double(n) / 1e9, busy_d2h = double(n) / 2e9;
  // two H2D copies on two streams share the device's host link: the second
  // starts when the first has the link free (bandwidth), then its latency
  double t = vtimed([&] {
    CU_OK(cuMemcpyHtoDAsync(d.a, d.h.data(), n, s1));
    CU_OK(cuMemcpyHtoDAsync(d.b, d.h.data(), n, s2));
    CU_OK(cuStreamSynchronize(s1));
    CU_OK(cuStreamSynchronize(s2));
  });
  CHECK(t == Approx(2 * busy_h2d + 10e-6).epsilon(kEps));
  // an H2D and a D2H run on different links: the longer one decides
  std::vector<char> out(n);
  t = vtimed([&] {
    CU_OK(cuMemcpyHtoDAsync(d.a, d.h.data(), n, s1));
    CU_OK(cuMemcpyDtoHAsync(out.data(), d.b, n, s2));
    CU_OK(cuStreamSynchronize(s1));
    CU_OK(cuStreamSynchronize(s2));
  });
  CHECK(t == Approx(std::max(busy_h2d + 10e-6, busy_d2h + 20e-6)).epsilon(kEps));
  CU_OK(cuStreamDestroy(s1));
  CU_OK(cuStreamDestroy(s2));
}

TEST_CASE("a stream waiting for an event starts after the event's work", "[virtual]") {
  const size_t n = 1 << 20;
  TwoDevices d(n);
  REQUIRE(gdrpipe_sim_set_topology("h2d=10us:1GBps,d2h=20us:2GBps") == 0);
  CUstream s1, s2;
  CUevent e0, e1, e2;
  CU_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
  CU_OK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
  CU_OK(cuEventCreate(&e0, 0));
  CU_OK(cuEventCreate(&e1, 0));
  CU_OK(cuEventCreate(&e2, 0));
  std::vector<char> stage(n);
  const double t0 = vnow();
  CU_OK(cuEventRecord(e0, s1));
  CU_OK(cuMemcpyDtoHAsync(stage.data(), d.a, n, s1));  // stage 1 of a staged copy
  CU_OK(cuEventRecord(e1, s1));
  CU_OK(cuStreamWaitEvent(s2, e1, 0));
  CU_OK(cuMemcpyHtoDAsync(d.b, stage.data(), n, s2));  // stage 2, after stage 1
  CU_OK(cuEventRecord(e2, s2));
  CU_OK(cuEventSynchronize(e2));
  const double first = double(n) / 2e9 + 20e-6, both = first + double(n) / 1e9 + 10e-6;
  CHECK(vnow() - t0 == Approx(both).epsilon(kEps));
  float ms = 0;
  CU_OK(cuEventElapsedTime(&ms, e0, e1));
  CHECK(double(ms) == Approx(first * 1e3).epsilon(1e-6));
  CU_OK(cuEventElapsedTime(&ms, e0, e2));
  CHECK(double(ms) == Approx(both * 1e3).epsilon(1e-6));
  for (CUevent e : {e0, e1, e2}) CU_OK(cuEventDestroy(e));
  CU_OK(cuStreamDestroy(s1));
  CU_OK(cuStreamDestroy(s2));
}

TEST_CASE("the nopeer path is used without peer access, exactly", "[virtual]") {
  int status = run_in_child([] {  // a fresh process: no peer access enabled yet
    if (!child_setup(0)) return 10;
    if (gdrpipe_sim_set_topology("nopeer=1ms:100MBps,peer=1ms:1GBps,p2p=all") != 0) return 11;
    CUcontext c1;
    CUdeviceptr a, remote;
    const size_t n = 2 << 20;
    if (cuDevicePrimaryCtxRetain(&c1, 1) || cuMemAlloc(&a, n) || cuCtxPushCurrent(c1) ||
        cuMemAlloc(&remote, n) || cuCtxPopCurrent(nullptr))
      return 12;
    double t0 = 0, t1 = 0;
    gdrpipe_sim_virtual_clock(&t0);
    if (cuMemcpy(remote, a, n)) return 13;
    gdrpipe_sim_virtual_clock(&t1);
    auto near = [](double x, double want) { return std::fabs(x - want) <= 1e-12 * want; };
    if (!near(t1 - t0, 1e-3 + double(n) / 100e6)) return 14;
    if (cuCtxEnablePeerAccess(c1, 0)) return 15;
    gdrpipe_sim_virtual_clock(&t0);
    if (cuMemcpy(remote, a, n)) return 16;
    gdrpipe_sim_virtual_clock(&t1);
    return near(t1 - t0, 1e-3 + double(n) / 1e9) ? 0 : 17;
  });
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
}
