// Logging of the core. The core never includes UCX; the plugin installs a sink
// that forwards to UCX's logger (so UCX_LOG_LEVEL governs what is shown).
// Without a sink (unit tests, tools) errors and warnings go to stderr, and
// GDRPIPE_LOG_LEVEL=error|warn|info|debug|trace widens that.
#pragma once
#include <atomic>
#include <cstdarg>
#include <cstdint>

namespace gdrpipe {

enum class LogLevel : int { error = 0, warn, info, debug, trace };

using LogSink = void (*)(LogLevel level, const char *file, int line,
                         const char *message);

void set_log_sink(LogSink sink, LogLevel max_level);
bool log_enabled(LogLevel level) noexcept;
void logf(LogLevel level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

// Errors about what a peer sent (a malformed message, a forged key): a peer
// can send such things without end, so a call site logs its first
// kPeerLogFirst occurrences, then only the 100th, 1000th, 10000th, ... with
// their number (GP_PEER_ERROR; the plugin's gdrpipe_peer_error).
inline constexpr std::uint64_t kPeerLogFirst = 10;
bool peer_log_due(std::uint64_t occurrence) noexcept;
// logf at error level with " [occurrence N...]" appended from the second on
void logf_peer(std::uint64_t occurrence, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

} // namespace gdrpipe

#define GP_PEER_ERROR(...)                                                     \
    do {                                                                       \
        static std::atomic<std::uint64_t> gp_peer_n_{0};                       \
        const std::uint64_t gp_peer_k_ =                                       \
            gp_peer_n_.fetch_add(1, std::memory_order_relaxed) + 1;            \
        if (::gdrpipe::peer_log_due(gp_peer_k_) &&                             \
            ::gdrpipe::log_enabled(::gdrpipe::LogLevel::error)) {              \
            ::gdrpipe::logf_peer(gp_peer_k_, __FILE__, __LINE__, __VA_ARGS__); \
        }                                                                      \
    } while (0)

#define GP_LOG(_lvl, ...)                                                      \
    do {                                                                       \
        if (::gdrpipe::log_enabled(_lvl)) {                                    \
            ::gdrpipe::logf(_lvl, __FILE__, __LINE__, __VA_ARGS__);            \
        }                                                                      \
    } while (0)
#define GP_ERROR(...) GP_LOG(::gdrpipe::LogLevel::error, __VA_ARGS__)
#define GP_WARN(...)  GP_LOG(::gdrpipe::LogLevel::warn, __VA_ARGS__)
#define GP_INFO(...)  GP_LOG(::gdrpipe::LogLevel::info, __VA_ARGS__)
#define GP_DEBUG(...) GP_LOG(::gdrpipe::LogLevel::debug, __VA_ARGS__)
#define GP_TRACE(...) GP_LOG(::gdrpipe::LogLevel::trace, __VA_ARGS__)
