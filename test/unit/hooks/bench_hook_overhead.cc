// Overhead of a hooked cuMemFree_v2 vs the unhooked one, on the simulator.
// Not a test: run with `meson test -C BUILD --benchmark hooks_free_overhead`
// or directly with GDRPIPE_CUDASIM_DIR set. Prints medians in ns per call.
#include "gdrpipe/hooks/cuda_hooks.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <cuda.h>
#include <dlfcn.h>
#include <string>
#include <vector>

namespace {

using AllocFn = CUresult (*)(CUdeviceptr *, size_t);
using FreeFn = CUresult (*)(CUdeviceptr);

long long now_ns()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

double median(std::vector<long long> v)
{
    std::sort(v.begin(), v.end());
    return static_cast<double>(v[v.size() / 2]);
}

// median ns of freeing `n` freshly allocated blocks
double time_frees(AllocFn a, FreeFn f, int n)
{
    std::vector<CUdeviceptr> ps(static_cast<size_t>(n));
    for (auto &p : ps) {
        if (a(&p, 4096) != CUDA_SUCCESS) {
            std::fprintf(stderr, "alloc failed\n");
            std::exit(1);
        }
    }
    std::vector<long long> t;
    t.reserve(ps.size());
    for (auto p : ps) {
        const long long t0 = now_ns();
        f(p);
        t.push_back(now_ns() - t0);
    }
    return median(t);
}

// median ns of a free the driver rejects at once (no memory work): the
// driver's fixed cost is small, so the hook's share shows clearly
double time_bogus_frees(FreeFn f, int n)
{
    std::vector<long long> t;
    t.reserve(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
        const long long t0 = now_ns();
        f(0x1000 + static_cast<CUdeviceptr>(i) * 64);
        t.push_back(now_ns() - t0);
    }
    return median(t);
}

void noop_listener(const gdrpipe::hooks::Event &, void *) {}

} // namespace

int main()
{
    const char *dir = std::getenv("GDRPIPE_CUDASIM_DIR");
    if (dir == nullptr) {
        std::printf("GDRPIPE_CUDASIM_DIR not set: skipped\n");
        return 0;
    }
    void *h = dlopen((std::string(dir) + "/libcuda.so.1").c_str(), RTLD_NOW);
    if (h == nullptr) {
        std::printf("cannot load the simulator: %s\n", dlerror());
        return 1;
    }
    auto init = reinterpret_cast<CUresult (*)(unsigned)>(dlsym(h, "cuInit"));
    auto retain = reinterpret_cast<CUresult (*)(CUcontext *, CUdevice)>(dlsym(h, "cuDevicePrimaryCtxRetain"));
    auto setc = reinterpret_cast<CUresult (*)(CUcontext)>(dlsym(h, "cuCtxSetCurrent"));
    auto a = reinterpret_cast<AllocFn>(dlsym(h, "cuMemAlloc_v2"));
    auto f = reinterpret_cast<FreeFn>(dlsym(h, "cuMemFree_v2"));
    CUcontext ctx = nullptr;
    if (init(0) != CUDA_SUCCESS || retain(&ctx, 0) != CUDA_SUCCESS || setc(ctx) != CUDA_SUCCESS) {
        std::printf("simulator init failed\n");
        return 1;
    }
    const int n = 2000;
    const int nb = 200000;
    time_frees(a, f, 200); // warm up
    const double plain = time_frees(a, f, n);
    const double plain_bogus = time_bogus_frees(f, nb);

    const auto rep = gdrpipe::hooks::install(h);
    if (!rep.complete()) {
        std::printf("install incomplete:\n%s", rep.summary().c_str());
        return 1;
    }
    const double hooked0 = time_frees(a, f, n);
    const double hooked0_bogus = time_bogus_frees(f, nb);
    gdrpipe::hooks::add_listener(&noop_listener, nullptr);
    const double hooked1 = time_frees(a, f, n);
    const double hooked1_bogus = time_bogus_frees(f, nb);

    std::printf("cuMemFree_v2 on the simulator, median ns per call (%d frees of 4 KiB blocks, "
                "%d rejected frees):\n", n, nb);
    std::printf("  %-34s %9s %9s\n", "", "real free", "rejected");
    std::printf("  %-34s %9.0f %9.0f\n", "unhooked", plain, plain_bogus);
    std::printf("  %-34s %9.0f %9.0f\n", "hooked, no listener", hooked0, hooked0_bogus);
    std::printf("  %-34s %9.0f %9.0f\n", "hooked, 1 listener", hooked1, hooked1_bogus);
    std::printf("  overhead with 1 listener: %.0f ns (real free; table hit), %.0f ns (rejected; "
                "table miss + cuMemGetAddressRange)\n",
                hooked1 - plain, hooked1_bogus - plain_bogus);
    return 0;
}
