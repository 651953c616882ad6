// hotpath_bench -- cost of each call a zero-copy GPU message makes in
// gdrpipe's per-message path (registration hit, memory query, context
// switch, the small synchronous copy), on the real driver. Not a test: it
// prints a table (median and mean over batches). Usage: hotpath_bench [N]
#include "gdrpipe/capi.h"
#include "gdrpipe/cuda/context.hpp"
#include "gdrpipe/cuda/copy.hpp"
#include "gdrpipe/cuda/copy_kernel.hpp"
#include "gdrpipe/cuda/memory.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <string>
#include <functional>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using namespace gdrpipe;

struct Row {
    const char *name;
    double median_ns;
    double mean_ns;
};

// Per-call ns: batches of `per` calls, median and mean over the batches.
Row measure(const char *name, size_t n, const std::function<void()> &fn) {
    const size_t per = 100;
    std::vector<double> v;
    for (size_t i = 0; i < 10; ++i) fn(); // warm
    for (size_t b = 0; b < std::max<size_t>(n / per, 1); ++b) {
        auto t0 = Clock::now();
        for (size_t i = 0; i < per; ++i) fn();
        v.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / per);
    }
    double mean = 0;
    for (double x : v) mean += x;
    mean /= double(v.size());
    std::sort(v.begin(), v.end());
    return {name, v[v.size() / 2], mean};
}

} // namespace

int main(int argc, char **argv) {
    size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 20000;
    auto &drv = cuda::driver();
    if (!drv.available()) {
        std::fprintf(stderr, "hotpath_bench: CUDA is off: %s\n", drv.why_not().c_str());
        return 1;
    }
    auto &dm = cuda::devices();
    const int ndev = dm.count();
    const auto &api = drv.api();
    CUcontext ctx0 = nullptr;
    if (dm.primary_context(0, &ctx0) != CUDA_SUCCESS) return 1;
    api.cuCtxSetCurrent(ctx0);
    CUdeviceptr d0 = 0, d0b = 0, d1 = 0;
    const size_t len = size_t(1) << 20;
    if (api.cuMemAlloc(&d0, len) != CUDA_SUCCESS || api.cuMemAlloc(&d0b, len) != CUDA_SUCCESS)
        return 1;
    if (ndev > 1) {
        cuda::ScopedContext s1(dm, 1);
        api.cuMemAlloc(&d1, len);
        dm.enable_peer_access(0, 1);
    }
    void *p0 = reinterpret_cast<void *>(d0);
    std::vector<Row> rows;
    rows.push_back(measure("cuPointerGetAttribute(MEMORY_TYPE)", n, [&] {
        unsigned t = 0;
        api.cuPointerGetAttribute(&t, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d0);
    }));
    rows.push_back(measure("cuda::buffer_id (1 attribute)", n, [&] { cuda::buffer_id(p0); }));
    rows.push_back(measure("cuda::query (8 attributes)", n, [&] {
        cuda::MemInfo mi;
        cuda::query(p0, &mi);
    }));
    rows.push_back(measure("cuda::query_kind (3 attributes)", n, [&] {
        cuda::MemInfo mi;
        cuda::query_kind(p0, &mi);
    }));
    rows.push_back(measure("gp_cuda_mem_query (capi)", n, [&] {
        gp_mem_info_t mi;
        gp_cuda_mem_query(p0, &mi);
    }));
    rows.push_back(measure("gp_mem_register+deregister (hit)", n, [&] {
        gp_rkey_t rk;
        void *reg = nullptr;
        char err[128];
        if (gp_mem_register(p0, 4096, 1, &rk, &reg, err, sizeof(err)) == 0)
            gp_mem_deregister(reg);
    }));
    std::vector<char> host(size_t(64) << 10);
    rows.push_back(measure("gp_mem_register+deregister (64 KiB host)", n, [&] {
        gp_rkey_t rk;
        void *reg = nullptr;
        char err[128];
        if (gp_mem_register(host.data(), host.size(), 1, &rk, &reg, err, sizeof(err)) == 0)
            gp_mem_deregister(reg);
    }));
    rows.push_back(measure("ScopedContext (already current)", n, [&] { cuda::ScopedContext s(dm, 0); }));
    rows.push_back(measure("ScopedContext (push+pop)", n, [&] {
        api.cuCtxSetCurrent(nullptr);
        cuda::ScopedContext s(dm, 0);
    }));
    api.cuCtxSetCurrent(ctx0);
    rows.push_back(measure("event acquire+record+query+release", n / 10, [&] {
        cuda::CopyToken t;
        cuda::CopyOptions o;
        o.device = 0;
        o.slot = 1;
        cuda::copy_async(reinterpret_cast<void *>(d0b), p0, 8, &t, o);
        cuda::wait(t);
    }));
    for (bool api_sync : {false, true}) {
        cuda::CopyOptions o;
        o.device = 0;
        o.slot = 1;
        o.sync_api = api_sync;
        rows.push_back(measure(api_sync ? "copy 8 B D2D same GPU, cuMemcpy"
                                        : "copy 8 B D2D same GPU, async+sync",
                               n / 20, [&] { cuda::copy(reinterpret_cast<void *>(d0b), p0, 8, o); }));
        if (d1 != 0)
            rows.push_back(measure(api_sync ? "copy 8 B D2D peer, cuMemcpy"
                                            : "copy 8 B D2D peer, async+sync",
                                   n / 20,
                                   [&] { cuda::copy(reinterpret_cast<void *>(d1), p0, 8, o); }));
    }
    // the copy transport's short copies (UCP's eager pack and unpack of a
    // device message) beside the driver's own calls on the same buffers
    std::vector<char> pageable(4096, 1);
    void *hp = pageable.data();
    CUstream st = nullptr;
    api.cuStreamCreate(&st, CU_STREAM_NON_BLOCKING);
    char err[128];
    rows.push_back(measure("get_short 8 B D2H (gp_cuda_copy_dev)", n / 20, [&] {
        gp_cuda_copy_dev(hp, p0, 8, GP_CUDA_SRC_DEVICE, err, sizeof(err));
    }));
    rows.push_back(measure("8 B D2H cuMemcpy", n / 20, [&] {
        api.cuMemcpy(reinterpret_cast<CUdeviceptr>(hp), d0, 8);
    }));
    rows.push_back(measure("8 B D2H cuMemcpyAsync+sync", n / 20, [&] {
        api.cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(hp), d0, 8, st);
        api.cuStreamSynchronize(st);
    }));
    rows.push_back(measure("put_short 8 B H2D (gp_cuda_copy_dev)", n / 20, [&] {
        gp_cuda_copy_dev(p0, hp, 8, GP_CUDA_DST_DEVICE, err, sizeof(err));
    }));
    rows.push_back(measure("8 B H2D cuMemcpyAsync+sync", n / 20, [&] {
        api.cuMemcpyAsync(d0, reinterpret_cast<CUdeviceptr>(hp), 8, st);
        api.cuStreamSynchronize(st);
    }));
    rows.push_back(measure("8 B H2D cuMemcpyHtoD (+legacy sync)", n / 20, [&] {
        api.cuMemcpyHtoD(d0, hp, 8);
        api.cuStreamSynchronize(CU_STREAM_LEGACY);
    }));
    // into page-locked memory (the host copies of small device sends,
    // plugin/ucp_send_host.c): the ways ordered after the legacy stream
    // (cuMemcpy, the blocking stream, the legacy stream itself) beside the
    // non-blocking one that is not
    void *pin = gp_cuda_host_alloc(8192, err, sizeof(err));
    CUstream ordered = nullptr;
    dm.stream(0, cuda::DeviceManager::kOrderedSlot, &ordered);
    CUevent ev = nullptr;
    api.cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING);
    CUfunction kfn = nullptr;
    dm.copy_kernel(0, &kfn);
    api.cuMemsetD8(d0, 0, len);
    std::deque<std::string> names; // the rows' names live as long as the rows
    auto named = [&](const char *what, bool small, const char *dir = "D2H") {
        names.push_back(std::string("pinned ") + (small ? "8 B " : "8 KiB ") + dir + " " + what);
        return names.back().c_str();
    };
    for (size_t n8 : {size_t(8), size_t(8192)}) {
        const bool small = n8 == 8;
        rows.push_back(measure(named("gp_cuda_copy_from_device", small), n / 20,
                               [&] { gp_cuda_copy_from_device(pin, p0, n8, 0, err, sizeof(err)); }));
        rows.push_back(measure(named("gp_cuda_copy_dev", small), n / 20, [&] {
            gp_cuda_copy_dev(pin, p0, n8, GP_CUDA_SRC_DEVICE, err, sizeof(err));
        }));
        rows.push_back(measure(named("cuMemcpy", small), n / 20, [&] {
            api.cuMemcpy(reinterpret_cast<CUdeviceptr>(pin), d0, n8);
        }));
        rows.push_back(measure(named("blocking stream+sync", small), n / 20, [&] {
            api.cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(pin), d0, n8, ordered);
            api.cuStreamSynchronize(ordered);
        }));
        rows.push_back(measure(named("legacy async+sync", small), n / 20, [&] {
            api.cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(pin), d0, n8, CU_STREAM_LEGACY);
            api.cuStreamSynchronize(CU_STREAM_LEGACY);
        }));
        rows.push_back(measure(named("non-blocking+sync", small), n / 20, [&] {
            api.cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(pin), d0, n8, st);
            api.cuStreamSynchronize(st);
        }));
        // the batched copy kernel into the same page-locked memory: waited for
        // by a stream synchronize, by polling an event, and (8 B) by watching
        // the destination change, the least any launched copy can take
        gp_copy_desc_t desc{reinterpret_cast<unsigned long long>(pin), d0, n8};
        rows.push_back(measure(named("copy kernel+sync", small), n / 20, [&] {
            cuda::CopyToken t;
            cuda::copy_batch(0, cuda::DeviceManager::kOrderedSlot, &desc, 1, &t, dm);
            api.cuStreamSynchronize(ordered);
            cuda::wait(t, dm);
        }));
        rows.push_back(measure(named("blocking stream+event poll", small), n / 20, [&] {
            api.cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(pin), d0, n8, ordered);
            api.cuEventRecord(ev, ordered);
            while (api.cuEventQuery(ev) == CUDA_ERROR_NOT_READY) {
            }
        }));
        if (small && kfn != nullptr) {
            rows.push_back(measure(named("copy kernel, spin on data", small), n / 20, [&] {
                volatile unsigned long long *w = static_cast<unsigned long long *>(pin);
                *w = ~0ull;
                gp_copy_batch_t b{};
                b.count = 1;
                b.desc[0] = desc;
                void *params[] = {&b};
                api.cuLaunchKernel(kfn, 1, 1, 1, 32, 1, 1, 0, ordered, params, nullptr);
                while (*w == ~0ull) {
                }
            }));
            api.cuStreamSynchronize(ordered);
        }
        // and back, from page-locked memory into the device
        gp_copy_desc_t up{d0b, reinterpret_cast<unsigned long long>(pin), n8};
        rows.push_back(measure(named("cuMemcpyHtoD", small, "H2D"), n / 20, [&] {
            api.cuMemcpyHtoD(d0b, pin, n8);
        }));
        rows.push_back(measure(named("blocking stream+sync", small, "H2D"), n / 20, [&] {
            api.cuMemcpyAsync(d0b, reinterpret_cast<CUdeviceptr>(pin), n8, ordered);
            api.cuStreamSynchronize(ordered);
        }));
        rows.push_back(measure(named("copy kernel+sync", small, "H2D"), n / 20, [&] {
            cuda::CopyToken t;
            cuda::copy_batch(0, cuda::DeviceManager::kOrderedSlot, &up, 1, &t, dm);
            api.cuStreamSynchronize(ordered);
            cuda::wait(t, dm);
        }));
    }
    gp_cuda_host_free(pin);
    api.cuEventDestroy(ev);
    api.cuStreamDestroy(st);
    std::printf("%-40s %10s %10s\n", "call", "median ns", "mean ns");
    for (const Row &r : rows) std::printf("%-40s %10.1f %10.1f\n", r.name, r.median_ns, r.mean_ns);
    api.cuMemFree(d0);
    api.cuMemFree(d0b);
    if (d1 != 0) api.cuMemFree(d1);
    return 0;
}
