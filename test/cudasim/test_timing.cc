// The timing model: configured latency/bandwidth per path, presets, p2p.
#include <algorithm>
#include <vector>

#include "test_common.hpp"

namespace {

// time of one synchronous copy via `fn`
template <class F>
double timed(F fn) {
  auto t0 = std::chrono::steady_clock::now();
  fn();
  return seconds_since(t0);
}

// On the real clock a copy takes max(model, real memcpy) plus whatever the
// machine's load adds: only the lower bound is a property of the simulator
// (`floor`, the real memcpy time of the same copy with an unlimited model, is
// reported). The exact times are checked on the virtual clock
// (test_virtual_clock.cc), which no load can move.
void check_model(double measured, double expected, double floor = 0) {
  INFO("measured " << measured * 1e3 << " ms, model " << expected * 1e3 << " ms, memcpy "
                   << floor * 1e3 << " ms");
  REQUIRE(measured >= expected * 0.95);
}

}  // namespace

TEST_CASE("each path takes latency + bytes/bandwidth", "[timing]") {
  sim_setup(0);
  CUcontext c1;
  CU_OK(cuDevicePrimaryCtxRetain(&c1, 1));
  const size_t n = 8 << 20;
  std::vector<char> h(n, 1);
  CUdeviceptr a, b, remote;
  CU_OK(cuMemAlloc(&a, n));
  CU_OK(cuMemAlloc(&b, n));
  CU_OK(cuCtxPushCurrent(c1));
  CU_OK(cuMemAlloc(&remote, n));
  CU_OK(cuCtxPopCurrent(nullptr));
  for (CUdeviceptr p : {a, b, remote}) CU_OK(cuMemsetD8(p, 0, n));  // first touch
  const double mb = double(n);
  auto d2d = [&] {
    CU_OK(cuMemcpyDtoDAsync(b, a, n, nullptr));
    CU_OK(cuStreamSynchronize(nullptr));
  };
  REQUIRE(gdrpipe_sim_set_topology("d2d=0us:inf") == 0);
  double floor = timed(d2d);
  REQUIRE(gdrpipe_sim_set_topology(
              "h2d=1ms:1GBps,d2h=2ms:500MBps,d2d=1ms:2GBps,peer=3ms:1GBps,nopeer=1ms:250MBps,p2p=all") == 0);

  check_model(timed([&] { CU_OK(cuMemcpyHtoD(a, h.data(), n)); }), 1e-3 + mb / 1e9, floor);
  check_model(timed([&] { CU_OK(cuMemcpyDtoH(h.data(), a, n)); }), 2e-3 + mb / 500e6, floor);
  check_model(timed(d2d), 1e-3 + mb / 2e9, floor);
  // between devices with peer access (the staged path: next test case)
  CUresult en = cuCtxEnablePeerAccess(c1, 0);
  REQUIRE((en == CUDA_SUCCESS || en == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED));
  check_model(timed([&] { CU_OK(cuMemcpy(remote, a, n)); }), 3e-3 + mb / 1e9, floor);

  CU_OK(cuMemFree(a));
  CU_OK(cuMemFree(b));
  CU_OK(cuMemFree(remote));
  CU_OK(cuDevicePrimaryCtxRelease(1));
}

// (which path, exactly: "[virtual]" test case of the same name)
TEST_CASE("the nopeer path is used without peer access", "[timing]") {
  int status = run_in_child([] {  // a fresh process: no peer access enabled yet
    if (!child_setup(0)) return 10;
    if (gdrpipe_sim_set_topology("nopeer=1ms:100MBps,peer=1ms:1GBps,p2p=all") != 0) return 11;
    CUcontext c1;
    CUdeviceptr a, remote;
    const size_t n = 2 << 20;  // staged: ~22 ms, direct: ~3 ms (or the memcpy time)
    if (cuDevicePrimaryCtxRetain(&c1, 1) || cuMemAlloc(&a, n) || cuCtxPushCurrent(c1) ||
        cuMemAlloc(&remote, n) || cuCtxPopCurrent(nullptr) || cuMemsetD8(a, 0, n) ||
        cuMemsetD8(remote, 0, n))
      return 12;
    auto t0 = std::chrono::steady_clock::now();
    if (cuMemcpy(remote, a, n)) return 13;
    double staged = seconds_since(t0);
    if (staged < 0.95 * (1e-3 + double(n) / 100e6)) return 14;
    if (cuCtxEnablePeerAccess(c1, 0)) return 15;
    t0 = std::chrono::steady_clock::now();
    if (cuMemcpy(remote, a, n)) return 16;
    (void)seconds_since(t0);  // direct: only a lower bound holds on a loaded machine
    return 0;
  });
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
}

TEST_CASE("presets", "[timing]") {
  sim_setup(0);
  CUcontext c1;
  CU_OK(cuDevicePrimaryCtxRetain(&c1, 1));
  CUresult en = cuCtxEnablePeerAccess(c1, 0);
  REQUIRE((en == CUDA_SUCCESS || en == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED));
  const size_t n = 16 << 20;
  std::vector<char> h(n, 1);
  CUdeviceptr a, remote;
  CU_OK(cuMemAlloc(&a, n));
  CU_OK(cuCtxPushCurrent(c1));
  CU_OK(cuMemAlloc(&remote, n));
  CU_OK(cuCtxPopCurrent(nullptr));
  CU_OK(cuMemsetD8(a, 0, n));  // first touch
  CU_OK(cuMemsetD8(remote, 0, n));
  auto peer = [&] { return timed([&] { CU_OK(cuMemcpy(remote, a, n)); }); };

  auto h2d = [&] { return timed([&] { CU_OK(cuMemcpyHtoD(a, h.data(), n)); }); };
  REQUIRE(gdrpipe_sim_set_topology("peer=0us:inf,h2d=0us:inf") == 0);
  double floor = std::max(peer(), h2d());
  const double mb = double(n);

  REQUIRE(gdrpipe_sim_set_topology("pcie-p2p-slow") == 0);
  check_model(peer(), 6e-6 + mb / 3e9, floor);
  check_model(h2d(), 10e-6 + mb / 10e9, floor);

  REQUIRE(gdrpipe_sim_set_topology("nvlink") == 0);
  check_model(peer(), 8e-6 + mb / 300e9, floor);
  check_model(h2d(), 10e-6 + mb / 25e9, floor);

  REQUIRE(gdrpipe_sim_set_topology("nopeer") == 0);
  int can = 1;
  CU_OK(cuDeviceCanAccessPeer(&can, 0, 1));
  REQUIRE(can == 0);
  check_model(peer(), 20e-6 + mb / 5e9, floor);  // staged despite enabled access

  // presets take overrides
  REQUIRE(gdrpipe_sim_set_topology("nvlink,peer=1ms:1GBps") == 0);
  check_model(peer(), 1e-3 + mb / 1e9, floor);

  REQUIRE(gdrpipe_sim_set_topology("p2p=0-1") == 0);
  CU_OK(cuDeviceCanAccessPeer(&can, 1, 0));
  REQUIRE(can == 1);
  REQUIRE(gdrpipe_sim_set_topology("bogus") == -1);
  REQUIRE(gdrpipe_sim_set_topology("h2d=5:1GBps") == -1);
  REQUIRE(gdrpipe_sim_set_topology("h2d=5us:1Gbit") == -1);

  CU_OK(cuMemFree(a));
  CU_OK(cuMemFree(remote));
  CU_OK(cuDevicePrimaryCtxRelease(1));
}
