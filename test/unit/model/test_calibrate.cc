// Calibration driver against fake topologies (fake clock, seeded noise).
#include "fake_prober.hpp"

#include "gdrpipe/model/calibrate.hpp"
#include "gdrpipe/model/cost_model.hpp"

#include "gp_catch.hpp"

#include <atomic>
#include <cmath>
#include <limits>
#include <vector>

using namespace gdrpipe::model;
using fake::FakePath;
using fake::FakeProber;

namespace {

CalibOptions options_for(FakeProber &fp, double budget = 2.0) {
    CalibOptions o;
    o.clock = fp.clock();
    o.budget_s = budget;
    return o;
}

double truth_or_inf(const FakeProber &fp, Path p, std::size_t n, const PipelineParams &pp) {
    return fp.truth(p, n, pp).value_or(std::numeric_limits<double>::infinity());
}

// Sizes the CI check covers: every power of two and 3 x 2^k from 1 B to 64 MiB.
std::vector<std::size_t> dense_sizes() {
    std::vector<std::size_t> v;
    for (std::size_t n = 1; n <= (std::size_t{64} << 20); n *= 2) {
        v.push_back(n);
        if (3 * n <= (std::size_t{64} << 20)) v.push_back(3 * n);
    }
    return v;
}

// chosen path time <= 1.05 x the better forced path, by the noise-free truth
void check_choice_everywhere(const FakeProber &fp, const CalibRecord &rec) {
    std::vector<std::size_t> sizes = dense_sizes();
    for (const MeasuredPoint &p : rec.model.table()) sizes.push_back(p.bytes);
    for (std::size_t n : sizes) {
        const double td = truth_or_inf(fp, Path::direct, n, rec.pipeline);
        const double ts = truth_or_inf(fp, Path::staged, n, rec.pipeline);
        const Path c = rec.model.choose(n);
        const double tc = c == Path::direct ? td : ts;
        INFO("size " << n << " chose " << path_name(c) << " direct " << td << " staged " << ts);
        CHECK(tc <= 1.05 * std::min(td, ts));
    }
}

// best pipeline shape of the default grid by the noise-free truth
PipelineParams best_shape(const FakeProber &fp, std::size_t n, double *best_t, double *second_t) {
    CalibOptions o;
    PipelineParams best;
    *best_t = *second_t = std::numeric_limits<double>::infinity();
    for (std::size_t c : o.chunk_candidates) {
        for (int d : o.depth_candidates) {
            const PipelineParams pp{c, d};
            const double t = truth_or_inf(fp, Path::staged, n, pp);
            if (t < *best_t) {
                *second_t = *best_t;
                *best_t = t;
                best = pp;
            } else if (t < *second_t) {
                *second_t = t;
            }
        }
    }
    return best;
}

// the crossover of the noise-free curves, by bisection
std::size_t analytic_crossover(const FakeProber &fp, const PipelineParams &pp) {
    std::size_t lo = 1, hi = std::size_t{64} << 20;
    REQUIRE(truth_or_inf(fp, Path::direct, lo, pp) < truth_or_inf(fp, Path::staged, lo, pp));
    REQUIRE(truth_or_inf(fp, Path::direct, hi, pp) > truth_or_inf(fp, Path::staged, hi, pp));
    while (hi - lo > 1) {
        const std::size_t mid = lo + (hi - lo) / 2;
        if (truth_or_inf(fp, Path::direct, mid, pp) < truth_or_inf(fp, Path::staged, mid, pp)) lo = mid;
        else hi = mid;
    }
    return hi;
}

} // namespace

TEST_CASE("sweep sizes are powers of 4 from min to max", "[model][calibrate]") {
    const std::vector<std::size_t> v = sweep_sizes(1, std::size_t{64} << 20);
    REQUIRE(v.size() == 14);
    CHECK(v.front() == 1);
    CHECK(v[1] == 4);
    CHECK(v.back() == (std::size_t{64} << 20));
    const std::vector<std::size_t> w = sweep_sizes(8, 100);
    CHECK(w == std::vector<std::size_t>{8, 32, 100});
    CHECK(sweep_sizes(10, 5).empty());
}

TEST_CASE("PCIe peer-read bottleneck: direct small, staged large", "[model][calibrate]") {
    for (std::uint64_t seed : {1u, 2u, 3u}) {
        FakeProber fp(fake::pcie_peer_direct(), fake::pcie_staged(), seed);
        const CalibOptions o = options_for(fp);
        const double start = fp.now;
        const CalibResult r = calibrate(fp, o);
        REQUIRE(r.status == CalibStatus::ok);
        const CalibRecord &rec = r.record;
        INFO("seed " << seed << " threshold " << rec.model.threshold());

        CHECK(rec.model.crossover().kind == CrossoverKind::single);
        CHECK(rec.model.choose(1) == Path::direct);
        CHECK(rec.model.choose(std::size_t{64} << 20) == Path::staged);
        const std::size_t want = analytic_crossover(fp, rec.pipeline);
        const double rel = std::fabs(static_cast<double>(rec.model.threshold()) - static_cast<double>(want)) /
                           static_cast<double>(want);
        INFO("analytic crossover " << want);
        CHECK(rel <= 0.15);
        check_choice_everywhere(fp, rec);

        // pipeline shape: as good as the fake's optimum (its optimum is flat here)
        double best_t = 0, second_t = 0;
        best_shape(fp, rec.tune_bytes, &best_t, &second_t);
        CHECK(rec.tune_bytes == (std::size_t{64} << 20));
        CHECK(truth_or_inf(fp, Path::staged, rec.tune_bytes, rec.pipeline) <= 1.03 * best_t);

        // the time taken is the driver's own clock reading, within its budget
        CHECK(rec.elapsed_s == Approx(fp.now - start));
        CHECK(rec.elapsed_s <= o.budget_s);
        CHECK_FALSE(rec.budget_exhausted);
        CHECK(rec.probes == fp.probes);

        // fitted parameters are near the truth of each path
        const PathFit &d = rec.model.fit_of(Path::direct);
        REQUIRE(d.available);
        CHECK(d.latency_s == Approx(6e-6).epsilon(0.15));
        CHECK(d.bandwidth_Bps == Approx(3e9).epsilon(0.1));
        CHECK(rec.model.fit_of(Path::staged).available);
    }
}

TEST_CASE("NVLink: direct always wins, threshold is infinity", "[model][calibrate]") {
    FakeProber fp(fake::nvlink_direct(), fake::pcie_staged(), 7);
    const CalibResult r = calibrate(fp, options_for(fp));
    REQUIRE(r.status == CalibStatus::ok);
    const CalibRecord &rec = r.record;
    CHECK(rec.model.threshold() == kNever);
    CHECK(rec.model.crossover().kind == CrossoverKind::direct_always);
    CHECK(rec.model.choose(std::size_t{1} << 40) == Path::direct);
    check_choice_everywhere(fp, rec);
    // no winner change -> no refinement: only the powers of 4 were measured
    CHECK(rec.model.table().size() == sweep_sizes(1, std::size_t{64} << 20).size());
}

TEST_CASE("no peer access: direct unavailable, staged everywhere", "[model][calibrate]") {
    FakeProber fp(fake::no_peer_direct(), fake::pcie_staged(), 11);
    const CalibResult r = calibrate(fp, options_for(fp));
    REQUIRE(r.status == CalibStatus::ok);
    const CalibRecord &rec = r.record;
    CHECK(rec.model.threshold() == 0);
    CHECK(rec.model.crossover().kind == CrossoverKind::staged_always);
    CHECK(rec.model.choose(1) == Path::staged);
    CHECK_FALSE(rec.model.fit_of(Path::direct).available);
    for (const MeasuredPoint &p : rec.model.table()) {
        CHECK_FALSE(p.direct_s.has_value());
        CHECK(p.staged_s.has_value());
    }
    check_choice_everywhere(fp, rec);
    // the dead path is given up after two sizes (two failed attempts each)
    CHECK(fp.probes_of[0] == 4);
    CHECK(rec.probes == fp.probes);
}

TEST_CASE("direct failing above a size switches to staged before it", "[model][calibrate]") {
    FakePath d = fake::nvlink_direct();
    d.fails_above = std::size_t{1} << 20;
    FakeProber fp(d, fake::pcie_staged(), 5);
    const CalibResult r = calibrate(fp, options_for(fp));
    REQUIRE(r.status == CalibStatus::ok);
    const CalibRecord &rec = r.record;
    CHECK(rec.model.threshold() > 1);
    CHECK(rec.model.threshold() <= (std::size_t{1} << 20) + 1);
    check_choice_everywhere(fp, rec);
}

TEST_CASE("pipeline tuning picks the fake's optimum shape", "[model][calibrate]") {
    FakePath s;
    s.latency_s = 10e-6;
    s.bandwidth_Bps = 10e9;
    s.per_chunk_s = 23e-6; // many small chunks cost
    s.stage_Bps = 1.4e9;   // big chunks fill the pipeline slowly
    s.full_depth = 8;
    for (std::uint64_t seed : {21u, 22u, 23u}) {
        FakeProber fp(fake::no_peer_direct(), s, seed);
        const std::size_t n = std::size_t{64} << 20;
        double best_t = 0, second_t = 0;
        const PipelineParams want = best_shape(fp, n, &best_t, &second_t);
        // the fake must have a distinct optimum, away from the defaults
        REQUIRE(second_t > 1.05 * best_t);
        REQUIRE_FALSE(want == PipelineParams{});
        const CalibResult r = calibrate(fp, options_for(fp, 5.0));
        REQUIRE(r.status == CalibStatus::ok);
        CHECK(r.record.pipeline == want);
        CHECK(r.record.pipeline_trials.size() == 18);
    }
}

TEST_CASE("without tuning the given pipeline shape is used", "[model][calibrate]") {
    FakeProber fp(fake::pcie_peer_direct(), fake::pcie_staged(), 3);
    CalibOptions o = options_for(fp);
    o.tune_pipeline = false;
    o.pipeline = PipelineParams{std::size_t{1} << 20, 2};
    const CalibResult r = calibrate(fp, o);
    REQUIRE(r.status == CalibStatus::ok);
    CHECK(r.record.pipeline == o.pipeline);
    CHECK(r.record.tune_bytes == 0);
    CHECK(r.record.pipeline_trials.empty());
}

TEST_CASE("time budget is respected and what was measured is fitted", "[model][calibrate]") {
    // no outliers here: a 10x probe cannot be foreseen and may take the
    // budget alone (the second part below covers that case)
    FakeProber fp(fake::pcie_peer_direct(), fake::pcie_staged(), 9, 0.03, 0.0);
    CalibOptions o = options_for(fp, 0.1);
    const double start = fp.now;
    const CalibResult r = calibrate(fp, o);
    REQUIRE(r.status == CalibStatus::ok);
    const CalibRecord &rec = r.record;
    CHECK(rec.budget_exhausted);
    CHECK(rec.elapsed_s == Approx(fp.now - start));
    // at most one probe past the budget
    CHECK(rec.elapsed_s <= o.budget_s + fp.longest);
    CHECK(rec.model.table().size() >= 4);
    CHECK(rec.model.choose(1) == Path::direct);
    FakeProber full(fake::pcie_peer_direct(), fake::pcie_staged(), 9, 0.03, 0.0);
    const CalibResult rf = calibrate(full, options_for(full));
    REQUIRE(rf.status == CalibStatus::ok);
    CHECK(rec.probes < rf.record.probes);

    // the default budget with the default sweep: well under a second
    FakeProber slow(fake::pcie_peer_direct(), fake::pcie_staged(), 10);
    CalibOptions d;
    d.clock = slow.clock();
    const double s0 = slow.now;
    const CalibResult rd = calibrate(slow, d);
    REQUIRE(rd.status == CalibStatus::ok);
    CHECK(slow.now - s0 <= d.budget_s + slow.longest);
    CHECK(d.budget_s < 1.0);
}

TEST_CASE("a budget too small for one point gives no data", "[model][calibrate]") {
    FakeProber fp(fake::pcie_peer_direct(), fake::pcie_staged(), 9);
    CalibOptions o = options_for(fp, 1e-9);
    const CalibResult r = calibrate(fp, o);
    CHECK(r.status == CalibStatus::no_data);
    CHECK_FALSE(r.message.empty());
}

TEST_CASE("cancellation returns failure", "[model][calibrate]") {
    FakeProber fp(fake::pcie_peer_direct(), fake::pcie_staged(), 4);
    CalibOptions o = options_for(fp);
    std::atomic<bool> stop{false};
    std::size_t seen = 0;
    o.cancel = &stop;
    o.progress = [&](const CalibProgress &p) {
        seen = p.probes_done;
        if (p.probes_done >= 30) stop = true;
    };
    const CalibResult r = calibrate(fp, o);
    CHECK(r.status == CalibStatus::cancelled);
    CHECK(fp.probes == 30);
    CHECK(seen == 30);
}

TEST_CASE("progress is reported for every probe, ending with the fit", "[model][calibrate]") {
    FakeProber fp(fake::nvlink_direct(), fake::pcie_staged(), 8);
    CalibOptions o = options_for(fp);
    std::vector<CalibProgress> seen;
    o.progress = [&](const CalibProgress &p) { seen.push_back(p); };
    const CalibResult r = calibrate(fp, o);
    REQUIRE(r.status == CalibStatus::ok);
    REQUIRE(seen.size() == fp.probes + 1);
    CHECK(seen.front().phase == CalibPhase::tune);
    CHECK(seen.back().phase == CalibPhase::fit);
    for (std::size_t i = 0; i < fp.probes; ++i) {
        CHECK(seen[i].probes_done == i + 1);
        CHECK(seen[i].probes_planned >= seen[i].probes_done);
        CHECK(seen[i].budget_s == o.budget_s);
    }
}

TEST_CASE("neither path working is a failure", "[model][calibrate]") {
    FakePath s = fake::pcie_staged();
    s.available = false;
    FakeProber fp(fake::no_peer_direct(), s, 1);
    const CalibResult r = calibrate(fp, options_for(fp));
    CHECK(r.status == CalibStatus::no_path);
    // both paths are given up early
    CHECK(fp.probes < 60);
}

TEST_CASE("invalid options are refused", "[model][calibrate]") {
    FakeProber fp(fake::pcie_peer_direct(), fake::pcie_staged(), 1);
    CalibOptions o = options_for(fp);
    o.min_bytes = 0;
    CHECK(calibrate(fp, o).status == CalibStatus::bad_options);
    o = options_for(fp);
    o.max_bytes = 0;
    CHECK(calibrate(fp, o).status == CalibStatus::bad_options);
    o = options_for(fp);
    o.repeats = 0;
    CHECK(calibrate(fp, o).status == CalibStatus::bad_options);
    CHECK(fp.probes == 0);
}
