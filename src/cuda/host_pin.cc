// Pinning of host memory for device copies (host_pin.hpp).
#include "gdrpipe/cuda/host_pin.hpp"

#include "gdrpipe/cuda/context.hpp"
#include "gdrpipe/cuda/driver.hpp"
#include "gdrpipe/log.hpp"

namespace gdrpipe::cuda {

bool HostPin::pin(void *p, std::size_t len, const char *what) noexcept {
    auto &drv = driver();
    if (p_ != nullptr || p == nullptr || len == 0 || !drv.available() ||
        devices().count() <= 0) {
        return false;
    }
    ScopedContext scope(0);
    if (!scope.ok()) return false;
    const CUresult r = drv.api().cuMemHostRegister(p, len, CU_MEMHOSTREGISTER_PORTABLE);
    if (r != CUDA_SUCCESS) {
        GP_WARN("%s: cuMemHostRegister(%zu bytes): %s (continuing unpinned)", what, len,
                describe(r).c_str());
        return false;
    }
    p_ = p;
    dev_ = 0;
    return true;
}

void HostPin::unpin() noexcept {
    if (p_ == nullptr) return;
    ScopedContext scope(dev_);
    const CUresult r = driver().api().cuMemHostUnregister(p_);
    if (r != CUDA_SUCCESS) GP_DEBUG("cuMemHostUnregister: %s", describe(r).c_str());
    p_ = nullptr;
}

} // namespace gdrpipe::cuda
