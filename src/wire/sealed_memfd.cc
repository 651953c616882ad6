// Sealed memfds (include/gdrpipe/wire/sealed_memfd.hpp).
#include "gdrpipe/wire/sealed_memfd.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
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

int open_peer_segment(pid_t pid, int fd, std::string *err) {
    if (pid <= 0 || fd < 0) {
        *err = "invalid segment reference";
        return -1;
    }
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/%d/fd/%d", int(pid), fd);
    const int out = ::open(path, O_RDWR | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (out < 0) {
        *err = std::string("open ") + path + ": " + std::strerror(errno);
        return -1;
    }
    struct stat st{};
    const char *why = nullptr;
    if (::fstat(out, &st) != 0 || !S_ISREG(st.st_mode)) {
        why = "not a regular file";
    } else {
        why = check_sealed(out);
    }
    if (why != nullptr) {
        ::close(out);
        *err = std::string(path) + ": " + why;
        return -1;
    }
    return out;
}

} // namespace gdrpipe::wire
