// SipHash-2-4 against the reference vectors (key 00..0f, message 00..07 and
// the empty message), and the registration tokens built on it.
#include "gdrpipe/secret_token.hpp"
#include "gdrpipe/siphash.hpp"

#include "gp_catch.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <set>

using gdrpipe::siphash24;

namespace {
constexpr std::uint64_t kK0 = 0x0706050403020100ull; // key bytes 00..07, little-endian
constexpr std::uint64_t kK1 = 0x0f0e0d0c0b0a0908ull; // 08..0f
} // namespace

TEST_CASE("siphash24 gives the reference outputs", "[util]") {
    CHECK(siphash24(kK0, kK1, nullptr, 0) == 0x726fdb47dd0e0e31ull);
    const std::uint64_t m8 = 0x0706050403020100ull; // bytes 00..07
    CHECK(siphash24(kK0, kK1, &m8, 1) == 0x93f5f5799a932462ull);
    const std::uint64_t m16[2] = {0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull};
    CHECK(siphash24(kK0, kK1, m16, 2) == 0x3f2acc7f57c29bdbull);
    // the key matters
    CHECK(siphash24(kK0 ^ 1, kK1, &m8, 1) != siphash24(kK0, kK1, &m8, 1));
}

TEST_CASE("secret tokens are nonzero and do not repeat, also across fork", "[util]") {
    std::set<std::uint64_t> seen;
    for (int i = 0; i < 10000; ++i) {
        const std::uint64_t t = gdrpipe::new_secret_token();
        REQUIRE(t != 0);
        REQUIRE(seen.insert(t).second);
    }
    // a child draws a key of its own: its tokens are none of the parent's
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::close(fds[0]);
        for (int i = 0; i < 100; ++i) {
            const std::uint64_t t = gdrpipe::new_secret_token();
            if (::write(fds[1], &t, sizeof(t)) != sizeof(t)) ::_exit(2);
        }
        ::_exit(0);
    }
    ::close(fds[1]);
    std::uint64_t t = 0;
    int n = 0;
    while (::read(fds[0], &t, sizeof(t)) == sizeof(t)) {
        CHECK(t != 0);
        CHECK(seen.count(t) == 0);
        ++n;
    }
    ::close(fds[0]);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(n == 100);
}
