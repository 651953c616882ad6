// Sealed memfds (include/gdrpipe/wire/sealed_memfd.hpp).
#include "gdrpipe/wire/sealed_memfd.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gdrpipe::wire {

namespace {
constexpr int kResizeSeals = F_SEAL_SHRINK | F_SEAL_GROW;
}

int create_sealed_memfd(const char *name, size_t size, std::string *err) {
    int fd = ::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
        *err = std::string("memfd_create: ") + std::strerror(errno);
        return -1;
    }
    if (::ftruncate(fd, off_t(size)) != 0) {
        *err = std::string("ftruncate: ") + std::strerror(errno);
        ::close(fd);
        return -1;
    }
    if (::fcntl(fd, F_ADD_SEALS, kResizeSeals | F_SEAL_SEAL) != 0) {
        *err = std::string("sealing the segment: ") + std::strerror(errno);
        ::close(fd);
        return -1;
    }
    return fd;
}

const char *check_sealed(int fd) noexcept {
    int seals = ::fcntl(fd, F_GET_SEALS);
    if (seals < 0 || (seals & kResizeSeals) != kResizeSeals) {
        return "segment not sealed against resizing";
    }
    return nullptr;
}

} // namespace gdrpipe::wire
