// Copies against the simulator.
#include "gdrpipe/cuda/copy.hpp"

#include "sim_fixture.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

using namespace gdrpipe::cuda;
using namespace gdrpipe::cuda::test;

namespace {

std::vector<std::uint8_t> pattern(std::size_t n, unsigned seed) {
    std::vector<std::uint8_t> v(n);
    std::uint32_t x = seed * 2654435761u + 1;
    for (auto &b : v) {
        x = x * 1664525u + 1013904223u;
        b = static_cast<std::uint8_t>(x >> 24);
    }
    return v;
}

} // namespace

TEST_CASE("sim: synchronous copies H2D, D2D, D2H move the data", "[cuda][sim]") {
    GP_REQUIRE_SIM();
    const std::size_t n = 256 * 1024 + 13;
    const auto src = pattern(n, 1);
    std::vector<std::uint8_t> back(n, 0);
    DevBuf a(0, n), b(0, n), c(1, n);

    Status st = copy(a.p(), src.data(), n); // H2D (pageable)
    INFO(st.message);
    REQUIRE(st.ok());
    REQUIRE(copy(b.p(), a.p(), n).ok()); // D2D, same device
    REQUIRE(copy(c.p(), b.p(), n).ok()); // D2D, across devices
    REQUIRE(copy(back.data(), c.p(), n).ok()); // D2H
    CHECK(back == src);

    // interior offsets
    std::vector<std::uint8_t> part(1000, 0);
    REQUIRE(copy(part.data(), static_cast<char *>(a.p()) + 5000, part.size()).ok());
    CHECK(std::equal(part.begin(), part.end(), src.begin() + 5000));
}

TEST_CASE("sim: copies to and from pinned host memory", "[cuda][sim]") {
    GP_REQUIRE_SIM();
    const Api &api = driver().api();
    const std::size_t n = 64 * 1024;
    void *pinned = nullptr;
    {
        ScopedContext scope(0);
        REQUIRE(api.cuMemAllocHost(&pinned, n) == CUDA_SUCCESS);
    }
    const auto src = pattern(n, 2);
    std::memcpy(pinned, src.data(), n);
    DevBuf d(1, n);
    REQUIRE(copy(d.p(), pinned, n).ok());
    std::memset(pinned, 0, n);
    REQUIRE(copy(pinned, d.p(), n).ok());
    CHECK(std::memcmp(pinned, src.data(), n) == 0);
    // host to host goes around the driver
    std::vector<std::uint8_t> h(n, 0);
    REQUIRE(copy(h.data(), pinned, n).ok());
    CHECK(h == src);
    api.cuMemFreeHost(pinned);
}

TEST_CASE("sim: zero-length copies succeed without the driver", "[cuda][sim]") {
    GP_REQUIRE_SIM();
    // bogus pointers: any driver call would fail on them
    void *bogus = reinterpret_cast<void *>(std::uintptr_t{0x10});
    CHECK(copy(bogus, bogus, 0, CopyOptions{7, 0}).ok());
    CopyToken t;
    REQUIRE(copy_async(bogus, bogus, 0, &t, CopyOptions{7, 0}).ok());
    CHECK(t.empty());
    CHECK(poll(t) == PollResult::done);
}

TEST_CASE("sim: copy errors carry the CUDA error name", "[cuda][sim]") {
    GP_REQUIRE_SIM();
    std::vector<char> h(64);
    Status st = copy(h.data(), h.data() + 32, 16, CopyOptions{7, 0}); // no device 7
    CHECK_FALSE(st.ok());
    CHECK(st.code == CUDA_ERROR_INVALID_DEVICE);
    CHECK(st.message.find("CUDA_ERROR_INVALID_DEVICE") != std::string::npos);

    // a range running past its allocation (a freed address would be taken
    // for pageable host memory and fault, as with the driver)
    DevBuf d(0, 4096);
    st = copy(h.data(), reinterpret_cast<void *>(d.ptr + 4096 - 32), 64, CopyOptions{0, 0});
    CHECK_FALSE(st.ok());
    CHECK(st.message.find("cuMemcpyAsync") != std::string::npos);
    CHECK(st.message.find(error_name(st.code)) != std::string::npos);
}

TEST_CASE("sim: async copy token completes only after the data landed", "[cuda][sim]") {
    GP_REQUIRE_SIM();
    const std::size_t n = 1 << 20;
    const auto src = pattern(n, 3);
    DevBuf d(0, n);
    REQUIRE(copy(d.p(), src.data(), n).ok());

    std::vector<std::uint8_t> dst(n, 0);
    const DeviceStats before = devices().stats();
    CopyToken t;
    Status st = copy_async(dst.data(), d.p(), n, &t); // D2H: 30 ms in the simulator
    REQUIRE(st.ok());
    REQUIRE_FALSE(t.empty());
    CHECK(t.device == 0);
    CHECK(devices().stats().events_outstanding == before.events_outstanding + 1);
    CHECK(poll(t) == PollResult::pending);

    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    PollResult r = PollResult::pending;
    while (r == PollResult::pending && std::chrono::steady_clock::now() < deadline) {
        r = poll(t);
    }
    REQUIRE(r == PollResult::done);
    CHECK(dst == src); // checked at once: the data must already be there
    CHECK(t.empty());
    CHECK(poll(t) == PollResult::done);
    // the event went back to the pool
    CHECK(devices().stats().events_outstanding == before.events_outstanding);
    CHECK(devices().stats().events_pooled >= 1);

    // wait() variant
    std::vector<std::uint8_t> dst2(n, 0);
    REQUIRE(copy_async(dst2.data(), d.p(), n, &t).ok());
    REQUIRE(wait(t).ok());
    CHECK(dst2 == src);
    CHECK(t.empty());
}

TEST_CASE("sim: a copy on the ordered slot waits for the legacy stream", "[cuda][sim]") {
    GP_REQUIRE_SIM();
    const Api &api = driver().api();
    const std::size_t n = 4096, big = 128 << 20;
    const auto before = pattern(n, 5);
    const auto after = pattern(n, 6);
    DevBuf d(0, n), scratch(0, big);
    std::vector<std::uint8_t> filler(big, 7);
    REQUIRE(copy(d.p(), before.data(), n).ok());
    // an application's copies still in flight on the legacy stream: a large
    // one (its bytes land at its end, after tens of milliseconds here) and
    // behind it the new bytes of d; then an ordered copy of d back: on any
    // other stream it would run at once and read the old bytes
    {
        ScopedContext scope(0);
        REQUIRE(api.cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(scratch.p()), filler.data(),
                                      big, CU_STREAM_LEGACY) == CUDA_SUCCESS);
        REQUIRE(api.cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(d.p()), after.data(), n,
                                      CU_STREAM_LEGACY) == CUDA_SUCCESS);
    }
    std::vector<std::uint8_t> back(n, 0);
    CopyOptions o;
    o.device = 0;
    o.slot = DeviceManager::kOrderedSlot;
    const bool copied = copy(back.data(), d.p(), n, o).ok();
    {
        ScopedContext scope(0);
        REQUIRE(api.cuStreamSynchronize(CU_STREAM_LEGACY) == CUDA_SUCCESS);
    }
    REQUIRE(copied);
    CHECK(back == after);
}
