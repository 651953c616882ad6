// Modules and kernel launches: the simulator knows gdrpipe's kernels, the
// batched copy (include/gdrpipe/cuda/copy_kernel_abi.h), whose copies it runs
// on the stream like the copy engine's, and the reduction
// (include/gdrpipe/cuda/reduce_abi.h), run on the host on the stream. A module image must look like a
// fatbin; GDRPIPE_SIM_NO_KERNELS=1 makes every module fail to load, as on a
// GPU the image has no code for.
#include <cstdlib>
#include <cstring>

#include "sim_internal.hpp"

using namespace sim;

namespace {

constexpr uint32_t kFatbinMagic = 0xBA55ED50u;

struct Module {
  int dev = 0;
};
enum class Fn { copy_batch, reduce };
struct Function {
  Module* mod = nullptr;
  Fn fn = Fn::copy_batch;
};

std::set<Module*> g_modules;
std::set<Function*> g_functions;

bool kernels_off() {
  const char* v = getenv("GDRPIPE_SIM_NO_KERNELS");
  return v != nullptr && *v != '\0' && *v != '0';
}

CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                unsigned bz, CUstream h, void** params, void** extra, bool per_thread) {
  Fn which;
  {
    Lock lk(g_mu);
    if (CUresult r = check_init()) return r;
    if (!g_functions.count(reinterpret_cast<Function*>(f))) return CUDA_ERROR_INVALID_HANDLE;
    which = reinterpret_cast<Function*>(f)->fn;
  }
  if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 || bx * by * bz > 1024)
    return CUDA_ERROR_INVALID_VALUE;
  if (params == nullptr || params[0] == nullptr || extra != nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (which == Fn::reduce) {
    gp_reduce_args_t a;
    std::memcpy(&a, params[0], sizeof(a));
    return do_reduce(a, h, per_thread);
  }
  gp_copy_batch_t b;
  std::memcpy(&b, params[0], sizeof(b));
  if (b.count > GP_COPY_BATCH_MAX) return CUDA_ERROR_INVALID_VALUE;
  // blockIdx.y names the copy: blocks past the count do nothing, copies
  // without a block row are not done (as on the GPU)
  const unsigned n = b.count < gy ? b.count : gy;
  return do_copy_batch(b.desc, n, h, per_thread);
}

}  // namespace

SIM_API CUresult cuModuleLoadData(CUmodule* m, const void* image) {
  Lock lk(g_mu);
  Ctx* c;
  if (CUresult r = need_ctx(&c)) return r;
  if (m == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  uint32_t magic = 0;
  std::memcpy(&magic, image, sizeof(magic));
  if (magic != kFatbinMagic) return CUDA_ERROR_INVALID_IMAGE;
  if (kernels_off()) return CUDA_ERROR_NO_BINARY_FOR_GPU;
  auto* mod = new Module{c->dev};
  g_modules.insert(mod);
  *m = reinterpret_cast<CUmodule>(mod);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuModuleUnload(CUmodule m) {
  Lock lk(g_mu);
  auto* mod = reinterpret_cast<Module*>(m);
  if (!g_modules.erase(mod)) return CUDA_ERROR_INVALID_HANDLE;
  for (auto it = g_functions.begin(); it != g_functions.end();) {
    if ((*it)->mod == mod) {
      delete *it;
      it = g_functions.erase(it);
    } else {
      ++it;
    }
  }
  delete mod;
  return CUDA_SUCCESS;
}

SIM_API CUresult cuModuleGetFunction(CUfunction* f, CUmodule m, const char* name) {
  Lock lk(g_mu);
  auto* mod = reinterpret_cast<Module*>(m);
  if (!g_modules.count(mod)) return CUDA_ERROR_INVALID_HANDLE;
  if (f == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Fn which;
  if (std::strcmp(name, GP_COPY_KERNEL_NAME) == 0) {
    which = Fn::copy_batch;
  } else if (std::strcmp(name, GP_REDUCE_KERNEL_NAME) == 0) {
    which = Fn::reduce;
  } else {
    return CUDA_ERROR_NOT_FOUND;
  }
  auto* fn = new Function{mod, which};
  g_functions.insert(fn);
  *f = reinterpret_cast<CUfunction>(fn);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                unsigned by, unsigned bz, unsigned shmem, CUstream h, void** params,
                                void** extra) {
  (void)shmem;
  return launch(f, gx, gy, gz, bx, by, bz, h, params, extra, false);
}

SIM_API CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                     unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                     CUstream h, void** params, void** extra) {
  (void)shmem;
  return launch(f, gx, gy, gz, bx, by, bz, h, params, extra, true);
}
