// CUDA hooks on the driver simulator (test/cudasim -> libcuda.so.1), loaded by
// path from $GDRPIPE_CUDASIM_DIR. Every test is skipped (with a message) when
// the simulator is not there.
#include "gdrpipe/hooks/cuda_hooks.hpp"

#include <algorithm>
#include <atomic>
#include "gp_catch.hpp"
#include <cstdlib>
#include <cuda.h>
#include <dlfcn.h>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace gdrpipe::hooks;

namespace {

template <class F>
F sym(void *h, const char *name)
{
    return reinterpret_cast<F>(dlsym(h, name));
}

struct Driver {
    void *h = nullptr;
    using GPA = CUresult (*)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
    GPA gpa = nullptr;
    CUresult (*alloc)(CUdeviceptr *, size_t) = nullptr;
    CUresult (*free_)(CUdeviceptr) = nullptr;
    CUresult (*free_legacy)(unsigned int) = nullptr;
    CUresult (*alloc_legacy)(unsigned int *, unsigned int) = nullptr;
    CUresult (*pitch)(CUdeviceptr *, size_t *, size_t, size_t, unsigned int) = nullptr;
    CUresult (*managed)(CUdeviceptr *, size_t, unsigned int) = nullptr;
    CUresult (*attr)(void *, CUpointer_attribute, CUdeviceptr) = nullptr;
    CUresult (*alloc_async_ptsz)(CUdeviceptr *, size_t, CUstream) = nullptr;
    CUresult (*free_async_ptsz)(CUdeviceptr, CUstream) = nullptr;
    CUresult (*alloc_async)(CUdeviceptr *, size_t, CUstream) = nullptr;
    CUresult (*free_async)(CUdeviceptr, CUstream) = nullptr;
    CUresult (*alloc_pool)(CUdeviceptr *, size_t, CUmemoryPool, CUstream) = nullptr;
    CUresult (*default_pool)(CUmemoryPool *, CUdevice) = nullptr;
    CUresult (*pool_create)(CUmemoryPool *, const CUmemPoolProps *) = nullptr;
    CUresult (*pool_trim)(CUmemoryPool, size_t) = nullptr;
    CUresult (*pool_destroy)(CUmemoryPool) = nullptr;
    CUresult (*stream_sync)(CUstream) = nullptr;
    CUresult (*granularity)(size_t *, const CUmemAllocationProp *, CUmemAllocationGranularity_flags) = nullptr;
    CUresult (*create)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long) = nullptr;
    CUresult (*reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long) = nullptr;
    CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long) = nullptr;
    CUresult (*set_access)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t) = nullptr;
    CUresult (*unmap)(CUdeviceptr, size_t) = nullptr;
    CUresult (*release)(CUmemGenericAllocationHandle) = nullptr;
    CUresult (*addr_free)(CUdeviceptr, size_t) = nullptr;
    CUresult (*alloc_host)(void **, size_t) = nullptr;
    CUresult (*host_alloc)(void **, size_t, unsigned int) = nullptr;
    CUresult (*free_host)(void *) = nullptr;
    CUresult (*host_register)(void *, size_t, unsigned int) = nullptr;
    CUresult (*host_unregister)(void *) = nullptr;
    CUdeviceptr preexisting = 0; // allocated before install()
    Report report;
    std::string skip_reason;
};

// what listeners saw
struct Seen {
    Event e;
    bool valid; // the driver still knew the address when the listener ran
};
std::mutex g_mu;
std::vector<Seen> g_seen;

Driver &drv();

bool still_valid(uintptr_t a)
{
    CUdeviceptr start = 0;
    return drv().attr(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, a) == CUDA_SUCCESS;
}

void recorder(const Event &e, void *)
{
    const bool v = still_valid(e.address);
    std::lock_guard<std::mutex> g(g_mu);
    g_seen.push_back(Seen{e, v});
}

Driver &drv()
{
    static Driver d = [] {
        Driver x;
        const char *dir = std::getenv("GDRPIPE_CUDASIM_DIR");
        if (dir == nullptr || *dir == '\0') {
            x.skip_reason = "GDRPIPE_CUDASIM_DIR not set (simulator not built)";
            return x;
        }
        const std::string path = std::string(dir) + "/libcuda.so.1";
        x.h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (x.h == nullptr) {
            x.skip_reason = "cannot load " + path + ": " + dlerror();
            return x;
        }
        void *h = x.h;
        x.gpa = sym<Driver::GPA>(h, "cuGetProcAddress_v2");
        x.alloc = sym<decltype(x.alloc)>(h, "cuMemAlloc_v2");
        x.free_ = sym<decltype(x.free_)>(h, "cuMemFree_v2");
        x.free_legacy = sym<decltype(x.free_legacy)>(h, "cuMemFree");
        x.alloc_legacy = sym<decltype(x.alloc_legacy)>(h, "cuMemAlloc");
        x.pitch = sym<decltype(x.pitch)>(h, "cuMemAllocPitch_v2");
        x.managed = sym<decltype(x.managed)>(h, "cuMemAllocManaged");
        x.attr = sym<decltype(x.attr)>(h, "cuPointerGetAttribute");
        x.alloc_async_ptsz = sym<decltype(x.alloc_async_ptsz)>(h, "cuMemAllocAsync_ptsz");
        x.free_async_ptsz = sym<decltype(x.free_async_ptsz)>(h, "cuMemFreeAsync_ptsz");
        x.alloc_async = sym<decltype(x.alloc_async)>(h, "cuMemAllocAsync");
        x.free_async = sym<decltype(x.free_async)>(h, "cuMemFreeAsync");
        x.alloc_pool = sym<decltype(x.alloc_pool)>(h, "cuMemAllocFromPoolAsync");
        x.default_pool = sym<decltype(x.default_pool)>(h, "cuDeviceGetDefaultMemPool");
        x.pool_create = sym<decltype(x.pool_create)>(h, "cuMemPoolCreate");
        x.pool_trim = sym<decltype(x.pool_trim)>(h, "cuMemPoolTrimTo");
        x.pool_destroy = sym<decltype(x.pool_destroy)>(h, "cuMemPoolDestroy");
        x.stream_sync = sym<decltype(x.stream_sync)>(h, "cuStreamSynchronize");
        x.granularity = sym<decltype(x.granularity)>(h, "cuMemGetAllocationGranularity");
        x.create = sym<decltype(x.create)>(h, "cuMemCreate");
        x.reserve = sym<decltype(x.reserve)>(h, "cuMemAddressReserve");
        x.map = sym<decltype(x.map)>(h, "cuMemMap");
        x.set_access = sym<decltype(x.set_access)>(h, "cuMemSetAccess");
        x.unmap = sym<decltype(x.unmap)>(h, "cuMemUnmap");
        x.release = sym<decltype(x.release)>(h, "cuMemRelease");
        x.addr_free = sym<decltype(x.addr_free)>(h, "cuMemAddressFree");
        x.alloc_host = sym<decltype(x.alloc_host)>(h, "cuMemAllocHost_v2");
        x.host_alloc = sym<decltype(x.host_alloc)>(h, "cuMemHostAlloc");
        x.free_host = sym<decltype(x.free_host)>(h, "cuMemFreeHost");
        x.host_register = sym<decltype(x.host_register)>(h, "cuMemHostRegister_v2");
        x.host_unregister = sym<decltype(x.host_unregister)>(h, "cuMemHostUnregister");

        auto init = sym<CUresult (*)(unsigned)>(h, "cuInit");
        auto retain = sym<CUresult (*)(CUcontext *, CUdevice)>(h, "cuDevicePrimaryCtxRetain");
        auto set_current = sym<CUresult (*)(CUcontext)>(h, "cuCtxSetCurrent");
        CUcontext ctx = nullptr;
        if (init == nullptr || retain == nullptr || set_current == nullptr || init(0) != CUDA_SUCCESS ||
            retain(&ctx, 0) != CUDA_SUCCESS || set_current(ctx) != CUDA_SUCCESS) {
            x.skip_reason = "simulator did not initialize";
            return x;
        }
        if (x.alloc(&x.preexisting, 3 << 20) != CUDA_SUCCESS) {
            x.skip_reason = "simulator cannot allocate";
            return x;
        }
        x.report = install(x.h);
        add_listener(&recorder, nullptr);
        return x;
    }();
    return d;
}

#define NEED_SIM()                                                                               \
    do {                                                                                         \
        if (drv().h == nullptr || !drv().skip_reason.empty()) {                                  \
            WARN("SKIPPED: " << drv().skip_reason);                                              \
            return;                                                                              \
        }                                                                                        \
    } while (0)

std::vector<Seen> take_seen()
{
    std::lock_guard<std::mutex> g(g_mu);
    std::vector<Seen> out;
    out.swap(g_seen);
    return out;
}

// the single event of `type` at `addr` (fails the test when not exactly one)
Seen find_one(const std::vector<Seen> &v, EventType type, uintptr_t addr)
{
    std::vector<Seen> m;
    for (const auto &s : v) {
        if (s.e.type == type && s.e.address == addr) {
            m.push_back(s);
        }
    }
    INFO("events of type " << to_string(type) << " at " << std::hex << addr);
    REQUIRE(m.size() == 1);
    return m[0];
}

// index of the first event of `type` at `addr`, or -1
int index_of(const std::vector<Seen> &v, EventType type, uintptr_t addr)
{
    for (size_t i = 0; i < v.size(); ++i) {
        if (v[i].e.type == type && v[i].e.address == addr) {
            return static_cast<int>(i);
        }
    }
    return -1;
}

using AllocFn = CUresult (*)(CUdeviceptr *, size_t);
using FreeFn = CUresult (*)(CUdeviceptr);

void alloc_free_cycle(AllocFn a, FreeFn f, size_t n)
{
    take_seen();
    CUdeviceptr p = 0;
    REQUIRE(a(&p, n) == CUDA_SUCCESS);
    REQUIRE(f(p) == CUDA_SUCCESS);
    auto seen = take_seen();
    Seen al = find_one(seen, EventType::alloc, p);
    CHECK(al.valid); // after the alloc
    CHECK(al.e.length == n);
    CHECK(al.e.kind == MemKind::device);
    CHECK(al.e.device == 0);
    Seen fr = find_one(seen, EventType::free, p);
    CHECK(fr.valid); // before the free
    CHECK(fr.e.length == n);
    CHECK(index_of(seen, EventType::alloc, p) < index_of(seen, EventType::free, p));
    CHECK_FALSE(still_valid(p));
}

} // namespace

TEST_CASE("hooks/sim: install report", "[hooks][sim]")
{
    NEED_SIM();
    const Report &r = drv().report;
    INFO(r.summary());
    CHECK(r.error.empty());
    CHECK(r.failed == 0);
    CHECK(r.complete());
    CHECK(active());
    for (const char *name : {"cuMemAlloc_v2", "cuMemFree_v2", "cuMemFree", "cuMemAllocAsync_ptsz",
                             "cuMemFreeAsync_ptsz", "cuMemAllocFromPoolAsync_ptsz", "cuMemUnmap",
                             "cuMemRelease", "cuMemPoolTrimTo", "cuMemHostUnregister"}) {
        INFO(name);
        auto it = std::find_if(r.symbols.begin(), r.symbols.end(),
                               [&](const SymbolReport &s) { return s.name == name; });
        REQUIRE(it != r.symbols.end());
        CHECK(it->status == SymbolStatus::patched);
    }
    // a second install is a no-op returning the same report
    Report again = install(drv().h);
    CHECK(again.already_installed);
    CHECK(again.patched == r.patched);
}

TEST_CASE("hooks/sim: alloc/free through dlsym pointers", "[hooks][sim]")
{
    NEED_SIM();
    alloc_free_cycle(drv().alloc, drv().free_, 1 << 20);
    // pitch and managed
    take_seen();
    CUdeviceptr p = 0;
    size_t pitch = 0;
    REQUIRE(drv().pitch(&p, &pitch, 1000, 7, 4) == CUDA_SUCCESS);
    REQUIRE(drv().free_(p) == CUDA_SUCCESS);
    auto seen = take_seen();
    CHECK(find_one(seen, EventType::alloc, p).e.length == pitch * 7);
    CHECK(find_one(seen, EventType::free, p).e.length == pitch * 7);
    REQUIRE(drv().managed(&p, 4096, CU_MEM_ATTACH_GLOBAL) == CUDA_SUCCESS);
    REQUIRE(drv().free_(p) == CUDA_SUCCESS);
    seen = take_seen();
    CHECK(find_one(seen, EventType::alloc, p).e.kind == MemKind::managed);
    Seen fr = find_one(seen, EventType::free, p);
    CHECK(fr.e.kind == MemKind::managed);
    CHECK(fr.valid);
}

TEST_CASE("hooks/sim: alloc/free through cuGetProcAddress pointers", "[hooks][sim]")
{
    NEED_SIM();
    REQUIRE(drv().gpa != nullptr);
    for (cuuint64_t flags : {cuuint64_t{CU_GET_PROC_ADDRESS_DEFAULT},
                             cuuint64_t{CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM}}) {
        void *a = nullptr;
        void *f = nullptr;
        CUdriverProcAddressQueryResult st{};
        REQUIRE(drv().gpa("cuMemAlloc", &a, 12000, flags, &st) == CUDA_SUCCESS);
        REQUIRE(drv().gpa("cuMemFree", &f, 12000, flags, &st) == CUDA_SUCCESS);
        alloc_free_cycle(reinterpret_cast<AllocFn>(a), reinterpret_cast<FreeFn>(f), 12345);
        // the async ones: the per-thread flag may give a distinct entry point
        void *aa = nullptr;
        void *fa = nullptr;
        REQUIRE(drv().gpa("cuMemAllocAsync", &aa, 12000, flags, &st) == CUDA_SUCCESS);
        REQUIRE(drv().gpa("cuMemFreeAsync", &fa, 12000, flags, &st) == CUDA_SUCCESS);
        take_seen();
        CUdeviceptr p = 0;
        REQUIRE(reinterpret_cast<decltype(drv().alloc_async)>(aa)(&p, 4096, nullptr) == CUDA_SUCCESS);
        REQUIRE(reinterpret_cast<decltype(drv().free_async)>(fa)(p, nullptr) == CUDA_SUCCESS);
        auto seen = take_seen();
        CHECK(find_one(seen, EventType::alloc, p).e.kind == MemKind::pool);
        CHECK(find_one(seen, EventType::free, p).valid);
        REQUIRE(drv().stream_sync(nullptr) == CUDA_SUCCESS);
    }
}

TEST_CASE("hooks/sim: _ptsz async variants and pool trim", "[hooks][sim]")
{
    NEED_SIM();
    take_seen();
    CUdeviceptr p = 0;
    REQUIRE(drv().alloc_async_ptsz(&p, 1 << 16, nullptr) == CUDA_SUCCESS);
    REQUIRE(drv().free_async_ptsz(p, nullptr) == CUDA_SUCCESS);
    auto seen = take_seen();
    Seen al = find_one(seen, EventType::alloc, p);
    CHECK(al.e.length == (1u << 16));
    CHECK(al.e.source == std::string("cuMemAllocAsync"));
    Seen fr = find_one(seen, EventType::free, p);
    CHECK(fr.valid);
    CHECK(fr.e.length == (1u << 16));
    REQUIRE(drv().stream_sync(nullptr) == CUDA_SUCCESS);

    // the freed block is reported again when its pool is trimmed
    CUmemoryPool pool = nullptr;
    REQUIRE(drv().default_pool(&pool, 0) == CUDA_SUCCESS);
    REQUIRE(drv().pool_trim(pool, 0) == CUDA_SUCCESS);
    seen = take_seen();
    Seen tr = find_one(seen, EventType::free, p);
    CHECK(tr.e.source == std::string("cuMemPoolTrimTo"));
    CHECK(tr.e.length == (1u << 16));
    // and only once
    REQUIRE(drv().pool_trim(pool, 0) == CUDA_SUCCESS);
    CHECK(index_of(take_seen(), EventType::free, p) == -1);

    // explicit pool: cuMemAllocFromPoolAsync + destroy
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    CUmemoryPool mine = nullptr;
    REQUIRE(drv().pool_create(&mine, &props) == CUDA_SUCCESS);
    CUdeviceptr q = 0;
    REQUIRE(drv().alloc_pool(&q, 8192, mine, nullptr) == CUDA_SUCCESS);
    REQUIRE(drv().free_async(q, nullptr) == CUDA_SUCCESS);
    REQUIRE(drv().stream_sync(nullptr) == CUDA_SUCCESS);
    seen = take_seen();
    CHECK(find_one(seen, EventType::alloc, q).e.kind == MemKind::pool);
    CHECK(find_one(seen, EventType::free, q).valid);
    REQUIRE(drv().pool_destroy(mine) == CUDA_SUCCESS);
    seen = take_seen();
    CHECK(find_one(seen, EventType::free, q).e.source == std::string("cuMemPoolDestroy"));
}

TEST_CASE("hooks/sim: VMM map/unmap/release/address free", "[hooks][sim]")
{
    NEED_SIM();
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 1; // the second simulated device
    size_t gran = 0;
    REQUIRE(drv().granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) == CUDA_SUCCESS);
    const size_t n = 2 * gran;
    CUmemGenericAllocationHandle hdl = 0;
    REQUIRE(drv().create(&hdl, n, &prop, 0) == CUDA_SUCCESS);
    CUdeviceptr va = 0;
    REQUIRE(drv().reserve(&va, 2 * n, 0, 0, 0) == CUDA_SUCCESS);
    take_seen();
    REQUIRE(drv().map(va, n, 0, hdl, 0) == CUDA_SUCCESS);
    CUmemAccessDesc acc{};
    acc.location = prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    REQUIRE(drv().set_access(va, n, &acc, 1) == CUDA_SUCCESS);
    auto seen = take_seen();
    Seen al = find_one(seen, EventType::alloc, va);
    CHECK(al.e.kind == MemKind::vmm);
    CHECK(al.e.length == n);
    CHECK(al.e.device == 1);

    // release while still mapped: conservative free of the mapping
    REQUIRE(drv().release(hdl) == CUDA_SUCCESS);
    seen = take_seen();
    Seen rel = find_one(seen, EventType::free, va);
    CHECK(rel.e.source == std::string("cuMemRelease"));
    CHECK(rel.valid);

    REQUIRE(drv().unmap(va, n) == CUDA_SUCCESS);
    seen = take_seen();
    Seen un = find_one(seen, EventType::free, va);
    CHECK(un.e.source == std::string("cuMemUnmap"));
    CHECK(un.e.length == n);
    CHECK(un.valid); // still mapped while the listener ran
    CHECK_FALSE(still_valid(va));

    REQUIRE(drv().addr_free(va, 2 * n) == CUDA_SUCCESS);
    seen = take_seen();
    Seen af = find_one(seen, EventType::free, va);
    CHECK(af.e.length == 2 * n);
    CHECK(af.e.source == std::string("cuMemAddressFree"));
}

TEST_CASE("hooks/sim: legacy cuMemFree and failed allocations", "[hooks][sim]")
{
    NEED_SIM();
    take_seen();
    // the simulator's addresses do not fit the legacy 32-bit API: the legacy
    // alloc fails (no alloc event) and the legacy free is still intercepted
    unsigned int p32 = 0;
    const CUresult r = drv().alloc_legacy(&p32, 4096);
    auto seen = take_seen();
    if (r != CUDA_SUCCESS) {
        for (const auto &s : seen) {
            CHECK(s.e.type != EventType::alloc);
        }
    }
    const unsigned int bogus = 0x12345000u;
    drv().free_legacy(bogus);
    seen = take_seen();
    Seen fr = find_one(seen, EventType::free, bogus);
    CHECK(fr.e.source == std::string("cuMemFree"));
    CHECK(fr.e.length == 0); // unknown to the table and to the driver
    // a failing v2 alloc gives no event
    CUdeviceptr p = 0;
    REQUIRE(drv().alloc(&p, 0) != CUDA_SUCCESS);
    CHECK(take_seen().empty());
}

TEST_CASE("hooks/sim: pinned host memory", "[hooks][sim]")
{
    NEED_SIM();
    take_seen();
    void *h = nullptr;
    REQUIRE(drv().alloc_host(&h, 10000) == CUDA_SUCCESS);
    REQUIRE(drv().free_host(h) == CUDA_SUCCESS);
    auto seen = take_seen();
    const auto a = reinterpret_cast<uintptr_t>(h);
    CHECK(find_one(seen, EventType::alloc, a).e.kind == MemKind::host_pinned);
    CHECK(find_one(seen, EventType::free, a).e.length == 10000);

    std::vector<char> buf(1 << 16);
    REQUIRE(drv().host_register(buf.data(), buf.size(), 0) == CUDA_SUCCESS);
    REQUIRE(drv().host_unregister(buf.data()) == CUDA_SUCCESS);
    seen = take_seen();
    const auto b = reinterpret_cast<uintptr_t>(buf.data());
    Seen fr = find_one(seen, EventType::free, b);
    CHECK(fr.e.kind == MemKind::host_pinned);
    CHECK(fr.e.length == buf.size());
    CHECK(fr.valid);
}

namespace {
CUdeviceptr g_victim = 0;
int g_nested_calls = 0;
void freeing_listener(const Event &e, void *)
{
    if (e.type == EventType::free && g_victim != 0) {
        ++g_nested_calls;
        CUdeviceptr v = g_victim;
        g_victim = 0;
        drv().free_(v); // re-enters the hook: must not recurse into listeners
    }
}
int g_late_calls = 0;
void counting_listener(const Event &, void *)
{
    ++g_late_calls;
}
} // namespace

TEST_CASE("hooks/sim: listener that frees, remove_listener, originals", "[hooks][sim]")
{
    NEED_SIM();
    CUdeviceptr a = 0;
    REQUIRE(drv().alloc(&a, 4096) == CUDA_SUCCESS);
    REQUIRE(drv().alloc(&g_victim, 4096) == CUDA_SUCCESS);
    const CUdeviceptr victim = g_victim;
    const uint64_t sup0 = suppressed_events();
    REQUIRE(add_listener(&freeing_listener, nullptr));
    take_seen();
    REQUIRE(drv().free_(a) == CUDA_SUCCESS);
    CHECK(g_nested_calls == 1);
    CHECK(suppressed_events() == sup0 + 1);
    CHECK_FALSE(still_valid(victim));
    auto seen = take_seen();
    CHECK(index_of(seen, EventType::free, a) >= 0);
    CHECK(index_of(seen, EventType::free, victim) == -1); // not dispatched (nested)
    REQUIRE(remove_listener(&freeing_listener, nullptr));
    CHECK_FALSE(remove_listener(&freeing_listener, nullptr));

    // a removed listener is not called any more
    REQUIRE(add_listener(&counting_listener, nullptr));
    alloc_free_cycle(drv().alloc, drv().free_, 100);
    const int calls = g_late_calls;
    CHECK(calls == 2);
    REQUIRE(remove_listener(&counting_listener, nullptr));
    alloc_free_cycle(drv().alloc, drv().free_, 100);
    CHECK(g_late_calls == calls);

    // the trampolines bypass the hooks
    auto tramp = reinterpret_cast<FreeFn>(original_of(reinterpret_cast<void *>(drv().free_)));
    CHECK(reinterpret_cast<void *>(tramp) != reinterpret_cast<void *>(drv().free_));
    auto talloc = reinterpret_cast<AllocFn>(original_of(reinterpret_cast<void *>(drv().alloc)));
    take_seen();
    CUdeviceptr p = 0;
    REQUIRE(talloc(&p, 4096) == CUDA_SUCCESS);
    REQUIRE(tramp(p) == CUDA_SUCCESS);
    CHECK(take_seen().empty());
    const auto all = originals();
    CHECK(std::any_of(all.begin(), all.end(), [](const Original &o) {
        return o.name == "cuMemFree_v2" && o.trampoline != nullptr;
    }));
    int x = 0;
    CHECK(original_of(&x) == &x);
}

namespace {
struct Found {
    std::vector<std::pair<uintptr_t, size_t>> v;
};
void collect(uintptr_t a, size_t n, MemKind, int, void *arg)
{
    static_cast<Found *>(arg)->v.emplace_back(a, n);
}
bool contains(const Found &f, uintptr_t a, size_t n)
{
    return std::find(f.v.begin(), f.v.end(), std::make_pair(a, n)) != f.v.end();
}
} // namespace

TEST_CASE("hooks/sim: live table and pre-existing allocations", "[hooks][sim]")
{
    NEED_SIM();
    CUdeviceptr p = 0;
    REQUIRE(drv().alloc(&p, 5000) == CUDA_SUCCESS);
    Found live;
    for_each_live_allocation(&collect, &live);
    CHECK(contains(live, p, 5000));
    CHECK_FALSE(contains(live, drv().preexisting, 3 << 20)); // made before install

    Found pre;
    ScanOptions so;
    const int n = scan_preexisting(&collect, &pre, so);
    CHECK(n == static_cast<int>(pre.v.size()));
    CHECK(contains(pre, drv().preexisting, 3 << 20));
    CHECK(contains(pre, p, 5000));

    REQUIRE(drv().free_(p) == CUDA_SUCCESS);
    Found after;
    for_each_live_allocation(&collect, &after);
    CHECK_FALSE(contains(after, p, 5000));
}

namespace {
std::atomic<int> g_self_calls{0};
void self_removing_listener(const Event &, void *)
{
    ++g_self_calls;
    remove_listener(&self_removing_listener, nullptr);
}
std::atomic<bool> g_removed{false};
std::atomic<int> g_after_remove{0};
std::atomic<int> g_race_calls{0};
void race_listener(const Event &, void *)
{
    if (g_removed.load()) {
        ++g_after_remove;
    }
    ++g_race_calls;
}
} // namespace

TEST_CASE("hooks/sim: listener removal from a callback and under concurrent frees", "[hooks][sim]")
{
    NEED_SIM();
    REQUIRE(add_listener(&self_removing_listener, nullptr));
    alloc_free_cycle(drv().alloc, drv().free_, 256);
    alloc_free_cycle(drv().alloc, drv().free_, 256);
    CHECK(g_self_calls.load() == 1);

    std::atomic<bool> stop{false};
    std::thread t([&] {
        // (no context on this thread: frees the driver rejects still dispatch)
        while (!stop.load()) {
            drv().free_(0x5000);
        }
    });
    for (int i = 0; i < 50; ++i) {
        g_removed = false;
        REQUIRE(add_listener(&race_listener, nullptr));
        while (g_race_calls.load() < 2 * (i + 1)) {
            std::this_thread::yield();
        }
        REQUIRE(remove_listener(&race_listener, nullptr));
        g_removed = true;
    }
    stop = true;
    t.join();
    CHECK(g_after_remove.load() == 0);
    take_seen();
}
