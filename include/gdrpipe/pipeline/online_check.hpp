// The calibration checked against the plugin's own transfers (docs/crossover.md,
// "Checked through the peer").
//
// The calibration measures both paths inside one process; a real transfer also
// pays cross-process costs that differ between the paths (the staged path's
// control message and the peer's progress, the direct path's import), which
// the in-process probe cannot see. So, for the first transfers of a pair whose
// size lies near the calibrated threshold and that start while the engine is
// idle (their time is then their own, not a queue's), the engine alternates
// the two paths, times each transfer from start to completion, and once it
// has `per_path` samples of each path moves each fitted curve by the median
// difference between what it measured and what the fit predicted. The rule
// is then recomputed from the corrected curves and kept for the pair.
#pragma once
#include "gdrpipe/model/cost_model.hpp"

#include <cstddef>
#include <optional>
#include <vector>

namespace gdrpipe::pipeline {

struct OnlineSample {
    std::size_t bytes = 0;
    double seconds = 0.0;
};

struct CorrectedRule {
    std::size_t thresh = model::kNever;
    model::Path below = model::Path::direct;
    double delta_direct_s = 0.0; // median (measured - predicted) of each path
    double delta_staged_s = 0.0;
};

// The rule of the fits moved by the samples' median offsets, scanned over
// [1, max_bytes]: where the corrected curves cross (the first crossing when
// there are several), with the path that is cheaper below it.
CorrectedRule corrected_rule(const model::PathFit &direct, const model::PathFit &staged,
                             const std::vector<OnlineSample> &direct_samples,
                             const std::vector<OnlineSample> &staged_samples, std::size_t max_bytes);
// The same from known offsets (a cached check).
CorrectedRule corrected_rule(const model::PathFit &direct, const model::PathFit &staged, double delta_direct_s,
                             double delta_staged_s, std::size_t max_bytes);

// The sampling state of one pair (not thread-safe: one engine's thread).
class OnlineCheck {
public:
    // per_path == 0: off
    OnlineCheck(unsigned per_path, std::size_t thresh) noexcept;

    bool active() const noexcept { return active_; }
    // The path to force for a transfer of `bytes` starting now, or nullopt:
    // follow the rule. `idle`: nothing else is in flight in the engine.
    std::optional<model::Path> pick(std::size_t bytes, bool idle) const noexcept;
    // A sampled transfer completed on `p`; true when both paths have enough
    // samples (active() turns false).
    bool record(model::Path p, std::size_t bytes, double seconds);

    const std::vector<OnlineSample> &samples(model::Path p) const noexcept {
        return p == model::Path::direct ? direct_ : staged_;
    }

    // Sizes sampled: [thresh / kBand, thresh * kBand], and not below kMinBytes
    // (small messages go through UCP's eager path, not the engine).
    static constexpr std::size_t kBand = 8;
    static constexpr std::size_t kMinBytes = 4096;

private:
    unsigned per_path_ = 0;
    std::size_t lo_ = 0, hi_ = 0;
    bool active_ = false;
    std::vector<OnlineSample> direct_, staged_;
};

} // namespace gdrpipe::pipeline
