#include "gdrpipe/log.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gdrpipe {
namespace {

LogLevel level_from_env() {
    const char *v = std::getenv("GDRPIPE_LOG_LEVEL");
    if (v == nullptr) return LogLevel::warn;
    static const char *const names[] = {"error", "warn", "info", "debug", "trace"};
    for (int i = 0; i < 5; ++i) {
        if (std::strcmp(v, names[i]) == 0) return static_cast<LogLevel>(i);
    }
    return LogLevel::warn;
}

// Constant-initialised: the plugin's constructors log before this file's
// dynamic initialisers may have run. -1 means "not read from the environment
// yet".
constinit std::atomic<LogSink> g_sink{nullptr};
constinit std::atomic<int> g_max{-1};

int max_level() noexcept {
    int m = g_max.load(std::memory_order_relaxed);
    if (m < 0) {
        m = static_cast<int>(level_from_env());
        int expected = -1;
        if (!g_max.compare_exchange_strong(expected, m, std::memory_order_relaxed)) {
            m = expected;
        }
    }
    return m;
}

const char *level_name(LogLevel l) {
    switch (l) {
    case LogLevel::error: return "ERROR";
    case LogLevel::warn: return "WARN";
    case LogLevel::info: return "INFO";
    case LogLevel::debug: return "DEBUG";
    default: return "TRACE";
    }
}

} // namespace

void set_log_sink(LogSink sink, LogLevel max_level) {
    g_max.store(static_cast<int>(max_level), std::memory_order_relaxed);
    g_sink.store(sink, std::memory_order_release);
}

bool log_enabled(LogLevel level) noexcept {
    return static_cast<int>(level) <= max_level();
}

namespace {
void emit(LogLevel level, const char *file, int line, const char *buf) {
    LogSink sink = g_sink.load(std::memory_order_acquire);
    if (sink != nullptr) {
        sink(level, file, line, buf);
        return;
    }
    const char *base = std::strrchr(file, '/');
    std::fprintf(stderr, "[gdrpipe %s] %s:%d %s\n", level_name(level),
                 base ? base + 1 : file, line, buf);
}
} // namespace

void logf(LogLevel level, const char *file, int line, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    emit(level, file, line, buf);
}

bool peer_log_due(std::uint64_t n) noexcept {
    if (n <= kPeerLogFirst) return true;
    while (n % 10 == 0) n /= 10;
    return n == 1;
}

void logf_peer(std::uint64_t occurrence, const char *file, int line, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = std::vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    size_t at = std::min(size_t(n), sizeof(buf) - 1);
    if (occurrence > 1 && at < sizeof(buf) - 1) {
        std::snprintf(buf + at, sizeof(buf) - at, " [occurrence %llu%s]",
                      static_cast<unsigned long long>(occurrence),
                      occurrence == kPeerLogFirst ? "; from here on only the 100th, 1000th, ..."
                                                  : "");
    }
    emit(LogLevel::error, file, line, buf);
}

} // namespace gdrpipe
