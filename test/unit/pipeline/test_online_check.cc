// The calibration checked through the peer (online_check.hpp): the corrected
// rule from measured offsets, and the sampling state of one pair.
#include "gdrpipe/pipeline/online_check.hpp"

#include <catch2/catch.hpp>

using namespace gdrpipe::pipeline;
using gdrpipe::model::kNever;
using gdrpipe::model::Path;
using gdrpipe::model::PathFit;

namespace {

PathFit linear(double lat_s, double bw_Bps) {
    PathFit f;
    f.available = true;
    f.latency_s = lat_s;
    f.bandwidth_Bps = bw_Bps;
    return f;
}

// samples of `f` at a few sizes, each `extra_s` slower than the fit
std::vector<OnlineSample> samples(const PathFit &f, double extra_s) {
    std::vector<OnlineSample> v;
    for (std::size_t n : {std::size_t{32} << 10, std::size_t{64} << 10, std::size_t{256} << 10,
                          std::size_t{1} << 20})
        v.push_back({n, f.predict(n) + extra_s});
    return v;
}

const std::size_t k64M = std::size_t{64} << 20;

} // namespace

TEST_CASE("corrected rule: equal offsets keep the crossing", "[pipeline][online]") {
    // GPU 0 -> host on the H200 machine, in-process: staged below ~221 KiB
    const PathFit d = linear(11.1e-6, 12.8e9), s = linear(8.4e-6, 8.59e9);
    const CorrectedRule r = corrected_rule(d, s, samples(d, 5e-6), samples(s, 5e-6), k64M);
    CHECK(r.below == Path::staged);
    CHECK(r.delta_direct_s == Approx(5e-6));
    CHECK(r.delta_staged_s == Approx(5e-6));
    // analytic crossing: 2.7 us / (1/8.59G - 1/12.8G)
    const double want = 2.7e-6 / (1 / 8.59e9 - 1 / 12.8e9);
    CHECK(static_cast<double>(r.thresh) == Approx(want).epsilon(0.01));
}

TEST_CASE("corrected rule: a staged path 10 us dearer through the peer loses everywhere", "[pipeline][online]") {
    // measured through the plugin on the H200 machine: staged pays the
    // control message and the peer's progress on top of the in-process time
    const PathFit d = linear(11.1e-6, 12.8e9), s = linear(8.4e-6, 8.59e9);
    const CorrectedRule r = corrected_rule(d, s, samples(d, 10e-6), samples(s, 20e-6), k64M);
    CHECK(r.thresh == kNever);
    CHECK(r.below == Path::direct);
    CHECK(r.delta_staged_s - r.delta_direct_s == Approx(10e-6));
}

TEST_CASE("corrected rule: the usual form moves up by the staged overhead", "[pipeline][online]") {
    // PCIe peer read: direct 6 us + n/3 GB/s, staged 10 us + n/10 GB/s
    const PathFit d = linear(6e-6, 3e9), s = linear(10e-6, 10e9);
    const CorrectedRule same = corrected_rule(d, s, samples(d, 0), samples(s, 0), k64M);
    const CorrectedRule dearer = corrected_rule(d, s, samples(d, 0), samples(s, 30e-6), k64M);
    CHECK(same.below == Path::direct);
    CHECK(dearer.below == Path::direct);
    CHECK(static_cast<double>(same.thresh) == Approx(4e-6 / (1 / 3e9 - 1 / 10e9)).epsilon(0.01));
    CHECK(static_cast<double>(dearer.thresh) == Approx(34e-6 / (1 / 3e9 - 1 / 10e9)).epsilon(0.01));
    // a staged path that got cheaper than measured: staged at every size
    const CorrectedRule cheaper = corrected_rule(d, s, samples(d, 20e-6), samples(s, 0), k64M);
    CHECK(cheaper.thresh == 0);
    // the median, not the mean: one wild sample does not move it
    std::vector<OnlineSample> wild = samples(s, 0);
    wild.push_back({std::size_t{64} << 10, 1.0});
    wild.push_back({std::size_t{64} << 10, s.predict(std::size_t{64} << 10)});
    CHECK(corrected_rule(d, s, samples(d, 0), wild, k64M).thresh == same.thresh);
}

TEST_CASE("online check: samples near the threshold, idle starts only, both paths", "[pipeline][online]") {
    OnlineCheck off(0, 100000);
    CHECK_FALSE(off.active());
    CHECK_FALSE(OnlineCheck(8, kNever).active()); // direct everywhere: nothing to check
    CHECK_FALSE(OnlineCheck(8, 0).active());

    OnlineCheck c(2, 100000);
    REQUIRE(c.active());
    CHECK_FALSE(c.pick(100000, false).has_value());      // something in flight
    CHECK_FALSE(c.pick(1024, true).has_value());         // eager sizes are not the engine's
    CHECK_FALSE(c.pick(100000 * 8 + 1, true).has_value()); // outside the band
    REQUIRE(c.pick(100000, true).has_value());
    CHECK(*c.pick(100000, true) == Path::direct);
    CHECK_FALSE(c.record(Path::direct, 100000, 1e-5));
    CHECK(*c.pick(12500, true) == Path::staged); // alternates to the path with fewer samples
    CHECK_FALSE(c.record(Path::staged, 12500, 2e-5));
    CHECK_FALSE(c.record(Path::direct, 100000, 1e-5));
    CHECK_FALSE(c.record(Path::direct, 100000, 1e-5)); // beyond per_path: ignored
    CHECK(c.samples(Path::direct).size() == 2);
    CHECK(c.active());
    CHECK(c.record(Path::staged, 800000, 2e-5));
    CHECK_FALSE(c.active());
    CHECK_FALSE(c.pick(100000, true).has_value());
}
