// A Prober with a known, noise-free truth per path plus seeded multiplicative
// noise and occasional 10x outliers. It keeps a fake clock that advances by
// each reported transfer time, so tests never sleep.
#pragma once
#include "gdrpipe/model/calibrate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>

namespace fake {

using gdrpipe::model::Path;
using gdrpipe::model::PipelineParams;

struct FakePath {
    bool available = true;
    double latency_s = 0;
    double bandwidth_Bps = 1e9;
    // staged pipeline effects (ignored for direct)
    double per_chunk_s = 0;       // per chunk
    double stage_Bps = 0;         // pipeline fill: 2*min(n, chunk)/stage_Bps (0: none)
    int full_depth = 1;           // chunks in flight needed for full bandwidth
    double per_slot_s = 0;        // per ring slot, per transfer
    double over_depth_loss = 0;   // bandwidth lost per slot above full_depth (fraction)
    std::size_t fails_above = 0;  // > 0: fails for sizes above this
};

inline FakePath direct_path(double lat, double bw) {
    FakePath p;
    p.latency_s = lat;
    p.bandwidth_Bps = bw;
    return p;
}

class FakeProber : public gdrpipe::model::Prober {
public:
    FakeProber(FakePath direct, FakePath staged, std::uint64_t seed, double noise = 0.03,
               double outlier_p = 0.03)
        : d_(direct), s_(staged), rng_(seed), noise_(noise), outlier_p_(outlier_p) {}

    std::optional<double> truth(Path p, std::size_t n, const PipelineParams &pp) const {
        const FakePath &f = p == Path::direct ? d_ : s_;
        if (!f.available) return std::nullopt;
        if (f.fails_above != 0 && n > f.fails_above) return std::nullopt;
        if (p == Path::direct) return f.latency_s + static_cast<double>(n) / f.bandwidth_Bps;
        const double chunks = std::ceil(static_cast<double>(n) / static_cast<double>(pp.chunk_bytes));
        double bw = f.bandwidth_Bps * std::min(1.0, static_cast<double>(pp.depth) / f.full_depth);
        bw /= 1.0 + f.over_depth_loss * std::max(0, pp.depth - f.full_depth);
        double t = f.latency_s + f.per_chunk_s * chunks + static_cast<double>(n) / bw + f.per_slot_s * pp.depth;
        if (f.stage_Bps > 0) t += 2.0 * static_cast<double>(std::min(n, pp.chunk_bytes)) / f.stage_Bps;
        return t;
    }

    std::optional<double> time_once(Path p, std::size_t n, const PipelineParams &pp) override {
        ++probes;
        ++probes_of[p == Path::direct ? 0 : 1];
        std::optional<double> t = truth(p, n, pp);
        if (!t) {
            now += 1e-6; // a failing attempt still costs a little
            return std::nullopt;
        }
        double v = *t * (1.0 + noise_ * (2.0 * uniform() - 1.0));
        if (uniform() < outlier_p_) v *= 10.0;
        now += v;
        longest = std::max(longest, v);
        return v;
    }

    gdrpipe::model::Clock clock() {
        return [this] { return now; };
    }

    double now = 100.0; // arbitrary epoch: the driver must use differences
    double longest = 0;
    std::size_t probes = 0;
    std::size_t probes_of[2] = {0, 0}; // direct, staged

private:
    double uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

    FakePath d_, s_;
    std::mt19937_64 rng_;
    double noise_, outlier_p_;
};

// The three topologies of the tests.
inline FakePath pcie_staged() {
    FakePath s;
    s.latency_s = 10e-6;
    s.bandwidth_Bps = 10e9;
    s.per_chunk_s = 3e-6;
    s.stage_Bps = 50e9;
    s.full_depth = 4;
    s.per_slot_s = 0.25e-6;
    s.over_depth_loss = 0.05;
    return s;
}
inline FakePath pcie_peer_direct() { return direct_path(6e-6, 3e9); }
inline FakePath nvlink_direct() { return direct_path(8e-6, 300e9); }
inline FakePath no_peer_direct() {
    FakePath d;
    d.available = false;
    return d;
}

} // namespace fake
