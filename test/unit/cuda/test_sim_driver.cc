// Loader and device table against the simulator.
#include "sim_fixture.hpp"

#include <cstring>

using namespace gdrpipe::cuda;
using namespace gdrpipe::cuda::test;

TEST_CASE("sim: every driver_functions.def entry resolves", "[cuda][sim]") {
    GP_REQUIRE_SIM();
    Driver d(sim_path()); // a separate, non-singleton object
    REQUIRE(d.available());
    CHECK(d.handle() != nullptr);
    CHECK(d.version() >= 11020);
    CHECK(d.missing_optional().empty());
    for (const EntryInfo &e : Driver::entries()) {
        INFO(e.name);
        CHECK(d.entry(e.name) != nullptr);
    }
    // the versioned prototype is called through the plain cuda.h name
    int n = 0;
    CHECK(d.api().cuDeviceGetCount(&n) == CUDA_SUCCESS);
    CHECK(n == 2);
}

TEST_CASE("sim: device table, properties and peer access", "[cuda][sim]") {
    GP_REQUIRE_SIM();
    DeviceManager &dm = devices();
    REQUIRE(dm.count() == 2);
    const DeviceProps *p0 = dm.props(0);
    const DeviceProps *p1 = dm.props(1);
    REQUIRE(p0 != nullptr);
    REQUIRE(p1 != nullptr);
    CHECK(dm.props(2) == nullptr);
    CHECK(dm.props(-1) == nullptr);
    CHECK(p0->ordinal == 0);
    CHECK(p1->ordinal == 1);
    CHECK_FALSE(p0->pci_bus_id.empty());
    CHECK(p0->pci_bus_id != p1->pci_bus_id);
    CHECK(std::memcmp(&p0->uuid, &p1->uuid, sizeof(CUuuid)) != 0);
    CHECK(p0->cc_major > 0);

    CHECK(dm.can_access_peer(0, 1));
    CHECK_FALSE(dm.can_access_peer(0, 0));
    CHECK_FALSE(dm.can_access_peer(0, 5));
    CHECK(dm.enable_peer_access(0, 1) == CUDA_SUCCESS);
    CHECK(dm.enable_peer_access(0, 1) == CUDA_SUCCESS); // idempotent
    CHECK(dm.enable_peer_access(0, 0) == CUDA_SUCCESS);
    CHECK(dm.enable_peer_access(0, 7) == CUDA_ERROR_INVALID_DEVICE);

    CUcontext c0 = nullptr, c1 = nullptr, again = nullptr;
    REQUIRE(dm.primary_context(0, &c0) == CUDA_SUCCESS);
    REQUIRE(dm.primary_context(1, &c1) == CUDA_SUCCESS);
    REQUIRE(dm.primary_context(0, &again) == CUDA_SUCCESS);
    CHECK(c0 != nullptr);
    CHECK(c0 != c1);
    CHECK(c0 == again);
    CHECK(dm.primary_context(2, &again) == CUDA_ERROR_INVALID_DEVICE);
}
