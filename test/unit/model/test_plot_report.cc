// SVG plot and text report.
#include "fake_prober.hpp"

#include "gdrpipe/log.hpp"
#include "gdrpipe/model/plot_svg.hpp"
#include "gdrpipe/model/report.hpp"

#include "gp_catch.hpp"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

using namespace gdrpipe::model;

namespace {

CalibRecord record_for(fake::FakePath direct, std::uint64_t seed) {
    fake::FakeProber fp(direct, fake::pcie_staged(), seed);
    CalibOptions o;
    o.clock = fp.clock();
    o.budget_s = 2.0;
    CalibResult r = calibrate(fp, o);
    REQUIRE(r.status == CalibStatus::ok);
    return r.record;
}

// Parse-lite: every element is closed in order, the root is <svg>, no stray
// '<' or '&' in text, attribute quotes balance. Returns "" when well formed.
std::string check_xml(const std::string &s) {
    std::vector<std::string> stack;
    std::size_t i = 0;
    bool root_seen = false;
    while (i < s.size()) {
        if (s[i] == '&') {
            const std::size_t semi = s.find(';', i);
            if (semi == std::string::npos || semi - i > 6) return "bad entity at " + std::to_string(i);
            i = semi + 1;
            continue;
        }
        if (s[i] != '<') {
            ++i;
            continue;
        }
        if (s.compare(i, 2, "<?") == 0) {
            const std::size_t e = s.find("?>", i);
            if (e == std::string::npos) return "unterminated declaration";
            i = e + 2;
            continue;
        }
        // find the end of the tag, skipping quoted attribute values
        std::size_t j = i + 1;
        bool inq = false;
        while (j < s.size() && (inq || s[j] != '>')) {
            if (s[j] == '"') inq = !inq;
            if (!inq && s[j] == '<') return "'<' inside a tag at " + std::to_string(j);
            ++j;
        }
        if (j >= s.size()) return "unterminated tag at " + std::to_string(i);
        std::string tag = s.substr(i + 1, j - i - 1);
        i = j + 1;
        if (tag.empty()) return "empty tag";
        if (tag[0] == '/') {
            const std::string name = tag.substr(1);
            if (stack.empty() || stack.back() != name) return "mismatched </" + name + ">";
            stack.pop_back();
            continue;
        }
        const bool self_closing = tag.back() == '/';
        const std::string name = tag.substr(0, tag.find_first_of(" /\n"));
        if (!root_seen) {
            if (name != "svg") return "root is not svg";
            root_seen = true;
        } else if (stack.empty()) {
            return "content after the root element";
        }
        if (!self_closing) stack.push_back(name);
    }
    if (!root_seen) return "no root";
    if (!stack.empty()) return "unclosed <" + stack.back() + ">";
    return "";
}

int plot_warnings = 0;
void count_warning(gdrpipe::LogLevel level, const char *, int, const char *) {
    if (level == gdrpipe::LogLevel::warn) ++plot_warnings;
}

int count(const std::string &s, const std::string &what) {
    int n = 0;
    for (std::size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
    return n;
}

} // namespace

TEST_CASE("the XML checker itself rejects broken documents", "[model][plot]") {
    CHECK(check_xml("<svg><g></g></svg>").empty());
    CHECK_FALSE(check_xml("<svg><g></svg>").empty());
    CHECK_FALSE(check_xml("<svg><g/></svg><x/>").empty());
    CHECK_FALSE(check_xml("<svg><text>a & b</text></svg>").empty());
    CHECK_FALSE(check_xml("<svg><line x=\"1/></svg>").empty());
}

TEST_CASE("SVG of a crossover is well formed and marks it", "[model][plot]") {
    const CalibRecord rec = record_for(fake::pcie_peer_direct(), 1);
    for (PlotAxis axis : {PlotAxis::time, PlotAxis::bandwidth}) {
        PlotOptions o;
        o.y = axis;
        o.title = "A <&> B";
        const std::string svg = render_svg(rec, o);
        INFO(svg.substr(0, 400));
        CHECK(check_xml(svg).empty());
        CHECK(count(svg, "id=\"crossover\"") == 1);
        CHECK(svg.find("crossover " + format_bytes(rec.model.threshold())) != std::string::npos);
        CHECK(svg.find("id=\"measured-direct\"") != std::string::npos);
        CHECK(svg.find("id=\"measured-staged\"") != std::string::npos);
        CHECK(svg.find("id=\"fit-direct\"") != std::string::npos);
        CHECK(svg.find("id=\"fit-staged\"") != std::string::npos);
        CHECK(svg.find("id=\"legend\"") != std::string::npos);
        CHECK(svg.find("message size") != std::string::npos);
        CHECK(svg.find(axis == PlotAxis::time ? "time per transfer" : "bandwidth") != std::string::npos);
        CHECK(svg.find("A &lt;&amp;&gt; B") != std::string::npos);
        // one marker per measured point and path
        CHECK(count(svg, "<circle") == static_cast<int>(2 * rec.model.table().size()));
    }
}

TEST_CASE("SVG without a crossover says which path always wins", "[model][plot]") {
    const CalibRecord nv = record_for(fake::nvlink_direct(), 2);
    const std::string a = render_svg(nv);
    CHECK(check_xml(a).empty());
    CHECK(a.find("id=\"crossover\"") == std::string::npos);
    CHECK(a.find("direct at every size") != std::string::npos);
    const CalibRecord np = record_for(fake::no_peer_direct(), 3);
    const std::string b = render_svg(np);
    CHECK(check_xml(b).empty());
    CHECK(b.find("staged at every size") != std::string::npos);
    CHECK(b.find("id=\"measured-direct\"") == std::string::npos);
    // an empty (configured) record still renders
    CalibRecord cfg;
    cfg.model = CostModel::fixed(65536);
    const std::string c = render_svg(cfg);
    CHECK(check_xml(c).empty());
    CHECK(c.find("id=\"crossover\"") != std::string::npos);
}

TEST_CASE("write_svg writes the file and fails softly", "[model][plot]") {
    const CalibRecord rec = record_for(fake::pcie_peer_direct(), 4);
    char path[] = "/tmp/gdrpipe-plot-XXXXXX";
    const int fd = ::mkstemp(path);
    REQUIRE(fd >= 0);
    ::close(fd);
    REQUIRE(write_svg(path, rec));
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    CHECK(ss.str() == render_svg(rec));
    std::remove(path);
    plot_warnings = 0;
    gdrpipe::set_log_sink(&count_warning, gdrpipe::LogLevel::warn);
    const bool wrote = write_svg("/nonexistent-dir/x/plot.svg", rec);
    gdrpipe::set_log_sink(nullptr, gdrpipe::LogLevel::warn);
    CHECK_FALSE(wrote);
    CHECK(plot_warnings == 1);
}

TEST_CASE("formatting helpers", "[model][report]") {
    CHECK(format_bytes(1) == "1 B");
    CHECK(format_bytes(1023) == "1023 B");
    CHECK(format_bytes(4096) == "4 KiB");
    CHECK(format_bytes(std::size_t{64} << 20) == "64 MiB");
    CHECK(format_bytes(37000) == "36.1 KiB");
    CHECK(format_bytes(kNever) == "never");
    CHECK(format_seconds(6e-6) == "6 us");
    CHECK(format_seconds(1.34e-3) == "1.34 ms");
    CHECK(format_seconds(5e-7) == "500 ns");
    CHECK(format_seconds(1.0 / 0.0) == "n/a");
}

TEST_CASE("report lists the table, the fit, the crossover and its source", "[model][report]") {
    const CalibRecord rec = record_for(fake::pcie_peer_direct(), 5);
    const std::string r = format_report(rec, Source::measured);
    CHECK(r.find("measured now") != std::string::npos);
    CHECK(r.find("direct fit: t = ") != std::string::npos);
    CHECK(r.find("staged fit: t = ") != std::string::npos);
    CHECK(r.find(format_bytes(rec.model.threshold())) != std::string::npos);
    CHECK(r.find("chunk " + format_bytes(rec.pipeline.chunk_bytes)) != std::string::npos);
    // one row per measured size, each naming the chosen path
    int rows = 0;
    std::istringstream in(r);
    std::string line;
    while (std::getline(in, line)) {
        // table rows: no ':' and end with a margin
        if (line.find(':') == std::string::npos && !line.empty() && line.back() == '%') ++rows;
    }
    CHECK(rows == static_cast<int>(rec.model.table().size()));
    const std::string c = format_report(rec, Source::cache);
    CHECK(c.find("source:     cache") != std::string::npos);
    CalibRecord cfg;
    cfg.model = CostModel::fixed(kNever);
    const std::string f = format_report(cfg, Source::configured);
    CHECK(f.find("configured") != std::string::npos);
    CHECK(f.find("direct at every size") != std::string::npos);
    const std::string s = format_summary(rec, Source::measured);
    CHECK(s.find('\n') == std::string::npos);
    CHECK(s.find("crossover ") == 0);
}

TEST_CASE("report flags a threshold that loses at a measured size", "[model][report]") {
    CalibRecord rec;
    std::vector<MeasuredPoint> t = {{1, 1e-6, 2e-6}, {1024, 2e-6, 1e-6}};
    rec.model = CostModel::restore({}, {}, CostModel::fixed(kNever).crossover(), t);
    const std::string r = format_report(rec, Source::configured);
    CHECK(r.find("-50.0 %") != std::string::npos); // chose direct at 1 KiB, staged takes half
    CHECK(r.find("+100.0 %") != std::string::npos);
}

TEST_CASE("report and plot say when staged is the path below the crossing", "[model][report]") {
    CalibRecord rec;
    std::vector<MeasuredPoint> t;
    for (std::size_t n = 1; n <= (std::size_t{64} << 20); n *= 4)
        t.push_back({n, 60e-6 + static_cast<double>(n) / 40e9, 5e-6 + static_cast<double>(n) / 12e9});
    rec.model = CostModel::fit(t, PipelineParams{});
    REQUIRE(rec.model.below() == Path::staged);
    const std::string r = format_report(rec, Source::measured);
    CHECK(r.find(format_bytes(rec.model.threshold()) + " (staged below, direct from there on)") !=
          std::string::npos);
    // the chosen column follows the rule: staged at 1 B, direct at 64 MiB
    std::istringstream in(r);
    std::string line, first_row, last_row;
    while (std::getline(in, line)) {
        if (line.find("  1 B ") != std::string::npos) first_row = line;
        if (line.find("64 MiB") != std::string::npos) last_row = line;
    }
    CHECK(first_row.find("staged") != std::string::npos);
    CHECK(last_row.find("direct") != std::string::npos);
    const std::string svg = render_svg(rec);
    CHECK(svg.find("(staged below, direct from)") != std::string::npos);
}
