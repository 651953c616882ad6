// Fitting and threshold choice on synthetic tables.
#include "gdrpipe/model/cost_model.hpp"
#include "gdrpipe/model/robust_stats.hpp"

#include "gp_catch.hpp"

#include <cmath>
#include <functional>
#include <limits>

using namespace gdrpipe::model;

namespace {

using Fn = std::function<std::optional<double>(std::size_t)>;

std::vector<MeasuredPoint> table_of(const Fn &d, const Fn &s, std::size_t max = std::size_t{64} << 20) {
    std::vector<MeasuredPoint> t;
    for (std::size_t n = 1; n <= max; n *= 4) t.push_back({n, d(n), s(n)});
    return t;
}

Fn linear(double lat, double bw) {
    return [=](std::size_t n) -> std::optional<double> { return lat + static_cast<double>(n) / bw; };
}

Path measured_winner(const MeasuredPoint &p) {
    const double inf = std::numeric_limits<double>::infinity();
    return p.staged_s.value_or(inf) < p.direct_s.value_or(inf) ? Path::staged : Path::direct;
}

// summed capped regret of the rule "`below` under thr, the other path from it"
double regret_for(const std::vector<MeasuredPoint> &t, std::size_t thr, Path below = Path::direct) {
    double sum = 0;
    for (const MeasuredPoint &p : t) {
        const double best = std::min(*p.direct_s, *p.staged_s);
        const bool staged = (p.bytes >= thr) == (below == Path::direct);
        sum += std::min((staged ? *p.staged_s : *p.direct_s) / best - 1.0, 1.0); // capped
    }
    return sum;
}

} // namespace

TEST_CASE("median and MAD outlier rejection", "[model][stats]") {
    CHECK(median({3, 1, 2}) == 2);
    CHECK(median({4, 1, 3, 2}) == 2.5);
    const RobustEstimate e = robust_median({1.0, 1.01, 0.99, 1.02, 10.0});
    CHECK(e.rejected == 1);
    CHECK(e.kept == 4);
    CHECK(e.value == Approx(1.005));
    const RobustEstimate same = robust_median({2, 2, 2, 9});
    CHECK(same.value == 2);
    CHECK(robust_median({5.0}).value == 5.0);
}

TEST_CASE("linear fit recovers latency and bandwidth", "[model][fit]") {
    std::vector<std::pair<std::size_t, double>> pts;
    for (std::size_t n = 1; n <= (std::size_t{64} << 20); n *= 4) pts.emplace_back(n, 6e-6 + n / 3e9);
    const PathFit f = fit_path(pts, 0);
    REQUIRE(f.available);
    CHECK_FALSE(f.chunked);
    CHECK(f.latency_s == Approx(6e-6).epsilon(1e-6));
    CHECK(f.bandwidth_Bps == Approx(3e9).epsilon(1e-6));
    CHECK(f.rms_rel_err < 1e-9);
    CHECK(f.predict(1000) == Approx(6e-6 + 1000 / 3e9));
}

TEST_CASE("a wild point is rejected by the fit", "[model][fit]") {
    std::vector<std::pair<std::size_t, double>> pts;
    for (std::size_t n = 1; n <= (std::size_t{64} << 20); n *= 4) pts.emplace_back(n, 6e-6 + n / 3e9);
    pts[5].second *= 10;
    const PathFit f = fit_path(pts, 0);
    CHECK(f.rejected == 1);
    CHECK(f.latency_s == Approx(6e-6).epsilon(0.01));
    CHECK(f.bandwidth_Bps == Approx(3e9).epsilon(0.01));
}

TEST_CASE("staged fit keeps the per-chunk term when it fits better", "[model][fit]") {
    const std::size_t chunk = std::size_t{1} << 20;
    std::vector<std::pair<std::size_t, double>> pts;
    for (std::size_t n = 1; n <= (std::size_t{64} << 20); n *= 2) {
        pts.emplace_back(n, 10e-6 + 40e-6 * std::ceil(double(n) / chunk) + n / 20e9);
    }
    const PathFit f = fit_path(pts, chunk);
    REQUIRE(f.chunked);
    CHECK(f.chunk_bytes == chunk);
    CHECK(f.per_chunk_s == Approx(40e-6).epsilon(0.01));
    CHECK(f.latency_s == Approx(10e-6).epsilon(0.05));
    CHECK(f.bandwidth_Bps == Approx(20e9).epsilon(0.02));
    // a plain linear truth stays linear even when a chunk size is offered
    std::vector<std::pair<std::size_t, double>> lin;
    for (std::size_t n = 1; n <= (std::size_t{64} << 20); n *= 2) lin.emplace_back(n, 10e-6 + n / 20e9);
    CHECK_FALSE(fit_path(lin, chunk).chunked);
}

TEST_CASE("no slope means unbounded bandwidth; no points means unavailable", "[model][fit]") {
    const PathFit f = fit_path({{1, 5e-6}, {1024, 5e-6}, {1 << 20, 5e-6}}, 0);
    REQUIRE(f.available);
    CHECK(std::isinf(f.bandwidth_Bps));
    CHECK(f.predict(std::size_t{1} << 30) == Approx(5e-6));
    const PathFit none = fit_path({}, 0);
    CHECK_FALSE(none.available);
    CHECK(std::isinf(none.predict(1)));
}

TEST_CASE("single crossing: threshold between the measured sizes, at the crossing", "[model][crossover]") {
    const auto t = table_of(linear(6e-6, 3e9), linear(10e-6, 10e9));
    const CostModel m = CostModel::fit(t, PipelineParams{});
    // analytic: 6us + n/3G = 10us + n/10G  ->  n = 4e-6 / (1/3e9 - 1/10e9)
    const double want = 4e-6 / (1 / 3e9 - 1 / 10e9);
    CHECK(m.crossover().kind == CrossoverKind::single);
    // between the measured sizes around it, where the measured curves cross
    CHECK(m.threshold() > 16384);
    CHECK(m.threshold() <= 65536);
    CHECK(static_cast<double>(m.threshold()) == Approx(want).epsilon(0.02));
    for (const MeasuredPoint &p : t) CHECK(m.choose(p.bytes) == measured_winner(p));
    CHECK(m.predict(Path::direct, 1024) == Approx(6e-6 + 1024 / 3e9));
    CHECK(m.measured(Path::staged, 1024).value() == Approx(10e-6 + 1024 / 10e9));
    CHECK_FALSE(m.measured(Path::staged, 1000).has_value());
    REQUIRE(m.crossover().staged_ranges.size() == 1);
    CHECK(m.crossover().staged_ranges[0].hi == kNever);
    CHECK(static_cast<double>(m.crossover().staged_ranges[0].lo) == Approx(want).epsilon(0.001));
}

TEST_CASE("measured points win over the fit", "[model][crossover]") {
    // direct has a bump at 4 KiB..16 KiB (a protocol switch, say) that the
    // linear fit smooths away; the decision there must follow the measurement
    Fn d = [](std::size_t n) -> std::optional<double> {
        const double base = 5e-6 + static_cast<double>(n) / 3e9;
        return (n >= 4096 && n <= 16384) ? 5 * base : base;
    };
    const auto t = table_of(d, linear(20e-6, 10e9));
    const CostModel m = CostModel::fit(t, PipelineParams{});
    for (const MeasuredPoint &p : t) {
        INFO("size " << p.bytes);
        CHECK(m.choose(p.bytes) == measured_winner(p));
    }
    CHECK(m.threshold() > 1024);
    CHECK(m.threshold() <= 4096);
}

TEST_CASE("two crossings: the single threshold with least regret is kept and recorded", "[model][crossover]") {
    // staged wins only in the middle of the range
    Fn d = [](std::size_t n) -> std::optional<double> {
        return n < 4096 ? 2e-6 + n / 1e9 : (n > (std::size_t{1} << 20) ? 30e-6 + n / 100e9 : 8e-6 + n / 0.5e9);
    };
    const auto t = table_of(d, linear(6e-6, 5e9));
    const CostModel m = CostModel::fit(t, PipelineParams{});
    CHECK(m.crossover().kind == CrossoverKind::multiple);
    CHECK(m.crossover().measured_switches == 2);
    // brute force over every rule "staged from size x on" and "staged below x"
    double best = regret_for(t, kNever);
    best = std::min(best, regret_for(t, 0));
    for (const MeasuredPoint &p : t) {
        best = std::min(best, regret_for(t, p.bytes));
        best = std::min(best, regret_for(t, p.bytes, Path::staged));
    }
    CHECK(regret_for(t, m.threshold(), m.below()) == Approx(best));
    CHECK(m.crossover().regret == Approx(best));
}

TEST_CASE("inverted shape: staged below the crossing, direct from it on", "[model][crossover]") {
    // GPU -> pageable host memory on the H200 machine: staging through pinned
    // memory has the lower latency, the driver's pageable copy the higher
    // bandwidth
    const auto t = table_of(linear(60e-6, 40e9), linear(5e-6, 12e9));
    const CostModel m = CostModel::fit(t, PipelineParams{});
    // analytic: 5us + n/12G = 60us + n/40G  ->  n = 55e-6 / (1/12e9 - 1/40e9)
    const double want = 55e-6 / (1 / 12e9 - 1 / 40e9);
    CHECK(m.crossover().kind == CrossoverKind::staged_below);
    CHECK(m.below() == Path::staged);
    CHECK(static_cast<double>(m.threshold()) == Approx(want).epsilon(0.02));
    for (const MeasuredPoint &p : t) {
        INFO("size " << p.bytes);
        CHECK(m.choose(p.bytes) == measured_winner(p));
    }
    CHECK(m.choose(1) == Path::staged);
    CHECK(m.choose(std::size_t{64} << 20) == Path::direct);
    CHECK(m.crossover().regret == Approx(0.0).margin(1e-9));
    // the fit's staged range is [1, crossing)
    REQUIRE(m.crossover().staged_ranges.size() == 1);
    CHECK(m.crossover().staged_ranges[0].lo == 1);
    CHECK(static_cast<double>(m.crossover().staged_ranges[0].hi) == Approx(want).epsilon(0.01));
    // the usual form would have had to pick one path everywhere: worse
    double usual = std::min(regret_for(t, kNever), regret_for(t, 0));
    for (const MeasuredPoint &p : t) usual = std::min(usual, regret_for(t, p.bytes));
    CHECK(usual > 1.0);
}

TEST_CASE("a tie between the two forms keeps the usual one", "[model][crossover]") {
    // direct wins everywhere by far: "never" and "staged below 1" are the
    // same rule; the report must say direct-always
    const CostModel m = CostModel::fit(table_of(linear(8e-6, 300e9), linear(14e-6, 10e9)), PipelineParams{});
    CHECK(m.crossover().kind == CrossoverKind::direct_always);
    CHECK(m.below() == Path::direct);
}

TEST_CASE("always-direct and always-staged tables", "[model][crossover]") {
    const CostModel dm = CostModel::fit(table_of(linear(8e-6, 300e9), linear(14e-6, 10e9)), PipelineParams{});
    CHECK(dm.threshold() == kNever);
    CHECK(dm.crossover().kind == CrossoverKind::direct_always);
    CHECK(dm.crossover().staged_ranges.empty());
    const CostModel sm = CostModel::fit(table_of(linear(20e-6, 3e9), linear(5e-6, 10e9)), PipelineParams{});
    CHECK(sm.threshold() == 0);
    CHECK(sm.crossover().kind == CrossoverKind::staged_always);
    Fn none = [](std::size_t) -> std::optional<double> { return std::nullopt; };
    const CostModel nd = CostModel::fit(table_of(none, linear(5e-6, 10e9)), PipelineParams{});
    CHECK(nd.threshold() == 0);
    const CostModel ns = CostModel::fit(table_of(linear(5e-6, 10e9), none), PipelineParams{});
    CHECK(ns.threshold() == kNever);
    CHECK(std::isinf(ns.predict(Path::staged, 10)));
}

TEST_CASE("unordered and duplicate rows are handled", "[model][crossover]") {
    auto t = table_of(linear(6e-6, 3e9), linear(10e-6, 10e9));
    std::reverse(t.begin(), t.end());
    t.push_back({1, 1.0, 2.0}); // superseded below
    t.push_back({1, 6e-6, 10e-6});
    const CostModel m = CostModel::fit(t, PipelineParams{});
    REQUIRE(m.table().size() == 14);
    for (std::size_t i = 1; i < m.table().size(); ++i) CHECK(m.table()[i - 1].bytes < m.table()[i].bytes);
    CHECK(m.measured(Path::direct, 1).value() == 6e-6);
}

TEST_CASE("fixed and restored models", "[model][crossover]") {
    const CostModel f = CostModel::fixed(65536);
    CHECK(f.choose(65535) == Path::direct);
    CHECK(f.choose(65536) == Path::staged);
    CHECK(f.crossover().kind == CrossoverKind::single);
    CHECK(CostModel::fixed(0).crossover().kind == CrossoverKind::staged_always);
    CHECK(CostModel::fixed(kNever).choose(kNever - 1) == Path::direct);
    const CostModel m = CostModel::fit(table_of(linear(6e-6, 3e9), linear(10e-6, 10e9)), PipelineParams{});
    const CostModel r = CostModel::restore(m.fit_of(Path::direct), m.fit_of(Path::staged), m.crossover(), m.table());
    CHECK(r == m);
    const CostModel inv = CostModel::fit(table_of(linear(60e-6, 40e9), linear(5e-6, 12e9)), PipelineParams{});
    const CostModel ri =
        CostModel::restore(inv.fit_of(Path::direct), inv.fit_of(Path::staged), inv.crossover(), inv.table());
    CHECK(ri == inv);
    CHECK(ri.choose(1) == Path::staged);
}
