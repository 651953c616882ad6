// Real-GPU check of gdrpipe's CUDA allocation hooks with a statically linked
// CUDA runtime (which calls the driver through cuGetProcAddress pointers).
// Installs the hooks on the libcuda it dlopens BEFORE the first CUDA call,
// then exercises cudaMalloc/cudaFree, cudaMallocAsync/cudaFreeAsync (+ pool
// trim), per-thread-stream async entry points, cudaMallocManaged,
// cudaMallocHost/cudaFreeHost, cudaHostRegister/Unregister, cudaMallocPitch,
// and VMM through the driver API. Prints every event seen and
//   "hooks: N allocs, M frees seen, K missed"
// and exits nonzero if any expected event was missed, a free was reported
// after the memory was gone, or the hooks did not install completely.
// Build: test/gpu/hooks/build.sh ; run: ./static_cudart_frees
#include "gdrpipe/hooks/cuda_hooks.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <cstdlib>
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <mutex>
#include <vector>

using namespace gdrpipe::hooks;

namespace {

struct Seen {
    Event e;
    bool valid; // the driver still knew the address when the listener ran
};

std::mutex g_mu;
std::vector<Seen> g_seen;
CUresult (*g_attr)(void *, CUpointer_attribute, CUdeviceptr) = nullptr;

void listener(const Event &e, void *)
{
    CUdeviceptr start = 0;
    const bool valid =
        g_attr != nullptr && g_attr(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, e.address) == CUDA_SUCCESS;
    std::printf("  event: %-5s %-11s addr=0x%llx len=%zu dev=%d via %s%s\n", to_string(e.type),
                to_string(e.kind), static_cast<unsigned long long>(e.address), e.length, e.device,
                e.source, e.type == EventType::free ? (valid ? " (memory still valid)" : " (memory unknown)") : "");
    std::lock_guard<std::mutex> g(g_mu);
    g_seen.push_back(Seen{e, valid});
}

int g_allocs = 0, g_frees = 0, g_missed = 0, g_late = 0;

// one expected event: found? (and, for frees, reported while still valid?)
void expect(EventType t, uintptr_t addr, const char *what, bool must_be_valid = true)
{
    std::lock_guard<std::mutex> g(g_mu);
    for (const auto &s : g_seen) {
        if (s.e.type == t && s.e.address == addr) {
            if (t == EventType::alloc) {
                ++g_allocs;
            } else {
                ++g_frees;
                if (must_be_valid && !s.valid) {
                    ++g_late;
                    std::printf("LATE: %s: free of 0x%llx reported after the memory was gone\n", what,
                                static_cast<unsigned long long>(addr));
                }
            }
            return;
        }
    }
    ++g_missed;
    std::printf("MISSED: %s: no %s event at 0x%llx\n", what, to_string(t),
                static_cast<unsigned long long>(addr));
}

void clear()
{
    std::lock_guard<std::mutex> g(g_mu);
    g_seen.clear();
}

#define CK(x)                                                                                    \
    do {                                                                                         \
        cudaError_t e_ = (x);                                                                    \
        if (e_ != cudaSuccess) {                                                                 \
            std::printf("%s failed: %s\n", #x, cudaGetErrorString(e_));                          \
            std::exit(2);                                                                        \
        }                                                                                        \
    } while (0)
#define CKD(x)                                                                                   \
    do {                                                                                         \
        CUresult r_ = (x);                                                                       \
        if (r_ != CUDA_SUCCESS) {                                                                \
            std::printf("%s failed: %d\n", #x, static_cast<int>(r_));                            \
            std::exit(2);                                                                        \
        }                                                                                        \
    } while (0)

template <class F>
F sym(void *h, const char *n)
{
    F f = reinterpret_cast<F>(dlsym(h, n));
    if (f == nullptr) {
        std::printf("dlsym(%s) failed\n", n);
        std::exit(2);
    }
    return f;
}

} // namespace

int main()
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (h == nullptr) {
        std::printf("cannot load libcuda.so.1: %s\n", dlerror());
        return 2;
    }
    g_attr = sym<decltype(g_attr)>(h, "cuPointerGetAttribute");
    const Report rep = install(h);
    std::printf("install report: %s", rep.summary().c_str());
    add_listener(&listener, nullptr);

    const size_t n = size_t{8} << 20;
    void *p = nullptr;

    std::printf("cudaMalloc/cudaFree\n");
    CK(cudaMalloc(&p, n));
    CK(cudaFree(p));
    expect(EventType::alloc, reinterpret_cast<uintptr_t>(p), "cudaMalloc");
    expect(EventType::free, reinterpret_cast<uintptr_t>(p), "cudaFree");
    clear();

    std::printf("cudaMallocPitch\n");
    size_t pitch = 0;
    CK(cudaMallocPitch(&p, &pitch, 1000, 100));
    CK(cudaFree(p));
    expect(EventType::alloc, reinterpret_cast<uintptr_t>(p), "cudaMallocPitch");
    expect(EventType::free, reinterpret_cast<uintptr_t>(p), "cudaFree(pitch)");
    clear();

    std::printf("cudaMallocAsync/cudaFreeAsync + trim\n");
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    CK(cudaMallocAsync(&p, n, st));
    CK(cudaFreeAsync(p, st));
    CK(cudaStreamSynchronize(st));
    expect(EventType::alloc, reinterpret_cast<uintptr_t>(p), "cudaMallocAsync");
    expect(EventType::free, reinterpret_cast<uintptr_t>(p), "cudaFreeAsync");
    clear();
    cudaMemPool_t pool;
    CK(cudaDeviceGetDefaultMemPool(&pool, 0));
    CK(cudaMemPoolTrimTo(pool, 0));
    expect(EventType::free, reinterpret_cast<uintptr_t>(p), "cudaMemPoolTrimTo", false);
    clear();

    std::printf("per-thread-stream cuMemAllocAsync/cuMemFreeAsync (cudaGetDriverEntryPointByVersion)\n");
    {
        void *fa = nullptr;
        void *ff = nullptr;
        cudaDriverEntryPointQueryResult q;
        CK(cudaGetDriverEntryPointByVersion("cuMemAllocAsync", &fa, 12000, cudaEnablePerThreadDefaultStream, &q));
        CK(cudaGetDriverEntryPointByVersion("cuMemFreeAsync", &ff, 12000, cudaEnablePerThreadDefaultStream, &q));
        CUdeviceptr d = 0;
        CKD(reinterpret_cast<CUresult (*)(CUdeviceptr *, size_t, CUstream)>(fa)(&d, n, CU_STREAM_PER_THREAD));
        CKD(reinterpret_cast<CUresult (*)(CUdeviceptr, CUstream)>(ff)(d, CU_STREAM_PER_THREAD));
        CK(cudaStreamSynchronize(cudaStreamPerThread));
        expect(EventType::alloc, d, "cuMemAllocAsync(ptsz)");
        expect(EventType::free, d, "cuMemFreeAsync(ptsz)");
        clear();
    }

    std::printf("cudaMallocManaged\n");
    CK(cudaMallocManaged(&p, n));
    CK(cudaFree(p));
    expect(EventType::alloc, reinterpret_cast<uintptr_t>(p), "cudaMallocManaged");
    expect(EventType::free, reinterpret_cast<uintptr_t>(p), "cudaFree(managed)");
    clear();

    std::printf("cudaMallocHost/cudaFreeHost\n");
    CK(cudaMallocHost(&p, n));
    CK(cudaFreeHost(p));
    expect(EventType::alloc, reinterpret_cast<uintptr_t>(p), "cudaMallocHost");
    expect(EventType::free, reinterpret_cast<uintptr_t>(p), "cudaFreeHost");
    clear();

    std::printf("cudaHostRegister/cudaHostUnregister\n");
    {
        std::vector<char> buf(n);
        CK(cudaHostRegister(buf.data(), n, cudaHostRegisterDefault));
        CK(cudaHostUnregister(buf.data()));
        expect(EventType::alloc, reinterpret_cast<uintptr_t>(buf.data()), "cudaHostRegister");
        expect(EventType::free, reinterpret_cast<uintptr_t>(buf.data()), "cudaHostUnregister");
        clear();
    }

    std::printf("VMM (driver API)\n");
    {
        auto granularity = sym<CUresult (*)(size_t *, const CUmemAllocationProp *,
                                            CUmemAllocationGranularity_flags)>(h, "cuMemGetAllocationGranularity");
        auto create = sym<CUresult (*)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                                       unsigned long long)>(h, "cuMemCreate");
        auto reserve = sym<CUresult (*)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long)>(
            h, "cuMemAddressReserve");
        auto map = sym<CUresult (*)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                                    unsigned long long)>(h, "cuMemMap");
        auto set_access = sym<CUresult (*)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t)>(
            h, "cuMemSetAccess");
        auto unmap = sym<CUresult (*)(CUdeviceptr, size_t)>(h, "cuMemUnmap");
        auto release = sym<CUresult (*)(CUmemGenericAllocationHandle)>(h, "cuMemRelease");
        auto addr_free = sym<CUresult (*)(CUdeviceptr, size_t)>(h, "cuMemAddressFree");
        CUmemAllocationProp prop{};
        prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        prop.location.id = 0;
        size_t gran = 0;
        CKD(granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
        const size_t sz = ((n + gran - 1) / gran) * gran;
        CUmemGenericAllocationHandle hd = 0;
        CKD(create(&hd, sz, &prop, 0));
        CUdeviceptr va = 0;
        CKD(reserve(&va, sz, 0, 0, 0));
        CKD(map(va, sz, 0, hd, 0));
        CUmemAccessDesc acc{};
        acc.location = prop.location;
        acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        CKD(set_access(va, sz, &acc, 1));
        expect(EventType::alloc, va, "cuMemMap");
        clear();
        CKD(unmap(va, sz));
        expect(EventType::free, va, "cuMemUnmap");
        CKD(release(hd));
        CKD(addr_free(va, sz));
        clear();
    }

    // overhead of the hooks on cuMemFree_v2 (listener attached), median of 200 frees
    {
        auto alloc = sym<CUresult (*)(CUdeviceptr *, size_t)>(h, "cuMemAlloc_v2");
        auto free_ = sym<CUresult (*)(CUdeviceptr)>(h, "cuMemFree_v2");
        auto median_free_ns = [&] {
            std::vector<CUdeviceptr> ps(200);
            for (auto &d : ps) {
                CKD(alloc(&d, size_t{1} << 20));
            }
            std::vector<long long> t;
            for (auto d : ps) {
                timespec a, b;
                clock_gettime(CLOCK_MONOTONIC, &a);
                CKD(free_(d));
                clock_gettime(CLOCK_MONOTONIC, &b);
                t.push_back((b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
            }
            std::sort(t.begin(), t.end());
            return t[t.size() / 2];
        };
        remove_listener(&listener, nullptr);
        add_listener(+[](const Event &, void *) {}, nullptr);
        const long long hooked = median_free_ns();
        uninstall();
        const long long plain = median_free_ns();
        install(h);
        std::printf("cuMemFree_v2 of 1 MiB, median: hooked %lld ns, unhooked %lld ns\n", hooked, plain);
    }

    std::printf("hooks: %d allocs, %d frees seen, %d missed%s\n", g_allocs, g_frees, g_missed,
                g_late ? " (some frees reported late)" : "");
    if (!rep.complete()) {
        std::printf("FAIL: install incomplete\n");
        return 1;
    }
    return (g_missed != 0 || g_late != 0) ? 1 : 0;
}
