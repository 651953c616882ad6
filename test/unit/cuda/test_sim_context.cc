// Contexts, streams, events and shutdown against the simulator.
#include "sim_fixture.hpp"

#include <vector>

using namespace gdrpipe::cuda;
using namespace gdrpipe::cuda::test;

namespace {
CUcontext current() {
    CUcontext c = nullptr;
    REQUIRE(driver().api().cuCtxGetCurrent(&c) == CUDA_SUCCESS);
    return c;
}
} // namespace

TEST_CASE("sim: ScopedContext makes the device current and restores the previous",
          "[cuda][sim]") {
    GP_REQUIRE_SIM();
    const Api &api = driver().api();
    CUcontext c0 = nullptr, c1 = nullptr;
    REQUIRE(devices().primary_context(0, &c0) == CUDA_SUCCESS);
    REQUIRE(devices().primary_context(1, &c1) == CUDA_SUCCESS);

    SECTION("from no current context") {
        REQUIRE(api.cuCtxSetCurrent(nullptr) == CUDA_SUCCESS);
        {
            ScopedContext s(0);
            REQUIRE(s.ok());
            CHECK(s.context() == c0);
            CHECK(current() == c0);
        }
        CHECK(current() == nullptr);
    }
    SECTION("from another device's context, nested") {
        REQUIRE(api.cuCtxSetCurrent(c1) == CUDA_SUCCESS);
        {
            ScopedContext s(0);
            REQUIRE(s.ok());
            CHECK(current() == c0);
            {
                ScopedContext inner(1);
                CHECK(current() == c1);
            }
            CHECK(current() == c0);
        }
        CHECK(current() == c1);
        REQUIRE(api.cuCtxSetCurrent(nullptr) == CUDA_SUCCESS);
    }
    SECTION("already current: nothing is pushed") {
        REQUIRE(api.cuCtxSetCurrent(c0) == CUDA_SUCCESS);
        {
            ScopedContext s(0);
            REQUIRE(s.ok());
            CHECK(current() == c0);
        }
        CHECK(current() == c0);
        // had the scope pushed without popping, the stack would hold c0 twice
        CUcontext popped = nullptr;
        REQUIRE(api.cuCtxPopCurrent(&popped) == CUDA_SUCCESS);
        CHECK(popped == c0);
        CHECK(current() == nullptr);
    }
    SECTION("invalid device") {
        ScopedContext s(9);
        CHECK_FALSE(s.ok());
        CHECK(s.status() == CUDA_ERROR_INVALID_DEVICE);
    }
}

TEST_CASE("sim: streams are per device and slot, events are recycled", "[cuda][sim]") {
    GP_REQUIRE_SIM();
    DeviceManager dm(driver());
    CUstream a = nullptr, b = nullptr, a2 = nullptr, other = nullptr;
    REQUIRE(dm.stream(0, 0, &a) == CUDA_SUCCESS);
    REQUIRE(dm.stream(0, 1, &b) == CUDA_SUCCESS);
    REQUIRE(dm.stream(0, 0, &a2) == CUDA_SUCCESS);
    REQUIRE(dm.stream(1, 0, &other) == CUDA_SUCCESS);
    CHECK(a == a2);
    CHECK(a != b);
    CHECK(a != other);
    CHECK(dm.stream(0, DeviceManager::kStreamSlots, &a2) == CUDA_ERROR_INVALID_VALUE);
    CHECK(dm.stats().streams == 3);

    CUevent e1 = nullptr, e2 = nullptr, e3 = nullptr;
    REQUIRE(dm.acquire_event(0, &e1) == CUDA_SUCCESS);
    REQUIRE(dm.acquire_event(0, &e2) == CUDA_SUCCESS);
    CHECK(e1 != e2);
    CHECK(dm.stats().events_outstanding == 2);
    dm.release_event(0, e1);
    CHECK(dm.stats().events_pooled == 1);
    REQUIRE(dm.acquire_event(0, &e3) == CUDA_SUCCESS);
    CHECK(e3 == e1); // recycled
    dm.release_event(0, e3);
    dm.release_event(0, e2);
    CHECK(dm.stats().events_outstanding == 0);
    CHECK(dm.stats().events_pooled == 2);
}

TEST_CASE("sim: shutdown destroys streams and events and releases contexts", "[cuda][sim]") {
    GP_REQUIRE_SIM();
    const Api &api = driver().api();
    DeviceManager dm(driver());
    std::vector<CUstream> streams;
    std::vector<CUevent> events;
    CUevent leaked = nullptr; // still outstanding at shutdown
    REQUIRE(dm.acquire_event(1, &leaked) == CUDA_SUCCESS);
    for (int dev = 0; dev < 2; ++dev) {
        for (unsigned slot = 0; slot < 2; ++slot) {
            CUstream s = nullptr;
            REQUIRE(dm.stream(dev, slot, &s) == CUDA_SUCCESS);
            streams.push_back(s);
        }
        CUevent e = nullptr;
        REQUIRE(dm.acquire_event(dev, &e) == CUDA_SUCCESS);
        ScopedContext scope(dm, dev);
        REQUIRE(api.cuEventRecord(e, streams.back()) == CUDA_SUCCESS);
        REQUIRE(api.cuEventSynchronize(e) == CUDA_SUCCESS);
        dm.release_event(dev, e);
        events.push_back(e);
    }
    // handles are checked with a context current that outlives dm's retain
    ScopedContext outer(devices(), 0);
    REQUIRE(outer.ok());
    for (CUstream s : streams) CHECK(api.cuStreamQuery(s) == CUDA_SUCCESS);
    DeviceStats before = dm.stats();
    CHECK(before.contexts_retained == 2);
    CHECK(before.streams == 4);
    CHECK(before.events_pooled == 2);
    CHECK(before.events_outstanding == 1);

    dm.shutdown();

    DeviceStats after = dm.stats();
    CHECK(after.contexts_retained == 0);
    CHECK(after.streams == 0);
    CHECK(after.events_pooled == 0);
    CHECK(after.events_outstanding == 0);
    for (CUstream s : streams) CHECK(api.cuStreamQuery(s) == CUDA_ERROR_INVALID_HANDLE);
    for (CUevent e : events) CHECK(api.cuEventQuery(e) == CUDA_ERROR_INVALID_HANDLE);
    // an event released after shutdown is not pooled again
    dm.release_event(1, leaked);
    CHECK(dm.stats().events_pooled == 0);
    api.cuEventDestroy(leaked);

    // usable again afterwards
    CUstream s = nullptr;
    REQUIRE(dm.stream(0, 0, &s) == CUDA_SUCCESS);
    CHECK(api.cuStreamQuery(s) == CUDA_SUCCESS);
    CHECK(dm.stats().contexts_retained == 1);
}
