// Loader tests that need no driver: a missing library, a library without
// cuGetProcAddress, and a fake libcuda (fake_cuda.c) for the cuInit and
// missing-entry paths.
#include "gdrpipe/cuda/driver.hpp"

#include "gp_catch.hpp"

#include <cstdlib>
#include <set>
#include <string>

using namespace gdrpipe::cuda;

namespace {

std::string fake_lib() {
    const char *p = std::getenv("GDRPIPE_TEST_FAKE_CUDA");
    return p != nullptr ? p : "";
}

// Sets (or, with null, unsets) an environment variable for a scope.
struct ScopedEnv {
    std::string name;
    bool had = false;
    std::string old;
    ScopedEnv(const char *n, const char *value) : name(n) {
        if (const char *o = std::getenv(n)) {
            had = true;
            old = o;
        }
        if (value != nullptr) setenv(n, value, 1);
        else unsetenv(n);
    }
    ~ScopedEnv() {
        if (had) setenv(name.c_str(), old.c_str(), 1);
        else unsetenv(name.c_str());
    }
};

} // namespace

TEST_CASE("loading a bogus library path fails with a clear reason", "[cuda][driver]") {
    const std::string path = "/nonexistent/gdrpipe-test/libcuda.so.1";
    Driver d(path);
    CHECK_FALSE(d.available());
    CHECK(d.handle() == nullptr);
    CHECK(d.api().cuInit == nullptr);
    CHECK(d.version() == 0);
    const std::string &why = d.why_not();
    CHECK(why.rfind(path + " not found: ", 0) == 0);
    // the dlerror text follows
    CHECK(why.find("No such file") != std::string::npos);
}

TEST_CASE("a library without cuGetProcAddress is refused", "[cuda][driver]") {
    Driver d("libm.so.6");
    CHECK_FALSE(d.available());
    CHECK(d.handle() != nullptr);
    CHECK(d.why_not().find("exports no cuGetProcAddress") != std::string::npos);
}

TEST_CASE("cuInit failure leaves CUDA off with the error named", "[cuda][driver]") {
    const std::string lib = fake_lib();
    if (lib.empty()) {
        WARN("GDRPIPE_TEST_FAKE_CUDA not set: skipping fake-driver test");
        SUCCEED();
        return;
    }
    ScopedEnv init("FAKECUDA_INIT", nullptr);
    Driver d(lib);
    CHECK_FALSE(d.available());
    CHECK(d.why_not() == "cuInit failed: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)");
    // entries were resolved before cuInit ran
    CHECK(d.api().cuMemAlloc != nullptr);
}

TEST_CASE("a missing required entry fails the load, a missing optional one does not",
          "[cuda][driver]") {
    const std::string lib = fake_lib();
    if (lib.empty()) {
        WARN("GDRPIPE_TEST_FAKE_CUDA not set: skipping fake-driver test");
        SUCCEED();
        return;
    }
    ScopedEnv init("FAKECUDA_INIT", "0");
    SECTION("required") {
        ScopedEnv miss("FAKECUDA_MISSING", "cuMemAlloc");
        Driver d(lib);
        CHECK_FALSE(d.available());
        CHECK(d.why_not().find("lacks cuMemAlloc (version 3020)") != std::string::npos);
        CHECK(d.why_not().find("CUDA_ERROR_NOT_FOUND") != std::string::npos);
    }
    SECTION("optional") {
        ScopedEnv miss("FAKECUDA_MISSING", "cuMemPoolCreate");
        Driver d(lib);
        REQUIRE(d.available());
        CHECK(d.why_not().empty());
        CHECK(d.version() == 11000);
        CHECK(d.api().cuMemPoolCreate == nullptr);
        CHECK(d.entry("cuMemPoolCreate") == nullptr);
        CHECK(d.api().cuMemAllocAsync != nullptr);
        REQUIRE(d.missing_optional().size() == 1);
        CHECK(d.missing_optional()[0] == "cuMemPoolCreate");
    }
}

TEST_CASE("entry table matches driver_functions.def", "[cuda][driver]") {
    std::size_t lines = 0;
#define GP_CU_FN(name, version) ++lines;
#include "gdrpipe/cuda/driver_functions.def"
#undef GP_CU_FN
    auto entries = Driver::entries();
    REQUIRE(entries.size() == lines);
    std::set<std::string> names;
    std::set<std::size_t> offsets;
    for (const EntryInfo &e : entries) {
        names.insert(e.name);
        offsets.insert(e.offset);
        CHECK(e.offset + sizeof(void *) <= sizeof(Api));
        CHECK(e.required == (e.version < 11020));
    }
    CHECK(names.size() == lines);
    CHECK(offsets.size() == lines);
    CHECK(names.count("cuMemAlloc") == 1);   // the cuda.h name, not cuMemAlloc_v2
    CHECK(names.count("cuMemAlloc_v2") == 0);
}

TEST_CASE("override_entry replaces one entry by its cuda.h name", "[cuda][driver]") {
    Driver d("/nonexistent/libcuda.so.1");
    static int marker;
    void *fn = &marker;
    CHECK(d.entry("cuMemFree") == nullptr);
    CHECK(d.override_entry("cuMemFree", fn));
    CHECK(d.entry("cuMemFree") == fn);
    CHECK(reinterpret_cast<void *>(d.api().cuMemFree) == fn);
    CHECK(d.entry("cuMemAlloc") == nullptr); // others untouched
    CHECK_FALSE(d.override_entry("cuNoSuchFunction", fn));
    CHECK_FALSE(d.override_entry("cuMemAlloc", nullptr));
}

TEST_CASE("error names and descriptions", "[cuda][driver]") {
    CHECK(std::string(error_name(CUDA_SUCCESS)) == "CUDA_SUCCESS");
    CHECK(std::string(error_name(CUDA_ERROR_NO_DEVICE)) == "CUDA_ERROR_NO_DEVICE");
    CHECK(std::string(error_name(CUDA_ERROR_UNKNOWN)) == "CUDA_ERROR_UNKNOWN");
    CHECK(describe(CUDA_ERROR_INVALID_VALUE) == "CUDA_ERROR_INVALID_VALUE (invalid argument)");
    CHECK(describe(CUDA_ERROR_NOT_READY) == "CUDA_ERROR_NOT_READY (device not ready)");
    CHECK(describe(static_cast<CUresult>(12345)) == "CUDA_ERROR_<unknown> (CUresult 12345)");
}

TEST_CASE("library path: override, then environment, then libcuda.so.1", "[cuda][driver]") {
    {
        ScopedEnv env("UCX_GDRPIPE_CUDA_LIB", nullptr);
        // set_library_path may already be locked by an earlier driver() call;
        // either way library_path() reflects what driver() would load.
        if (set_library_path("")) CHECK(library_path() == "libcuda.so.1");
    }
    {
        ScopedEnv env("UCX_GDRPIPE_CUDA_LIB", "/some/where/libcuda.so.1");
        CHECK(library_path() == "/some/where/libcuda.so.1");
    }
    (void)driver();
    CHECK_FALSE(set_library_path("/other/libcuda.so.1"));
}
