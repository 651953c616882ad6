// The calibration checked against the plugin's own transfers (docs/crossover.md,
// "Checked through the peer").
//
// The calibration measures both paths inside one process; a real transfer also
// pays cross-process costs that differ between the paths (the staged path's
// control message and the peer's progress, the direct path's import and
// completion), which the in-process probe cannot see -- and on the H200
// machine the difference depends on the size (GPU -> host memory: staged
// about 10 us dearer than calibrated at 16 KiB, level with direct at 1-4 MiB).
// So the check works per size class (one octave): for the first transfers of
// a class that start while the engine is idle (their time is then their own,
// not a queue's) the engine runs the two paths in turn, kBlock transfers at
// a time, and times each one from start to completion. Once a class has `per_path` samples of each path, the
// class's offsets -- the median of (measured - fitted) of each path -- are
// kept. Each path's corrected cost is its fit plus its offsets interpolated
// between the checked classes (class_offset), and the rule is recomputed
// from the corrected curves: it may switch paths more than once.
#pragma once
#include "gdrpipe/model/calib_record.hpp"
#include "gdrpipe/model/cost_model.hpp"

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gdrpipe::pipeline {

// A direct/staged rule with any number of switch points.
struct SizeRule {
    model::Path first = model::Path::direct; // below bounds[0] (everywhere without bounds)
    std::vector<std::size_t> bounds;         // ascending: the path changes at each, from it on

    model::Path path_for(std::size_t bytes) const noexcept;
    // "N bytes, `below` below it" (kNever: `below` everywhere; 0: the other path everywhere)
    static SizeRule single(std::size_t thresh, model::Path below);
    // "never (direct at every size)", "N bytes (staged below, direct from)",
    // "direct below A bytes, staged from A, direct from B", ...
    std::string describe() const;
    bool operator==(const SizeRule &) const = default;
};

// What one path costs beyond its fit at `bytes`, from the checked classes
// (ascending by size): each class's offset at its sample size, linear in
// log2(size) between neighbouring classes, held constant below the first
// and above the last; 0 without classes. Each class stands for itself: a
// trend fitted over all classes bent where the offsets are not linear in
// the size (host -> GPU puts on the H200 machine: a staged window at
// 0.4-2.3 MB opened in three of five caches where direct was 10 %
// faster); a class measured off is handled by the rule
// instead (kLoneClasses).
double class_offset(const std::vector<model::OnlineClass> &classes, model::Path p, std::size_t bytes);

// "16 KiB: direct +8.4 us, staged +22.5 us; 64 KiB: ..." (the offsets per class)
std::string describe_classes(const std::vector<model::OnlineClass> &classes);

// The rule of the fits corrected by the classes' offsets, scanned over
// [1, max_bytes]: every crossing of the corrected curves, less the windows
// (the top one aside) that hold fewer than kLoneClasses checked classes
// while at least kLoneClasses lie outside them, and the interior windows
// thinner than kSwitchGain. Then the top of
// the range, above the checked classes, where the fits are extrapolated and
// nothing was checked: when the calibration's own measurement at its largest
// size (`table`) has the other path faster by more than kTopMargin, that path
// is taken from where the measured curves cross below it (log-log between
// the two largest measured sizes; on the H200 machine pageable host -> GPU
// copies slow down at 64 MiB, where the linear fit still says direct).
SizeRule corrected_rule(const model::PathFit &direct, const model::PathFit &staged,
                        const std::vector<model::OnlineClass> &classes, std::size_t max_bytes,
                        const std::vector<model::MeasuredPoint> &table = {});
inline constexpr double kTopMargin = 0.05;
// An interior window of one path survives only where that path's corrected
// cost is at least this much lower somewhere in it; thinner windows (the
// curves touching) go to the paths around them.
inline constexpr double kSwitchGain = 0.03;
// A window of one path needs this many checked classes inside it when as
// many outside it say otherwise: one class measured off (one process, one
// buffer, its first transfers) must not switch the path around it (on the
// H200 machine the 256 KiB class of GPU -> host came out 8 us the other
// way and opened a staged window at 200-510 KB where direct was faster).
inline constexpr int kLoneClasses = 2;

// The sampling state of one pair (not thread-safe: one engine's thread).
class OnlineCheck {
public:
    // per_path == 0: off. Checks the classes from kMinBytes up to
    // kBand x thresh (the calibrated crossing), and at least up to kMinTop,
    // that `known` (a cached check) does not hold already; direct-everywhere and staged-everywhere rules
    // (thresh kNever / 0) are not checked.
    OnlineCheck(unsigned per_path, const model::PathFit &direct, const model::PathFit &staged, std::size_t thresh,
                std::vector<model::OnlineClass> known = {}, std::vector<model::MeasuredPoint> table = {});

    // some class of the band is still incomplete
    bool active() const noexcept { return open_ > 0; }
    // The path to force for a transfer of `bytes` starting now, or nullopt:
    // follow the rule. `idle`: nothing else is in flight in the engine.
    std::optional<model::Path> pick(std::size_t bytes, bool idle) const noexcept;
    // A sampled transfer completed on `p` in `seconds`; true when it completed
    // its class (classes() then holds it).
    bool record(model::Path p, std::size_t bytes, double seconds);

    // complete classes (known and checked here), ascending by size
    const std::vector<model::OnlineClass> &classes() const noexcept { return classes_; }
    SizeRule rule(std::size_t max_bytes) const {
        return corrected_rule(direct_, staged_, classes_, max_bytes, table_);
    }

    // floor(log2(bytes)) (0 for 0)
    static int size_class(std::size_t bytes) noexcept;

    // Sizes sampled: [kMinBytes, thresh * kBand] (smaller messages go
    // through UCP's eager path, not the engine).
    static constexpr std::size_t kBand = 8;
    // consecutive transfers of one path while sampling a class
    static constexpr std::size_t kBlock = 4;
    static constexpr std::size_t kMinBytes = 4096;
    // The band reaches at least this high. One point measured far off can
    // pull the calibration's threshold to a few hundred bytes: on the H200
    // machine (host -> GPU put) the in-process direct copy of 64 KiB
    // took 29 us against 16 us staged, the single threshold that fitted the
    // table best was "staged from 404 B", kBand x 404 lay below kMinBytes, so
    // nothing was checked and auto staged every message (1.15-1.7 x direct).
    static constexpr std::size_t kMinTop = std::size_t{1} << 20;

private:
    struct Pending {
        std::vector<double> direct, staged; // measured - predicted
        std::vector<double> sizes;
    };
    bool in_band(int cls) const noexcept { return cls >= lo_ && cls <= hi_; }
    bool complete(int cls) const noexcept;

    unsigned per_path_ = 0;
    model::PathFit direct_, staged_;
    int lo_ = 0, hi_ = -1; // band of classes
    int open_ = 0;         // band classes not complete
    std::map<int, Pending> pending_;
    std::vector<model::OnlineClass> classes_;
    std::vector<model::MeasuredPoint> table_; // the calibration's measurement
};

} // namespace gdrpipe::pipeline
