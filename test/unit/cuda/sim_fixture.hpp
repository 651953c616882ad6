// Shared by the tests that run against the CUDA-driver simulator
// (test/cudasim, built as libcuda.so.1). meson passes its path in
// UCX_GDRPIPE_CUDA_LIB; when that library is absent the tests skip with a
// warning. Once it is present they must load it and assert for real.
#pragma once

#include "gdrpipe/cuda/context.hpp"
#include "gdrpipe/cuda/driver.hpp"

#include "gp_catch.hpp"

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace gdrpipe::cuda::test {

// Simulator set-up for this process, before the driver is loaded (the
// simulator reads it in cuInit): 2 devices; device-to-host copies take 30 ms,
// so an asynchronous D2H copy is observably pending right after it starts.
inline const char *kSimTopology = "fast,d2h=30ms:50GBps";

inline bool sim_present() {
    setenv("GDRPIPE_SIM_DEVICES", "2", 0);
    setenv("GDRPIPE_SIM_TOPO", kSimTopology, 0);
    const char *p = std::getenv("UCX_GDRPIPE_CUDA_LIB");
    return p != nullptr && p[0] == '/' && access(p, R_OK) == 0;
}

inline std::string sim_path() { return std::getenv("UCX_GDRPIPE_CUDA_LIB"); }

// RAII device allocation on the primary context of `dev`.
struct DevBuf {
    CUdeviceptr ptr = 0;
    std::size_t len = 0;
    DevBuf(int dev, std::size_t n) : len(n) {
        ScopedContext scope(dev);
        REQUIRE(scope.ok());
        REQUIRE(driver().api().cuMemAlloc(&ptr, n) == CUDA_SUCCESS);
    }
    ~DevBuf() {
        if (ptr != 0) driver().api().cuMemFree(ptr);
    }
    DevBuf(const DevBuf &) = delete;
    DevBuf &operator=(const DevBuf &) = delete;
    void *p() const { return reinterpret_cast<void *>(ptr); }
};

} // namespace gdrpipe::cuda::test

// Skip (with a visible warning) when the simulator library is absent; when it
// is present, the driver must load it.
#define GP_REQUIRE_SIM()                                                       \
    do {                                                                       \
        if (!::gdrpipe::cuda::test::sim_present()) {                           \
            WARN("cudasim libcuda.so.1 not built (UCX_GDRPIPE_CUDA_LIB unset " \
                 "or missing): skipping simulator test");                      \
            SUCCEED();                                                         \
            return;                                                            \
        }                                                                      \
        INFO("driver: " << ::gdrpipe::cuda::driver().why_not());               \
        REQUIRE(::gdrpipe::cuda::driver().available());                        \
    } while (0)
