// Run-time access to the CUDA driver (libcuda), which gdrpipe never links.
//
// The driver library is dlopen()ed (RTLD_NOW | RTLD_LOCAL): by default
// "libcuda.so.1", or the path in the environment variable UCX_GDRPIPE_CUDA_LIB
// (read directly, since it must work before UCX parses its configuration; the
// plugin also declares it as a UCX config variable and may hand a value from
// ucx.conf to set_library_path() before the first use). cuGetProcAddress_v2
// (fallback: cuGetProcAddress) is looked up with dlsym, and every entry of
// driver_functions.def (beside this header) is resolved through it with the
// listed version. Entries of version >= 11020 (memory pools, dma-buf handles,
// flushing GPUDirect writes, ...) are optional: on an older driver they stay
// null and are recorded in missing_optional(); a missing required entry makes
// the load fail. cuInit(0) is called on load; any failure leaves CUDA "off"
// (available() == false) with a human-readable reason in why_not().
//
// Calls look like `api().cuMemAlloc(&p, n)`: the Api members are declared
// with the cuda.h names, which cuda.h maps to the versioned symbols
// (cuMemAlloc -> cuMemAlloc_v2) in the declaration and at the call site alike.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gdrpipe::cuda {

// One function pointer per driver_functions.def line, e.g.
// `decltype(&::cuMemAlloc) cuMemAlloc;`. Null until resolved.
struct Api {
#define GP_CU_FN(name, version) decltype(&::name) name = nullptr;
#include "gdrpipe/cuda/driver_functions.def"
#undef GP_CU_FN
};

// Static description of one Api entry.
struct EntryInfo {
    const char *name;   // cuda.h name, as passed to cuGetProcAddress ("cuMemAlloc")
    int version;        // cudaVersion passed to cuGetProcAddress
    bool required;      // a driver lacking it is refused
    std::size_t offset; // offset of the member in Api
};

class Driver {
public:
    // Loads `library_path` now (dlopen, resolve, cuInit). Never throws for a
    // load failure: check available()/why_not(). Tests use this to load a
    // specific library into a separate, non-singleton object.
    explicit Driver(std::string library_path);
    ~Driver(); // dlclose()s the library
    Driver(const Driver &) = delete;
    Driver &operator=(const Driver &) = delete;

    bool available() const noexcept { return available_; }
    // Empty when available; else e.g. "libcuda.so.1 not found: <dlerror>" or
    // "cuInit failed: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)".
    const std::string &why_not() const noexcept { return why_not_; }
    // The entries resolved so far. When available(), every required entry is
    // non-null; optional ones may be null (see missing_optional()).
    const Api &api() const noexcept { return api_; }
    // The dlopen() handle (null if dlopen failed). The interception module
    // looks up and patches the driver's exported functions through it.
    void *handle() const noexcept { return handle_; }
    // cuDriverGetVersion() (e.g. 13000), 0 if unknown.
    int version() const noexcept { return version_; }
    const std::string &library_path() const noexcept { return path_; }
    // cuda.h names of optional entries the driver does not provide.
    const std::vector<std::string> &missing_optional() const noexcept {
        return missing_optional_;
    }

    // The current pointer of an entry by cuda.h name ("cuMemAlloc"), null if
    // unknown or unresolved.
    void *entry(std::string_view name) const noexcept;

    // Replace an Api entry. After the interception module has patched a driver
    // function, it passes the trampoline that runs the ORIGINAL code here, so
    // that gdrpipe's own driver calls (through api()) bypass its hooks.
    // Returns false if `name` is not an entry of driver_functions.def or `fn`
    // is null. Not synchronised with concurrent callers of api(): call it
    // while installing hooks, before other threads use the driver.
    bool override_entry(std::string_view name, void *fn) noexcept;

    // All entries of driver_functions.def, in file order.
    static std::span<const EntryInfo> entries() noexcept;

    // The seconds timings of device work read: the driver's modeled clock
    // where the loaded library has one (the CUDA-driver simulator's virtual
    // clock, GDRPIPE_SIM_CLOCK=virtual: deterministic timings for tests),
    // else the steady clock. The real driver has none.
    double timing_now() const noexcept;

private:
    void load();
    bool resolve_entries();

    std::string path_;
    void *handle_ = nullptr;
    int (*modeled_clock_)(double *) = nullptr;
    Api api_{};
    bool available_ = false;
    int version_ = 0;
    std::string why_not_;
    std::vector<std::string> missing_optional_;
};

// The library the process-wide driver loads: the value given to
// set_library_path(), else $UCX_GDRPIPE_CUDA_LIB when set and non-empty, else
// "libcuda.so.1".
std::string library_path();

// Choose the library before the first call of driver(). Returns false (and
// changes nothing) once the driver has been loaded.
bool set_library_path(std::string path);

// The process-wide driver: loaded on first call (thread-safe), never unloaded.
Driver &driver();

// "CUDA_ERROR_INVALID_VALUE"; "CUDA_ERROR_<unknown>" for codes not in cuda.h 13.0.
const char *error_name(CUresult r) noexcept;
// "CUDA_ERROR_INVALID_VALUE (invalid argument)".
std::string describe(CUresult r);

} // namespace gdrpipe::cuda
