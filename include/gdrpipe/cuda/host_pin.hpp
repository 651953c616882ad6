// Host memory pinned for device copies (cuMemHostRegister, PORTABLE, in
// device 0's primary context) from pin() until unpin() or destruction.
// Without CUDA, or when the driver refuses (logged as a warning naming
// `what`), the memory stays unpinned and copies still work, slower. Users:
// the staging slots of the chunk pipeline, and the peers' receive FIFOs that
// device-memory active messages are copied into.
#pragma once

#include <cstddef>

namespace gdrpipe::cuda {

class HostPin {
public:
    HostPin() = default;
    ~HostPin() { unpin(); }
    HostPin(const HostPin &) = delete;
    HostPin &operator=(const HostPin &) = delete;
    bool pin(void *p, std::size_t len, const char *what) noexcept;
    bool pinned() const noexcept { return p_ != nullptr; }
    void unpin() noexcept;

private:
    void *p_ = nullptr;
    int dev_ = -1;
};

} // namespace gdrpipe::cuda
