// Review finding M3: the shared segments (the wire's FIFO, the staging rings)
// were memfds any opener could ftruncate, raising SIGBUS in every mapper at
// its next access. They are sealed against resizing now, and a peer's
// segment that is not sealed so is refused.
#include "gdrpipe/pipeline/ring.hpp"
#include "gdrpipe/wire/sealed_memfd.hpp"
#include "gdrpipe/wire/shm_iface.hpp"

#include "gp_catch.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

using namespace gdrpipe;

namespace {

// What a peer does: open the segment through /proc/<pid>/fd/<fd>.
int open_as_peer(int fd) {
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/%d/fd/%d", int(::getpid()), fd);
    return ::open(path, O_RDWR | O_CLOEXEC);
}

} // namespace

TEST_CASE("the wire's FIFO segment cannot be resized by an opener", "[wire][seal]") {
    std::string err;
    auto iface = wire::ShmIface::open(wire::ShmConfig{}, &err);
    REQUIRE(iface);
    const wire::ShmAddress a = iface->address();
    int fd = open_as_peer(a.fd);
    REQUIRE(fd >= 0);
    CHECK(::ftruncate(fd, 0) == -1);
    CHECK(errno == EPERM);
    CHECK(::ftruncate(fd, 1 << 30) == -1);
    ::close(fd);
    // and it still works: a second interface connects to it
    auto other = wire::ShmIface::open(wire::ShmConfig{}, &err);
    REQUIRE(other);
    wire::ShmPeer *p = other->connect(&a, sizeof(a), &err);
    CHECK(p != nullptr);
    if (p != nullptr) other->release(p);
}

TEST_CASE("a peer's FIFO segment that is not sealed is refused", "[wire][seal]") {
    std::string err;
    auto iface = wire::ShmIface::open(wire::ShmConfig{}, &err);
    REQUIRE(iface);
    // an unsealed memfd behind an otherwise valid address (ours, fd swapped)
    int raw = ::memfd_create("unsealed", MFD_CLOEXEC);
    REQUIRE(raw >= 0);
    REQUIRE(::ftruncate(raw, 1 << 20) == 0);
    wire::ShmAddress a = iface->address();
    a.fd = raw;
    auto other = wire::ShmIface::open(wire::ShmConfig{}, &err);
    REQUIRE(other);
    err.clear();
    CHECK(other->connect(&a, sizeof(a), &err) == nullptr);
    CHECK(err.find("not sealed") != std::string::npos);
    ::close(raw);
    CHECK(wire::check_sealed(iface->address().fd) == nullptr);
}

TEST_CASE("staging segments are sealed, and unsealed ones are refused", "[wire][seal]") {
    std::string err;
    auto seg = pipeline::StagingSegment::create(1, 2, 65536, &err);
    REQUIRE(seg);
    int fd = open_as_peer(seg->fd());
    REQUIRE(fd >= 0);
    CHECK(::ftruncate(fd, 0) == -1);
    ::close(fd);
    int raw = ::memfd_create("unsealed-stage", MFD_CLOEXEC);
    REQUIRE(raw >= 0);
    REQUIRE(::ftruncate(raw, off_t(seg->size())) == 0);
    err.clear();
    auto bad = pipeline::StagingSegment::attach(::getpid(), raw, seg->seg_id(), seg->size(), &err);
    CHECK(!bad);
    CHECK(err.find("not sealed") != std::string::npos);
    ::close(raw);
}
