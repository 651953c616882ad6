// Review finding M6(a): the pid and fd of a peer's segment come from the
// peer, so opening /proc/<pid>/fd/<fd> may reach any file of that process.
// A terminal there must be refused and must not become our controlling
// terminal (an O_RDWR open without O_NOCTTY makes it one for a session
// leader that has none).
#include "gdrpipe/pipeline/ring.hpp"
#include "gdrpipe/wire/sealed_memfd.hpp"
#include "gdrpipe/wire/shm_iface.hpp"

#include "gp_catch.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

using namespace gdrpipe;

namespace {

// In a new session (no controlling terminal): a pty's slave end open here
// without becoming our terminal; the checks run against its fd number.
// Returns a bitmask of what failed (0: all good).
int child_checks() {
    if (::setsid() < 0) return 64;
    const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
    if (master < 0 || ::grantpt(master) != 0 || ::unlockpt(master) != 0) return 64;
    const char *name = ::ptsname(master);
    const int slave = name ? ::open(name, O_RDWR | O_NOCTTY) : -1;
    if (slave < 0) return 64;
    int bad = 0;
    std::string err;
    auto iface = wire::ShmIface::open(wire::ShmConfig{}, &err);
    auto other = wire::ShmIface::open(wire::ShmConfig{}, &err);
    if (!iface || !other) return 64;
    wire::ShmAddress a = iface->address();
    a.fd = slave;
    err.clear();
    if (other->connect(&a, sizeof(a), &err) != nullptr) bad |= 1;
    if (err.find("not a regular file") == std::string::npos) bad |= 2;
    err.clear();
    if (pipeline::StagingSegment::attach(::getpid(), slave, 1, 1 << 20, &err)) bad |= 4;
    if (err.find("not a regular file") == std::string::npos) bad |= 8;
    // still no controlling terminal
    const int tty = ::open("/dev/tty", O_RDWR | O_NOCTTY);
    if (tty >= 0) {
        bad |= 16;
        ::close(tty);
    }
    return bad;
}

} // namespace

TEST_CASE("a peer's segment reference naming a terminal is refused, not made our terminal",
          "[wire][peer]") {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) ::_exit(child_checks());
    int st = 0;
    REQUIRE(::waitpid(pid, &st, 0) == pid);
    REQUIRE(WIFEXITED(st));
    const int bad = WEXITSTATUS(st);
    INFO("failed checks (bits): " << bad);
    CHECK(bad == 0);
}
