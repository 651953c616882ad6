// Pointer queries against the simulator.
#include "gdrpipe/cuda/memory.hpp"

#include "sim_fixture.hpp"

#include <cstdlib>
#include <vector>

using namespace gdrpipe::cuda;
using namespace gdrpipe::cuda::test;

namespace {

MemInfo must_query(const void *p) {
    std::optional<MemInfo> mi = query(p);
    REQUIRE(mi.has_value());
    return *mi;
}

std::uintptr_t addr(const void *p) { return reinterpret_cast<std::uintptr_t>(p); }

} // namespace

TEST_CASE("sim: query of device memory, interior pointer", "[cuda][sim]") {
    GP_REQUIRE_SIM();
    DevBuf buf(1, 1 << 20);
    char *inner = static_cast<char *>(buf.p()) + 12345;
    MemInfo mi = must_query(inner);
    CHECK(mi.kind == MemKind::device);
    CHECK_FALSE(mi.pinned);
    CHECK(mi.is_cuda());
    CHECK(mi.base == buf.ptr);
    CHECK(mi.length == buf.len);
    CHECK(mi.device == 1);
    CHECK(mi.buffer_id != 0);
    CHECK(mi.buffer_id == buffer_id(inner));
    CHECK(mi.legacy_ipc);
    CHECK_FALSE(mi.vmm);
    CHECK_FALSE(mi.pool);
    CHECK(set_sync_memops(inner) == CUDA_SUCCESS);
}

TEST_CASE("sim: query of host memory: pageable, pinned, registered", "[cuda][sim]") {
    GP_REQUIRE_SIM();
    const Api &api = driver().api();
    ScopedContext scope(0);
    REQUIRE(scope.ok());

    SECTION("pageable host memory is unknown to CUDA") {
        std::vector<char> v(4096);
        MemInfo mi = must_query(v.data() + 100);
        CHECK(mi.kind == MemKind::host);
        CHECK_FALSE(mi.pinned);
        CHECK_FALSE(mi.is_cuda());
        CHECK(mi.base == 0);
        CHECK(mi.length == 0);
        CHECK(mi.buffer_id == 0);
        CHECK(buffer_id(v.data()) == 0);
    }
    SECTION("cuMemAllocHost") {
        void *h = nullptr;
        REQUIRE(api.cuMemAllocHost(&h, 8192) == CUDA_SUCCESS);
        MemInfo mi = must_query(static_cast<char *>(h) + 4000);
        CHECK(mi.kind == MemKind::host);
        CHECK(mi.pinned);
        CHECK(mi.is_cuda());
        CHECK(mi.base == addr(h));
        CHECK(mi.length == 8192);
        CHECK(mi.buffer_id != 0);
        CHECK_FALSE(mi.vmm);
        api.cuMemFreeHost(h);
    }
    SECTION("cuMemHostRegister") {
        void *h = std::aligned_alloc(4096, 3 * 4096);
        REQUIRE(h != nullptr);
        REQUIRE(api.cuMemHostRegister(h, 3 * 4096, 0) == CUDA_SUCCESS);
        MemInfo mi = must_query(static_cast<char *>(h) + 5000);
        CHECK(mi.kind == MemKind::host);
        CHECK(mi.pinned);
        CHECK(mi.base == addr(h));
        CHECK(mi.length == 3 * 4096);
        REQUIRE(api.cuMemHostUnregister(h) == CUDA_SUCCESS);
        CHECK_FALSE(must_query(h).pinned);
        std::free(h);
    }
}

TEST_CASE("sim: query of managed memory", "[cuda][sim]") {
    GP_REQUIRE_SIM();
    const Api &api = driver().api();
    ScopedContext scope(0);
    REQUIRE(scope.ok());
    CUdeviceptr p = 0;
    REQUIRE(api.cuMemAllocManaged(&p, 65536, CU_MEM_ATTACH_GLOBAL) == CUDA_SUCCESS);
    MemInfo mi = must_query(reinterpret_cast<void *>(p + 100));
    CHECK(mi.kind == MemKind::managed);
    CHECK(mi.base == p);
    CHECK(mi.length == 65536);
    CHECK_FALSE(mi.vmm);
    CHECK_FALSE(mi.pool);
    api.cuMemFree(p);
}

TEST_CASE("sim: query of pool memory", "[cuda][sim]") {
    GP_REQUIRE_SIM();
    const Api &api = driver().api();
    ScopedContext scope(0);
    REQUIRE(scope.ok());
    CUstream s = nullptr;
    REQUIRE(devices().stream(0, 1, &s) == CUDA_SUCCESS);
    CUdeviceptr p = 0;
    REQUIRE(api.cuMemAllocAsync(&p, 1 << 16, s) == CUDA_SUCCESS);
    REQUIRE(api.cuStreamSynchronize(s) == CUDA_SUCCESS);
    MemInfo mi = must_query(reinterpret_cast<void *>(p + 64));
    CHECK(mi.kind == MemKind::device);
    CHECK(mi.pool);
    CHECK(mi.mempool != nullptr);
    CHECK_FALSE(mi.vmm);
    CHECK_FALSE(mi.legacy_ipc);
    CHECK(mi.base == p);
    CHECK(mi.length == (1 << 16));
    CHECK(mi.device == 0);
    REQUIRE(api.cuMemFreeAsync(p, s) == CUDA_SUCCESS);
    REQUIRE(api.cuStreamSynchronize(s) == CUDA_SUCCESS);
}

TEST_CASE("sim: query of VMM memory", "[cuda][sim]") {
    GP_REQUIRE_SIM();
    const Api &api = driver().api();
    ScopedContext scope(1);
    REQUIRE(scope.ok());
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 1;
    std::size_t gran = 0;
    REQUIRE(api.cuMemGetAllocationGranularity(&gran, &prop,
                                              CU_MEM_ALLOC_GRANULARITY_MINIMUM) == CUDA_SUCCESS);
    REQUIRE(gran > 0);
    const std::size_t size = 2 * gran;
    CUmemGenericAllocationHandle h = 0;
    REQUIRE(api.cuMemCreate(&h, size, &prop, 0) == CUDA_SUCCESS);
    CUdeviceptr va = 0;
    REQUIRE(api.cuMemAddressReserve(&va, size, 0, 0, 0) == CUDA_SUCCESS);
    REQUIRE(api.cuMemMap(va, size, 0, h, 0) == CUDA_SUCCESS);
    CUmemAccessDesc access{};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    REQUIRE(api.cuMemSetAccess(va, size, &access, 1) == CUDA_SUCCESS);

    MemInfo mi = must_query(reinterpret_cast<void *>(va + gran + 7));
    CHECK(mi.kind == MemKind::device);
    CHECK(mi.vmm);
    CHECK_FALSE(mi.pool);
    CHECK_FALSE(mi.legacy_ipc);
    CHECK(mi.device == 1);
    CHECK(mi.base == va);
    CHECK(mi.length == size);
    // SYNC_MEMOPS is not supported for VMM memory; that is not an error here
    CHECK(set_sync_memops(reinterpret_cast<void *>(va)) == CUDA_SUCCESS);

    CHECK(api.cuMemUnmap(va, size) == CUDA_SUCCESS);
    CHECK(api.cuMemAddressFree(va, size) == CUDA_SUCCESS);
    CHECK(api.cuMemRelease(h) == CUDA_SUCCESS);
}

TEST_CASE("sim: buffer id changes after free and realloc at the same address",
          "[cuda][sim]") {
    GP_REQUIRE_SIM();
    const Api &api = driver().api();
    ScopedContext scope(0);
    REQUIRE(scope.ok());
    const std::size_t n = 1 << 20;
    CUdeviceptr first = 0;
    REQUIRE(api.cuMemAlloc(&first, n) == CUDA_SUCCESS);
    const std::uint64_t id1 = buffer_id(reinterpret_cast<void *>(first));
    REQUIRE(id1 != 0);
    REQUIRE(api.cuMemFree(first) == CUDA_SUCCESS);
    CHECK(buffer_id(reinterpret_cast<void *>(first)) == 0); // freed: unknown

    // allocate until the address comes back (keeping the others meanwhile)
    std::vector<CUdeviceptr> held;
    CUdeviceptr again = 0;
    for (int i = 0; i < 16; ++i) {
        CUdeviceptr p = 0;
        REQUIRE(api.cuMemAlloc(&p, n) == CUDA_SUCCESS);
        held.push_back(p);
        if (p == first) {
            again = p;
            break;
        }
    }
    REQUIRE(again == first);
    const std::uint64_t id2 = buffer_id(reinterpret_cast<void *>(again));
    CHECK(id2 != 0);
    CHECK(id2 != id1);
    CHECK(must_query(reinterpret_cast<void *>(again)).buffer_id == id2);
    for (CUdeviceptr p : held) api.cuMemFree(p);
}

TEST_CASE("sim: zero and null pointers", "[cuda][sim]") {
    GP_REQUIRE_SIM();
    MemInfo mi = must_query(nullptr);
    CHECK(mi.kind == MemKind::host);
    CHECK_FALSE(mi.pinned);
}
