// wire::open_peer_fd / same_peer_file against a forked child's descriptors.
#include "gdrpipe/wire/peer_fd.hpp"

#include "gp_catch.hpp"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

TEST_CASE("peer fds: fetched from another process, identity by kcmp", "[wire]") {
    using namespace gdrpipe::wire;
    int a = ::memfd_create("peer-fd-a", MFD_CLOEXEC);
    int b = ::memfd_create("peer-fd-b", MFD_CLOEXEC);
    REQUIRE(a >= 0);
    REQUIRE(b >= 0);
    REQUIRE(::pwrite(a, "AAAA", 4, 0) == 4);
    REQUIRE(::pwrite(b, "BBBB", 4, 0) == 4);
    int go[2];
    REQUIRE(::pipe(go) == 0);
    pid_t child = ::fork();
    if (child == 0) { // holds a and b until the parent closes the pipe
        ::close(go[1]);
        char c;
        (void)::read(go[0], &c, 1);
        ::_exit(0);
    }
    ::close(go[0]);
    ::close(b); // b lives on in the child only

    std::string err;
    int got = open_peer_fd(child, b, &err);
    INFO(err);
    REQUIRE(got >= 0);
    char buf[5] = {};
    CHECK(::pread(got, buf, 4, 0) == 4);
    CHECK(std::string(buf) == "BBBB");
    int same = same_peer_file(child, b, got);
    if (same < 0) {
        WARN("kcmp not available here: " << std::strerror(-same));
    } else {
        CHECK(same_peer_file(child, a, a) == 1);  // inherited: the same open file
        CHECK(same_peer_file(child, a, got) == 0); // another file
        CHECK(same_peer_file(child, 1000, got) == 0); // not open in the child
    }
    CHECK(open_peer_fd(child, 1000, &err) < 0);
    CHECK(!err.empty());
    CHECK(open_peer_fd(0, b, &err) < 0);

    ::close(got);
    ::close(go[1]);
    int st = 0;
    ::waitpid(child, &st, 0);
    ::close(a);
}
