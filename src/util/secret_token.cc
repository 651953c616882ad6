// new_secret_token() (secret_token.hpp).
#include "gdrpipe/secret_token.hpp"

#include "gdrpipe/log.hpp"
#include "gdrpipe/self_pid.hpp"
#include "gdrpipe/siphash.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <mutex>

namespace gdrpipe {
namespace {

struct Key {
    std::uint64_t k[2] = {0, 0};
};

std::mutex g_mu;
Key g_key;                        // written under g_mu before g_keyed is set
std::atomic<bool> g_keyed{false}; // cleared in a forked child: a key of its own
std::atomic<std::uint64_t> g_counter{0};

void rekey_in_child() { g_keyed.store(false, std::memory_order_relaxed); }

// 16 bytes from the kernel; false when neither getrandom nor /dev/urandom
// gives them
bool kernel_random(Key *key) {
    char *p = reinterpret_cast<char *>(key->k);
    size_t got = 0;
    while (got < sizeof(key->k)) {
        ssize_t n = ::getrandom(p + got, sizeof(key->k) - got, 0);
        if (n > 0) {
            got += size_t(n);
        } else if (n < 0 && errno != EINTR) {
            break;
        }
    }
    if (got == sizeof(key->k)) return true;
    int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    got = 0;
    while (got < sizeof(key->k)) {
        ssize_t n = ::read(fd, p + got, sizeof(key->k) - got);
        if (n <= 0 && !(n < 0 && errno == EINTR)) break;
        if (n > 0) got += size_t(n);
    }
    ::close(fd);
    return got == sizeof(key->k);
}

Key current_key() {
    if (g_keyed.load(std::memory_order_acquire)) return g_key;
    std::lock_guard<std::mutex> g(g_mu);
    if (!g_keyed.load(std::memory_order_relaxed)) {
        static const bool hooked = ::pthread_atfork(nullptr, nullptr, rekey_in_child) == 0;
        (void)hooked;
        if (!kernel_random(&g_key)) {
            // guessable: say so once per process
            GP_WARN("no kernel random source (getrandom, /dev/urandom): registration "
                    "tokens are derived from the clock and the pid");
            struct timespec ts {};
            ::clock_gettime(CLOCK_MONOTONIC, &ts);
            g_key.k[0] = std::uint64_t(ts.tv_nsec) ^ (std::uint64_t(ts.tv_sec) << 32);
            g_key.k[1] = std::uint64_t(self_pid()) ^ reinterpret_cast<std::uintptr_t>(&g_key);
        }
        g_keyed.store(true, std::memory_order_release);
    }
    return g_key;
}

} // namespace

std::uint64_t new_secret_token() noexcept {
    const Key key = current_key();
    for (;;) {
        const std::uint64_t w[2] = {g_counter.fetch_add(1, std::memory_order_relaxed),
                                    std::uint64_t(self_pid())};
        const std::uint64_t t = siphash24(key.k[0], key.k[1], w, 2);
        if (t != 0) return t;
    }
}

} // namespace gdrpipe
