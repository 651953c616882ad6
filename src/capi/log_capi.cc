// extern "C" access to the core's log routing.
#include "gdrpipe/capi.h"
#include "gdrpipe/log.hpp"

#include <atomic>

namespace {
std::atomic<gp_log_sink_t> g_c_sink{nullptr};

void forward(gdrpipe::LogLevel level, const char *file, int line, const char *msg) {
    gp_log_sink_t s = g_c_sink.load(std::memory_order_acquire);
    if (s != nullptr) s(static_cast<int>(level), file, line, msg);
}
} // namespace

extern "C" void gp_set_log_sink(gp_log_sink_t sink, int max_level) {
    g_c_sink.store(sink, std::memory_order_release);
    gdrpipe::set_log_sink(sink != nullptr ? forward : nullptr,
                          static_cast<gdrpipe::LogLevel>(max_level));
}

extern "C" int gp_log_peer_due(uint64_t occurrence) {
    return gdrpipe::peer_log_due(occurrence) ? 1 : 0;
}
