// Loading libcuda at run time and resolving the entries of driver_functions.def.
#include "gdrpipe/cuda/driver.hpp"

#include "gdrpipe/log.hpp"

#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace gdrpipe::cuda {
namespace {

// Entries from CUDA 11.2 on (pools, dma-buf, ...) may be absent on old drivers.
constexpr int kOptionalFromVersion = 11020;

// `name` is stringised unexpanded ("cuMemAlloc", what cuGetProcAddress wants)
// and macro-expanded in offsetof (cuMemAlloc_v2, the member's real name).
constexpr EntryInfo kEntries[] = {
#define GP_CU_FN(name, version)                                                \
    {#name, version, (version) < kOptionalFromVersion, offsetof(Api, name)},
#include "gdrpipe/cuda/driver_functions.def"
#undef GP_CU_FN
};

static_assert(sizeof(void *) == sizeof(&::cuInit),
              "function pointers must fit a void*");

using GetProcV2 = CUresult (*)(const char *, void **, int, cuuint64_t,
                               CUdriverProcAddressQueryResult *);
using GetProcV1 = CUresult (*)(const char *, void **, int, cuuint64_t);

const EntryInfo *find_entry(std::string_view name) noexcept {
    for (const EntryInfo &e : kEntries) {
        if (name == e.name) return &e;
    }
    return nullptr;
}

} // namespace

std::span<const EntryInfo> Driver::entries() noexcept { return kEntries; }

Driver::Driver(std::string library_path) : path_(std::move(library_path)) {
    load();
    if (!available_ && handle_ != nullptr) {
        GP_DEBUG("CUDA driver %s unusable: %s", path_.c_str(), why_not_.c_str());
    }
}

Driver::~Driver() {
    if (handle_ != nullptr) dlclose(handle_);
}

void Driver::load() {
    dlerror();
    handle_ = dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) {
        const char *err = dlerror();
        why_not_ = path_ + " not found: " + (err != nullptr ? err : "unknown dlopen error");
        return;
    }
    if (!resolve_entries()) return;

    CUresult r = api_.cuInit(0);
    if (r != CUDA_SUCCESS) {
        why_not_ = "cuInit failed: " + describe(r);
        return;
    }
    r = api_.cuDriverGetVersion(&version_);
    if (r != CUDA_SUCCESS) {
        why_not_ = "cuDriverGetVersion failed: " + describe(r);
        version_ = 0;
        return;
    }
    // a test driver's modeled clock (test/cudasim/cudasim.h); not a CUDA API
    modeled_clock_ = reinterpret_cast<int (*)(double *)>(dlsym(handle_, "gdrpipe_sim_virtual_clock"));
    available_ = true;
}

double Driver::timing_now() const noexcept {
    double t = 0;
    if (modeled_clock_ != nullptr && modeled_clock_(&t) == 1) return t;
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool Driver::resolve_entries() {
    auto get_v2 = reinterpret_cast<GetProcV2>(dlsym(handle_, "cuGetProcAddress_v2"));
    auto get_v1 = get_v2 != nullptr
                      ? nullptr
                      : reinterpret_cast<GetProcV1>(dlsym(handle_, "cuGetProcAddress"));
    if (get_v2 == nullptr && get_v1 == nullptr) {
        why_not_ = path_ + " exports no cuGetProcAddress (CUDA driver older than 11.3?)";
        return false;
    }
    for (const EntryInfo &e : kEntries) {
        void *fn = nullptr;
        CUresult r;
        if (get_v2 != nullptr) {
            CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
            r = get_v2(e.name, &fn, e.version, CU_GET_PROC_ADDRESS_DEFAULT, &status);
            if (r == CUDA_SUCCESS && status != CU_GET_PROC_ADDRESS_SUCCESS) fn = nullptr;
        } else {
            r = get_v1(e.name, &fn, e.version, CU_GET_PROC_ADDRESS_DEFAULT);
        }
        if (r != CUDA_SUCCESS) fn = nullptr;
        if (fn == nullptr) {
            if (e.required) {
                why_not_ = path_ + " lacks " + e.name + " (version " +
                           std::to_string(e.version) + ")" +
                           (r != CUDA_SUCCESS ? ": " + describe(r) : std::string());
                return false;
            }
            missing_optional_.emplace_back(e.name);
            GP_DEBUG("CUDA driver %s: optional %s not available", path_.c_str(), e.name);
        }
        std::memcpy(reinterpret_cast<char *>(&api_) + e.offset, &fn, sizeof(fn));
    }
    return true;
}

void *Driver::entry(std::string_view name) const noexcept {
    const EntryInfo *e = find_entry(name);
    if (e == nullptr) return nullptr;
    void *fn = nullptr;
    std::memcpy(&fn, reinterpret_cast<const char *>(&api_) + e->offset, sizeof(fn));
    return fn;
}

bool Driver::override_entry(std::string_view name, void *fn) noexcept {
    const EntryInfo *e = find_entry(name);
    if (e == nullptr || fn == nullptr) return false;
    std::memcpy(reinterpret_cast<char *>(&api_) + e->offset, &fn, sizeof(fn));
    return true;
}

// ---------------------------------------------------------------- singleton

namespace {
// reached from the plugin's load-time constructor (library_path()), possibly
// before this file's dynamic initialisers: constant-initialised only
constinit std::mutex g_path_mutex;
constinit std::string g_path_override; // guarded by g_path_mutex
constinit bool g_loading_started = false; // guarded by g_path_mutex

std::string library_path_locked() {
    if (!g_path_override.empty()) return g_path_override;
    const char *env = std::getenv("UCX_GDRPIPE_CUDA_LIB");
    if (env != nullptr && env[0] != '\0') return env;
    return "libcuda.so.1";
}
} // namespace

std::string library_path() {
    std::lock_guard<std::mutex> lock(g_path_mutex);
    return library_path_locked();
}

bool set_library_path(std::string path) {
    std::lock_guard<std::mutex> lock(g_path_mutex);
    if (g_loading_started) return false;
    g_path_override = std::move(path);
    return true;
}

Driver &driver() {
    // Never destroyed: hooks and other static destructors may still call it.
    static Driver *const instance = [] {
        std::string path;
        {
            std::lock_guard<std::mutex> lock(g_path_mutex);
            g_loading_started = true;
            path = library_path_locked();
        }
        auto *d = new Driver(path);
        if (d->available()) {
            GP_INFO("CUDA driver %s loaded, version %d", path.c_str(), d->version());
        } else {
            GP_INFO("CUDA support off: %s", d->why_not().c_str());
        }
        return d;
    }();
    return *instance;
}

} // namespace gdrpipe::cuda
