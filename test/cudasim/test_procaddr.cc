// cuGetProcAddress: same bodies as dlsym, versions, per-thread variants, and
// the shape of the exports (distinct bodies with a plain prologue).
#include <dlfcn.h>

#include <cstring>
#include <set>
#include <string>

#include "test_common.hpp"

#define GP_STR2(x) #x
#define GP_STR(x) GP_STR2(x)  // expands cuda.h's mapping: cuMemAlloc -> "cuMemAlloc_v2"

namespace {
struct DefEntry {
  const char* base;
  const char* exported;
  int version;
};
const DefEntry kDef[] = {
#define GP_CU_FN(name, version) {#name, GP_STR(name), version},
#include "gdrpipe/cuda/driver_functions.def"
#undef GP_CU_FN
};

void* lib() {
  static void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  return h;
}
}  // namespace

TEST_CASE("every driver function of driver_functions.def resolves to its dlsym body", "[procaddr]") {
  sim_setup();
  REQUIRE(lib() != nullptr);
  for (const auto& e : kDef) {
    INFO(e.base << " v" << e.version << " -> " << e.exported);
    void* fn = nullptr;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CU_OK(cuGetProcAddress(e.base, &fn, e.version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &st));
    REQUIRE(st == CU_GET_PROC_ADDRESS_SUCCESS);
    void* sym = dlsym(lib(), e.exported);
    REQUIRE(sym != nullptr);
    REQUIRE(fn == sym);
  }
}

TEST_CASE("versions select the ABI; legacy un-suffixed exports are distinct", "[procaddr]") {
  sim_setup();
  void *v1, *v2;
  CU_OK(cuGetProcAddress("cuMemAlloc", &v1, 2000, 0, nullptr));
  CU_OK(cuGetProcAddress("cuMemAlloc", &v2, 3020, 0, nullptr));
  REQUIRE(v1 == dlsym(lib(), "cuMemAlloc"));
  REQUIRE(v2 == dlsym(lib(), "cuMemAlloc_v2"));
  REQUIRE(v1 != v2);
  const char* legacy[] = {"cuMemAlloc", "cuMemFree", "cuMemAllocPitch", "cuMemAllocHost",
                          "cuMemFreeHost", "cuMemHostRegister", "cuMemGetAddressRange",
                          "cuIpcOpenMemHandle", "cuGetProcAddress"};
  for (const char* n : legacy) {
    INFO(n);
    REQUIRE(dlsym(lib(), n) != nullptr);
  }
  CUdriverProcAddressQueryResult st;
  void* fn = &st;
  REQUIRE(cuGetProcAddress("cuMemPoolCreate", &fn, 11000, 0, &st) == CUDA_ERROR_NOT_FOUND);
  REQUIRE(st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  REQUIRE(fn == nullptr);
  REQUIRE(cuGetProcAddress("cuNoSuchFunction", &fn, 13000, 0, &st) == CUDA_ERROR_NOT_FOUND);
  REQUIRE(st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  REQUIRE(cuGetProcAddress("cuInit", &fn, 99000, 0, &st) == CUDA_ERROR_INVALID_VALUE);

  // the legacy (11.3) entry point answers the same
  using Legacy = CUresult (*)(const char*, void**, int, cuuint64_t);
  auto legacy_gpa = reinterpret_cast<Legacy>(dlsym(lib(), "cuGetProcAddress"));
  REQUIRE(legacy_gpa != nullptr);
  CU_OK(legacy_gpa("cuMemFree", &fn, 3020, 0));
  REQUIRE(fn == dlsym(lib(), "cuMemFree_v2"));
}

TEST_CASE("the per-thread flag returns the _ptsz bodies", "[procaddr]") {
  sim_setup();
  const auto pt = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  struct {
    const char* name;
    int version;
    const char* ptsz;
    const char* legacy;
  } cases[] = {
      {"cuMemAllocAsync", 11020, "cuMemAllocAsync_ptsz", "cuMemAllocAsync"},
      {"cuMemFreeAsync", 11020, "cuMemFreeAsync_ptsz", "cuMemFreeAsync"},
      {"cuMemAllocFromPoolAsync", 11020, "cuMemAllocFromPoolAsync_ptsz", "cuMemAllocFromPoolAsync"},
      {"cuMemcpyAsync", 4000, "cuMemcpyAsync_ptsz", "cuMemcpyAsync"},
      {"cuMemcpyHtoDAsync", 3020, "cuMemcpyHtoDAsync_v2_ptsz", "cuMemcpyHtoDAsync_v2"},
      {"cuMemcpyDtoHAsync", 3020, "cuMemcpyDtoHAsync_v2_ptsz", "cuMemcpyDtoHAsync_v2"},
      {"cuMemcpyDtoDAsync", 3020, "cuMemcpyDtoDAsync_v2_ptsz", "cuMemcpyDtoDAsync_v2"},
      {"cuMemcpy", 4000, "cuMemcpy_ptds", "cuMemcpy"},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    void *a = nullptr, *b = nullptr;
    CU_OK(cuGetProcAddress(c.name, &a, c.version, pt, nullptr));
    CU_OK(cuGetProcAddress(c.name, &b, c.version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, nullptr));
    REQUIRE(a == dlsym(lib(), c.ptsz));
    REQUIRE(b == dlsym(lib(), c.legacy));
    REQUIRE(a != b);
  }
  void* fn;  // no per-thread variant: the legacy body
  CU_OK(cuGetProcAddress("cuMemAlloc", &fn, 3020, pt, nullptr));
  REQUIRE(fn == dlsym(lib(), "cuMemAlloc_v2"));
}

#if defined(__x86_64__)
TEST_CASE("exports are distinct bodies with a frame-pointer prologue", "[procaddr]") {
  sim_setup();
  std::set<void*> seen;
  for (const auto& e : kDef) {
    INFO(e.exported);
    auto* code = static_cast<const unsigned char*>(dlsym(lib(), e.exported));
    REQUIRE(code != nullptr);
    REQUIRE(code[0] == 0x55);  // push %rbp (no endbr64, no jmp thunk)
    seen.insert(const_cast<unsigned char*>(code));
  }
  REQUIRE(seen.size() == sizeof kDef / sizeof kDef[0]);
}
#endif

TEST_CASE("error names and strings", "[procaddr]") {
  const CUresult codes[] = {CUDA_SUCCESS, CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_NOT_INITIALIZED,
                            CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_NOT_READY, CUDA_ERROR_NOT_FOUND,
                            CUDA_ERROR_INVALID_HANDLE, CUDA_ERROR_OUT_OF_MEMORY,
                            CUDA_ERROR_PEER_ACCESS_UNSUPPORTED};
  for (CUresult c : codes) {
    const char *name = nullptr, *text = nullptr;
    CU_OK(cuGetErrorName(c, &name));
    CU_OK(cuGetErrorString(c, &text));
    REQUIRE(name != nullptr);
    REQUIRE(std::string(name).rfind("CUDA_", 0) == 0);
    REQUIRE(text != nullptr);
  }
  const char* name;
  CU_OK(cuGetErrorName(CUDA_ERROR_NOT_READY, &name));
  REQUIRE(std::string(name) == "CUDA_ERROR_NOT_READY");
  REQUIRE(cuGetErrorName(CUresult(123456), &name) == CUDA_ERROR_INVALID_VALUE);
  int v = 0;
  CU_OK(cuDriverGetVersion(&v));
  REQUIRE(v == 13000);
}
