// Fitted cost of each path and the direct/staged switch point.
//
// Each path is fitted as t(n) = a + n/b (relative least squares, so small
// sizes weigh as much as large ones, with residual-outlier rejection); the
// staged path is also tried as t(n) = a + c*ceil(n/chunk) + n/b and keeps that
// form when it fits clearly better. The rule is chosen from the MEASURED
// table: among "never", "always" and, in every gap between two measured sizes,
// one threshold in each orientation (direct below / staged below), the rule
// with the least summed relative regret min(t_chosen / t_best - 1, 1) over the
// measured sizes wins (choosing a path that failed costs 1000; on a tie the
// usual "direct below" form wins); inside the chosen gap the threshold sits
// where the measured curves cross, interpolated in log-log (or where the
// fitted curves cross when the measurements do not bracket a crossing).
#pragma once
#include "gdrpipe/model/types.hpp"

#include <cstddef>
#include <vector>

namespace gdrpipe::model {

struct PathFit {
    bool available = false;
    double latency_s = 0.0;     // a
    double bandwidth_Bps = 0.0; // b (infinity when the fit found no slope)
    double per_chunk_s = 0.0;   // c, only when `chunked`
    std::size_t chunk_bytes = 0;
    bool chunked = false;
    double rms_rel_err = 0.0; // of the fit over the points it used
    int points = 0;           // measured points used by the fit
    int rejected = 0;         // points dropped as outliers of the fit

    // +infinity when !available
    double predict(std::size_t bytes) const noexcept;
    bool operator==(const PathFit &) const = default;
};

enum class CrossoverKind : int {
    direct_always = 0, // threshold == kNever
    staged_always,     // threshold == 0
    single,            // direct below the threshold, staged from it on
    multiple,          // the measured winner changes more than once; the
                       // rule (any threshold and side, kNever and 0 included)
                       // is the single rule with the least measured regret
    staged_below       // staged below the threshold, direct from it on (e.g.
                       // GPU -> pageable host: pinned staging wins small sizes,
                       // the driver's own copy wins large ones)
};

const char *crossover_kind_name(CrossoverKind k) noexcept;

// [lo, hi) of sizes where the FITTED staged cost is lower; hi == kNever means
// "and beyond the scanned range".
struct SizeRange {
    std::size_t lo = 0;
    std::size_t hi = 0;
    bool operator==(const SizeRange &) const = default;
};

struct Crossover {
    // choose(n) = n < threshold ? below : the other path. below == direct is
    // the usual form ("direct below, staged from"); kNever and 0 always have
    // below == direct (direct at every size / staged at every size).
    std::size_t threshold = kNever;
    Path below = Path::direct;
    CrossoverKind kind = CrossoverKind::direct_always;
    int measured_switches = 0;      // winner changes along the measured sizes (near-ties ignored)
    double regret = 0.0;            // summed relative regret of the rule on the measured sizes
    std::vector<SizeRange> staged_ranges; // by the fit, scanned over [1, 4 x largest measured]
    bool operator==(const Crossover &) const = default;
};

inline Path other_path(Path p) noexcept { return p == Path::direct ? Path::staged : Path::direct; }

// The rule of `x` applied to one size.
inline Path choose_path(const Crossover &x, std::size_t bytes) noexcept {
    return bytes < x.threshold ? x.below : other_path(x.below);
}

class CostModel {
public:
    CostModel() = default;

    // Fit both paths from a sweep (sizes in any order; they are sorted) and
    // choose the threshold. `pipeline.chunk_bytes` is used for the chunked fit.
    static CostModel fit(std::vector<MeasuredPoint> table, const PipelineParams &pipeline);

    // Rebuild from stored parts (the cache); nothing is refitted.
    static CostModel restore(PathFit direct, PathFit staged, Crossover crossover,
                             std::vector<MeasuredPoint> table);

    // A configured threshold without measurements (kNever / 0 / any size),
    // direct below it.
    static CostModel fixed(std::size_t threshold);

    Path choose(std::size_t bytes) const noexcept { return choose_path(crossover_, bytes); }
    std::size_t threshold() const noexcept { return crossover_.threshold; }
    Path below() const noexcept { return crossover_.below; }

    // Fitted time in seconds; +infinity when the path is unavailable.
    double predict(Path p, std::size_t bytes) const noexcept;
    // The measured (robust) time at exactly `bytes`, if that size was measured
    // and the path worked there.
    std::optional<double> measured(Path p, std::size_t bytes) const noexcept;

    const PathFit &fit_of(Path p) const noexcept { return p == Path::direct ? direct_ : staged_; }
    const Crossover &crossover() const noexcept { return crossover_; }
    const std::vector<MeasuredPoint> &table() const noexcept { return table_; }

    bool operator==(const CostModel &) const = default;

private:
    PathFit direct_;
    PathFit staged_;
    Crossover crossover_;
    std::vector<MeasuredPoint> table_;
};

// Exposed for tests and tools: fit one path from (bytes, seconds) points.
// chunk_bytes == 0 disables the chunked form.
PathFit fit_path(const std::vector<std::pair<std::size_t, double>> &points,
                 std::size_t chunk_bytes);

} // namespace gdrpipe::model
