// Errors about a peer's input are logged per call site: the first ten, then
// the 100th, 1000th, ... with their number (include/gdrpipe/log.hpp).
#include "gdrpipe/capi.h"
#include "gdrpipe/log.hpp"

#include "gp_catch.hpp"

#include <string>
#include <vector>

namespace {
std::vector<std::string> g_lines;

void capture(gdrpipe::LogLevel level, const char *, int, const char *msg) {
    if (level == gdrpipe::LogLevel::error) g_lines.emplace_back(msg);
}

void malformed_a(int i) { GP_PEER_ERROR("dropped message %d of peer A", i); }
void malformed_b(int i) { GP_PEER_ERROR("dropped message %d of peer B", i); }
} // namespace

TEST_CASE("peer input errors: first ten, then each power of ten", "[util][log]") {
    for (uint64_t n = 1; n <= 10; ++n) CHECK(gdrpipe::peer_log_due(n));
    for (uint64_t n : {11, 12, 50, 99, 101, 110, 200, 999, 1001, 2000, 99999}) {
        CHECK_FALSE(gdrpipe::peer_log_due(n));
    }
    for (uint64_t n : {100ull, 1000ull, 10000ull, 1000000ull, 10000000000000000000ull}) {
        CHECK(gdrpipe::peer_log_due(n));
    }
    CHECK(gp_log_peer_due(10) == 1);
    CHECK(gp_log_peer_due(11) == 0);
    CHECK(gp_log_peer_due(1000) == 1);
}

TEST_CASE("a peer flooding one error logs a dozen lines, per call site", "[util][log]") {
    g_lines.clear();
    gdrpipe::set_log_sink(capture, gdrpipe::LogLevel::error);
    for (int i = 1; i <= 1000; ++i) malformed_a(i);
    for (int i = 1; i <= 3; ++i) malformed_b(i);
    gdrpipe::set_log_sink(nullptr, gdrpipe::LogLevel::warn);

    // A: 1..10, 100, 1000; B (its own site): 1..3
    REQUIRE(g_lines.size() == 12 + 3);
    CHECK(g_lines[0] == "dropped message 1 of peer A");
    CHECK(g_lines[1] == "dropped message 2 of peer A [occurrence 2]");
    CHECK(g_lines[9].find("[occurrence 10; from here on only the 100th, 1000th, ...]") !=
          std::string::npos);
    CHECK(g_lines[10] == "dropped message 100 of peer A [occurrence 100]");
    CHECK(g_lines[11] == "dropped message 1000 of peer A [occurrence 1000]");
    CHECK(g_lines[12] == "dropped message 1 of peer B");
}
