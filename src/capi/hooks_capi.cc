// extern "C" face of the allocation/free interception, for the UCX glue.
#include "gdrpipe/capi.h"
#include "gdrpipe/cuda/driver.hpp"
#include "gdrpipe/cuda/memory.hpp"
#include "gdrpipe/hooks/cuda_hooks.hpp"
#include "gdrpipe/log.hpp"

#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <set>

namespace hk = gdrpipe::hooks;

namespace {

std::atomic<gp_mem_event_cb_t> g_cb{nullptr};
std::atomic<void *> g_cb_arg{nullptr};
// The plugin installs the hooks from a constructor (UCS_STATIC_INIT), which
// may run before this file's dynamic initialisers: constant-initialised
// objects only, or the initialiser would reset the string written there
// (and leak its buffer).
constinit int g_install_result = 0;
constinit std::string g_install_why;

int to_capi_kind(hk::MemKind k) {
    switch (k) {
    case hk::MemKind::device: return GP_HOOK_DEVICE;
    case hk::MemKind::managed: return GP_HOOK_MANAGED;
    case hk::MemKind::host_pinned: return GP_HOOK_HOST_PINNED;
    case hk::MemKind::vmm: return GP_HOOK_VMM;
    default: return GP_HOOK_POOL;
    }
}

void forward(const hk::Event &e, void *) {
    // Like UCX's cuda_md: synchronous copies of the application (e.g. a
    // cuMemcpyHtoD from pageable memory that fills a send buffer) must be
    // complete when they return, or our copies on our own streams could
    // read the buffer before the application's data landed.
    if (e.type == hk::EventType::alloc &&
        (e.kind == hk::MemKind::device || e.kind == hk::MemKind::pool ||
         e.kind == hk::MemKind::managed) &&
        gdrpipe::cuda::driver().available()) {
        (void)gdrpipe::cuda::set_sync_memops(reinterpret_cast<const void *>(e.address));
    }
    gp_mem_event_cb_t cb = g_cb.load(std::memory_order_acquire);
    if (cb != nullptr) {
        cb(g_cb_arg.load(std::memory_order_relaxed), e.type == hk::EventType::free,
           e.address, e.length, to_capi_kind(e.kind));
    }
}

int do_install() {
    // The driver is loaded here without cuInit: the CUDA runtime (static
    // cudart) dlopen()s libcuda.so.1 later and gets this same, already
    // patched, library.
    std::string path = gdrpipe::cuda::library_path();
    void *h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
        const char *e = ::dlerror();
        g_install_why = path + " not loadable: " + (e ? e : "?");
        return 0;
    }
    hk::Report rep = hk::install(h);
    hk::add_listener(forward, nullptr);
    if (!rep.error.empty()) {
        g_install_why = rep.error;
        return -1;
    }
    GP_DEBUG("CUDA hooks: %d patched, %d not found, %d failed", rep.patched,
             rep.not_found, rep.failed);
    if (rep.failed > 0) {
        g_install_why = rep.summary();
        return -1;
    }
    return 1;
}

} // namespace

extern "C" {

int gp_hooks_install(char *why, size_t whylen) {
    static std::once_flag once;
    std::call_once(once, [] { g_install_result = do_install(); });
    if (why != nullptr && whylen > 0) std::snprintf(why, whylen, "%s", g_install_why.c_str());
    return g_install_result;
}

int gp_hooks_active(void) { return hk::active() ? 1 : 0; }

void gp_hooks_set_listener(gp_mem_event_cb_t cb, void *arg) {
    g_cb_arg.store(arg, std::memory_order_relaxed);
    g_cb.store(cb, std::memory_order_release);
}

void gp_hooks_for_each_allocation(gp_mem_event_cb_t cb, void *arg) {
    struct Ctx {
        gp_mem_event_cb_t cb;
        void *arg;
        std::set<uintptr_t> seen;
    } ctx{cb, arg, {}};
    hk::for_each_live_allocation(
        [](uintptr_t a, size_t len, hk::MemKind k, int, void *p) {
            auto *c = static_cast<Ctx *>(p);
            c->seen.insert(a);
            c->cb(c->arg, 0, a, len, to_capi_kind(k));
        },
        &ctx);
    hk::scan_preexisting(
        [](uintptr_t a, size_t len, hk::MemKind k, int, void *p) {
            auto *c = static_cast<Ctx *>(p);
            if (c->seen.count(a) == 0) c->cb(c->arg, 0, a, len, to_capi_kind(k));
        },
        &ctx);
}

} // extern "C"
